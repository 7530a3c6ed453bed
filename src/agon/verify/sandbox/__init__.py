"""Run untrusted Python programs against stdin/stdout unit tests, without root.

How programs are isolated and limited, and what each outcome means: docs/sandbox.md.
Modules: limits (limits, verdict types), mechanism (which bwrap; `check`), jail (bwrap's
command line), supervise and watch (the run's process tree), outcome (the verdict), run
(`run_tests`).
"""

# The underscored names are internals that tests and benchmarks/sandbox_speed.py reach through here.
from .jail import _OPEN_FILES, _drop_root, _python
from .limits import NOBODY, CaseReport, Outcome, SandboxFailure, SandboxLimits, SandboxResult, SandboxUnavailable
from .mechanism import SandboxConfig, _bundled_bwrap, _runnable_by_sandbox_user, check
from .outcome import _classify, _Run, normalize_output
from .run import run_tests

__all__ = ["NOBODY", "CaseReport", "Outcome", "SandboxConfig", "SandboxFailure", "SandboxLimits", "SandboxResult",
           "SandboxUnavailable", "check", "normalize_output", "run_tests"]
