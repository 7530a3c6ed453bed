"""`run_tests`: a program against its stdin/stdout tests, each in a fresh jail."""

from __future__ import annotations

from .limits import Outcome, SandboxLimits, SandboxResult
from .mechanism import SandboxConfig, check
from .supervise import _run_one


def run_tests(
    code: str,
    tests: list[dict],
    limits: SandboxLimits | None = None,
    stop_on_first_failure: bool = True,
    config: SandboxConfig | None = None,
) -> SandboxResult:
    """Run `code` once per test (fresh process tree and directory each time).

    Raises SandboxUnavailable (before running anything) where `config`'s
    isolation cannot work on this machine.
    """
    limits = limits or SandboxLimits()
    if not tests:
        raise ValueError("run_tests: no tests given; an empty suite would pass any program")
    for i, test in enumerate(tests):
        if not isinstance(test, dict) or not isinstance(test.get("input"), str) or not isinstance(test.get("output"), str):
            raise ValueError(f"run_tests: test {i} must be a dict with str 'input' and 'output', got {test!r}")
    mechanism = check(config or SandboxConfig())
    result = SandboxResult(n_tests=len(tests))
    for test in tests:
        report = _run_one(code, test, limits, mechanism)
        result.outcomes.append(report.outcome)
        result.details.append(report)
        if stop_on_first_failure and report.outcome is not Outcome.PASSED:
            break
    return result
