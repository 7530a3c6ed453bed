"""Run untrusted Python programs against stdin/stdout unit tests.

Each test runs in a fresh process tree built from util-linux tools:

    unshare --mount --net --pid --fork --kill-child --mount-proc   (as root)
      sh -c _INIT_SCRIPT WORKDIR ...      pid 1 of the new pid namespace (root)
        timeout --signal=KILL ...         backstop if this harness dies (root)
          setpriv --reuid --regid --clear-groups --no-new-privs
            prlimit --cpu --as --fsize --nproc --core
              python -I -c _BOOTSTRAP     the program, as the sandbox user

What is enforced where:
  * privileges: setpriv drops to `uid`/`gid` (default nobody, 65534) with no
    supplementary groups and no_new_privs (setuid binaries stay powerless).
    This is also what makes RLIMIT_NPROC bite: root ignores it.
  * CPU time, address space, file size, process count, no core files:
    rlimits set by prlimit on the program. RLIMIT_NPROC counts every process
    of the sandbox user on the machine, so runs in parallel share it.
  * network: a new, empty network namespace (loopback down): every
    connect, even to 127.0.0.1, fails.
  * filesystem: inside a private mount namespace every mount is remounted
    read-only, then the work directory is bound back read-write. The program
    can read what the sandbox user may read, but can write only its own
    directory (a fresh one per test, removed afterwards).
  * processes: the sandboxed tree lives in its own pid namespace whose pid 1
    is the root-owned `sh`; when it dies the kernel kills everything in the
    namespace, including processes that left our process group (setsid) or
    were orphaned. The harness kills the whole process group on the wall
    clock limit, which kills that pid 1.
  * wall clock and output size: enforced here, while reading the pipes.

Outcomes, in the order they are decided:
  sandbox_error  the program never ran (see below), or the harness failed;
  timeout        wall clock limit (harness kill), or the CPU rlimit fired;
  output_limit   stdout or stderr passed `output_bytes`: the harness stops
                 reading and kills the tree, so gigabytes never reach memory;
  memory_limit   non-zero exit with a MemoryError: RLIMIT_AS makes Python
                 allocations fail cleanly, which keeps a memory hog
                 deterministic (no OOM killer involved);
  runtime_error  any other non-zero exit or signal;
  passed / wrong_answer  outputs compared after `normalize_output` (trailing
                 whitespace per line and trailing blank lines are ignored;
                 leading and inner whitespace count).

Telling a harness failure from a program failure: the bootstrap writes one
byte to a private pipe just before it runs the program. If that byte never
arrives, the program never ran, and the test is a `sandbox_error` (missing
tool or interpreter, not running as root, ...) rather than a wrong answer.
"""

from __future__ import annotations

import enum
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

# Tools are looked up only here, never on the caller's PATH.
TRUSTED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
NOBODY = 65534
_READ_CHUNK = 65536
# How much of each stream a report keeps for logs.
_REPORT_CHARS = 2000
# After a kill, the pipes close once every process holding them is gone.
_DRAIN_AFTER_KILL_S = 2.0

# Every mount of the sandbox's private namespace read-only in ONE mount_setattr(2)
# call with AT_RECURSIVE (Linux >= 5.12): perl makes the raw syscall (442 on every
# architecture but alpha), no compiler needed. Exits non-zero where it cannot.
# ~1 ms, where remounting one `mount` process per mount costs ~1.3 ms each
# (util-linux 2.38's mount cannot remount recursively): 55 -> 36 ms per test here.
_ALL_READ_ONLY = (
    "perl -e 'my ($path, $attr) = (\"/\", pack(\"Q4\", 1, 0, 0, 0));"  # struct mount_attr: MOUNT_ATTR_RDONLY
    " syscall(442, -100, $path, 0x8000, $attr, 32) == 0 or exit 1'"  # AT_FDCWD, AT_RECURSIVE, its size
)

_INIT_TEMPLATE = r"""
set -eu
work=$1; shift
# Every mount of this private namespace read-only, at once where the kernel can...
if ! {all_read_only} 2>/dev/null; then
    # ...else one at a time (skipping those already read-only; mountinfo
    # escapes a space as \040, which printf %b decodes)...
    while read -r _ _ _ _ target options _; do
        case $options in ro|ro,*) continue ;; esac
        case $target in *\\*) target=$(printf '%b' "$target") ;; esac
        mount -o remount,bind,ro "$target"
    done < /proc/self/mountinfo
fi
# ...then the work directory bound onto itself and made writable again.
mount --bind "$work" "$work"
mount -o remount,bind,rw "$work"
cd "$work"
"$@"
"""
_INIT_SCRIPT = _INIT_TEMPLATE.format(all_read_only=_ALL_READ_ONLY)

# argv: [-c, marker fd]. Refuse to run as root, announce that the program
# starts, close the announcement pipe, then run main.py as __main__.
_BOOTSTRAP = (
    "import os, sys, runpy\n"
    "if os.getuid() == 0 or os.geteuid() == 0: sys.exit('sandbox: still root')\n"
    "fd = int(sys.argv[1]); os.write(fd, b'R'); os.close(fd)\n"
    "sys.argv = ['main.py']\n"
    "runpy.run_path('main.py', run_name='__main__')\n"
)

_MEMORY_ERROR = re.compile(rb"^MemoryError\b", re.M)


class Outcome(str, enum.Enum):
    PASSED = "passed"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    SANDBOX_ERROR = "sandbox_error"


@dataclass(frozen=True)
class SandboxLimits:
    cpu_time_s: int = 2  # RLIMIT_CPU has whole-second resolution
    wall_time_s: float = 5.0
    memory_bytes: int = 512 << 20  # address space; Python raises MemoryError
    output_bytes: int = 8 << 20  # per stream (stdout, stderr)
    file_size_bytes: int = 16 << 20
    max_processes: int = 64  # shared by all runs under the same uid
    python: str = "python3"  # a name looked up on TRUSTED_PATH, or a path
    uid: int = NOBODY
    gid: int = NOBODY

    def __post_init__(self):
        for name in ("cpu_time_s", "wall_time_s", "memory_bytes", "output_bytes", "file_size_bytes", "max_processes"):
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
    cpu_s: float = 0.0
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


def normalize_output(text: str) -> str:
    """Strip trailing whitespace on each line (CR included) and trailing blank lines."""
    return "\n".join(line.rstrip() for line in text.split("\n")).rstrip("\n")


def run_tests(
    code: str,
    tests: list[dict],
    limits: SandboxLimits | None = None,
    stop_on_first_failure: bool = True,
) -> SandboxResult:
    """Run `code` once per test (fresh process and directory each time)."""
    limits = limits or SandboxLimits()
    if not tests:
        raise ValueError("run_tests: no tests given; an empty suite would pass any program")
    for i, test in enumerate(tests):
        if not isinstance(test, dict) or not isinstance(test.get("input"), str) or not isinstance(test.get("output"), str):
            raise ValueError(f"run_tests: test {i} must be a dict with str 'input' and 'output', got {test!r}")

    result = SandboxResult(n_tests=len(tests))
    base = tempfile.mkdtemp(prefix="agon_sandbox_")
    try:
        # Traversable but not listable by the sandbox user, so a program can
        # reach its own work directory and cannot find anyone else's.
        os.chmod(base, 0o711)
        for i, test in enumerate(tests):
            report = _run_one(code, test, limits, os.path.join(base, f"work{i}"))
            result.outcomes.append(report.outcome)
            result.details.append(report)
            if stop_on_first_failure and report.outcome is not Outcome.PASSED:
                break
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return result


def _run_one(code: str, test: dict, limits: SandboxLimits, workdir: str) -> CaseReport:
    # The input lives outside the work directory, readable by the program
    # only through the inherited descriptor.
    stdin_path = workdir + ".stdin"
    try:
        command = _command(limits, workdir)
        _prepare(workdir, code, limits)
        with open(stdin_path, "wb") as f:
            f.write(test["input"].encode("utf-8"))
        with open(stdin_path, "rb") as stdin:
            run = _execute(command, stdin, limits)
    except _SetupError as exc:
        return CaseReport(Outcome.SANDBOX_ERROR, str(exc))
    except OSError as exc:
        return CaseReport(Outcome.SANDBOX_ERROR, f"could not prepare the sandbox: {exc}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if os.path.exists(stdin_path):
            os.unlink(stdin_path)
    return _classify(run, test["output"], limits)


def _prepare(workdir: str, code: str, limits: SandboxLimits) -> None:
    os.mkdir(workdir, 0o700)
    os.chown(workdir, limits.uid, limits.gid)
    program = os.path.join(workdir, "main.py")
    with open(program, "w", encoding="utf-8") as f:
        f.write(code)
    os.chown(program, limits.uid, limits.gid)


class _SetupError(Exception):
    pass


def _command(limits: SandboxLimits, workdir: str) -> list[str]:
    if os.geteuid() != 0:
        raise _SetupError("sandbox must run as root (to drop privileges and create namespaces); euid is " f"{os.geteuid()}")
    tools = {}
    for tool in ("unshare", "sh", "timeout", "setpriv", "prlimit", "mount"):
        tools[tool] = shutil.which(tool, path=TRUSTED_PATH)
        if tools[tool] is None:
            raise _SetupError(f"sandbox tool {tool!r} not found on {TRUSTED_PATH}")
    python = shutil.which(limits.python, path=TRUSTED_PATH)
    if python is None:
        raise _SetupError(f"sandbox python {limits.python!r} not found (looked on {TRUSTED_PATH})")
    backstop_s = str(int(limits.wall_time_s) + 2)
    return [
        tools["unshare"], "--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--",
        tools["sh"], "-c", _INIT_SCRIPT, "sandbox-init", workdir,
        tools["timeout"], "--signal=KILL", backstop_s,
        tools["setpriv"], f"--reuid={limits.uid}", f"--regid={limits.gid}", "--clear-groups", "--no-new-privs", "--",
        tools["prlimit"],
        f"--cpu={limits.cpu_time_s}:{limits.cpu_time_s + 1}",
        f"--as={limits.memory_bytes}",
        f"--fsize={limits.file_size_bytes}",
        f"--nproc={limits.max_processes}",
        "--core=0",
        "--",
        python, "-I", "-c", _BOOTSTRAP,
    ]  # fmt: skip


@dataclass
class _Run:
    started: bool = False  # the bootstrap announced the program
    killed_on_wall_clock: bool = False
    output_overflow: str = ""  # name of the stream that overflowed
    exit_code: int | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    stdout: bytes = b""
    stderr: bytes = b""
    error: str = ""


def _execute(command: list[str], stdin, limits: SandboxLimits) -> _Run:
    run = _Run()
    marker_r, marker_w = os.pipe()
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            [*command, str(marker_w)],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(marker_w,),
            start_new_session=True,  # its own process group, killed as one
            env={"PATH": TRUSTED_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
        )
    except OSError as exc:
        os.close(marker_r)
        os.close(marker_w)
        run.error = f"could not start the sandbox: {exc}"
        return run
    os.close(marker_w)
    try:
        streams = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray(), marker_r: bytearray()}
        _pump(streams, started + limits.wall_time_s, limits.output_bytes, proc, run)
        run.stdout = bytes(streams[proc.stdout.fileno()])
        run.stderr = bytes(streams[proc.stderr.fileno()])
        run.started = bool(streams[marker_r])
    finally:
        # Always kill: a no-op for a tree that already exited, and the kill
        # of pid 1 takes down anything the program left behind.
        _kill_group(proc.pid)
        _drain({proc.stdout.fileno(), proc.stderr.fileno(), marker_r}, time.monotonic() + _DRAIN_AFTER_KILL_S)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        proc.stderr.close()
        os.close(marker_r)
    run.exit_code = proc.returncode
    run.wall_s = time.monotonic() - started
    run.cpu_s = usage.ru_utime + usage.ru_stime
    return run


def _pump(streams: dict[int, bytearray], deadline: float, cap: int, proc, run: _Run) -> None:
    """Read every stream to EOF, unless the deadline or the size cap comes first."""
    poller = select.poll()
    for fd in streams:
        poller.register(fd, select.POLLIN)
    open_fds = set(streams)
    while open_fds:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            run.killed_on_wall_clock = True
            return
        for fd, _ in poller.poll(remaining * 1000):
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                poller.unregister(fd)
                open_fds.discard(fd)
                continue
            streams[fd] += chunk
            if len(streams[fd]) > cap:
                run.output_overflow = "stdout" if fd == proc.stdout.fileno() else "stderr"
                return


def _drain(fds: set[int], deadline: float) -> None:
    """Discard what is left in the pipes until every writer has exited."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    while fds and time.monotonic() < deadline:
        for fd, _ in poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
            if not os.read(fd, _READ_CHUNK):
                poller.unregister(fd)
                fds.discard(fd)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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
    if run.exit_code != 0:
        # RLIMIT_AS makes allocations fail; CPython turns that into MemoryError.
        # Checked first: a hog can run out of CPU while dying of it.
        if _MEMORY_ERROR.search(run.stderr[-4096:]):
            return report(Outcome.MEMORY_LIMIT, f"MemoryError under the {limits.memory_bytes}-byte limit")
        # RLIMIT_CPU ends the program with SIGXCPU, or SIGKILL at the hard limit.
        # The kernel checks the limit per tick, and the rusage read back can come
        # out a little under it (0.98 s for a 1 s limit): SIGXCPU decides alone.
        if run.exit_code == 128 + signal.SIGXCPU or run.cpu_s >= limits.cpu_time_s:
            return report(Outcome.TIMEOUT, f"CPU time limit of {limits.cpu_time_s} s")
        return report(Outcome.RUNTIME_ERROR, f"exit status {run.exit_code}")
    actual = run.stdout.decode("utf-8", "replace")
    if normalize_output(actual) == normalize_output(expected):
        return report(Outcome.PASSED, "output matches")
    return report(Outcome.WRONG_ANSWER, "output differs from the expected output")
