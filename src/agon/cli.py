"""The `agon` command: what every Snakemake rule calls.

Each subcommand takes a JSON spec (the slice of the config it depends on,
assembled by the rule) and explicit input/output paths, and writes its
outputs atomically with a provenance block.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import io
from .gpu_check import GpuUnavailable
from .verify.sandbox import SandboxFailure, SandboxUnavailable


def _spec(text: str) -> dict:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise SystemExit(f"agon: --spec is not valid JSON: {e}")


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def cmd_prepare(args) -> None:
    """One dataset: load its source, check every problem, draw the seeded splits, hash them."""
    from .jobs import prepare

    prepare.run(_spec(args.spec), args.out, log=_log)


def cmd_base(args) -> None:
    """A toy base: trained from its recipe, or a pinned snapshot checked and installed."""
    from .jobs import base

    base.run(_spec(args.spec), args.out, args.exclude, args.pinned, log=_log)


def cmd_pin_base(args) -> None:
    """A pinned snapshot (files + manifest) of a base the `base` rule trained."""
    from .toy import pinned

    manifest = pinned.pin(args.base, args.out)
    _log(f"pinned {args.base} -> {args.out}: model.safetensors sha256 {manifest['files']['model.safetensors']}, "
         f"trained on {manifest['trained']['cpu']} in {manifest['trained']['precision']}")


def cmd_train(args) -> None:
    """One cell (model x method x seed) trained, resumable; its adapters, metrics and snapshots."""
    from .jobs import train

    status = train.run(_spec(args.spec), args.train, args.out, args.metrics, args.checkpoint_dir,
                       args.stop_after, args.snapshots, log=_log)
    if status:
        sys.exit(status)


def cmd_evaluate(args) -> None:
    """Every evaluation of one cell on every benchmark, as per-problem records."""
    from .jobs import evaluate

    evaluate.run(_spec(args.spec), args.resume_dir, log=_log)


def cmd_sandbox_check(args) -> None:
    """Run one program through the code sandbox the config asks for; write how it ran."""
    from .verify import sandbox

    config = sandbox.SandboxConfig.from_config(_spec(args.spec).get("sandbox"))
    mechanism = sandbox.check(config).describe()
    if mechanism["isolation"] == "rlimits":
        _log("warning: sandbox.isolation is rlimits: code programs run WITHOUT isolation, with rlimits alone")
    io.write_json(args.out, {"sandbox": mechanism, "provenance": io.provenance(None)})


def cmd_fetch_model(args) -> None:
    """A hub model's snapshot, or a GGUF file converted, as a local base model directory."""
    from .model_sources import fetch

    fetch(_spec(args.spec), Path(args.out), log=_log)


def cmd_table(args) -> None:
    from .report import design, tables

    spec = _spec(args.spec)
    if spec.get("kind") == "design":
        design.write_design(spec, Path(args.out_prefix), args.reported)
    elif spec.get("kind") == "preconditions":
        from .report.preconditions import write_preconditions

        write_preconditions(spec, args.records, args.metrics, Path(args.out_prefix))
    elif spec.get("kind") == "contrasts":
        from .report.contrasts import write_contrasts

        write_contrasts(spec, args.records, Path(args.out_prefix))
    elif spec.get("kind") == "claims":
        from .report.claims import write_claims

        write_claims(spec, args.records, Path(args.out_prefix), args.reported)
    else:
        tables.write_table(spec, args.records, Path(args.out_prefix), args.reported)


def cmd_curve(args) -> None:
    """Figure 7b: one row's adapter snapshots of one cell on the figure's held-out subset."""
    from .jobs import curve

    curve.run(_spec(args.spec), log=_log)


def cmd_figure7b(args) -> None:
    from .evaluate import curves
    from .report import figures

    points = curves.load_points(args.points, json.loads(args.snapshots) if args.snapshots else None)
    if len({p["model"] for p in points}) > 1:
        points = [{**p, "method": f"{p['method']} ({p['model']})"} for p in points]
    sizes = sorted({int(p["n"]) for p in points})  # the figure's subset, not the tables' whole split
    on = f" (first {sizes[0]} problems)" if len(sizes) == 1 else ""
    figures.training_curves(points, args.out_prefix, f"Figure 7b - held-out pass@1 during training{on}")
    io.write_csv(f"{args.out_prefix}.csv", points,
                 ["method", "model", "seed", "step", "k", "n", "evaluation", "selected", "source"])


def cmd_training_curves(args) -> None:
    """One model's per-step training curves from its cells' metrics.jsonl files (each checked)."""
    from .report import figures
    from .report.preconditions import cell_steps

    cells = {}
    for path in args.metrics:
        model, method, seed, steps = cell_steps(path)
        if model != args.model:
            raise ValueError(f"{path}: a cell of model {model!r}, not of {args.model!r} whose figure this is")
        cells[(method, seed)] = steps
    figures.cell_training_curves(args.model, cells, args.out_prefix, args.blind_challengers)


def cmd_report(args) -> None:
    """Figure 7a from the main table's rows, then report.md over every table."""
    import csv

    from .report import figures, reported, report
    from .report.preconditions import cell_steps

    spec = _spec(args.spec)
    out = Path(args.out)
    for path in args.metrics:  # every trained cell's steps, each once
        cell_steps(path)
    rows = []
    with open(args.figure_table) as f:
        for r in csv.DictReader(f):
            if r["seed"] in ("mean", "") or r["method"].endswith("(post hoc)") or r.get("status"):
                continue
            rows.append({**r, "seed": int(r["seed"]),
                         **{k: float(r[k]) for k in ("pass_at_1", "ci_low", "ci_high", "mean_length")}})
    provenance = []  # every input read and checked before the first output is written
    for path in sorted(args.provenance):
        record = io.read_json(path)
        if not isinstance(record, dict) or not isinstance(record.get("provenance"), dict):
            raise ValueError(f"{path}: no 'provenance' object (the job that wrote it records one); rerun that job")
        provenance.append({"file": path, **record["provenance"]})
    paper = figures.paper_points(reported.load_reported(args.reported))
    fig_prefix = Path(args.figure_prefix)
    rel = lambda p: str(Path(p).resolve().relative_to(out.parent.resolve()))  # noqa: E731
    tables, notes = {}, list(spec.get("notes", []))
    for p in args.tables:
        p = Path(p)
        files = ", ".join(f"`{rel(p.with_suffix(ext))}`" for ext in (".csv", ".md", ".tex"))
        tables[p.stem] = p.read_text().rstrip("\n") + f"\n\nFiles: {files}.\n"
        absent = sorted({r["model"] for r in csv.DictReader(open(p.with_suffix(".csv"))) if r.get("status")})
        if absent:
            notes.append(f"{p.stem}: {', '.join(absent)} absent at this scale (not configured in this run); "
                         "only the paper's numbers are shown for them.")
    figs = {"Figure 7a: pass@1 (95% CI) against mean final-stage length; "
            "hollow markers: the paper's Qwen3-0.6B numbers": rel(f"{fig_prefix}.png")}
    for png in args.training or []:
        model = Path(png).stem.removeprefix("training_")
        figs[f"Training curves of {model}: a row per method, a column per metric, each stream's smoothed line over "
             "its raw steps, and Table 0 section 7's verdict on each stream (from metrics.jsonl)"] = rel(png)
    if args.fig7b:
        subset = (spec.get("figures") or {}).get("fig7b", {}).get("problems")
        on = f" on the first {subset} problems of its benchmark" if subset else ""
        figs[f"Figure 7b: held-out pass@1 (95% CI band) of adapter snapshots during training{on}; step 0 is "
             "the untrained base, the last point the final adapters (points: figures/fig7b.csv)"] = rel(args.fig7b)
    figures.pass_vs_length(rows, fig_prefix, "Figure 7a - pass@1 against mean final-stage length",
                           reported=paper)  # written once every input above has been read
    headline = [name for name in tables if spec["tables"].get(name, {}).get("kind") == "claims"]
    report.write_report(out, title=f"Agon reproduction - run {spec['run']}", config=spec,
                        tables=tables, figures=figs, provenance=provenance, notes=notes, headline=headline)


PROVENANCE_FILES = ("provenance.json", "train_summary.json", "agon_base.json", "manifest.json")


def find_provenance(path: Path) -> tuple[Path, dict]:
    """The provenance block that covers `path`: its own, or that of the artifact it lies in."""
    path = path.resolve()
    beside = path.with_name(path.name.rsplit(".", 1)[0] + ".provenance.json")  # a curve file's record
    record = io.read_json(beside) if path.is_file() and beside.exists() else {}
    if "provenance" in record:
        return beside, record["provenance"]
    if path.suffix == ".json" and path.exists():
        data = io.read_json(path)
        if isinstance(data, dict) and "provenance" in data:
            return path, data["provenance"]
    for folder in [path] + list(path.parents):
        for name in PROVENANCE_FILES:
            candidate = folder / name
            if candidate.exists() and candidate != path:
                data = io.read_json(candidate)
                if "provenance" in data:
                    return candidate, data["provenance"]
        if folder.name == "results":
            break
    raise FileNotFoundError(f"no provenance found for {str(path)!r} (looked for {', '.join(PROVENANCE_FILES)} "
                            "beside it and in the folders above, up to results/)")


def cmd_provenance(args) -> None:
    source, block = find_provenance(Path(args.path))
    print(f"# provenance of {args.path} (from {source})")
    print(json.dumps(block, indent=2, sort_keys=True))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="agon", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("prepare", help="generate/filter the problem pool and write seeded splits")
    p.add_argument("--spec", required=True)
    p.add_argument("--out", required=True, help="output directory for <split>.jsonl and manifest.json")
    p.set_defaults(func=cmd_prepare)

    p = sub.add_parser("base", help="train the toy base model from scratch, or install a pinned one")
    p.add_argument("--spec", required=True)
    p.add_argument("--exclude", nargs="*", default=[], help="split files whose prompts SFT must not see")
    p.add_argument("--pinned", default=None, help="the pinned base's directory (spec source: pinned)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_base)

    p = sub.add_parser("pin-base", help="a pinned snapshot (files + manifest) of a trained toy base")
    p.add_argument("--base", required=True, help="results/<run>/models/<model>/base, trained (source: train)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_pin_base)

    p = sub.add_parser("fetch-model", help="snapshot a hub model / convert a GGUF into a base model directory")
    p.add_argument("--spec", required=True, help="{key, source, dtype} (model_sources.locate)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_fetch_model)

    p = sub.add_parser("train", help="train one cell (model x method x seed)")
    p.add_argument("--spec", required=True)
    p.add_argument("--train", required=True, help="train split (jsonl)")
    p.add_argument("--out", required=True, help="adapter directory")
    p.add_argument("--metrics", required=True, help="per-step metrics (jsonl)")
    p.add_argument("--checkpoint-dir", required=True, help="resumable state, outside declared outputs")
    p.add_argument("--stop-after", type=int, default=None, help="stop after N steps (resume testing)")
    p.add_argument("--snapshots", default=None, help="adapter snapshots for Figure 7b (train.snapshot_every)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="every evaluation of one trained cell, on every benchmark")
    p.add_argument("--spec", required=True)
    p.add_argument("--resume-dir", required=True, help="finished records of an interrupted job")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("sandbox-check", help="run one program through the code sandbox; stop here if it cannot")
    p.add_argument("--spec", required=True, help='{"sandbox": the config\'s sandbox section}')
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_sandbox_check)

    p = sub.add_parser("table", help="aggregate per-problem records into a table")
    p.add_argument("--spec", required=True)
    p.add_argument("--records", nargs="*", default=[], help="per-problem records (none for Table 1)")
    p.add_argument("--metrics", nargs="*", default=[], help="trained cells' metrics.jsonl (Table 0)")
    p.add_argument("--reported", default=None, help="the paper's numbers (config/reported.yaml)")
    p.add_argument("--out-prefix", required=True)
    p.set_defaults(func=cmd_table)

    p = sub.add_parser("report", help="Figure 7a and report.md from the tables")
    p.add_argument("--spec", required=True, help="the whole config (JSON)")
    p.add_argument("--tables", nargs="+", required=True, help="tables' markdown files")
    p.add_argument("--figure-table", required=True, help="csv of the table Figure 7a plots")
    p.add_argument("--figure-prefix", required=True)
    p.add_argument("--reported", required=True)
    p.add_argument("--provenance", nargs="*", default=[], help="provenance.json files of the cells")
    p.add_argument("--fig7b", default=None, help="Figure 7b's png, listed in the report")
    p.add_argument("--metrics", nargs="*", default=[], help="trained cells' metrics.jsonl, checked step by step")
    p.add_argument("--training", nargs="*", default=[], help="training-curves figures (png), listed in the report")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("training-curves", help="one model's per-step training curves from metrics.jsonl")
    p.add_argument("--model", required=True)
    p.add_argument("--metrics", nargs="+", required=True, help="the model's cells' metrics.jsonl")
    p.add_argument("--blind-challengers", nargs="*", default=[],
                   help="methods whose challenger reads no draft: no target for its conversion rate")
    p.add_argument("--out-prefix", required=True)
    p.set_defaults(func=cmd_training_curves)

    p = sub.add_parser("curve", help="Figure 7b: evaluate one row's adapter snapshots of one cell")
    p.add_argument("--spec", required=True)
    p.set_defaults(func=cmd_curve)

    p = sub.add_parser("figure7b", help="Figure 7b from the curve jobs' points")
    p.add_argument("--points", nargs="*", default=[], help="curve files (none: a figure saying so)")
    p.add_argument("--snapshots", default=None,
                   help="JSON {curve file: its cell's snapshots directory}: each curve must hold every snapshot step")
    p.add_argument("--out-prefix", required=True)
    p.set_defaults(func=cmd_figure7b)

    p = sub.add_parser("provenance", help="print where a result file came from")
    p.add_argument("path", help="any file or folder under results/<run>/")
    p.set_defaults(func=cmd_provenance)

    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (ValueError, FileNotFoundError, SandboxUnavailable, SandboxFailure, GpuUnavailable) as e:
        # Bad input: a clear one-line message, no traceback through the rule.
        print(f"agon {args.command}: error: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:
        # A full disk under a write no atomic helper wrapped (a library's own, e.g. peft saving
        # adapters into the declared output): named by the job's output.
        out = getattr(e, "filename", None) or _output_of(args)
        if not (isinstance(e, io.DiskFull) or io.is_disk_full(e, out)):
            raise
        full = e if isinstance(e, io.DiskFull) else io.DiskFull(out, None, e)
        print(f"agon {args.command}: error: {full.strerror}", file=sys.stderr)
        sys.exit(EXIT_DISK_FULL)


EXIT_DISK_FULL = 4


def _output_of(args) -> str:
    """Where a subcommand writes (for messages)."""
    for name in ("out", "out_prefix", "checkpoint_dir"):
        if getattr(args, name, None):
            return getattr(args, name)
    return _spec(args.spec).get("out_dir", ".") if getattr(args, "spec", None) else "."


if __name__ == "__main__":
    main()
