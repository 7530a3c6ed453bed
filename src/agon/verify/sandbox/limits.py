"""What a run may use (`SandboxLimits`), and what a test's verdict says (`Outcome`, `CaseReport`,
`SandboxResult`); the errors that stop grading. The security model: docs/sandbox.md."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

# Tools are looked up only here, never on the caller's PATH.
TRUSTED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
NOBODY = 65534


class Outcome(str, enum.Enum):
    PASSED = "passed"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    SANDBOX_ERROR = "sandbox_error"


class SandboxUnavailable(RuntimeError):
    """The code sandbox cannot run programs here; the message says what to install or enable."""


class SandboxFailure(RuntimeError):
    """The code sandbox kept failing around programs (agon.verify.grading): no verdict can be trusted."""


@dataclass(frozen=True)
class SandboxLimits:
    cpu_time_s: int = 2  # all processes together (and each alone: RLIMIT_CPU, whole seconds)
    wall_time_s: float = 5.0
    memory_bytes: int = 512 << 20  # each process's address space, and all processes' resident memory together
    output_bytes: int = 8 << 20  # per stream (stdout, stderr)
    file_size_bytes: int = 16 << 20  # per file
    disk_bytes: int = 64 << 20  # everything written: work directory, /tmp and /dev/shm are one tmpfs
    max_processes: int = 64  # this run's processes and threads, its own count (bwrap)
    python: str = "python3"  # a name looked up on TRUSTED_PATH, or a path
    uid: int = NOBODY  # who runs the sandbox when the harness is root
    gid: int = NOBODY

    def __post_init__(self):
        for name in ("cpu_time_s", "wall_time_s", "memory_bytes", "output_bytes", "file_size_bytes", "disk_bytes",
                     "max_processes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {getattr(self, name)}")
        if self.uid == 0 or self.gid == 0:
            raise ValueError("SandboxLimits: the sandbox user must not be root")


@dataclass(frozen=True)
class CaseReport:
    """What happened in one test; `stdout`/`stderr` are excerpts for logs."""

    outcome: Outcome
    message: str
    # Exit status of the tree: 128+N when the program died of signal N,
    # -N when the harness killed the tree with signal N.
    exit_code: int | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0  # all of the program's processes
    stdout: str = ""
    stderr: str = ""


@dataclass(frozen=True)
class SandboxResult:
    n_tests: int
    outcomes: list[Outcome] = field(default_factory=list)
    details: list[CaseReport] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every test ran and passed."""
        return len(self.outcomes) == self.n_tests and all(o is Outcome.PASSED for o in self.outcomes)

    @property
    def sandbox_error(self) -> bool:
        """The harness failed somewhere: the verdict says nothing about the code."""
        return Outcome.SANDBOX_ERROR in self.outcomes
