"""`--use-conda` builds, for each job, the env its config needs: the GPU stack (envs/gpu.yaml:
vLLM and its CUDA torch) only for vLLM generation. Lists every job's env through
scripts/job_envs.py (Snakemake's DAG, no conda needed)."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GPU_RULES = {"train", "evaluate", "curve"}


def envs_of(configfile: str, tmp_path: Path) -> list[tuple[str, str, str]]:
    (tmp_path / "tests").symlink_to(ROOT / "tests")  # paper_cpu.yaml's stand-ins, relative to the workdir
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "job_envs.py"), "--configfile",
                           str(ROOT / configfile), "--workdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [tuple(line.split("\t")) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("configfile", ["config/config.yaml", "config/test.yaml", "config/paper_cpu.yaml"])
def test_cpu_configs_never_build_the_gpu_env(configfile, tmp_path):
    jobs = envs_of(configfile, tmp_path)
    rules = Counter(rule for rule, _, _ in jobs)
    assert rules["train"] and rules["evaluate"], rules
    assert {env for rule, _, env in jobs if rule != "all"} == {"envs/cpu.yaml"}, jobs


def test_the_paper_config_runs_generation_jobs_in_the_gpu_env(tmp_path):
    jobs = envs_of("config/paper.yaml", tmp_path)
    by_rule = {}
    for rule, _, env in jobs:
        by_rule.setdefault(rule, set()).add(env)
    assert Counter(rule for rule, _, _ in jobs)["evaluate"] == 78
    for rule, envs in by_rule.items():
        expected = {"-"} if rule == "all" else {"envs/gpu.yaml"} if rule in GPU_RULES else {"envs/cpu.yaml"}
        assert envs == expected, (rule, envs)


def test_the_gpu_profile_is_the_slurm_profile_deploying_the_conda_envs():
    import yaml

    slurm = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    gpu = yaml.safe_load((ROOT / "profiles" / "slurm-gpu" / "config.yaml").read_text())
    assert gpu == {**slurm, "software-deployment-method": "conda"}
    text = (ROOT / "profiles" / "slurm-gpu" / "config.yaml").read_text()
    assert "driver >= 580" in text and "config/paper.yaml" in text
