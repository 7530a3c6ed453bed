"""From what was observed of one run (`_Run`) to its verdict (`CaseReport`), in the order
docs/sandbox.md, "Outcomes", gives."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

from .limits import CaseReport, Outcome, SandboxLimits

# How much of each stream a report keeps for logs.
_REPORT_CHARS = 2000
_MEMORY_ERROR = re.compile(rb"^MemoryError\b", re.M)


@dataclass
class _Run:
    """What the harness saw of one run (supervise._execute fills it in)."""

    started: bool = False  # the bootstrap announced the program
    killed_on_wall_clock: bool = False
    output_overflow: str = ""  # name of the stream that overflowed
    over_limit: str = ""  # "cpu" or "memory": all processes together
    watched: int = 0  # samples of the run's /proc that the whole-program watch took
    exit_code: int | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    stdout: bytes = b""
    stderr: bytes = b""
    error: str = ""


def normalize_output(text: str) -> str:
    """Strip trailing whitespace on each line (CR included) and trailing blank lines."""
    return "\n".join(line.rstrip() for line in text.split("\n")).rstrip("\n")


def _classify(run: _Run, expected: str, limits: SandboxLimits) -> CaseReport:
    def report(outcome: Outcome, message: str) -> CaseReport:
        return CaseReport(
            outcome=outcome,
            message=message,
            exit_code=run.exit_code,
            wall_s=round(run.wall_s, 3),
            cpu_s=round(run.cpu_s, 3),
            stdout=run.stdout[:_REPORT_CHARS].decode("utf-8", "replace"),
            stderr=run.stderr[-_REPORT_CHARS:].decode("utf-8", "replace"),
        )

    if run.error:
        return report(Outcome.SANDBOX_ERROR, run.error)
    if not run.started:
        why = "killed on the wall clock before it started" if run.killed_on_wall_clock else f"exit status {run.exit_code}"
        return report(Outcome.SANDBOX_ERROR, f"the program never started ({why}); see stderr")
    if run.killed_on_wall_clock:
        return report(Outcome.TIMEOUT, f"wall clock limit of {limits.wall_time_s} s")
    if run.output_overflow:
        return report(Outcome.OUTPUT_LIMIT, f"{run.output_overflow} exceeded {limits.output_bytes} bytes")
    if run.over_limit == "cpu":
        return report(Outcome.TIMEOUT, f"CPU time limit of {limits.cpu_time_s} s, all processes together")
    if run.over_limit == "memory":
        return report(Outcome.MEMORY_LIMIT, f"resident memory of all processes together over {limits.memory_bytes} bytes")
    if run.exit_code != 0:
        # RLIMIT_AS makes allocations fail; CPython turns that into MemoryError.
        # Checked first: a hog can run out of CPU while dying of it.
        if _MEMORY_ERROR.search(run.stderr[-4096:]):
            return report(Outcome.MEMORY_LIMIT, f"MemoryError under the {limits.memory_bytes}-byte limit")
        # RLIMIT_CPU ends the program with SIGXCPU, or SIGKILL at the hard limit.
        # The kernel checks the limit per tick, and the rusage read back can come
        # out a little under it: SIGXCPU decides alone.
        if run.exit_code == 128 + signal.SIGXCPU or run.cpu_s >= limits.cpu_time_s:
            return report(Outcome.TIMEOUT, f"CPU time limit of {limits.cpu_time_s} s")
        if run.exit_code in (-signal.SIGKILL, 128 + signal.SIGKILL):
            # Every SIGKILL the harness sends is decided above (wall clock, output, limits), and
            # the CPU limit's is too. A program cannot SIGKILL its own pid 1 (the kernel drops
            # signals from inside a pid namespace to its init that it has no handler for, and
            # SIGKILL has none), nor bwrap, which its namespace hides. What is left came from
            # outside: the kernel's OOM killer on a machine short of memory, or another
            # process. Not the program's verdict: the grader retries it (agon.verify.grading).
            # With isolation rlimits the program could SIGKILL itself; that too is retried,
            # and a job that keeps seeing it fails saying so.
            return report(Outcome.SANDBOX_ERROR, f"killed by SIGKILL (exit status {run.exit_code}) that neither "
                          "the harness nor a limit sent: the kernel's OOM killer or another process; not the "
                          "program's verdict")
        return report(Outcome.RUNTIME_ERROR, f"exit status {run.exit_code}")
    actual = run.stdout.decode("utf-8", "replace")
    if normalize_output(actual) == normalize_output(expected):
        return report(Outcome.PASSED, "output matches")
    return report(Outcome.WRONG_ANSWER, "output differs from the expected output")
