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
is passed through unchanged so math_verify's delimiter and boxed handling
applies (nested boxes included). The same wrapping is used for gold and
prediction, with math_verify's default extraction config
(LaTeX first, then plain expressions).

Deliberate consequences of math_verify's defaults, kept as they are:
  * units are stripped on both sides, so "5 cm" == "5" (and == "5 m"): MATH
    golds carry units inconsistently and the question fixes the unit;
  * `x = 3` == `3` (an assignment is unwrapped to its right-hand side);
  * decimals match fractions when equal after rounding to 6 places
    (0.333333 == 1/3, but 0.333 != 1/3).
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
    """Make a bare answer visible to math_verify's LaTeX extractor (see module doc)."""
    if _DELIMITED.search(answer):
        return answer
    # Inline `$...$` may not span lines in math_verify's extractor.
    return "$" + " ".join(answer.splitlines()) + "$"


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
        counted in `stats`). An unparsable gold raises ValueError, since that
        is bad data rather than bad model output.
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
                raise ValueError(f"math verifier: gold answer {gold!r} could not be parsed by math_verify")
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

    gold_parsed = list(_parse_gold(gold))  # verify() wants a list, not a tuple
    if not _has_expression(gold_parsed):
        return {"status": "gold_unparsable"}
    pred_parsed = _parse(pred)
    # Without a sympy expression only string fallbacks are left, and those
    # never equal a gold that did parse: call it a parse failure.
    if not _has_expression(pred_parsed):
        return {"status": "pred_unparsable"}
    correct = verify(gold_parsed, pred_parsed, timeout_seconds=None)
    return {"status": "ok", "correct": bool(correct)}


def _parse(text: str) -> list:
    from math_verify import parse

    return parse(as_math_verify_input(text), parsing_timeout=None)


def _has_expression(parsed: list) -> bool:
    from sympy import Basic, MatrixBase

    return any(isinstance(item, (Basic, MatrixBase)) for item in parsed)


@functools.lru_cache(maxsize=4096)
def _parse_gold(gold: str) -> tuple:
    # Many samples share one gold answer: parse it once per worker.
    return tuple(_parse(gold))
