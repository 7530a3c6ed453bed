"""The real pipeline, end to end, on config/test.yaml (about a minute on 2 cores)."""

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agon.config import load as load_config

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
           "--cores", "2", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("wf")
    snakemake(workdir, "--configfile", str(ROOT / "config" / "test.yaml"))
    return workdir


def _records(results, cell, evaluation, benchmark="heldout"):
    path = results / "eval" / "toy" / cell / "seed0" / f"{evaluation}.{benchmark}.jsonl"
    return [json.loads(line) for line in open(path)]


def test_pipeline_produces_tables_from_records(finished_run):
    results = finished_run / "results" / "test"
    manifest = json.loads((results / "data" / "toy_math" / "manifest.json").read_text())
    n_heldout = manifest["splits"]["heldout"]["count"]
    assert n_heldout == 40 and len(manifest["splits"]["heldout"]["hash"]) == 16

    rows = list(csv.DictReader(open(results / "tables" / "table3_main.csv")))
    methods = [r["method"] for r in rows]
    assert methods[:5] == ["zero_shot", "grpo", "self_refine", "grpo_self_cascade", "moa"]
    assert "agon" in methods and "agon (post hoc)" in methods and "coop_drafter_alone" in methods
    config = load_config(ROOT / "config" / "test.yaml")
    for row in rows:
        # a pick row reads the chosen direction's records; any other row its own evaluation's
        evaluation = row["selected"].split(" on ")[0] if row["selected"] else row["method"]
        cell = config["evaluations"][evaluation]["method"] or "untrained"
        records = _records(results, cell, evaluation)
        assert len(records) == n_heldout == int(row["n"])
        assert int(row["k"]) == sum(r["correct"] for r in records)
        assert float(row["ci_low"]) <= float(row["pass_at_1"]) <= float(row["ci_high"])
        for r in records:
            assert {"id", "stages", "answer", "correct", "final_length", "total_tokens"} <= set(r)
    # the paper's number sits beside ours
    agon = next(r for r in rows if r["method"] == "agon")
    assert float(agon["paper_pass_at_1"]) == 61.0 and agon["selected"].endswith("on validation")
    cascade = _records(results, "agon", "agon_ab")
    assert all(len(r["stages"]) == 2 and r["total_tokens"] == sum(s["length"] for s in r["stages"])
               for r in cascade)
    for name in ("table3_main", "table7_ablations", "table8_density"):
        assert (results / "tables" / f"{name}.md").read_text().startswith("# Table")
    report = (results / "report.md").read_text()
    assert "Table 7 - ablations" in report and "figures/fig7a.png" in report
    assert (results / "figures" / "fig7a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_training_changed_the_adapter(finished_run):
    from safetensors.torch import load_file

    adapter = finished_run / "results/test/train/toy/grpo/seed0/adapters/A/adapter_model.safetensors"
    weights = load_file(adapter)
    lora_b = [v for k, v in weights.items() if "lora_B" in k]
    metrics = [json.loads(l) for l in open(finished_run / "results/test/train/toy/grpo/seed0/metrics.jsonl")]
    assert [m["step"] for m in metrics] == list(range(len(metrics))) and metrics
    kept = sum(s["groups"] - s["dropped_groups"] for m in metrics for s in m["streams"].values())
    assert kept > 0, "no group had reward variance: the test base gives RL no signal"
    assert lora_b and any(v.abs().sum() > 0 for v in lora_b), "lora_B still at its zero init"


def test_rerun_has_nothing_to_do(finished_run):
    proc = snakemake(finished_run, "--configfile", str(ROOT / "config" / "test.yaml"), "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_tables_rebuild_without_training(finished_run):
    tables = finished_run / "results" / "test" / "tables"
    before = (tables / "table3_main.csv").read_text()
    shutil.rmtree(tables)
    proc = snakemake(finished_run, "--configfile", str(ROOT / "config" / "test.yaml"), "-n")
    planned = proc.stdout + proc.stderr
    assert "table" in planned and "train" not in planned.split("Job stats:")[-1].split("total")[0]
    snakemake(finished_run, "--configfile", str(ROOT / "config" / "test.yaml"))
    assert (tables / "table3_main.csv").read_text() == before


def test_bad_config_names_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "config" / "test.yaml").read_text().replace("problems_per_step:", "problem_per_step:"))
    proc = snakemake(tmp_path, "--configfile", str(bad), "-n", check=False)
    assert proc.returncode != 0
    assert "unknown config key 'train.problem_per_step'" in proc.stdout + proc.stderr
