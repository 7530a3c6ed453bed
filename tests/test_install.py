"""scripts/install.sh hands pip's settings on to uv, which reads no pip configuration: the
find-links (where a machine keeps its torch wheel) and the certificate bundle (a proxy's CA)."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _fake_venv(tmp_path: Path, config: dict[str, str]) -> Path:
    """A venv whose pip lists `config` as `pip config list` does (global.<key>='<value>', after an
    unrelated key) and whose uv prints its arguments."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    listing = "".join(f"global.{k}='{v}'\n" for k, v in config.items())
    (tmp_path / "listing").write_text("user.other='x'\n" + listing)
    scripts = {
        "python": "#!/bin/sh\nexit 0\n",
        "pip": f'#!/bin/sh\n[ "$1 $2" = "config list" ] || exit 1\ncat {tmp_path / "listing"}\n',
        "uv": '#!/bin/sh\necho "$@"\n',
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return tmp_path / "venv"


def _uv_arguments(venv: Path, env: dict[str, str]) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "SSL_CERT"))}
    ran = subprocess.run(["bash", "-c", '. scripts/install.sh && venv_install -e .'], cwd=ROOT,
                         env={**clean, "AGON_VENV": str(venv), **env}, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()


def test_pip_config_reaches_uv(tmp_path):
    venv = _fake_venv(tmp_path, {"find-links": "/wheels /more", "cert": "/etc/proxy-ca.pem"})
    args = _uv_arguments(venv, {})
    assert "--find-links /wheels --find-links /more --cert /etc/proxy-ca.pem" in args
    assert args.endswith("--compile-bytecode --find-links /wheels --find-links /more --cert /etc/proxy-ca.pem -e .")


def test_pip_environment_wins_over_its_config(tmp_path):
    venv = _fake_venv(tmp_path, {"find-links": "/wheels", "cert": "/etc/proxy-ca.pem"})
    args = _uv_arguments(venv, {"PIP_FIND_LINKS": "/env-wheels", "PIP_CERT": "/env-ca.pem"})
    assert "--find-links /env-wheels --cert /env-ca.pem -e ." in args and "/etc/proxy-ca.pem" not in args


def test_a_multi_line_find_links_value_is_split(tmp_path):
    venv = _fake_venv(tmp_path, {"find-links": "/wheels\\n/more"})  # `pip config list` prints a newline as \\n
    assert "--find-links /wheels --find-links /more -e ." in _uv_arguments(venv, {})


@pytest.mark.parametrize("config", [{}, {"find-links": "/wheels"}])
def test_no_certificate_no_cert_flag(tmp_path, config):
    args = _uv_arguments(_fake_venv(tmp_path, config), {})
    assert "--cert" not in args
