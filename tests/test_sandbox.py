"""Code sandbox: hostile programs are contained and reported as what they are.

Needs root (the sandbox drops to nobody and creates namespaces); without it
these tests fail with the sandbox's own message rather than being skipped.
"""

from __future__ import annotations

import glob
import os
import resource
import signal
import socket
import subprocess
import tempfile
import textwrap
import time
import uuid

import pytest

from agon.verify import sandbox
from agon.verify.sandbox import NOBODY, Outcome, SandboxLimits, normalize_output, run_tests

# Small limits keep the hostile cases fast.
LIMITS = SandboxLimits(cpu_time_s=1, wall_time_s=2.0, memory_bytes=256 << 20, output_bytes=1 << 20)
ECHO_DOUBLE = "print(2 * int(input()))"


def run(code: str, tests=None, limits: SandboxLimits = LIMITS, **kwargs):
    tests = tests if tests is not None else [{"input": "", "output": ""}]
    return run_tests(textwrap.dedent(code), tests, limits, **kwargs)


def only_report(result):
    assert len(result.details) == 1, result.details
    return result.details[0]


def sandbox_user_pids() -> set[int]:
    found = subprocess.run(["pgrep", "-u", str(NOBODY)], capture_output=True, text=True)
    return {int(pid) for pid in found.stdout.split()}


def new_sandbox_pids(baseline: set[int], within_s: float = 2.0) -> set[int]:
    """Sandbox-user processes not in `baseline`, after letting teardown finish."""
    deadline = time.monotonic() + within_s
    while (new := sandbox_user_pids() - baseline) and time.monotonic() < deadline:
        time.sleep(0.05)
    return new


def kill_pids(pids: set[int]) -> None:
    # Stop all first so a surviving fork bomb cannot refill the slots.
    for signum in (signal.SIGSTOP, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass


@pytest.fixture(autouse=True)
def sandbox_baseline():
    """Fail any test after which new sandbox-user processes remain, and kill them.

    Only processes that appeared during the test are touched, so unrelated
    daemons running as nobody are left alone.
    """
    baseline = sandbox_user_pids()
    yield baseline
    stray: set[int] = set()
    for _ in range(5):
        found = new_sandbox_pids(baseline, within_s=0.5)
        if not found:
            break
        stray |= found
        kill_pids(found)
    survivors = new_sandbox_pids(baseline, within_s=1.0)
    assert not stray, f"sandbox-user processes survived the test and were killed: {sorted(stray)}; still alive: {sorted(survivors)}"


# ------------------------------------------------------------ ordinary programs


def test_correct_program_passes_every_test():
    tests = [{"input": f"{n}\n", "output": f"{2 * n}\n"} for n in (1, 21, -5)]
    result = run(ECHO_DOUBLE, tests)
    assert result.outcomes == [Outcome.PASSED] * 3
    assert result.passed and not result.sandbox_error


def test_wrong_program_is_wrong_answer():
    result = run("print(3 * int(input()))", [{"input": "21", "output": "42"}])
    assert result.outcomes == [Outcome.WRONG_ANSWER]
    assert not result.passed
    assert only_report(result).stdout == "63\n"


def test_crashing_program_is_runtime_error():
    report = only_report(run("print(42)\n1 / 0", [{"input": "", "output": "42"}]))
    assert report.outcome is Outcome.RUNTIME_ERROR  # right output, but it crashed
    assert "ZeroDivisionError" in report.stderr


def test_program_runs_unprivileged_in_its_own_directory():
    report = only_report(
        run(
            """
            import os
            print(os.getuid(), os.getgid(), os.getgroups(), sorted(os.listdir(".")))
            """
        )
    )
    assert report.stdout == f"{NOBODY} {NOBODY} [] ['main.py']\n"


def test_each_test_gets_a_fresh_directory_removed_afterwards():
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "agon_sandbox_*")))
    code = """
        import os
        print(sorted(os.listdir(".")))
        with open("scratch", "w") as f:  # writing its own directory is allowed
            f.write("x" * 1000)
        print(open("scratch").read() == "x" * 1000)
        """
    tests = [{"input": "", "output": "['main.py']\nTrue"}] * 2
    assert run(code, tests).outcomes == [Outcome.PASSED] * 2
    after = set(glob.glob(os.path.join(tempfile.gettempdir(), "agon_sandbox_*")))
    assert after == before


def test_stop_on_first_failure():
    tests = [{"input": "1", "output": "2"}, {"input": "2", "output": "5"}, {"input": "3", "output": "6"}]
    stopped = run(ECHO_DOUBLE, tests)
    assert stopped.outcomes == [Outcome.PASSED, Outcome.WRONG_ANSWER]
    assert not stopped.passed
    full = run(ECHO_DOUBLE, tests, stop_on_first_failure=False)
    assert full.outcomes == [Outcome.PASSED, Outcome.WRONG_ANSWER, Outcome.PASSED]
    assert not full.passed


@pytest.mark.parametrize(
    "printed, expected, outcome",
    [
        ("1 2   \n3\t\n", "1 2\n3\n", Outcome.PASSED),  # trailing spaces on a line
        ("1 2\n3\n\n\n", "1 2\n3", Outcome.PASSED),  # trailing blank lines
        ("1 2\r\n3\r\n", "1 2\n3\n", Outcome.PASSED),  # CRLF line ends
        ("1 2\n3", "1 2\n3\n  \n", Outcome.PASSED),  # expected side normalised too
        ("1  2\n3\n", "1 2\n3\n", Outcome.WRONG_ANSWER),  # inner spacing matters
        (" 1 2\n3\n", "1 2\n3\n", Outcome.WRONG_ANSWER),  # leading spacing matters
        ("\n1 2\n3\n", "1 2\n3\n", Outcome.WRONG_ANSWER),  # leading blank line matters
        ("1 2\n", "1 2\n3\n", Outcome.WRONG_ANSWER),  # missing line
    ],
)
def test_whitespace_normalisation(printed, expected, outcome):
    result = run(f"import sys\nsys.stdout.write({printed!r})", [{"input": "", "output": expected}])
    assert result.outcomes == [outcome]


def test_normalize_output():
    assert normalize_output("a  \r\nb\t\n\n \n") == "a\nb"
    assert normalize_output("  a\n\nb") == "  a\n\nb"


# ------------------------------------------------------------ hostile programs


def test_infinite_loop_is_stopped_by_the_cpu_limit():
    started = time.monotonic()
    report = only_report(run("while True:\n    pass"))
    assert report.outcome is Outcome.TIMEOUT
    assert "CPU" in report.message
    assert time.monotonic() - started < LIMITS.wall_time_s + 3


def test_sigxcpu_is_a_timeout_even_when_rusage_reads_under_the_limit():
    """The kernel's per-tick check can kill at 0.98 s of rusage for a 1 s limit (seen under load)."""
    from agon.verify.sandbox import _classify, _Run

    run_ = _Run(started=True, exit_code=128 + signal.SIGXCPU, cpu_s=0.977, stderr=b"CPU time limit exceeded\n")
    report = _classify(run_, "", LIMITS)
    assert report.outcome is Outcome.TIMEOUT and "CPU" in report.message
    crashed = _Run(started=True, exit_code=1, cpu_s=0.977, stderr=b"ZeroDivisionError\n")
    assert _classify(crashed, "", LIMITS).outcome is Outcome.RUNTIME_ERROR


def test_sleeping_program_is_stopped_by_the_wall_clock():
    started = time.monotonic()
    report = only_report(run("import time\ntime.sleep(60)"))
    assert report.outcome is Outcome.TIMEOUT
    assert "wall clock" in report.message
    assert time.monotonic() - started < LIMITS.wall_time_s + 3


def test_fork_bomb_hits_the_process_limit_and_leaves_nothing(sandbox_baseline):
    started = time.monotonic()
    report = only_report(run("import os\nwhile True:\n    os.fork()"))
    # Forks are refused (RLIMIT_NPROC binds the unprivileged user), the
    # exception kills the program, and the pid namespace takes the rest.
    assert report.outcome is Outcome.RUNTIME_ERROR
    assert "BlockingIOError" in report.stderr
    assert time.monotonic() - started < LIMITS.wall_time_s + 3
    assert new_sandbox_pids(sandbox_baseline) == set(), "processes of the sandbox user survived the run"


def test_persistent_fork_bomb_that_leaves_its_session_is_killed(sandbox_baseline):
    code = """
        import os
        os.setsid()  # out of the harness's process group
        while True:
            try:
                if os.fork() == 0:
                    os.setsid()
            except OSError:
                pass
        """
    started = time.monotonic()
    report = only_report(run(code))
    assert report.outcome is Outcome.TIMEOUT
    assert time.monotonic() - started < LIMITS.wall_time_s + 3
    assert new_sandbox_pids(sandbox_baseline) == set(), "processes of the sandbox user survived the run"


@pytest.mark.parametrize(
    "code",
    [
        "x = bytearray(4 << 30)",  # one allocation far over the limit
        "chunks = []\nwhile True:\n    chunks.append(bytearray(8 << 20))",  # steady growth
    ],
)
def test_memory_hog_is_memory_limit(code):
    # RLIMIT_AS makes the allocation fail with MemoryError, reported as memory_limit.
    report = only_report(run(code, limits=SandboxLimits(cpu_time_s=2, wall_time_s=3.0, memory_bytes=128 << 20)))
    assert report.outcome is Outcome.MEMORY_LIMIT
    assert "MemoryError" in report.stderr


@pytest.fixture
def escape_targets():
    """Paths outside the work directory; any file that does appear is removed."""
    tag = uuid.uuid4().hex
    outside = [
        os.path.join(tempfile.gettempdir(), f"agon_escape_{tag}"),
        f"/var/tmp/agon_escape_{tag}",
        f"/dev/shm/agon_escape_{tag}",
        f"/root/agon_escape_{tag}",
    ]
    yield outside
    for path in outside:
        if os.path.exists(path):
            os.unlink(path)


@pytest.fixture(params=["at once", "one mount at a time"])
def read_only_path(request, monkeypatch):
    """Both ways the init script makes the namespace read-only: the one mount_setattr
    call, and the per-mount fallback it takes where that call fails."""
    if request.param == "one mount at a time":
        monkeypatch.setattr(sandbox, "_INIT_SCRIPT", sandbox._INIT_TEMPLATE.format(all_read_only="false"))
    return request.param


def test_writes_outside_the_work_directory_fail_and_leave_no_file(escape_targets, read_only_path):
    targets = [*escape_targets, "../agon_escape"]  # the last: the harness's own directory
    code = f"""
        for path in {targets!r}:
            try:
                with open(path, "w") as f:
                    f.write("escaped")
                print("WROTE", path)
            except OSError:
                print("blocked")
        """
    report = only_report(run(code, [{"input": "", "output": "blocked\n" * len(targets)}]))
    assert report.outcome is Outcome.PASSED, report.stdout
    assert [path for path in escape_targets if os.path.exists(path)] == []
    # An unguarded attempt is a plain runtime error, reported with its cause.
    report = only_report(run(f"open({escape_targets[0]!r}, 'w').write('x')"))
    assert report.outcome is Outcome.RUNTIME_ERROR
    assert "Read-only file system" in report.stderr
    assert not os.path.exists(escape_targets[0])


def test_socket_to_localhost_fails():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)
        port = server.getsockname()[1]
        code = f"""
            import socket
            socket.create_connection(("127.0.0.1", {port}), timeout=1)
            print("connected")
            """
        report = only_report(run(code, [{"input": "", "output": "connected"}]))
        assert report.outcome is Outcome.RUNTIME_ERROR
        assert "Network is unreachable" in report.stderr
        with pytest.raises(TimeoutError):
            server.accept()


def test_printing_gigabytes_is_output_limit_without_buffering_it():
    peak_before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    code = """
        import sys
        block = b"x" * (1 << 20)
        for _ in range(4096):  # 4 GiB
            sys.stdout.buffer.write(block)
        """
    report = only_report(run(code))
    assert report.outcome is Outcome.OUTPUT_LIMIT
    assert time.monotonic() - started < 3.0
    growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before_kb) / 1024
    assert growth_mb < 64, f"harness memory grew by {growth_mb:.0f} MB"


def test_file_size_limit():
    limits = SandboxLimits(cpu_time_s=1, wall_time_s=2.0, file_size_bytes=1 << 20)
    report = only_report(run("open('big', 'wb').write(b'x' * (4 << 20))", limits=limits))
    assert report.outcome is Outcome.RUNTIME_ERROR
    assert "File too large" in report.stderr


# ------------------------------------------------------------ harness failures


def test_missing_python_is_sandbox_error_not_wrong_answer():
    limits = SandboxLimits(python="/nonexistent/python3")
    result = run(ECHO_DOUBLE, [{"input": "1", "output": "2"}], limits=limits)
    assert result.outcomes == [Outcome.SANDBOX_ERROR]
    assert result.sandbox_error and not result.passed
    assert "/nonexistent/python3" in result.details[0].message


def test_a_program_that_never_started_is_sandbox_error():
    # /bin/true exits 0 with empty output, which would "pass" an empty
    # expected output; the missing start announcement gives it away.
    result = run("print()", [{"input": "", "output": ""}], limits=SandboxLimits(python="/bin/true"))
    assert result.outcomes == [Outcome.SANDBOX_ERROR]
    assert "never started" in result.details[0].message


def test_not_root_is_sandbox_error(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    report = only_report(run(ECHO_DOUBLE, [{"input": "1", "output": "2"}]))
    assert report.outcome is Outcome.SANDBOX_ERROR
    assert "root" in report.message


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="no tests"):
        run_tests("print(1)", [])
    with pytest.raises(ValueError, match="test 0"):
        run_tests("print(1)", [{"input": "1"}])
    with pytest.raises(ValueError, match="cpu_time_s"):
        SandboxLimits(cpu_time_s=0)
    with pytest.raises(ValueError, match="root"):
        SandboxLimits(uid=0)


def test_this_machine_can_enforce_the_sandbox():
    # Fails loudly, instead of skipping, where the sandbox cannot work.
    assert os.geteuid() == 0, "the sandbox needs root: run the tests as root"
    report = only_report(run(ECHO_DOUBLE, [{"input": "1", "output": "2"}]))
    assert report.outcome is Outcome.PASSED, f"sandbox unusable here: {report.message}\n{report.stderr}"
