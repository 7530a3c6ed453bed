"""The real pipeline, end to end, on config/test.yaml (about a minute on 2 cores)."""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agon import io
from agon.report import claims
from agon.evaluate.records import TIE
from agon.config import load as load_config

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow


def snakemake(workdir: Path, *args: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
           "--cores", "2", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, env=env)
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
    assert float(agon["paper_pass_at_1"]) == 61.0 and agon["selected"].removesuffix(TIE).endswith("on validation")
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


def test_results_are_as_readable_as_the_umask_allows(finished_run):
    """No result stays private to its writer (mkstemp's 0600) on a shared filesystem."""
    import stat

    from agon.io import umask

    want = 0o666 & ~umask()
    files = [p for p in (finished_run / "results").rglob("*") if p.is_file() and not p.is_symlink()]
    private = [str(p) for p in files if stat.S_IMODE(p.stat().st_mode) & 0o666 != want]
    assert files and not private, private[:10]


def _damage_copy(finished_run, tmp_path) -> Path:
    """A copy of the finished run, mtimes kept: Snakemake sees nothing to do in it."""
    work = tmp_path / "copy"
    shutil.copytree(finished_run, work, symlinks=True)
    proc = snakemake(work, "--configfile", str(ROOT / "config" / "test.yaml"), "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-2000:]
    return work


def test_a_damaged_records_file_reruns_its_tables_which_fail_naming_it(finished_run, tmp_path):
    """A records file cut mid-line, short of a line, or with a line twice: the tables that read
    it rerun (nothing else), and fail naming the file and the first bad line or problem; the
    stale tables are not left standing as if current. Restored, the tables rebuild as before."""
    work = _damage_copy(finished_run, tmp_path)
    results = work / "results" / "test"
    records = results / "eval" / "toy" / "untrained" / "seed0" / "zero_shot.heldout.jsonl"
    original = records.read_bytes()
    lines = original.splitlines(keepends=True)
    table4 = (results / "tables" / "table4_ci.csv").read_text()
    damages = {
        "cut": (original[: len(original) // 2], "the last line has no newline"),
        "deleted": (b"".join(lines[:3] + lines[4:]), "1 problem(s) of its split (40) missing"),
        "duplicated": (original + lines[0], f":{len(lines) + 1}: problem "),
    }
    for name, (damaged, message) in damages.items():
        records.write_bytes(damaged)
        proc = snakemake(work, "--configfile", str(ROOT / "config" / "test.yaml"), check=False)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, (name, out[-2000:])
        assert f"{records.relative_to(work)}" in out and message in out, (name, out[-3000:])
        assert "rule train:" not in out and "rule evaluate:" not in out  # only what reads the file reruns
    records.write_bytes(original)
    snakemake(work, "--configfile", str(ROOT / "config" / "test.yaml"))
    assert (results / "tables" / "table4_ci.csv").read_text() == table4


def test_a_gap_in_a_cells_metrics_fails_the_report_naming_the_step(finished_run, tmp_path):
    work = _damage_copy(finished_run, tmp_path)
    metrics = work / "results" / "test" / "train" / "toy" / "agon" / "seed0" / "metrics.jsonl"
    lines = metrics.read_text().splitlines(keepends=True)
    assert len(lines) >= 2
    metrics.write_text("".join(lines[1:]))  # step 0 lost
    proc = snakemake(work, "--configfile", str(ROOT / "config" / "test.yaml"), check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"{metrics.relative_to(work)}:1: step 0 missing" in out, out[-3000:]
    assert "rule train:" not in out


def _planned_jobs(proc) -> dict[str, int]:
    """{rule: count} from the `Job stats:` block of a dry run."""
    stats = (proc.stdout + proc.stderr).split("Job stats:")[-1].split("Reasons:")[0]
    jobs = {}
    for line in stats.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] != "total":
            jobs[parts[0]] = int(parts[1])
    return jobs


def test_tables_rebuild_without_training(finished_run):
    """Aggregation depends on result files only: deleting the tables reruns table and report jobs, nothing else."""
    tables = finished_run / "results" / "test" / "tables"
    before = {p.name: p.read_text() for p in sorted(tables.iterdir())}
    shutil.rmtree(tables)
    proc = snakemake(finished_run, "--configfile", str(ROOT / "config" / "test.yaml"), "-n")
    config = load_config(ROOT / "config" / "test.yaml")
    assert _planned_jobs(proc) == {"table": len(config["tables"]), "report": 1, "all": 1}, proc.stdout[-3000:]
    snakemake(finished_run, "--configfile", str(ROOT / "config" / "test.yaml"))
    assert {p.name: p.read_text() for p in sorted(tables.iterdir())} == before


def test_every_table_in_three_formats_and_the_report_lists_them(finished_run):
    results = finished_run / "results" / "test"
    config = load_config(ROOT / "config" / "test.yaml")
    report = (results / "report.md").read_text()
    for name in config["tables"]:
        tex = (results / "tables" / f"{name}.tex").read_text()
        assert r"\begin{tabular}" in tex and r"\toprule" in tex and r"\bottomrule" in tex, name
        assert "_" not in tex.split(r"\toprule")[1].replace(r"\_", ""), f"{name}.tex: unescaped _"
        assert (results / "tables" / f"{name}.csv").read_text().count("\n") >= 2, name
        assert f"<!-- table: {name} -->" in report and f"`tables/{name}.tex`" in report
    assert "figures/fig7a.png" in report and "figures/fig7b.png" in report
    assert "qwen3-4b" in report.split("## Notes")[1]          # absent models are named in the notes
    # the report opens with the paper's claims, one row per claim, rendered from the csv's numbers
    assert report.index("<!-- table: claims -->") < report.index("## What ran")
    claimed = claims.read_rows(results / "tables" / "claims.csv")
    assert [r["claim"] for r in claimed] == [c["claim"] for c in config["tables"]["claims"]["claims"]]
    assert all(r["verdict"] in (claims.HOLDS, claims.REVERSED, claims.UNRESOLVED, claims.CEILING, claims.FLOOR)
               for r in claimed)
    assert "\n".join(claims.markdown(claimed)) in (results / "tables" / "claims.md").read_text()

    def rows(name):
        return list(csv.DictReader(open(results / "tables" / f"{name}.csv")))

    design = {r["name"]: r for r in rows("table1_design")}
    assert (design["hidden_rival"]["competition"], design["hidden_rival"]["exchange"]) == ("competition", "no exchange")
    assert [n for n, r in design.items() if r["type"] == "method"] == list(config["methods"])   # config order
    transfer = rows("table2_transfer")
    assert [r["method"] for r in transfer] == ["zero_shot", "grpo", "agon", "agon (post hoc)"]
    n_transfer = json.loads((results / "data" / "toy_math_easy" / "manifest.json").read_text())
    assert all(r["benchmark"] == "transfer_easy" and int(r["n"]) == n_transfer["splits"]["heldout"]["count"]
               for r in transfer)
    assert float(transfer[1]["paper_gsm8k_pass_at_1"]) == 68 and float(transfer[1]["paper_math500_pass_at_1"]) == 52
    # Table 4: Table 3's rows and counts, beside the paper's published intervals
    main = {r["method"]: r for r in rows("table3_main")}
    for r in rows("table4_ci"):
        assert (r["k"], r["n"], r["ci_low"], r["ci_high"]) == tuple(main[r["method"]][c] for c in ("k", "n", "ci_low", "ci_high"))
    assert float(next(r for r in rows("table4_ci") if r["method"] == "agon")["paper_ci_low"]) == 55.2
    scaling = rows("table5_scaling")
    absent = [r for r in scaling if r["status"]]
    assert {r["model"] for r in absent} == {"qwen3-1.7b", "qwen3-4b", "qwen3.5-2b", "gemma-4-e4b"}
    assert all(r["k"] == r["n"] == r["pass_at_1"] == "" and r["paper_pass_at_1"] for r in absent)
    assert all(r["k"] for r in scaling if r["model"] == "toy")


def test_figure_7b_from_snapshots(finished_run):
    results = finished_run / "results" / "test"
    config = load_config(ROOT / "config" / "test.yaml")
    fig = config["figures"]["fig7b"]
    for ext in ("png", "pdf"):
        assert (results / "figures" / f"fig7b.{ext}").stat().st_size > 1000
    points = list(csv.DictReader(open(results / "figures" / "fig7b.csv")))
    assert [p["method"] for p in points[::3]] == fig["rows"]
    assert {(p["step"], p["source"].split(" ")[0]) for p in points} == {("0", "untrained"), ("1", "snapshot"), ("2", "final")}
    assert len({p["k"] for p in points if p["step"] == "0"}) == 1        # one common first point
    for p in points:
        assert int(p["n"]) == fig["problems"]
    snaps = results / "train" / "toy" / "agon" / "seed0" / "snapshots"
    assert json.loads((snaps / "snapshots.json").read_text())["steps"] == [1]
    assert (snaps / "step1" / "B" / "adapter_model.safetensors").exists()
    # the final point is the cell's own records on the figure's problems, the pick's direction on validation
    agon = [p for p in points if p["method"] == "agon"]
    chosen = agon[-1]["evaluation"]
    assert agon[-1]["selected"].removesuffix(TIE) == f"{chosen} on validation"
    main = next(r for r in csv.DictReader(open(results / "tables" / "table3_main.csv")) if r["method"] == "agon")
    assert main["selected"] == agon[-1]["selected"]  # both say so the same way when it was a tie
    records = _records(results, "agon", chosen)[: fig["problems"]]
    assert int(agon[-1]["k"]) == sum(r["correct"] for r in records)
    # `agon provenance` answers for a curve file, from the record its job wrote beside it
    proc = subprocess.run([sys.executable, "-m", "agon.cli", "provenance",
                           str(results / "curves" / "toy" / "agon" / "seed0.jsonl")],
                          capture_output=True, text=True, check=True)
    assert "seed0.provenance.json" in proc.stdout.splitlines()[0] and '"git_commit"' in proc.stdout


def test_training_curves_of_every_trained_model_rebuild_from_metrics_alone(finished_run):
    """A training-curves figure per model with trained cells, listed in the report; deleted, it
    comes back from the metrics files alone (no training job reruns)."""
    results = finished_run / "results" / "test"
    figures = results / "figures"
    assert {p.name for p in figures.glob("training_*.png")} == {"training_toy.png", "training_toy_code.png"}
    report = (results / "report.md").read_text()
    assert "Training curves of toy:" in report and "Training curves of toy_code:" in report
    (figures / "training_toy.png").unlink()
    proc = snakemake(finished_run, "--configfile", str(ROOT / "config" / "test.yaml"), "-n")
    assert _planned_jobs(proc) == {"training_curves": 1, "report": 1, "all": 1}, proc.stdout[-3000:]
    snakemake(finished_run, "--configfile", str(ROOT / "config" / "test.yaml"))
    assert (figures / "training_toy.png").stat().st_size > 0
    # the step metrics the panels read: grad norm per adapter, update KL, truncated share
    record = json.loads((results / "train" / "toy" / "agon" / "seed0" / "metrics.jsonl").read_text().splitlines()[0])
    assert set(record["grad_norm"]) <= {"A", "B"}
    assert all({"update_kl", "truncated_share"} <= set(s) or "loss" not in s for s in record["streams"].values())


def test_snakemake_html_report(finished_run):
    """`snakemake --report` over the finished run (a separate invocation; rule all does not need it)."""
    out = finished_run / "results" / "test" / "report.html"
    snakemake(finished_run, "--configfile", str(ROOT / "config" / "test.yaml"), "--report", str(out))
    html = out.read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and len(html) > 10000
    for name in ("table3_main", "table2_transfer", "fig7b"):
        assert name in html, name


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

    # the second run prepares only the datasets its one table needs
    splits = sorted(p.relative_to(second) for p in (second / "data").rglob("*.jsonl"))
    assert splits and {rel.parts[1] for rel in splits} >= {"toy_math"}
    for rel in splits:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), f"{rel} differs between runs"
    manifests = sorted(p.relative_to(second) for p in (second / "data").rglob("manifest.json"))
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


def _pages(root: Path) -> int:
    """Bytes `root`'s files take on a tmpfs (whole pages)."""
    return sum(-(-p.stat().st_size // 4096) * 4096 for p in root.rglob("*") if p.is_file())


def test_a_disk_that_fills_mid_run_loses_nothing_and_the_rerun_matches(finished_run, tmp_path):
    """results/ on a small tmpfs that fills after the data and the bases are written: the job
    that hits the full disk fails saying where and how much space is left, no output is left
    half-written, and once space is freed the rerun completes with the uninterrupted run's tables."""
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root (CI runs as root)")
    config = load_config(ROOT / "config" / "test.yaml")
    table = min((t for t in config["tables"] if _cells(config, t) - {"untrained"}),
                key=lambda t: (len(_cells(config, t)), t))
    first = finished_run / "results" / "test"
    results = tmp_path / "results"
    results.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(results)], check=True)
    try:
        filler = results / "filler"
        room = _pages(first / "data") + _pages(first / "models") + (64 << 10)  # then training fills it
        with open(filler, "wb") as f:
            f.write(b"\0" * (io.disk_free(results) - room))
        target = f"results/test/tables/{table}.csv"
        proc = snakemake(tmp_path, target, "--configfile", str(ROOT / "config" / "test.yaml"), check=False)
        assert proc.returncode != 0, "the run fit on the small disk: nothing was tested"
        logs = {p: p.read_text() for p in (results / "test" / "logs").rglob("*.log")}
        full = [p for p, text in logs.items() if "no space left writing" in text]
        assert full, "no job said the disk was full:\n" + proc.stderr[-3000:]
        for log in full:
            assert "bytes are free on its filesystem" in logs[log] and "results/test/" in logs[log], logs[log]
        for path in (results / "test").rglob("*.json*"):  # what is there is whole
            text = path.read_text()
            if path.suffix == ".jsonl":
                assert text == "" or text.endswith("\n"), path
                [json.loads(line) for line in text.splitlines() if line.strip()]
            else:
                json.loads(text)
        filler.unlink()
        snakemake(tmp_path, target, "--configfile", str(ROOT / "config" / "test.yaml"), "--rerun-incomplete")
        for name in (f"{table}.csv", f"{table}.md", f"{table}.tex"):
            assert (first / "tables" / name).read_bytes() == (results / "test" / "tables" / name).read_bytes(), name
    finally:
        subprocess.run(["umount", "-l", str(results)], check=False)


def test_code_domain_table6(finished_run):
    """Table 6, the toy code domain: its own base and only the cells the table reads, every
    program graded in the sandbox (outcomes counted apart), the paper's numbers beside ours."""
    results = finished_run / "results" / "test"
    config = load_config(ROOT / "config" / "test.yaml")
    manifest = json.loads((results / "data" / "toy_code" / "manifest.json").read_text())
    n = manifest["splits"]["heldout"]["count"]
    assert n == 12 and set(manifest["splits"]["heldout"]["by_difficulty"]) <= {"1", "2", "3", "4"}
    base_record = json.loads((results / "models" / "toy_code" / "base" / "agon_base.json").read_text())
    assert base_record["precision"] in ("bf16", "fp32") and "cpu" in base_record["provenance"]

    rows = list(csv.DictReader(open(results / "tables" / "table6_code.csv")))
    assert [r["method"] for r in rows if not r["method"].endswith("(post hoc)")] == ["zero_shot", "grpo", "coop", "agon"]
    for row in rows:
        evaluation = row["selected"].split(" on ")[0] if row["selected"] else row["method"]
        cell = config["evaluations"][evaluation]["method"] or "untrained"
        path = results / "eval" / "toy_code" / cell / "seed0" / f"{evaluation}.code_heldout.jsonl"
        records = [json.loads(line) for line in open(path)]
        assert row["model"] == "toy_code" and len(records) == n == int(row["n"])
        assert int(row["k"]) == sum(r["correct"] for r in records)
    agon = next(r for r in rows if r["method"] == "agon")
    assert float(agon["paper_pass_at_1"]) == 34.0 and agon["selected"].removesuffix(TIE).endswith("on code_validation")
    # the workflow derives the cells from the tables: only Table 6's run for the code model
    assert sorted(p.name for p in (results / "train" / "toy_code").iterdir()) == ["agon", "coop", "grpo"]
    assert sorted(p.name for p in (results / "eval" / "toy_code").iterdir()) == ["agon", "coop", "grpo", "untrained"]

    # the code path ran for real: programs reached the sandbox, and the harness never failed
    graders = [s["grader"] for p in (results / "eval" / "toy_code").glob("*/seed0/provenance.json")
               for s in json.loads(p.read_text())["summary"].values()]
    graders += [json.loads(p.read_text())["grader"]
                for p in (results / "train" / "toy_code").glob("*/seed0/adapters/train_summary.json")]
    assert len(graders) == 10 + 3  # zero_shot, grpo, coop_ab/ba and agon_ab/ba on two benchmarks; 3 cells
    assert sum(g.get("programs", 0) for g in graders) > 0 and sum(g.get("sandbox_runs", 0) for g in graders) > 0
    assert all(g.get("sandbox_error", 0) <= g.get("sandbox_retries", 0) for g in graders), graders
    assert "Table 6 - code domain" in (results / "report.md").read_text()
    # ...in bubblewrap, as each job's provenance says, after the run's sandbox check passed
    mechanisms = [s["sandbox"] for p in (results / "eval" / "toy_code").glob("*/seed0/provenance.json")
                  for s in json.loads(p.read_text())["summary"].values()]
    mechanisms += [json.loads(p.read_text())["sandbox"]
                   for p in (results / "train" / "toy_code").glob("*/seed0/adapters/train_summary.json")]
    assert len(mechanisms) == 13 and {m["isolation"] for m in mechanisms} == {"bwrap"}, mechanisms
    assert json.loads((results / "sandbox.json").read_text())["sandbox"]["isolation"] == "bwrap"
    assert "WITHOUT the sandbox's isolation" not in (results / "tables" / "table6_code.md").read_text()


def _config_over_test(tmp_path, extra: str) -> Path:
    path = tmp_path / "over_test.yaml"
    path.write_text(f"extends: {ROOT / 'config' / 'test.yaml'}\n{extra}")
    return path


def test_a_run_that_cannot_isolate_code_stops_at_the_sandbox_check_saying_why(tmp_path):
    """Before any code job: the check fails on the console with what to install (not 'check log')."""
    config = _config_over_test(tmp_path, "sandbox: {bwrap: /nonexistent/bwrap}\n")
    # targets first: --configfile takes every argument after it as a config file
    plan = snakemake(tmp_path, "results/test/train/toy_code/grpo/seed0/adapters", "-n", "--configfile", str(config))
    assert "sandbox_check" in plan.stdout  # the code cell's training waits for it
    proc = snakemake(tmp_path, "results/test/sandbox.json", "--configfile", str(config), check=False)
    assert proc.returncode != 0
    console = proc.stdout + proc.stderr
    assert "/nonexistent/bwrap" in console and "apt-get install bubblewrap" in console, console[-3000:]
    assert not (tmp_path / "results" / "test" / "sandbox.json").exists()


def test_rlimits_isolation_is_named_in_the_code_tables_notes(tmp_path):
    config = _config_over_test(tmp_path, "sandbox: {isolation: rlimits}\n")
    proc = snakemake(tmp_path, "results/test/tables/table6_code.md", "results/test/tables/table3_main.md",
                     "-n", "-p", "--forceall", "--configfile", str(config))
    table_commands = [line for line in proc.stdout.splitlines() if "agon table" in line]
    code, math = (next(c for c in table_commands if f"tables/{t}" in c) for t in ("table6_code", "table3_main"))
    assert '"unisolated_code": true' in code and "unisolated_code" not in math
