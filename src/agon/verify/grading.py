"""Grade a completion: correctness c and format phi, both in {0, 1}.

The verifier is chosen by the problem's source (`VERIFIERS`; a source with none
is an error naming the problem, never a silent 0):
  exact        toy_math, toy_carries: integers compared as integers (agon.verify.exact);
  math-verify  deepmath, gsm8k, math500: mathematical equivalence through
               math-verify in a killable worker process (agon.verify.math), one
               worker per process, shared by every Grader;
  sandbox      toy_code, codecontests: the answer block runs as a Python program
               in the code sandbox (agon.verify.sandbox): c = 1 iff every test
               passes (full-output comparison after `sandbox.normalize_output`,
               i.e. whitespace-normalised).
Every evaluation stage records the verifier that graded it (`verifier_for`).

Code grading is the expensive part of a training step (one sandboxed process
tree per test, tens of ms of wall clock each, most of it the interpreter's start:
docs/measurements.md, "Benchmarks"),
so the grader keeps the sandbox's semantics and avoids needless runs:
  * a program that does not compile is a program failure (`syntax_error`)
    decided in-process by `compile` (never executed), without a sandbox;
  * verdicts are cached per (program, tests, limits, isolation), process-wide: a group
    of rollouts that write the same program runs it once, and so do the
    stages and directions of one evaluation job;
  * the first test runs alone (most wrong programs fail it, and then nothing
    else runs); when it passes, the remaining tests run concurrently, each
    still in its own fresh sandboxed process.
Harness failures (`sandbox_error`: the program never ran, or was killed by
something neither it nor the harness controls, such as the kernel's OOM killer on a
loaded node) are no verdict on the program. They are counted apart (`sandbox_error`),
never cached, never graded: the test reruns, up to `retries` times with a back-off
(`sandbox_retries` counts them), and a program whose test still fails that way stops
the job (`SandboxFailure`), as does a job whose share of such runs passes
`max_error_share`: training on noise, or counting it in a table, is worse than a
failed job. Where the sandbox cannot work at all (no bwrap, no user namespaces), the
first code problem raises `SandboxUnavailable` with what to install or enable.
Both are set in the config's `sandbox` section beside the isolation keys.
"""

from __future__ import annotations

import functools
import re
import threading
import time
import warnings
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

from .. import prompts
from . import exact, sandbox
from .math import MathVerifier
from .sandbox import Outcome, SandboxConfig, SandboxFailure, SandboxLimits, SandboxUnavailable

__all__ = ["Grader", "SandboxFailure", "SandboxUnavailable", "VERIFIERS", "clear_cache", "compiles", "program_text"]

# Toy programs are one-liners: a tight budget keeps a runaway sample cheap.
TOY_LIMITS = SandboxLimits(cpu_time_s=1, wall_time_s=3.0, memory_bytes=256 << 20, output_bytes=1 << 20,
                           disk_bytes=16 << 20)
CODE_SOURCES = ("toy_code", "codecontests")
MATH_SOURCES = ("deepmath", "gsm8k", "math500")
# The verifier of each problem source: the one name every stage record carries.
VERIFIERS = {"toy_math": "exact", "toy_carries": "exact", **{s: "math-verify" for s in MATH_SOURCES},
             **{s: "sandbox" for s in CODE_SOURCES}}
# Verdicts by (program, tests, limits, isolation), shared by every Grader of the process (LRU).
_VERDICTS: OrderedDict = OrderedDict()
_VERDICTS_LOCK = threading.Lock()
CACHE_SIZE = 16384
_FENCE = re.compile(r"^```[A-Za-z0-9_+-]*\n(.*?)\n?```$", re.S)


# The config's `sandbox` keys that say how grading treats harness failures (the others say
# how programs are isolated: SandboxConfig).
RETRY_KEYS = {"retries": 3, "max_error_share": 0.05}
RETRY_BACKOFF_S = (0.5, 2.0, 5.0, 10.0)  # before the 1st, 2nd, ... rerun (the last one repeats)


@functools.cache
def math_verifier() -> MathVerifier:
    """The process's math-verify worker (started on first use; importing sympy takes ~1 s)."""
    return MathVerifier()


def clear_cache() -> None:
    """Forget every cached verdict (tests; a changed sandbox)."""
    with _VERDICTS_LOCK:
        _VERDICTS.clear()


def program_text(answer: str) -> str:
    """The program in an answer block: the block itself, or the inside of one Markdown code fence."""
    m = _FENCE.match(answer.strip())
    return m.group(1) if m else answer


def compiles(code: str) -> bool:
    """Whether `code` is valid Python syntax; compiled, never run."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "main.py", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        return False


class Grader:
    """Chooses the verifier by problem; counts what could not be parsed or run.

    counts: graded, no_answer, truncated (every problem); for math-verify
    problems also math_verified (answers it compared), math_unparsable,
    math_timeout and math_error (graded 0; math_verify's stats); for code problems
    also programs, passed, one key per failure outcome (syntax_error,
    wrong_answer, runtime_error, timeout, memory_limit, output_limit),
    sandbox_error (runs the harness failed: not the program's fault, each one
    rerun) and sandbox_retries, and the cost side: sandbox_runs (sandboxed test
    processes) and cache_hits.
    """

    # Harness failures, with no program ever run, after which grading stops.
    UNAVAILABLE_AFTER = 3

    def __init__(self, limits: SandboxLimits | None = None, max_workers: int = 4,
                 sandbox_config: SandboxConfig | None = None, retries: int = RETRY_KEYS["retries"],
                 max_error_share: float = RETRY_KEYS["max_error_share"]):
        self.counts = {"graded": 0, "no_answer": 0, "truncated": 0}
        self.limits = limits
        self.sandbox_config = sandbox_config or SandboxConfig()
        self.retries = retries
        self.max_error_share = max_error_share
        self.mechanism: dict | None = None  # how code ran, once some did (for provenance)
        self.max_workers = max_workers
        self._sandbox_ran = False  # some program has run in the sandbox
        self._harness_failures = 0
        self._lock = threading.Lock()  # tests of one program run in threads

    @staticmethod
    def verifier_for(problem: dict) -> str:
        """The name of the verifier that grades `problem` (VERIFIERS), checked before any answer is read."""
        verifier = VERIFIERS.get(problem["source"])
        needs = "tests" if verifier == "sandbox" else "answer"
        if verifier is None or needs not in problem:
            raise ValueError(f"no verifier for source {problem['source']!r} (problem {problem['id']!r})"
                             + (f": it has no {needs!r}" if verifier else f"; known sources: {sorted(VERIFIERS)}"))
        return verifier

    def correct(self, problem: dict, completion_text: str) -> int:
        verifier = self.verifier_for(problem)
        self.counts["graded"] += 1
        answer = prompts.extract_answer(completion_text)
        if answer is None:
            self.counts["no_answer"] += 1
            return 0
        if verifier == "exact":
            return int(exact.is_correct(answer, problem["answer"]))
        if verifier == "math-verify":
            return self._math(answer, problem)
        return int(self.run_program(problem, program_text(answer)) == "passed")

    def __call__(self, problem: dict, completion) -> tuple[int, int]:
        self.counts["truncated"] += int(completion.truncated)
        return self.correct(problem, completion.text), int(prompts.format_ok(completion.text))

    @classmethod
    def for_spec(cls, spec: dict) -> "Grader":
        """The grader a job's spec asks for (its `sandbox` section: the config's)."""
        section = spec.get("sandbox") or {}
        return cls(sandbox_config=SandboxConfig.from_config(section),
                   **{k: section.get(k, default) for k, default in RETRY_KEYS.items()})

    # --- math ----------------------------------------------------------------
    MATH_STATS = {"parse_failures": "math_unparsable", "timeouts": "math_timeout", "errors": "math_error"}

    def _math(self, answer: str, problem: dict) -> int:
        verifier = math_verifier()
        before = dict(verifier.stats)  # math is graded from one thread: the difference is this call's
        try:
            ok = verifier.is_correct(answer, problem["answer"])
        except ValueError as e:  # the gold, not the model: bad data, named by problem
            raise ValueError(f"problem {problem['id']!r}: {e}") from None
        self._count("math_verified")
        for stat, key in self.MATH_STATS.items():
            if verifier.stats[stat] > before[stat]:
                self._count(key)
        return int(ok)

    # --- code ----------------------------------------------------------------
    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] = self.counts.get(key, 0) + n

    def limits_for(self, problem: dict) -> SandboxLimits:
        if self.limits is not None:
            return self.limits
        return TOY_LIMITS if problem["source"] == "toy_code" else SandboxLimits()

    def run_program(self, problem: dict, code: str) -> str:
        """The program's verdict on the problem's tests: "passed" or the failing outcome's name."""
        self._count("programs")
        if self.mechanism is None:  # raises SandboxUnavailable, saying what to install or enable
            self.mechanism = sandbox.check(self.sandbox_config).describe()
        tests, limits = problem["tests"], self.limits_for(problem)
        key = (code, tuple((t["input"], t["output"]) for t in tests), limits, self.sandbox_config)
        with _VERDICTS_LOCK:
            verdict = _VERDICTS.get(key)
            if verdict is not None:
                _VERDICTS.move_to_end(key)
        if verdict is not None:
            self._count("cache_hits")
        else:
            verdict = self._verdict(code, tests, limits)
            with _VERDICTS_LOCK:  # a verdict: harness failures raise before one is made
                _VERDICTS[key] = verdict
                if len(_VERDICTS) > CACHE_SIZE:
                    _VERDICTS.popitem(last=False)
        self._count(verdict)
        return verdict

    def _verdict(self, code: str, tests: list[dict], limits: SandboxLimits) -> str:
        if not compiles(code):
            return "syntax_error"
        first = self._sandbox(code, tests[:1], limits)
        outcomes = [first]
        if first is Outcome.PASSED and len(tests) > 1:
            rest = tests[1:]
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(rest))) as pool:
                outcomes += list(pool.map(lambda t: self._sandbox(code, [t], limits), rest))
        failed = next((o for o in outcomes if o is not Outcome.PASSED), None)
        return Outcome.PASSED.value if failed is None else failed.value

    def _sandbox(self, code: str, tests: list[dict], limits: SandboxLimits) -> Outcome:
        """One test's outcome; a harness failure is rerun, never returned (see the module's doc)."""
        for attempt in range(self.retries + 1):
            if attempt:
                self._count("sandbox_retries")
                time.sleep(RETRY_BACKOFF_S[min(attempt, len(RETRY_BACKOFF_S)) - 1])
            result = sandbox.run_tests(code, tests, limits, config=self.sandbox_config)
            self._count("sandbox_runs", len(result.outcomes))
            outcome, detail = result.outcomes[0], result.details[0]
            if outcome is not Outcome.SANDBOX_ERROR:
                self._sandbox_ran = True
                return outcome
            self._count("sandbox_error")
            with self._lock:
                self._harness_failures += 1
                failures, runs = self._harness_failures, self.counts["sandbox_runs"]
            if not self._sandbox_ran and failures >= self.UNAVAILABLE_AFTER:
                raise SandboxUnavailable(f"the code sandbox failed on every program so far: {detail.message}")
            if failures >= self.UNAVAILABLE_AFTER and failures > self.max_error_share * runs:
                raise SandboxFailure(
                    f"the code sandbox failed {failures} of {runs} test runs (over sandbox.max_error_share = "
                    f"{self.max_error_share}); the last: {detail.message}. A harness failure is no verdict on a "
                    "program: this job stops rather than grade on noise (a machine short of memory or "
                    "processes?); rerun it when the node is less loaded")
        raise SandboxFailure(f"the code sandbox failed {self.retries + 1} times in a row on one test of a program "
                             f"(sandbox.retries = {self.retries}); the last: {detail.message}. A harness failure is "
                             "no verdict on a program: this job stops rather than grade it")
