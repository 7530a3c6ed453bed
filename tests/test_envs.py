"""The conda environments in envs/ agree with pyproject.toml and the rules.

envs/cpu.yaml pins exactly pyproject's runtime dependencies (less snakemake and
its Slurm plugin, which live in the environment that runs snakemake); envs/gpu.yaml
adds the `gpu` extra (vllm) and, as its one deliberate difference, the torch that
vLLM pins. No conda is needed: the files are only parsed.
"""

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
ENVS = ROOT / "envs"
RULE_FILES = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
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
EXPECTED_ENV = {"prepare": "cpu", "base": "cpu", "fetch_model": "cpu", "table": "cpu", "train": "gpu",
                "evaluate": "gpu"}


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


def test_gpu_env_pins_are_pyprojects_plus_gpu_extra(base_pins, pyproject):
    gpu = env_pins(load_env("gpu"))
    extra = pins(pyproject["optional-dependencies"]["gpu"])
    expected = {k: v for k, v in base_pins.items() if k not in WORKFLOW_ONLY} | extra | GPU_OVERRIDES
    assert gpu == expected
    # the only departures from pyproject are the documented overrides
    differing = {k for k in gpu if k in base_pins and gpu[k] != base_pins[k]}
    assert differing == set(GPU_OVERRIDES)


def test_gpu_env_satisfies_vllm(pyproject):
    gpu = env_pins(load_env("gpu"))
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


def rule_conda_directives() -> dict[str, tuple[Path, str | None, bool]]:
    """rule name -> (file, conda path or None) for every rule in the workflow."""
    out = {}
    for path in RULE_FILES:
        text = path.read_text()
        starts = [(m.start(), m.group(1)) for m in re.finditer(r"^rule (\w+):", text, re.M)]
        for i, (start, rule) in enumerate(starts):
            end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
            block = text[start:end]
            m = re.search(r"^\s+conda:\s*\n\s+[\"']([^\"']+)[\"']", block, re.M)
            # `run:` executes in snakemake's own process, where snakemake refuses a conda env
            has_command = re.search(r"^\s+(shell|script):", block, re.M) is not None
            out[rule] = (path, m.group(1) if m else None, has_command)
    return out


def test_every_conda_directive_points_at_an_env_file():
    rules = rule_conda_directives()
    assert set(EXPECTED_ENV) <= set(rules)
    for rule, (path, env, has_command) in rules.items():
        if has_command:
            assert env is not None, f"rule {rule} ({path.name}) runs a command but names no conda env"
        if env is None:
            continue
        target = (path.parent / env).resolve()
        assert target.is_file(), f"rule {rule}: conda env {env} -> {target} does not exist"
        assert target.parent == ENVS, f"rule {rule}: env outside envs/: {target}"
        if rule in EXPECTED_ENV:
            assert target.stem == EXPECTED_ENV[rule], f"rule {rule} uses {target.name}"
