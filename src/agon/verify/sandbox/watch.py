"""The whole-program watch: the CPU time and resident memory of all a run's processes
together, read from the run's own /proc; and its pid 1, killed and reaped through a pidfd."""

from __future__ import annotations

import json
import os
import re
import signal
import time

from .limits import SandboxLimits

# How often the harness sums the CPU time and resident memory of a run's processes.
_WATCH_INTERVAL_S = 0.01
_PSS_INTERVAL_S = 0.1  # the proportional-share check (expensive), at most this often
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


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
        # times; past the limit, the proportional share (PSS) decides. Reading it
        # (smaps_rollup, per process) is expensive: at most every _PSS_INTERVAL_S.
        if pages * _PAGE_BYTES > limits.memory_bytes and time.monotonic() >= self.next_pss:
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
