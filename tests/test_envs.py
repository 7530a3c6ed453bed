"""The environments in envs/ and requirements/ agree with pyproject.toml and the rules.

envs/cpu.yaml pins exactly pyproject's runtime dependencies (less snakemake and
its Slurm plugin, which live in the environment that runs snakemake).
requirements/gpu.txt, the GPU install without conda, pins pyproject's runtime
dependencies plus vllm, with the torch that vLLM pins and without the Slurm
plugin (it cannot share an environment with vLLM 0.33.0); envs/gpu.yaml pins the
same less snakemake. No conda is needed: the files are only parsed. The resolve
tests at the end ask PyPI (metadata only, through uv) whether the pins have a
solution; without network they skip, unless AGON_REQUIRE_NETWORK=1.
"""

import os
import re
import shutil
import subprocess
import time
import tomllib
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
ENVS = ROOT / "envs"
GPU_REQUIREMENTS = ROOT / "requirements" / "gpu.txt"
GPU_INSTALL = "pip install -r requirements/gpu.txt && pip install --no-deps -e ."
WORKFLOW_ONLY = {"snakemake", "snakemake-executor-plugin-slurm"}
# What vllm==0.33.0 requires of packages we also pin (from its package metadata).
# torch is the conflict: pyproject pins the 2.13.0 CPU build; the GPU env follows vLLM.
VLLM_VERSION = "0.33.0"
VLLM_REQUIRES = {
    "torch": "==2.14.0",
    "transformers": ">=5.16.1,<5.21.0",
    "tokenizers": ">=0.23.2",
    "jsonschema": ">=4.23.0",
}
GPU_OVERRIDES = {"torch": "2.14.0"}
# flash-linear-attention: Qwen3.5's linear-attention kernels for the trainer (requirements/gpu.txt)
GPU_ADDED = {"vllm": VLLM_VERSION, "flash-linear-attention": "0.6.0"}
# snakemake-executor-plugin-slurm>=2.7.0 requires numpy>=2.4.5; vllm 0.33.0 requires
# mistral-common, which requires numpy<2.4 on Python < 3.13 (requirements/gpu.txt says more)
GPU_LEFT_OUT = {"snakemake-executor-plugin-slurm"}
def pins(reqs) -> dict[str, str]:
    """name -> version for a list of exact `name==version` requirements."""
    out = {}
    for line in reqs:
        req = Requirement(line)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"not an exact pin: {line!r}"
        name = canonicalize_name(req.name)
        assert name not in out, f"{name} pinned twice"
        out[name] = specs[0].version
    return out


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


@pytest.fixture(scope="module")
def base_pins(pyproject) -> dict[str, str]:
    return pins(pyproject["dependencies"])


def load_env(name: str) -> dict:
    env = yaml.safe_load((ENVS / f"{name}.yaml").read_text())
    assert isinstance(env, dict) and isinstance(env.get("dependencies"), list), name
    return env


def env_pins(env: dict) -> dict[str, str]:
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "one pip: section"
    return pins(pip_sections[0])


def conda_specs(env: dict) -> dict[str, str]:
    out = {}
    for d in env["dependencies"]:
        if isinstance(d, str):
            name, _, version = d.partition("=")
            out[name.strip()] = version.lstrip("=").strip()
    return out


@pytest.mark.parametrize("name", ["cpu", "gpu"])
def test_env_parses_with_python_and_pip(name, pyproject):
    env = load_env(name)
    assert env["channels"] and "defaults" not in env["channels"]
    conda = conda_specs(env)
    assert "pip" in conda
    assert conda.get("python"), "python version must be pinned"
    assert set(conda) == {"python", "pip"}, "everything else comes from PyPI, pinned like pyproject"
    python = conda["python"]
    assert f"{python}.0" in SpecifierSet(pyproject["requires-python"]), python
    # the package itself goes in by the post-deploy script snakemake runs next to the env file
    deploy = ENVS / f"{name}.post-deploy.sh"
    assert deploy.exists() and "pip install --no-deps -e" in deploy.read_text()


def test_cpu_env_pins_are_pyprojects(base_pins):
    cpu = env_pins(load_env("cpu"))
    expected = {k: v for k, v in base_pins.items() if k not in WORKFLOW_ONLY}
    assert cpu == expected


def requirement_lines(path: Path) -> list[str]:
    """The requirements of a pip requirements file (no options, comments or blank lines)."""
    out = []
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        assert not line.startswith("-"), f"{path.name}: options are not used here: {line!r}"
        out.append(line)
    return out


@pytest.fixture(scope="module")
def gpu_requirement_pins() -> dict[str, str]:
    return pins(requirement_lines(GPU_REQUIREMENTS))


def test_gpu_requirements_are_pyprojects_with_the_documented_differences(base_pins, gpu_requirement_pins):
    gpu = gpu_requirement_pins
    expected = {k: v for k, v in base_pins.items() if k not in GPU_LEFT_OUT} | GPU_ADDED | GPU_OVERRIDES
    assert gpu == expected
    # the only departures from pyproject are the documented ones
    differing = {k for k in gpu if k in base_pins and gpu[k] != base_pins[k]}
    assert differing == set(GPU_OVERRIDES)
    assert set(base_pins) - set(gpu) == GPU_LEFT_OUT
    text = GPU_REQUIREMENTS.read_text()
    assert GPU_INSTALL in text, "the file documents its install"
    assert "uv pip install -r requirements/gpu.txt && uv pip install --no-deps -e ." in text
    for name in (*GPU_OVERRIDES, *GPU_LEFT_OUT):
        assert name in text.split("torch==2.14.0\n")[0], f"{name}: difference not documented in the header"


def test_gpu_env_pins_are_gpu_requirements_less_snakemake(gpu_requirement_pins):
    gpu = env_pins(load_env("gpu"))
    assert gpu == {k: v for k, v in gpu_requirement_pins.items() if k not in WORKFLOW_ONLY}


def test_gpu_env_pins_are_pyprojects_plus_vllm(base_pins):
    gpu = env_pins(load_env("gpu"))
    expected = {k: v for k, v in base_pins.items() if k not in WORKFLOW_ONLY} | GPU_ADDED | GPU_OVERRIDES
    assert gpu == expected
    differing = {k for k in gpu if k in base_pins and gpu[k] != base_pins[k]}
    assert differing == set(GPU_OVERRIDES)


def test_no_extra_pins_what_cannot_resolve(pyproject, base_pins):
    """An extra adding vllm (which pins torch==2.14.0) to torch==2.13.0 could never resolve."""
    extras = pyproject.get("optional-dependencies", {})
    assert "gpu" not in extras, f"the GPU stack is {GPU_REQUIREMENTS.relative_to(ROOT)}, not an extra"
    for name, reqs in extras.items():
        for line in reqs:
            req = canonicalize_name(Requirement(line).name)
            assert req not in GPU_ADDED, f"extra {name!r} adds {req}, which pins torch=={GPU_OVERRIDES['torch']}"
            assert req not in base_pins, f"extra {name!r} re-pins {req}"


@pytest.mark.parametrize("source", ["requirements", "env"])
def test_gpu_pins_satisfy_vllm(source, gpu_requirement_pins):
    gpu = gpu_requirement_pins if source == "requirements" else env_pins(load_env("gpu"))
    assert gpu["vllm"] == VLLM_VERSION, "vllm changed: update VLLM_REQUIRES from its metadata"
    for name, spec in VLLM_REQUIRES.items():
        assert gpu[name] in SpecifierSet(spec), f"{name}=={gpu[name]} but vllm {VLLM_VERSION} needs {spec}"


def test_vllm_requirements_match_installed_metadata():
    try:
        requires = metadata.requires("vllm") or []
        version = metadata.version("vllm")
    except metadata.PackageNotFoundError:
        pytest.skip("vllm not installed here (GPU extra); VLLM_REQUIRES is checked against the env file only")
    if version != VLLM_VERSION:
        pytest.skip(f"installed vllm is {version}, not {VLLM_VERSION}")
    found = {}
    for line in requires:
        req = Requirement(line)
        if req.marker is None and canonicalize_name(req.name) in VLLM_REQUIRES:
            found[canonicalize_name(req.name)] = SpecifierSet(str(req.specifier))
    assert found == {k: SpecifierSet(v) for k, v in VLLM_REQUIRES.items()}


# Which env each job gets (per config) is tests/test_job_envs.py's: it lists every job of the DAG.


# ---- do the pins resolve? (PyPI metadata through uv; no wheel is downloaded) ------------

PLATFORM = "x86_64-manylinux_2_28"
# a downloaded torch wheel alone is ~1 GB; metadata, the simple-index pages and the one
# tiny sdist built for its metadata (connection-pool, via snakemake) stay far below this
NO_WHEELS_CAP_BYTES = 250 * 2**20


def _network_missing(reason: str):
    if os.environ.get("AGON_REQUIRE_NETWORK") == "1":
        pytest.fail(f"{reason} (AGON_REQUIRE_NETWORK=1)")
    pytest.skip(f"{reason}; set AGON_REQUIRE_NETWORK=1 to make this a failure")


def _uv() -> str:
    found = ROOT / ".venv" / "bin" / "uv"
    exe = str(found) if found.exists() else shutil.which("uv")
    if exe is None:
        _network_missing("uv not found (.venv/bin/uv or PATH): cannot check that the pins resolve")
    return exe


def _index_url() -> str:
    return (os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL")
            or "https://pypi.org/simple/").rstrip("/") + "/"


@pytest.fixture(scope="module")
def uv_compile(tmp_path_factory):
    """compile(source, python, *extra_args) -> {name: version}, resolved by uv from PyPI."""
    uv = _uv()
    url = _index_url()
    try:
        urllib.request.urlopen(urllib.request.Request(url + "pip/", method="HEAD"), timeout=15).close()
    except urllib.error.HTTPError:
        pass  # it answered
    except OSError as exc:
        _network_missing(f"package index {url} unreachable ({exc})")
    # a fresh cache, so that its size shows nothing but metadata was fetched
    cache = tmp_path_factory.mktemp("uv-cache")

    def run(source: Path, python: str, *extra: str) -> dict[str, str]:
        cmd = [uv, "pip", "compile", str(source), "--python-platform", PLATFORM, "--python-version", python,
               "--no-header", "--no-annotate", "--quiet", "--no-config", *extra]
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT,
                              env={**os.environ, "UV_CACHE_DIR": str(cache)})
        seconds = time.monotonic() - start
        if done.returncode != 0 and re.search(r"dns error|Connect|timed out|Failed to fetch", done.stderr):
            _network_missing(f"uv could not reach the index: {done.stderr.strip()[-300:]}")
        assert done.returncode == 0, f"{source.name} does not resolve for Python {python}:\n{done.stderr}"
        size = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
        assert size < NO_WHEELS_CAP_BYTES, f"uv cache grew to {size >> 20} MiB: were wheels downloaded?"
        print(f"uv pip compile {source.name} (Python {python}): {seconds:.1f} s, cache {size >> 20} MiB")
        return pins(line for line in done.stdout.splitlines() if line and not line.startswith("#"))

    return run


@pytest.mark.parametrize("python", ["3.12", "3.11"])
def test_gpu_requirements_resolve(uv_compile, python, gpu_requirement_pins):
    resolved = uv_compile(GPU_REQUIREMENTS, python)
    assert resolved["torch"] == GPU_OVERRIDES["torch"] and resolved["vllm"] == VLLM_VERSION
    for name, version in gpu_requirement_pins.items():
        assert resolved.get(name) == version, f"{name}: pinned {version}, resolved {resolved.get(name)}"
    assert not GPU_LEFT_OUT & set(resolved)


@pytest.mark.parametrize("python", ["3.11", "3.12"])
def test_cpu_install_resolves_with_every_extra(uv_compile, python, base_pins):
    resolved = uv_compile(ROOT / "pyproject.toml", python, "--all-extras")
    for name, version in base_pins.items():
        assert resolved.get(name) == version, f"{name}: pinned {version}, resolved {resolved.get(name)}"
