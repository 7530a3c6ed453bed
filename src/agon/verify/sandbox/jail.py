"""Building the jail one test runs in: which mechanism (`Mechanism`), the bootstrap that sets
the rlimits inside it, bwrap's command line and mounts (with agon.verify.seccomp's filter), or,
with rlimits isolation, a host work directory. What each part enforces: docs/sandbox.md."""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from dataclasses import dataclass

from .. import seccomp
from .limits import NOBODY, TRUSTED_PATH, SandboxLimits

# Inside the sandbox: the writable tmpfs, which is also the program's directory.
_WORK = "/tmp"
# The whole environment of what the harness starts (bwrap, setpriv, the program).
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": _WORK}
_MSGQUEUE_BYTES = 1 << 20  # POSIX message queues: kernel memory, so kept small
# Open files per process: pipe and socket buffers are kernel memory that no /proc sum
# sees; this bounds them, with the process limit.
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
