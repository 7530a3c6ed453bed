"""Grading code end to end: toy_code problems' programs through the Grader and the sandbox.

Standard library only (no torch), so that tests/test_unprivileged.py can run this
file, with tests/test_sandbox.py, as an ordinary user it creates.
"""

from __future__ import annotations

import pytest

from agon.completion import Completion
from agon.data import toy_code
from agon.verify import grading
from agon.verify.grading import Grader, SandboxFailure, SandboxUnavailable
from agon.verify.sandbox import Outcome, SandboxConfig, SandboxLimits, run_tests


def completion(program: str, plan: str = "p") -> Completion:
    text = f"<think>{plan}</think>{plan}<answer>{program}</answer>"
    return Completion("Q: x\n", text, [1], [1] * len(text), truncated=False)


def test_reference_programs_pass_in_the_sandbox():
    """Every problem of a pool spanning the levels: its reference program passes its own tests, sandboxed."""
    pool = toy_code.generate(16, 4)
    assert {p["difficulty"] for p in pool} == {1, 2, 3, 4}
    for p in pool:
        result = run_tests(toy_code.parse(p["prompt"]).program, p["tests"], grading.TOY_LIMITS)
        assert result.passed, (p, result.details)


def test_a_pool_graded_end_to_end_reference_programs_right_slips_wrong():
    """The toy code domain's grading as training does it: completions in, (correct, format) out."""
    pool = toy_code.generate(24, 11)
    g = Grader()
    for p in pool:
        task = toy_code.parse(p["prompt"])
        assert g(p, completion(task.program)) == (1, 1), p
        slipped = task.program.replace("+", "-", 1) if "+" in task.program else task.program + "\nprint(0)"
        assert g(p, completion(slipped))[0] == 0, (p, slipped)
    c = g.counts
    assert c["passed"] == len(pool) and c.get("sandbox_error", 0) == 0 and c["sandbox_runs"] >= 2 * len(pool), c
    assert g.mechanism and g.mechanism["isolation"] == "bwrap", g.mechanism


@pytest.fixture(autouse=True)
def fresh_verdict_cache():
    """Verdicts are cached process-wide: each test counts its own sandbox runs."""
    grading.clear_cache()
    yield
    grading.clear_cache()


PROBLEM = {"id": "toy_code-x", "prompt": "n:3n+1", "difficulty": 1, "source": "toy_code",
           "tests": [{"input": "2\n", "output": "7\n"}, {"input": "0\n", "output": "1\n"},
                     {"input": "10\n", "output": "31\n"}]}
RIGHT = "n=int(input())\nprint(3*n+1)"


def test_grader_right_wrong_crash_timeout_counted_apart():
    g = Grader()
    assert g(PROBLEM, completion(RIGHT)) == (1, 1)
    assert g(PROBLEM, completion("print(7)")) == (0, 1)                      # passes test 1 only
    assert g(PROBLEM, completion("n=int(input())\nprint(3*n+2)")) == (0, 1)  # fails test 1
    assert g(PROBLEM, completion("print(1/0)")) == (0, 1)
    assert g(PROBLEM, completion("while True:\n pass")) == (0, 1)
    assert g(PROBLEM, completion("print(3*n+")) == (0, 1)
    assert g(PROBLEM, Completion("", "<think>x</think>no answer", [1], [1], truncated=True)) == (0, 0)
    c = g.counts
    assert c["graded"] == 7 and c["no_answer"] == 1 and c["truncated"] == 1 and c["programs"] == 6
    outcomes = {k: c.get(k, 0) for k in ("passed", "wrong_answer", "runtime_error", "timeout", "syntax_error",
                                         "sandbox_error")}
    assert outcomes == {"passed": 1, "wrong_answer": 2, "runtime_error": 1, "timeout": 1, "syntax_error": 1,
                        "sandbox_error": 0}, c
    # test 1 runs alone; only a program that passes it runs the other two (concurrently):
    # right 3, "print(7)" 3, the three that fail test 1 one each, the syntax error none
    assert c["sandbox_runs"] == 3 + 3 + 1 + 1 + 1, c


def test_grader_caches_programs_and_strips_a_fence():
    g = Grader()
    for _ in range(3):
        assert g.correct(PROBLEM, completion(RIGHT).text) == 1
    assert g.correct(PROBLEM, completion(f"```python\n{RIGHT}\n```").text) == 1
    assert g.counts["sandbox_runs"] == 3 and g.counts["cache_hits"] == 3 and g.counts["passed"] == 4
    other = {**PROBLEM, "tests": PROBLEM["tests"][:1]}  # same program, other tests: its own verdict
    assert g.correct(other, completion(RIGHT).text) == 1 and g.counts["sandbox_runs"] == 4
    # process-wide: another grader (the next evaluation of the same job) reuses the verdicts
    g2 = Grader()
    assert g2.correct(PROBLEM, completion(RIGHT).text) == 1
    assert g2.counts["cache_hits"] == 1 and "sandbox_runs" not in g2.counts
    # ...but not across limits: a verdict depends on them
    g3 = Grader(limits=SandboxLimits(cpu_time_s=1, wall_time_s=2.5))
    assert g3.correct(PROBLEM, completion(RIGHT).text) == 1 and g3.counts["sandbox_runs"] == 3


def test_a_harness_failure_is_rerun_never_graded_and_stops_grading_when_the_sandbox_cannot_run():
    broken = SandboxLimits(python="no-such-python-agon")
    g = Grader(limits=broken)
    with pytest.raises(SandboxUnavailable, match="no-such-python-agon"):
        g.correct(PROBLEM, completion("print(99)").text)
    assert g.counts["sandbox_error"] == Grader.UNAVAILABLE_AFTER and "sandbox_error" in g.counts
    assert g.counts["sandbox_retries"] == Grader.UNAVAILABLE_AFTER - 1 and "wrong_answer" not in g.counts


def _flaky(monkeypatch, fail_first: int):
    """sandbox.run_tests whose first `fail_first` runs end in a sandbox_error (an OOM kill, say)."""
    from agon.verify import sandbox

    real, calls = sandbox.run_tests, {"n": 0}

    def run_tests(code, tests, limits=None, stop_on_first_failure=True, config=None):
        calls["n"] += 1
        if calls["n"] <= fail_first:
            report = sandbox.CaseReport(Outcome.SANDBOX_ERROR, "killed by SIGKILL (exit status -9) that neither ...",
                                        exit_code=-9)
            return sandbox.SandboxResult(1, [report.outcome], [report])
        return real(code, tests, limits, stop_on_first_failure, config)

    monkeypatch.setattr(sandbox, "run_tests", run_tests)
    monkeypatch.setattr(grading, "RETRY_BACKOFF_S", (0.0,))
    return calls


def test_a_killed_run_is_rerun_and_the_program_keeps_its_own_verdict(monkeypatch):
    g = Grader(max_error_share=1.0)
    g.correct(PROBLEM, completion(RIGHT).text)  # a program has run: the sandbox works
    grading.clear_cache()
    _flaky(monkeypatch, fail_first=2)
    assert g.correct(PROBLEM, completion(RIGHT).text) == 1  # not a runtime_error, not a 0
    assert g.counts["sandbox_error"] == 2 and g.counts["sandbox_retries"] == 2 and g.counts["passed"] == 2
    assert "runtime_error" not in g.counts


def test_a_test_that_keeps_failing_in_the_harness_stops_the_job(monkeypatch):
    g = Grader(retries=2, max_error_share=1.0)
    g.correct(PROBLEM, completion(RIGHT).text)
    grading.clear_cache()
    _flaky(monkeypatch, fail_first=100)
    with pytest.raises(SandboxFailure, match=r"failed 3 times in a row .*sandbox.retries = 2"):
        g.correct(PROBLEM, completion(RIGHT).text)
    assert "wrong_answer" not in g.counts and g.counts["passed"] == 1  # nothing graded from the failures
    assert len(grading._VERDICTS) == 0  # no verdict remembered from the failures
    monkeypatch.undo()  # the sandbox works again
    assert Grader().correct(PROBLEM, completion(RIGHT).text) == 1


def test_a_job_whose_share_of_harness_failures_passes_the_bound_stops(monkeypatch):
    g = Grader(retries=5, max_error_share=0.05)
    g.correct(PROBLEM, completion(RIGHT).text)  # 3 runs
    grading.clear_cache()
    _flaky(monkeypatch, fail_first=3)
    with pytest.raises(SandboxFailure, match=r"failed 3 of 6 test runs .*sandbox.max_error_share = 0.05"):
        g.correct(PROBLEM, completion(RIGHT).text)


def test_the_config_sets_the_retries_and_the_bound():
    g = Grader.for_spec({"sandbox": {"isolation": "bwrap", "retries": 1, "max_error_share": 0.2}})
    assert (g.retries, g.max_error_share, g.sandbox_config) == (1, 0.2, SandboxConfig(isolation="bwrap"))
    assert (Grader.for_spec({}).retries, Grader.for_spec({}).max_error_share) == (3, 0.05)


def test_math_grading_unchanged():
    g = Grader()
    problem = {"id": "m", "prompt": "2+3=?", "answer": "5", "difficulty": 1, "source": "toy_math"}
    assert g(problem, completion("5")) == (1, 1) and g(problem, completion("6")) == (0, 1)
    assert g.counts == {"graded": 2, "no_answer": 0, "truncated": 0}


def test_compiles_never_runs():
    assert grading.compiles(RIGHT) and not grading.compiles("print(")
    assert not grading.compiles("a\x00b")
    assert grading.compiles("import os\nos._exit(3)")  # compiled only


def test_a_sandbox_that_cannot_work_stops_grading_at_once_and_is_not_remembered():
    """No bwrap: the first code problem raises, saying what to install; nothing is cached as a verdict."""
    broken = Grader(sandbox_config=SandboxConfig(bwrap="/nonexistent/bwrap"))
    for _ in range(2):
        with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
            broken.correct(PROBLEM, completion(RIGHT).text)
    assert "passed" not in broken.counts and broken.counts.get("sandbox_error", 0) == 0
    assert Grader().correct(PROBLEM, completion(RIGHT).text) == 1  # the same program, a working sandbox


def test_verdicts_are_kept_apart_by_isolation():
    g = Grader()
    assert g.correct(PROBLEM, completion(RIGHT).text) == 1 and g.counts["sandbox_runs"] == 3
    unisolated = Grader(sandbox_config=SandboxConfig(isolation="rlimits"))
    assert unisolated.correct(PROBLEM, completion(RIGHT).text) == 1
    assert unisolated.counts["sandbox_runs"] == 3 and "cache_hits" not in unisolated.counts
    assert unisolated.mechanism == {"isolation": "rlimits"}
