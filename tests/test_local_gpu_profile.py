"""profiles/local-gpu: one cell of the paper on one GPU, without Slurm (docs/one-gpu.md).

Dry runs of the real `snakemake --profile profiles/local-gpu -n` on config/paper.yaml (the DAG
alone: no hub, no GPU), a couple of seconds each, and one real run of a two-job toy workflow
under the profile (about 3 s); about 15 s in all:
* Agon on Qwen3-1.7B, seed 0 (a Table 5 cell) plans exactly that cell: its model's download,
  its data, its training and its evaluation, nothing of any other cell;
* the profile's `gpu=1` is in effect: snakemake holds a GPU job that asks for 4 GPUs to the
  profile's 1, and the same run through a copy of the profile without that line does not (so
  the test fails if the profile drops it); and in a real local run of a two-job workflow of
  its own, two jobs that each declare gpu=1 run one after the other;
* the page's pilot config and table-row config plan what the page says, and its
  table-to-model map is config/paper.yaml's.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from pipeline import job_blocks

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "profiles" / "local-gpu"
PAPER = ROOT / "config" / "paper.yaml"
DOC = ROOT / "docs" / "one-gpu.md"
CELL = "results/paper/eval/qwen3-1.7b/agon/seed0"
GPU_RULES = ("train", "evaluate")


def dry_run(workdir: Path, profile: Path, *args: str) -> str:
    """`snakemake --profile <profile> -n <args>` in `workdir` (the repository stays untouched)."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
           "--profile", str(profile), "-n", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert f"Using profiles {profile}" in log, log[:1000]  # the profile was read, not skipped
    return log


def spec(fields: dict) -> dict:
    return json.loads(re.search(r"--spec '(.*?)'", fields["shell"]).group(1))


def gpus(log: str) -> dict[str, int]:
    """The `gpu` resource each GPU job gets, by rule."""
    return {rule: int(re.search(r"\bgpu=(\d+)", f["resources"]).group(1))
            for rule, f in job_blocks(log) if rule in GPU_RULES}


def doc_config(first_line: str) -> str:
    """The YAML block of docs/one-gpu.md that starts with `first_line`."""
    for block in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S):
        if block.splitlines()[0].strip() == first_line:
            return block
    raise AssertionError(f"docs/one-gpu.md has no yaml block starting {first_line!r}")


@pytest.fixture(scope="module")
def cell_run(tmp_path_factory):
    return dry_run(tmp_path_factory.mktemp("cell"), PROFILE, CELL, "--configfile", str(PAPER))


def test_one_cell_plans_that_cell_and_nothing_else(cell_run):
    jobs = job_blocks(cell_run)
    assert Counter(rule for rule, _ in jobs) == {"fetch_model": 1, "prepare": 1, "train": 1, "evaluate": 1}
    by_rule = dict(jobs)
    assert by_rule["fetch_model"]["wildcards"] == "model=qwen3-1.7b"
    assert by_rule["prepare"]["wildcards"] == "dataset=deepmath_hard"
    assert by_rule["train"]["wildcards"] == "model=qwen3-1.7b, method=agon, seed=0"
    assert by_rule["evaluate"]["wildcards"] == "model=qwen3-1.7b, cell=agon, seed=0"
    assert by_rule["evaluate"]["output"] == CELL
    # every path of the plan (outputs, logs, checkpoints, the specs' paths) is this cell's
    mine = re.compile(r"results/paper/(?:(?:checkpoints/eval|checkpoints|logs/train|logs/eval|train|eval)"
                      r"/qwen3-1\.7b/agon/seed0(?:[/.].*)?|models/qwen3-1\.7b/base|logs/base/qwen3-1\.7b\.log"
                      r"|data/deepmath_hard(?:/.*)?|logs/prepare/deepmath_hard\.log)")
    paths = set(re.findall(r"results/[^\s'\",;]+", cell_run))
    assert paths and not [p for p in paths if not mine.fullmatch(p)], sorted(p for p in paths if not mine.fullmatch(p))
    # Table 5's Agon row: both cascade directions, on held-out and on validation (for the pick)
    assert spec(by_rule["evaluate"])["needs"] == [["agon_ab", "heldout"], ["agon_ab", "validation"],
                                                  ["agon_ba", "heldout"], ["agon_ba", "validation"]]
    assert spec(by_rule["train"])["train"]["max_steps"] is None  # the whole epoch
    for rule, fields in jobs:
        assert ("gpu=1" in fields["resources"]) == (rule in GPU_RULES), (rule, fields["resources"])
    # `cores: all` reached the scheduler: a GPU job gets the config's 8 threads, or every core there is
    from snakemake.utils import available_cpu_count

    assert int(by_rule["train"].get("threads", 1)) == min(8, available_cpu_count())


def test_the_profile_holds_every_gpu_job_to_one_gpu(tmp_path):
    ask = ("--set-resources", "train:gpu=4", "evaluate:gpu=4")
    assert gpus(dry_run(tmp_path / "with", PROFILE, CELL, *ask, "--configfile", str(PAPER))) == {
        "train": 1, "evaluate": 1}
    # the same run through a copy of the profile without its gpu=1: nothing holds the jobs
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert profile.pop("resources") in (["gpu=1"], {"gpu": 1})  # the two spellings snakemake reads
    dropped = tmp_path / "local-gpu-without-gpu"
    dropped.mkdir()
    (dropped / "config.yaml").write_text(yaml.safe_dump(profile))
    assert gpus(dry_run(tmp_path / "without", dropped, CELL, *ask, "--configfile", str(PAPER))) == {
        "train": 4, "evaluate": 4}


TWO_GPU_JOBS = """
rule all:
    input: "a", "b"

rule gpu_job:
    output: "{x,[ab]}"
    resources: gpu=1
    shell: "echo start {wildcards.x} >> events; sleep 1; echo end {wildcards.x} >> events; touch {output}"
"""


def test_under_the_profile_two_gpu_jobs_run_one_after_the_other(tmp_path):
    """A real local run (a two-rule workflow of its own, not the pipeline's): two independent jobs
    that each declare gpu=1 never overlap."""
    (tmp_path / "Snakefile").write_text(TWO_GPU_JOBS)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(tmp_path / "Snakefile"), "-d", str(tmp_path),
                           "--profile", str(PROFILE)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    events = (tmp_path / "events").read_text().split("\n")[:-1]
    first, second = events[0].split()[1], events[2].split()[1]
    assert events == [f"start {first}", f"end {first}", f"start {second}", f"end {second}"], events


def test_the_pages_pilot_config_plans_a_short_cell_of_its_own(tmp_path):
    pilot = tmp_path / "pilot.yaml"
    pilot.write_text(doc_config("# config/pilot.yaml"))
    target = "results/pilot/eval/qwen3-1.7b/agon/seed0"
    assert f"snakemake --profile profiles/local-gpu {target} --configfile config/pilot.yaml" in DOC.read_text()
    jobs = job_blocks(dry_run(tmp_path / "work", PROFILE, target, "--configfile", str(pilot)))
    assert Counter(rule for rule, _ in jobs) == {"fetch_model": 1, "prepare": 1, "train": 1, "evaluate": 1}
    assert all(p.startswith("results/pilot/") for _, f in jobs for p in f["output"].split(", "))
    by_rule = dict(jobs)
    assert spec(by_rule["train"])["train"]["max_steps"] == 5
    assert (spec(by_rule["prepare"])["heldout"], spec(by_rule["prepare"])["validation"]) == (20, 10)


def test_the_pages_table_row_config_reuses_the_cells(tmp_path, cell_run):
    """Table 5's row for Qwen3-1.7B: three cells and the table; the Agon cell's jobs have the very
    commands (specs) of the paper config's, so cells built with it are not rerun."""
    row = tmp_path / "row.yaml"
    row.write_text(doc_config("# config/table5-qwen3-1.7b.yaml"))
    jobs = job_blocks(dry_run(tmp_path / "work", PROFILE, "results/paper/tables/table5_scaling.csv",
                              "--configfile", str(row)))
    assert Counter(rule for rule, _ in jobs) == {"fetch_model": 1, "prepare": 1, "train": 2, "evaluate": 3,
                                                 "table": 1}
    assert {f["wildcards"] for rule, f in jobs if rule == "evaluate"} == {
        f"model=qwen3-1.7b, cell={c}, seed=0" for c in ("untrained", "grpo", "agon")}
    paper = {rule: f["shell"] for rule, f in job_blocks(cell_run) if rule in GPU_RULES}
    narrowed = {rule: f["shell"] for rule, f in jobs if rule in GPU_RULES and "/agon/seed0" in f["output"]}
    assert narrowed == paper


def test_the_pages_table_map_is_the_configs():
    """The map has one row per table and figure 7b of config/paper.yaml, keyed by its config key,
    naming its models, the trained methods of its rows, and whether it evaluates the bare base."""
    config = yaml.safe_load(PAPER.read_text())
    picks, evaluations = config["picks"], config["evaluations"]
    section = DOC.read_text().split("## Which table holds which model and method")[1].split("\n## ")[0]
    rows = {m.group(1): line.split("|")[2:5]
            for line in section.splitlines() if (m := re.match(r"\| [^|]*\(`(\w+)`\) \|", line))}
    fig7b = config["figures"]["fig7b"]
    tables = {**config["tables"], "fig7b": {"models": fig7b["models"], "rows": fig7b["rows"] + [fig7b["step0"]]}}
    assert set(rows) == set(tables)
    for name, table in tables.items():
        models, methods, untrained = rows[name]
        assert re.findall(r"`([^`]+)`", models) == table.get("models", []), name
        kind = table.get("kind", "results")
        if kind == "design":
            named = []
        elif kind == "contrasts":
            named = [r for pair in table["contrasts"] for r in pair]
        elif kind == "claims":
            named = [c[k] for c in table["claims"] for k in ("a", "b") if c.get(k)]
        elif kind == "preconditions":  # the evaluations it names by role (it also reads every cell's metrics)
            named = [table[k] for k in ("solo", "cascade", "mixture", "reference")] + [
                e for pair in table["pairs"].values() for e in pair]
        else:
            named = table["rows"]
        cells = {evaluations[e]["method"] for r in named for e in picks.get(r, [r])}
        assert set(re.findall(r"`([^`]+)`", methods)) == cells - {None}, name
        assert untrained.strip().startswith("yes") == (None in cells), name
