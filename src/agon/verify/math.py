"""Math answer equivalence with math-verify, run in a killable worker process.

Why a separate process: math_verify's own timeouts use SIGALRM, which only
works on the main thread and cannot interrupt C-level work (sympy evaluating
9^(9^(9^9)) sits inside one big-integer operation). So the worker runs
math_verify with its timeouts switched off, and the parent enforces a hard
wall-clock limit per call: on expiry it SIGKILLs the worker, counts a
timeout, and starts a fresh worker on the next call. The worker is persistent
(started once, restarted only after a timeout or crash), so a call costs one
pipe round trip plus the sympy work itself.

How answers are fed to math_verify. `predicted` is the content of the model's
answer block and `gold` the dataset's final answer, both bare strings such as
"\\frac{1}{2}", "x = 3" or "(-\\infty, 3]". math_verify's `parse` *extracts*
an answer from free text: fed a raw string, its plain-number fallback grabs
the first number it sees, so "1-1/e" and "1+1/e" both become 1 and compare
equal. We therefore wrap a bare answer as `$...$`, which makes the LaTeX
extractor read the whole string as one expression (intervals, sets, tuples,
equations and fractions then parse as such). A string that already carries
its own math delimiters (an unescaped `$`, `\\(`, `\\[`, `\\boxed`, `\\fbox`)
is passed through unwrapped (only the numbers in its math spans normalised,
below) so math_verify's delimiter and boxed handling applies (nested boxes
included). The same wrapping is used for gold and
prediction, with math_verify's default extraction config
(LaTeX first, then plain expressions).

Number normalisation (`normalize_math`), applied identically to gold and
prediction before parsing: to the whole of a bare answer, and to the inside
of each math span (`$...$`, `$$...$$`, `\\(...\\)`, `\\[...\\]`, `\\boxed{...}`,
`\\fbox{...}`) of a delimited one; prose outside math spans is left to
math_verify's own extraction. latex2sympy reads digits separated by a space
as arithmetic ("12 500" became 512, "2 3" 5, "1 000" 0), which both rejects
right answers and accepts wrong ones, so:
  * Thousands separators are joined only in the strict pattern: 1-3 leading
    digits (not starting with 0), then one or more groups of exactly 3
    digits, all separated by one and the same separator, optionally followed
    by a decimal part: "1 000", "1\\,000", "1\\ 000", "1~000", "1{,}000",
    "10,\\!000" (MATH's idiom) and the Unicode thin/narrow/no-break spaces,
    so "12\\,345.6" is 12345.6. A plain comma is a thousands separator only
    when the answer (or math span) is nothing but that one number, with an
    optional sign, `\\$` and `%`: "1,000" and "-1,234.5" are numbers, while
    "1, 000", "1,2" and "(1,000, 2)" keep their commas as list separators
    (so "100,200" is 100200, not the pair; write "100, 200"). This is the
    rule math_verify's latex2sympy itself applies to whole expressions; a
    comma followed by other than 3 digits is never a decimal comma ("1,22"
    is the list {1, 22}), except that latex2sympy reads "0,ddd" as 0.ddd.
  * Scientific notation: a number literal directly followed by e/E and an
    integer ("1.5e3", "6.02e23", "3E5", "1e-3") becomes
    `mantissa\\times10^{k}`, the way a LaTeX author writes it, so "6.02e23"
    and "6.02\\times10^{23}" parse alike; after `/` or `\\div` it is
    parenthesised, since the literal is one token (1/2e3 = 1/2000). "2e",
    "e^{x}", "2e^{3}", "be3", "b2e3" and "2e3x" are untouched (Euler's
    number, names, a literal glued to a variable). A lower-case e with a
    signed exponent also reads as 2e - 1 (Euler), so "2e-1" is scientific
    only when it is the whole answer (or math span) or its mantissa has a
    decimal point ("1.6e-19"); inside a larger expression "x+2e-1" keeps
    Euler's e.
  * Any other space between two numbers (whitespace, `\\,`, `\\ `, `~`, `\\;`,
    `\\:`, `\\!`, `\\quad`: "2 3", "12 50", "1 000 00", "3.141 592", the
    plain-text mixed number "3 4/5") is not a number: such an answer keeps
    only math_verify's string fallback, so a prediction is graded wrong
    (counted as unparsable) against any gold that parsed to an expression,
    and a gold like "(1 2 3)" is compared as a string. A one-digit sub- or
    superscript is not a number of its own ("\\log_2 3", "x^2 3" pass).
  * `\\mathrm{e}` and `\\mathrm{i}` become `e` and `i`: math_verify reads a
    trailing `\\mathrm{...}` as a unit and cuts it off, so
    "1-\\frac{1}{\\mathrm{e}}" used to parse as 1 (and equal "1+...").

Golds math_verify can only compare as strings. When a gold parses to no
sympy expression but to a string (e.g. "x = \\frac{1}{2}, x = \\frac{-1 \\pm
\\sqrt{13}}{4}", or a gold with spaced numbers), math_verify's own `verify`
decides, and that is a plain string comparison. When the gold does parse to
an expression, a prediction that parses to no expression (only a string) is
graded wrong as unparsable, never compared as a string. A gold that parses to
nothing at all is bad data: `is_correct` raises ValueError naming it.

Deliberate consequences of math_verify's defaults, kept as they are:
  * units are stripped on both sides, so "5 cm" == "5" (and == "5 m"): MATH
    golds carry units inconsistently and the question fixes the unit;
  * `x = 3` == `3` (an assignment is unwrapped to its right-hand side);
  * decimals match fractions when equal after rounding to 6 places
    (0.333333 == 1/3, but 0.333 != 1/3). The rounding is absolute, so all
    numbers below about 5e-7 compare equal (1.7e-19 == 1.6e-19), and a
    decimal mantissa times a big power of ten is a float that need not equal
    the integer it stands for (6.02e23 != 602000000000000000000000).

tests/data/math_verify_cases.jsonl holds math-verify 0.9.0's own test cases
(and agon's tricky ones); tests/test_verify_math.py checks every one, and the
few where this wrapper deliberately differs carry `agon_expected` and `why`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterable
from pathlib import Path

DEFAULT_TIMEOUT_S = 5.0
# The worker imports sympy on start (about a second); that is not model time.
STARTUP_TIMEOUT_S = 60.0
# A pathological expression (2^(2^40)) can eat memory faster than the timeout
# fires; the cap turns that into a MemoryError inside the worker.
DEFAULT_WORKER_MEMORY_BYTES = 4 << 30

# An unescaped `$`, or a LaTeX math/box opener: the author delimited the math.
_DELIMITED = re.compile(r"(?<!\\)\$|\\\(|\\\[|\\boxed|\\fbox")

_READY = "ready"


def as_math_verify_input(answer: str) -> str:
    """The text fed to math_verify's `parse` for `answer`: normalised, and
    wrapped in `$...$` when bare (see module doc)."""
    return _prepare(answer)[0]


def normalize_math(math: str) -> tuple[str, bool]:
    """Normalise the numbers in one math expression (see module doc).

    Returns the normalised text and whether it still holds two numbers
    separated only by space, which makes it "not a number".
    """
    math = _UPRIGHT_CONSTANT.sub(lambda m: m["c1"] or m["c2"], math)
    math = _THOUSANDS.sub(_join_thousands, math)
    math = _COMMA_NUMBER.sub(lambda m: m["pre"] + m["num"].replace(",", "") + m["post"], math)
    whole = _WHOLE_LITERAL.match(math) is not None

    def scientific(m: re.Match) -> str:
        mantissa, exponent = m["mantissa"], m["exponent"]
        if _in_name(m):
            return m.group()  # b2e3: part of a name, not a number literal
        if m["e"] == "e" and exponent[0] in "+-" and "." not in mantissa and not whole:
            return m.group()  # 2e-1: Euler's 2e - 1 inside a larger expression
        if mantissa.startswith("."):
            mantissa = "0" + mantissa
        number = f"{mantissa.rstrip('.')}\\times10^{{{exponent.lstrip('+')}}}"
        # 1/2e3 is 1/2000, not (1/2)*10^3: the literal is one token.
        return f"({number})" if m.string[: m.start()].rstrip().endswith(("/", "\\div")) else number

    math = _SCIENTIFIC.sub(scientific, math)
    return math, _SPACED_NUMBERS.search(math) is not None


def _in_name(m: re.Match) -> bool:
    """Whether the match continues a name (b2e3), not a command (\\cdot2e3)."""
    before = m.string[: m.start()]
    return _LETTER_END.search(before) is not None and _COMMAND_END.search(before) is None


def _join_thousands(m: re.Match) -> str:
    if _in_name(m):
        return m.group()
    return m["lead"] + re.sub(r"\D", "", m["rest"])


# Upright e and i (ISO style): math_verify would strip a trailing one as a unit.
_UPRIGHT_CONSTANT = re.compile(r"\\mathrm\s*\{\s*(?P<c1>[ei])\s*\}|\{\s*\\rm\s+(?P<c2>[ei])\s*\}")
# Separators that only ever separate digit groups (a plain comma is handled apart).
_GROUP_SEPARATOR = r"(?P<sep> |\\,|\\ |~|\{,\}|,\\!|[\u2009\u202f\u00a0])"
_THOUSANDS = re.compile(
    rf"(?<![\d.^_\\])(?P<lead>[1-9]\d{{0,2}})(?P<rest>{_GROUP_SEPARATOR}\d{{3}}(?:(?P=sep)\d{{3}})*)(?!\d)"
)
_COMMA_NUMBER = re.compile(
    r"^(?P<pre>\s*[-+]?\s*(?:\\\$\s*)?)(?P<num>[1-9]\d{0,2}(?:,\d{3})+)(?P<post>(?:\.\d+)?\s*(?:\\?%)?\s*)$"
)
_NUMBER_LITERAL = r"(?:\d+(?:\.\d*)?|\.\d+)"
_WHOLE_LITERAL = re.compile(rf"^\s*[-+]?\s*{_NUMBER_LITERAL}[eE][-+]?\d+\s*$")
_SCIENTIFIC = re.compile(
    rf"(?<![\d.^_\\])(?P<mantissa>{_NUMBER_LITERAL})(?P<e>[eE])(?P<exponent>[-+]?\d+)(?![\w^{{]|\.\d)"
)
_LETTER_END = re.compile(r"[A-Za-z]$")
_COMMAND_END = re.compile(r"\\[A-Za-z]+$")
# Spacing between two numbers (`\\` is a row break, not `\` + space). A
# one-digit sub- or superscript is not a number of its own: \log_2 3, x^2 3.
_SPACE = r"(?:\s|\\[,;:! ]|~|\\q?quad(?![a-zA-Z]))"
_SPACED_NUMBERS = re.compile(rf"(?<![_^])\d{_SPACE}+\.?\d")
# Math spans of a delimited answer, and their closers (None: a brace group).
_MATH_OPENER = re.compile(r"(?<!\\)\$\$|(?<!\\)\$|\\\(|\\\[|\\(?:boxed|fbox)\s*\{")
_MATH_CLOSER = {"$$": re.compile(r"(?<!\\)\$\$"), "$": re.compile(r"(?<!\\)\$"),
                "\\(": re.compile(r"\\\)"), "\\[": re.compile(r"\\\]")}


def _prepare(answer: str) -> tuple[str, bool]:
    """(text for math_verify's parse, whether some math in it has spaced numbers)."""
    if not _DELIMITED.search(answer):
        # Inline `$...$` may not span lines in math_verify's extractor.
        math, spaced = normalize_math(" ".join(answer.splitlines()))
        return "$" + math + "$", spaced
    out, pos, spaced = [], 0, False
    while (opener := _MATH_OPENER.search(answer, pos)) is not None:
        start = opener.end()
        closer = _MATH_CLOSER.get(opener.group())
        if closer is None:
            end = _closing_brace(answer, start)
            after = None if end is None else end + 1
        else:
            found = closer.search(answer, start)
            end, after = (found.start(), found.end()) if found else (None, None)
        if end is None:  # unclosed: leave the rest to math_verify
            break
        math, has_spaced = normalize_math(answer[start:end])
        spaced |= has_spaced
        out += [answer[pos:start], math, answer[end:after]]
        pos = after
    out.append(answer[pos:])
    return "".join(out), spaced


def _closing_brace(text: str, start: int) -> int | None:
    """Index of the `}` closing a group whose content starts at `start`."""
    depth = 1
    i = start
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2  # an escaped brace does not count
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


class MathVerifier:
    """Decides whether a predicted answer equals the gold answer.

    Thread-safe (one call at a time per verifier; create several verifiers for
    parallelism) and usable from any thread. Use as a context manager, or call
    `close()`, to stop the worker; it is also killed when the verifier is
    garbage collected or the interpreter exits.
    """

    def __init__(
        self,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        worker_memory_bytes: int | None = DEFAULT_WORKER_MEMORY_BYTES,
    ):
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.timeout_s = timeout_s
        self.worker_memory_bytes = worker_memory_bytes
        self.stats = {"calls": 0, "parse_failures": 0, "timeouts": 0, "errors": 0}
        self._worker: _Worker | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> MathVerifier:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.kill()
                self._worker = None

    def is_correct(self, predicted: str | None, gold: str) -> bool:
        """True iff `predicted` is mathematically equivalent to `gold`.

        Never raises because of the prediction: a missing or unparsable
        prediction, a timeout or a worker failure all give False (and are
        counted in `stats`). A gold that math_verify parses to nothing at all
        raises ValueError, since that is bad data rather than bad model
        output; a gold it can read only as a string is compared as a string.
        """
        if not isinstance(gold, str) or not gold.strip():
            raise ValueError(f"math verifier: gold answer {gold!r} is empty or not a string")
        with self._lock:
            self.stats["calls"] += 1
            if predicted is None or not predicted.strip():
                self.stats["parse_failures"] += 1
                return False
            reply = self._ask({"gold": gold, "pred": predicted})
            status = reply["status"]
            if status == "ok":
                return bool(reply["correct"])
            if status == "gold_unparsable":
                self.stats["parse_failures"] += 1
                raise ValueError(f"math verifier: gold answer {gold!r} could not be parsed by math_verify "
                                 "(it yields nothing)")
            if status == "pred_unparsable":
                self.stats["parse_failures"] += 1
            elif status == "timeout":
                self.stats["timeouts"] += 1
            else:
                self.stats["errors"] += 1
            return False

    def verify_many(self, pairs: Iterable[tuple[str | None, str]]) -> list[bool]:
        """`is_correct` over (predicted, gold) pairs, in order."""
        return [self.is_correct(predicted, gold) for predicted, gold in pairs]

    def _ask(self, request: dict) -> dict:
        if self._worker is None:
            self._worker = _Worker(self.worker_memory_bytes)
        try:
            return self._worker.ask(request, self.timeout_s)
        except _WorkerTimeout:
            self._worker.kill()
            self._worker = None
            return {"status": "timeout"}
        except _WorkerDied as exc:
            self._worker.kill()
            self._worker = None
            return {"status": "error", "message": str(exc)}


class _WorkerTimeout(Exception):
    pass


class _WorkerDied(Exception):
    pass


class _Worker:
    """One worker process speaking JSON lines over its stdin/stdout."""

    def __init__(self, memory_bytes: int | None):
        # The worker imports this module by path, so it runs the same code
        # whether agon is installed or used from a source tree.
        src_root = str(Path(__file__).resolve().parents[2])
        bootstrap = "import sys; sys.path.insert(0, sys.argv[1]); from agon.verify.math import _serve; _serve(sys.argv[2])"
        # stderr is inherited so a worker crash shows its traceback.
        self.proc = subprocess.Popen(
            [sys.executable, "-c", bootstrap, src_root, str(memory_bytes or 0)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self._finalizer = weakref.finalize(self, _kill_process, self.proc)
        self._buffer = b""
        try:
            line = self._read_line(time.monotonic() + STARTUP_TIMEOUT_S)
        except (_WorkerTimeout, _WorkerDied) as exc:
            self.kill()
            raise RuntimeError(f"math verifier: worker failed to start ({exc}); see its stderr above") from exc
        if line != _READY:
            self.kill()
            raise RuntimeError(f"math verifier: worker sent {line!r} instead of {_READY!r} on start")

    def ask(self, request: dict, timeout_s: float) -> dict:
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise _WorkerDied(f"worker stdin closed: {exc}") from exc
        line = self._read_line(time.monotonic() + timeout_s)
        try:
            return json.loads(line)
        except ValueError as exc:
            raise _WorkerDied(f"worker sent a malformed reply: {line[:200]!r}") from exc

    def _read_line(self, deadline: float) -> str:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _WorkerTimeout()
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise _WorkerDied(f"worker exited with status {self.proc.poll()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def kill(self) -> None:
        self._finalizer()


def _kill_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except OSError:
            pass


# ---------------------------------------------------------------- worker side


def _serve(memory_bytes: str) -> None:
    """Worker main loop: one JSON request per stdin line, one reply per line."""
    import logging
    import resource

    # Keep the protocol channel private: anything a library prints goes to stderr.
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    # Ctrl-C in the parent's terminal must not kill the worker mid-reply; it
    # exits when the parent closes stdin, and the parent kills it on timeout.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if int(memory_bytes) > 0:
        resource.setrlimit(resource.RLIMIT_AS, (int(memory_bytes), int(memory_bytes)))
    # Timeouts are switched off on purpose (the parent enforces them), so
    # silence math_verify's "timeout is disabled" warning.
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    import math_verify  # noqa: F401  (import cost paid before "ready")

    protocol.write(_READY + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = _check(request["gold"], request["pred"])
        except Exception as exc:  # MemoryError, RecursionError, parser bugs
            reply = {"status": "error", "message": f"{type(exc).__name__}: {exc}"[:500]}
        protocol.write(json.dumps(reply) + "\n")


def _check(gold: str, pred: str) -> dict:
    from math_verify import verify

    gold_parsed = _parse_gold(gold)
    if not gold_parsed:
        return {"status": "gold_unparsable"}
    pred_parsed = _parse(pred)
    if not pred_parsed:
        return {"status": "pred_unparsable"}
    # A prediction that is only a string (math_verify's fallback when it
    # could not parse it) never equals a gold that parsed to an expression,
    # whatever the strings say. Against a gold that math_verify can read only
    # as a string, its verify compares strings (never string with expression).
    if any(map(_is_expression, gold_parsed)) and not any(map(_is_expression, pred_parsed)):
        return {"status": "pred_unparsable"}
    correct = verify(list(gold_parsed), pred_parsed, timeout_seconds=None)
    return {"status": "ok", "correct": bool(correct)}


def _parse(text: str) -> list:
    from math_verify import parse

    prepared, spaced = _prepare(text)
    parsed = parse(prepared, parsing_timeout=None)
    if spaced:
        # Spaced numbers ("2 3") are not a number, whatever sympy made of
        # them: keep only the string fallback.
        parsed = [item for item in parsed if isinstance(item, str)]
    return parsed


def _is_expression(item) -> bool:
    from sympy import Basic, MatrixBase

    return isinstance(item, (Basic, MatrixBase))


@functools.lru_cache(maxsize=4096)
def _parse_gold(gold: str) -> tuple:
    # Many samples share one gold answer: parse it once per worker.
    return tuple(_parse(gold))
