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


def test_clean_checkpoints_keeps_results_valid(finished_run):
    """`snakemake clean_checkpoints` drops finished cells' resumable state; nothing reruns after it."""
    results = finished_run / "results" / "test"
    states = sorted(p.parent for p in (results / "checkpoints").glob("*/*/seed*/checkpoint.pt"))
    trained = list((results / "train").glob("*/*/seed*/adapters"))
    assert trained and len(states) == len(trained), states  # one per training cell
    # the state of a cell that has not finished (killed, or running now) must stay
    unfinished = results / "checkpoints" / "toy" / "unfinished_cell" / "seed0"
    shutil.copytree(states[0], unfinished)
    snakemake(finished_run, "clean_checkpoints", "--configfile", str(ROOT / "config" / "test.yaml"))
    assert not any(s.exists() for s in states) and (unfinished / "checkpoint.pt").exists()
    log = (results / "logs" / "clean_checkpoints.log").read_text()
    assert f"removed the state of {len(states)} finished cells" in log and "kept 1" in log, log
    assert "kept results/test/checkpoints/toy/unfinished_cell/seed0: the cell has not finished" in log
    shutil.rmtree(unfinished.parent)
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

def _cells(config, table):
    """The evaluation cells (trained method, or the untrained base) a table's rows read."""
    picks = config.get("picks", {})
    evaluations = [e for row in config["tables"][table].get("rows", []) for e in picks.get(row, [row])
                   if e in config["evaluations"]]
    return {config["evaluations"][e]["method"] or "untrained" for e in evaluations}


def _manifest(path):
    manifest = json.loads(path.read_text())
    manifest["provenance"].pop("git_commit")  # differs only if someone commits between the runs
    return manifest


def test_same_config_reproduces_splits_and_tables(finished_run, tmp_path):
    """Same config, same machine: the splits byte for byte, and the cheapest table with a
    trained cell, rebuilt from scratch in a second work dir, from identical records."""
    config = load_config(ROOT / "config" / "test.yaml")
    trained = [t for t in config["tables"] if _cells(config, t) - {"untrained"}]
    table = min(trained, key=lambda t: (len(_cells(config, t)), t))
    snakemake(tmp_path, f"results/test/tables/{table}.csv", "--configfile", str(ROOT / "config" / "test.yaml"))
    first, second = finished_run / "results" / "test", tmp_path / "results" / "test"

    splits = sorted(p.relative_to(first) for p in (first / "data").rglob("*.jsonl"))
    assert splits and splits == sorted(p.relative_to(second) for p in (second / "data").rglob("*.jsonl"))
    for rel in splits:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), f"{rel} differs between runs"
    manifests = sorted(p.relative_to(first) for p in (first / "data").rglob("manifest.json"))
    assert manifests
    for rel in manifests:
        assert _manifest(first / rel) == _manifest(second / rel), f"{rel} differs between runs"

    records = sorted(p.relative_to(second) for p in (second / "eval").rglob("*.jsonl"))
    assert _cells(config, table) <= {rel.parts[2] for rel in records}  # eval/<model>/<cell>/seed<s>/
    for rel in records:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), f"{rel}: records differ between runs"
    outputs = sorted(p.name for p in (second / "tables").glob(f"{table}.*"))
    assert {f"{table}.csv", f"{table}.md"} <= set(outputs)
    for name in outputs:
        a, b = (r / "tables" / name for r in (first, second))
        assert a.read_text() == b.read_text(), f"{name} differs between runs"
    rows = list(csv.DictReader(open(second / "tables" / f"{table}.csv")))
    assert any(r["n"] and r["ci_high"] for r in rows), rows  # numbers, not only absent rows
