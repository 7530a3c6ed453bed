"""config/paper.yaml: the paper's whole matrix plans (dry run) and lints clean.

Nothing here runs a job: `snakemake -n` builds the DAG of every table and figure
(no hub, no GPU needed), `snakemake --lint` checks the rules under this config.
About 20 s.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agon.config import load as load_config
from agon.model_sources import locate

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "config" / "paper.yaml"
ALARMING = re.compile(r"warn|error|exception|missing input|ambiguous|deprecat", re.I)


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
           "--configfile", str(PAPER), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def config():
    return load_config(PAPER)


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    proc = snakemake(tmp_path_factory.mktemp("paper"), "-n")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc.stdout + proc.stderr


def job_blocks(log: str) -> list[tuple[str, dict]]:
    """(rule, {field: text}) for every job the dry run prints."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", log):
        m = re.match(r"(?:local)?rule (\w+):\n", block)
        if m:
            fields = dict(re.findall(r"^\s+(\w+): (.*)$", block, re.M))
            jobs.append((m.group(1), fields))
    return jobs


def test_paper_settings(config):
    import yaml

    assert "extends" not in yaml.safe_load(PAPER.read_text()) and config["run"] == "paper"
    t, s = config["train"], config["sampling"]
    assert (t["lr"], t["warmup_ratio"], t["epochs"], t["lam"], t["beta"], t["lora"]["rank"]) == (5e-5, 0.1, 1, 0.5, 0, 16)
    for stage in ("train", "eval"):
        assert (s[stage]["temperature"], s[stage]["top_p"]) == (0.6, 0.95)
        assert s[stage]["max_new_tokens"] == 8192  # "a few k" (ours; the paper gives no number)
    methods = config["methods"]
    assert methods["grpo"]["group_size"] == 16
    assert all(m["group_size"] == 8 for k, m in methods.items() if m["kind"] == "pair")
    assert methods["length_tiebreak"]["gamma"] == 0.5 and not any(m.get("gamma") for k, m in methods.items()
                                                                   if k != "length_tiebreak")
    deepmath = config["datasets"]["deepmath_hard"]
    assert deepmath["heldout"] == 300 and deepmath["options"] == {"difficulty": 8, "difficulty_match": "eq",
                                                                  "keep_binary": False}
    assert len(config["seeds"]) == 3
    assert config["generation"]["backend"] == "vllm"
    assert {k: m["path"] for k, m in config["models"].items()} == {
        "qwen3-0.6b": "Qwen/Qwen3-0.6B", "qwen3-1.7b": "Qwen/Qwen3-1.7B", "qwen3-4b": "Qwen/Qwen3-4B",
        "qwen3.5-2b": "Qwen/Qwen3.5-2B", "gemma-4-e4b": "google/gemma-4-E4B-it",
        "qwen3-1.7b-code": "Qwen/Qwen3-1.7B"}
    for key, model in config["models"].items():
        assert locate(key, model) == {"where": "hub", "repo": model["path"], "revision": None, "cache_dir": None}


def test_table_names_and_rows_mirror_the_embedded_default(config):
    default = load_config(ROOT / "config" / "config.yaml")
    for name, table in default["tables"].items():
        assert name in config["tables"], f"{name} is in config.yaml but not in paper.yaml"
        for key in ("rows", "kind", "contrasts", "pairs"):
            assert table.get(key) == config["tables"][name].get(key), (name, key)
    assert "table6_code" in config["tables"]
    assert set((default.get("figures") or {})) <= set(config["figures"])


def test_dry_run_plans_every_job_quietly(config, dry_run):
    jobs = job_blocks(dry_run)
    counts: dict[str, int] = {}
    for rule, _ in jobs:
        counts[rule] = counts.get(rule, 0) + 1
    seeds = len(config["seeds"])
    # every (model, trained method) cell of every table and Figure 7b, per seed
    assert counts["train"] == seeds * (9 + 4 * 2 + 3)
    assert counts["evaluate"] == seeds * (10 + 4 * 3 + 4)
    assert counts["fetch_model"] == len(config["models"])
    assert counts["prepare"] == len(config["datasets"])
    assert counts["table"] == len(config["tables"])
    assert counts["curve"] == seeds * len(config["figures"]["fig7b"]["rows"])
    assert counts.get("base", 0) == 0  # no toy model at paper scale
    outputs = " ".join(f.get("output", "") for _, f in jobs)
    for table in config["tables"]:
        assert f"results/paper/tables/{table}.csv" in outputs
    for figure in ("fig7a.png", "fig7b.png"):
        assert f"results/paper/figures/{figure}" in outputs
    assert "results/paper/report.md" in outputs
    # the config's per-rule resources reach the jobs (and so the Slurm profile)
    res = config["resources"]
    for rule, fields in jobs:
        if rule in res:
            for key, value in res[rule].items():
                assert f"{key}={value}" in fields["resources"], (rule, key, fields["resources"])
    for line in dry_run.splitlines():
        if not re.match(r"^\s+(input|output|log|reason|wildcards|resources):", line):
            assert not ALARMING.search(line), line


def test_lint_is_clean(tmp_path):
    proc = snakemake(tmp_path, "--lint")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "Lints for" not in out and "Congratulations, your workflow is in a good condition!" in out, out[-6000:]


def test_the_resource_arithmetic_beside_paper_yaml_is_the_scripts():
    """paper.yaml's resource comments are scripts/resource_arithmetic.py's output, and its
    parameter counts are the published sizes (0.6B, 1.7B, 4B)."""
    out = subprocess.run([sys.executable, "scripts/resource_arithmetic.py"], capture_output=True, text=True,
                         check=True).stdout
    rows = {line[:28].strip(): line[28:].split() for line in out.splitlines() if line[:28].strip()}
    assert [round(float(x), 1) for x in rows["parameters (B)"]] == [0.6, 1.7, 4.0]
    paper = Path("config/paper.yaml").read_text().splitlines()
    for label, comment in (("weights bf16 (GiB), each", "weights bf16 (GiB, each)"),
                           ("activations (GiB)", "activations (GiB)"),
                           ("as share of the GPU", "trainer peak, share of GPU")):
        line = next(ln for ln in paper if comment in ln)
        assert re.findall(r"\d+\.\d+", line)[:3] == rows[label], (label, line)
