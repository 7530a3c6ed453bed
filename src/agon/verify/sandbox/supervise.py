"""Supervising one run's process tree: starting it, reading its output under the output cap,
the wall clock and the whole-program watch, killing the tree as one and reaping it; and one
test from start to verdict (`_run_one`)."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import time

from .jail import (_ENV, Mechanism, _bwrap_command, _drop_root, _memfd, _program, _python, _rlimits_workdir,
                   _SetupError)
from .limits import CaseReport, Outcome, SandboxLimits, SandboxUnavailable
from .outcome import _classify, _Run
from .watch import _poll_until, _TreeWatch

_READ_CHUNK = 65536
# After a kill, the pipes close once every process holding them is gone.
_DRAIN_AFTER_KILL_S = 2.0
# A tree that closed its pipes has exited or is about to: wait for its exit status (and its
# rusage) until the wall clock limit, and at least this long, before killing it.
_REAP_AFTER_EOF_S = 1.0


def _run_one(code: str, test: dict, limits: SandboxLimits, mechanism: Mechanism, runs: list | None = None) -> CaseReport:
    """One test: its jail built, the run supervised, the verdict; `runs` collects each `_Run`."""
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


def _become_subreaper() -> None:
    """Adopt the runs' orphaned pid 1s, to reap them.

    When the harness kills bwrap (wall clock, limits), bwrap dies before it
    reaps its child, the run's pid 1: an orphan, and where the machine's pid
    1 does not reap (containers), a zombie for good. As a child subreaper
    this process inherits it instead, and `_execute` reaps it by the pid
    bwrap reported.
    (Any other orphaned grandchild of this process, of which a job makes
    none, waits for it too rather than for pid 1.)
    """
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SandboxUnavailable(f"prctl(PR_SET_CHILD_SUBREAPER) failed: errno {ctypes.get_errno()}")
