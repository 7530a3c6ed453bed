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


def _threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _device(spec: dict, what: str) -> tuple[str, dict]:
    """(device, its record) of a train, evaluate or curve job (agon.device: config `device`).

    A CUDA job checks its GPU, driver and torch's CUDA build before any model loads,
    and stops with what to fix (agon.gpu_check)."""
    from . import device as devices

    device = devices.resolve(spec)
    if device == "cpu":
        return device, {"type": "cpu"}
    from .gpu_check import require_gpu

    gpu = require_gpu(what + devices.why_cuda(spec))
    _log(f"GPU: {gpu['name']} (driver {gpu['driver']}, torch {gpu['torch']} for CUDA {gpu['torch_cuda']})")
    import torch

    from .resources import gpu_memory_problem

    total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    problem = gpu_memory_problem(spec.get("min_gpu_gib"), total, gpu["name"])
    if problem:
        raise SystemExit(f"agon {what}: {problem}")
    return device, {"type": "cuda", **gpu, "memory_gib": round(total / 2**30, 1)}


def cmd_prepare(args) -> None:
    """One dataset: load its source, check every problem, draw the seeded splits, hash them."""
    from .data import check_problem, splits
    from .data.hub import DataSourceError
    from .data.sources import SEEDED, load_source

    spec = _spec(args.spec)
    name = spec["name"]
    counts: dict = {}
    try:
        pool = load_source(spec["source"], {"seed": spec["seed"], **spec.get("options", {})}
                           if spec["source"] in SEEDED else spec.get("options", {}), counts)
    except (DataSourceError, ValueError) as e:
        raise SystemExit(f"agon prepare: dataset {name!r}: {e}") from None
    for p in pool:
        check_problem(p, f"dataset {name!r} (source {spec['source']})")
    try:
        parts = splits.split_problems(pool, spec["heldout"], spec["validation"], spec["seed"], spec["train"])
    except ValueError as e:
        raise SystemExit(f"agon prepare: dataset {name!r} (datasets.{name}): {e}") from None
    out = Path(args.out)
    manifest = {"dataset": name, "source": spec["source"], "seed": spec["seed"], "filter_counts": counts,
                "splits": {}, "provenance": io.provenance(spec, spec["seed"])}
    for split, problems in parts.items():
        io.write_jsonl(out / f"{split}.jsonl", problems)
        levels: dict[str, int] = {}
        for p in problems:
            levels[str(p["difficulty"])] = levels.get(str(p["difficulty"]), 0) + 1
        manifest["splits"][split] = {"count": len(problems), "hash": splits.split_hash(problems),
                                     "by_difficulty": dict(sorted(levels.items()))}
        _log(f"{name} {split}: {len(problems)} problems, hash {manifest['splits'][split]['hash']}")
    io.write_json(out / "manifest.json", manifest)


def cmd_base(args) -> None:
    """A toy base: trained from its recipe (source: train), or a pinned snapshot checked
    against the config and installed (source: pinned; agon.toy.pinned)."""
    from .toy import pinned

    spec = _spec(args.spec)
    if spec.get("source", "train") == "pinned":
        pinned.install(args.pinned, args.out, spec, args.exclude, log=_log)
        return
    from . import precision
    from .toy import sft
    from .toy.tokenizer import build_tokenizer

    _threads(spec.get("threads", 1))
    exclude = set()
    for path in args.exclude:
        exclude |= {p["prompt"] for p in io.read_jsonl(path)}
    tokenizer = build_tokenizer()
    # resolved once: the base trains in it (bf16 autocast or fp32), and its record says which
    resolved = precision.resolve(spec.get("precision", "fp32"))
    start = time.time()
    model, history = sft.train_base(tokenizer, {**spec, "precision": resolved}, exclude, spec["seed"], log=_log)
    seconds = round(time.time() - start, 1)
    with io.atomic_dir(args.out) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        # the record `agon pin-base` turns into a pinned base's manifest
        io.write_json(tmp / pinned.BASE_RECORD, {
            "source": "train", "sha256": pinned.weights_sha256(tmp), "history": history, "precision": resolved,
            "recipe": pinned.recipe(spec), "unseen_splits": pinned.split_hashes(args.exclude),
            "trained": {**pinned.machine(), "precision": resolved,
                        "threads": spec.get("threads", 1), "seconds": seconds},
            "provenance": io.provenance(spec, spec["seed"])})


def cmd_pin_base(args) -> None:
    """A pinned snapshot (files + manifest) of a base the `base` rule trained."""
    from .toy import pinned

    manifest = pinned.pin(args.base, args.out)
    _log(f"pinned {args.base} -> {args.out}: model.safetensors sha256 {manifest['files']['model.safetensors']}, "
         f"trained on {manifest['trained']['cpu']} in {manifest['trained']['precision']}")


EXIT_TERMINATED = 143  # 128 + SIGTERM: what the shell reports for a job SIGTERM killed


def _resume_key(spec: dict, train_path: str) -> dict:
    """What a checkpoint must have been written under to be resumed: spec, train split, base files."""
    base = Path(spec["base_path"])
    files = sorted(base.rglob("*")) if base.is_dir() else []
    return {"spec": io.stable_hash(spec), "train": io.file_hash(train_path),
            "base": io.stable_hash([[str(f.relative_to(base)), f.stat().st_size, f.stat().st_mtime_ns]
                                    for f in files if f.is_file()]),
            "finished": False}


def _check_resume_key(ckpt_dir: Path, key: dict) -> None:
    """Drop a checkpoint that this job must not resume from, saying why.

    Only an unfinished run of the same spec, train split and base resumes: a
    rerun after a config change, a rebuilt base, or --forcerun of a finished
    cell trains afresh instead of reloading the old final state.
    """
    key_path, ckpt = ckpt_dir / "resume_key.json", ckpt_dir / "checkpoint.pt"
    if ckpt.exists():
        old = io.read_json(key_path) if key_path.exists() else None
        if old != key:
            why = ("it has no resume_key.json" if old is None else
                   "its run had finished" if old.get("finished") else
                   "it was written for another " + ", ".join(k for k in ("spec", "train", "base")
                                                            if old.get(k) != key[k]))
            _log(f"not resuming from {ckpt}: {why}; training from step 0")
            ckpt.unlink()
            (ckpt_dir / "metrics.jsonl").unlink(missing_ok=True)
    io.write_json(key_path, key)


def cmd_train(args) -> None:
    from . import precision
    from .evaluate.records import read_steps
    from .generate import generation_record, make_backend
    from .models import load_for_job
    from .device import limit_trainer_memory
    from .rl.trainer import Trainer
    from .verify.grading import Grader

    spec = _spec(args.spec)
    _threads(spec["threads"])
    where, device = _device(spec, f"train job {args.out}")
    limit_trainer_memory(spec["train"].get("gpu_memory_fraction"), where)
    base, tokenizer, fmt = load_for_job(spec, device=where)
    problems = io.read_jsonl(args.train)
    resolved = precision.resolve(spec.get("precision", "fp32"), where)
    trainer = Trainer(base, tokenizer, fmt, spec["train"], spec["method"], spec["sampling"], spec["seed"],
                      precision_name=resolved,
                      backend_factory=lambda model: make_backend(spec, model, tokenizer, resolved),
                      grader=Grader.for_spec(spec))
    ckpt_dir = Path(args.checkpoint_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    key = _resume_key(spec, args.train)
    _check_resume_key(ckpt_dir, key)
    metrics = Path(args.metrics)
    t0 = time.time()
    loggers = None
    if spec.get("loggers"):
        from .rl.loggers import Loggers

        loggers = Loggers(spec["loggers"], Path(spec["log_dir"]), spec["run_name"],
                          {"config_hash": io.stable_hash(spec), "seed": spec["seed"]},
                          resume_step=_checkpoint_step(ckpt_dir / "checkpoint.pt"), warn=_log)
    trainer.fit(problems, ckpt_dir / "metrics.jsonl", ckpt_dir / "checkpoint.pt", log=_log,
                stop_after=args.stop_after, snapshot_dir=ckpt_dir / "snapshots", loggers=loggers)
    total = trainer.plan(problems)[1]
    if trainer.terminated and trainer.step < total:
        # Slurm's warning before SIGKILL (preemption, time limit): fail, so the retry resumes.
        _log(f"terminated by SIGTERM at step {trainer.step}/{total}; rerun to resume from the checkpoint")
        sys.exit(EXIT_TERMINATED)
    if args.stop_after and trainer.step < total:
        _log(f"stopped after {args.stop_after} steps (checkpoint kept for resume)")
        sys.exit(3)
    out = Path(args.out)
    for name in trainer.adapters:
        trainer.policies.save(name, out / name)
    history = read_steps(ckpt_dir / "metrics.jsonl", trainer.step)  # every step once, no gap
    io.write_jsonl(metrics, history)
    io.write_json(out / "train_summary.json", {
        "adapters": list(trainer.adapters), "steps": trainer.step, "seconds": round(time.time() - t0, 1),
        "grader": trainer.grader.counts, "precision": resolved, "sandbox": trainer.grader.mechanism,
        "loss_forward": spec["train"].get("loss_forward", "transformers"),
        "device": device, "generation": generation_record(spec), "provenance": io.provenance(spec, spec["seed"]),
    })
    io.share_modes(out)  # safetensors and peft write as they please
    if args.snapshots:
        _publish_snapshots(ckpt_dir / "snapshots", Path(args.snapshots), spec["train"].get("snapshot_every"), total)
    io.write_json(ckpt_dir / "resume_key.json", {**key, "finished": True})


def _checkpoint_step(path: Path) -> int:
    """The step a checkpoint resumes at (0 without one): where a logger's resumed record starts."""
    if not path.exists():
        return 0
    from .rl.trainer import read_checkpoint

    return int(read_checkpoint(path)["step"])


def _publish_snapshots(src: Path, out: Path, every: int | None, total: int) -> None:
    """The run's adapter snapshots (Figure 7b) into the declared output, atomically.

    They are written under the checkpoint folder while training (a resumed job keeps
    the earlier ones); only this run's steps are published, with snapshots.json."""
    import shutil

    steps = list(range(every, total, every)) if every else []
    missing = [k for k in steps if not (src / f"step{k}").is_dir()]
    if missing:
        raise ValueError(f"train: adapter snapshots missing for steps {missing} in {src}")
    with io.atomic_dir(out) as tmp:
        for k in steps:
            shutil.copytree(src / f"step{k}", tmp / f"step{k}")
        io.write_json(tmp / "snapshots.json", {"every": every, "steps": steps, "total_steps": total})


def cmd_evaluate(args) -> None:
    """Every evaluation of one trained cell on every benchmark, as per-problem records.

    A records file finished by an interrupted job is kept in --resume-dir and
    reused; the declared output directory is filled only at the end.
    """
    import shutil

    from . import precision
    from .evaluate import protocols
    from .evaluate.records import is_complete
    from .generate import generation_record
    from .toy import pinned
    from .verify.grading import Grader

    spec = _spec(args.spec)
    _threads(spec["threads"])
    where, device = _device(spec, f"evaluate job {spec['out_dir']}")
    adapter_dirs = {n: str(Path(spec["adapter_dir"]) / n) for n in spec["adapters"]}
    sample, fmt = protocols.sampler_for(spec, adapter_dirs, spec["seed"], where)
    resolved = precision.resolve(spec.get("precision", "fp32"), where)  # recorded in provenance.json
    resume = Path(args.resume_dir)
    resume.mkdir(parents=True, exist_ok=True)
    summary = {}
    problems_of = {b: io.read_jsonl(path) for b, path in spec["benchmarks"].items()}
    for name, bench in spec["needs"]:
        ev, problems = spec["evaluations"][name], problems_of[bench]
        done = resume / f"{name}.{bench}.jsonl"
        if is_complete(done, [p["id"] for p in problems]):  # every problem once, nothing cut short
            _log(f"{name} on {bench}: reusing {done}")
            continue
        grader = Grader.for_spec(spec)
        records = protocols.run(ev["protocol"], ev["policies"], problems, sample, fmt, grader)
        for r in records:
            r.update(evaluation=name, model=spec["model"], seed=spec["seed"], benchmark=bench)
        io.write_jsonl(done, records)
        k = sum(r["correct"] for r in records)
        skipped = sum("skipped" in s for r in records for s in r["stages"])
        summary[f"{name}.{bench}"] = {"k": k, "n": len(records), "grader": grader.counts,
                                      "sandbox": grader.mechanism, "skipped_stages": skipped}
        _log(f"{name} on {bench}: {k}/{len(records)} correct; grader {grader.counts}"
             + (f"; {skipped} stage(s) skipped: prompt longer than the context" if skipped else ""))
    with io.atomic_dir(spec["out_dir"]) as tmp:
        shutil.copytree(resume, tmp, dirs_exist_ok=True)
        io.write_json(tmp / "provenance.json", {"summary": summary, "precision": resolved, "device": device,
                                                "generation": generation_record(spec),
                                                "base": pinned.identity(spec["base_path"]),  # table notes name it
                                                "provenance": io.provenance(spec, spec["seed"])})
    shutil.rmtree(resume)


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
    from .evaluate import curves

    spec = _spec(args.spec)
    _threads(spec["threads"])
    where, _ = _device(spec, f"curve job {spec['out']}")
    curves.run_curve(spec, log=_log, device=where)


def cmd_figure7b(args) -> None:
    from .evaluate import curves
    from .report import figures

    points = curves.load_points(args.points)
    if len({p["model"] for p in points}) > 1:
        points = [{**p, "method": f"{p['method']} ({p['model']})"} for p in points]
    figures.training_curves(points, args.out_prefix, "Figure 7b - held-out pass@1 during training")
    io.write_csv(f"{args.out_prefix}.csv", points,
                 ["method", "model", "seed", "step", "k", "n", "evaluation", "selected", "source"])


def _cell_metrics(path: str) -> list[dict]:
    """A trained cell's metrics.jsonl, checked to hold each of its steps once (train_summary.json
    beside its adapters says how many)."""
    from .evaluate.records import read_steps

    steps = io.read_json(Path(path).parent / "adapters" / "train_summary.json")["steps"]
    return read_steps(path, steps)


def cmd_training_curves(args) -> None:
    """One model's per-step training curves from its cells' metrics.jsonl files (each checked)."""
    from .report import figures

    cells = {}
    for path in args.metrics:  # results/<run>/train/<model>/<method>/seed<s>/metrics.jsonl
        cell = Path(path).parent
        cells[(cell.parent.name, int(cell.name.removeprefix("seed")))] = _cell_metrics(path)
    figures.cell_training_curves(args.model, cells, args.out_prefix)


def cmd_report(args) -> None:
    """Figure 7a from the main table's rows, then report.md over every table."""
    import csv

    from .report import figures, reported, report

    spec = _spec(args.spec)
    out = Path(args.out)
    for path in args.metrics:  # every trained cell's steps, each once
        _cell_metrics(path)
    rows = []
    with open(args.figure_table) as f:
        for r in csv.DictReader(f):
            if r["seed"] in ("mean", "") or r["method"].endswith("(post hoc)") or r.get("status"):
                continue
            rows.append({**r, "seed": int(r["seed"]),
                         **{k: float(r[k]) for k in ("pass_at_1", "ci_low", "ci_high", "mean_length")}})
    paper = figures.paper_points(reported.load_reported(args.reported))
    fig_prefix = Path(args.figure_prefix)
    figures.pass_vs_length(rows, fig_prefix, "Figure 7a - pass@1 against mean final-stage length",
                           reported=paper)
    provenance = []
    for path in sorted(args.provenance):
        record = io.read_json(path)
        provenance.append({"file": path, **record["provenance"]})
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
        figs[f"Training curves of {model}: per step, every cell (colour) and role (line style), from "
             f"metrics.jsonl"] = rel(png)
    if args.fig7b:
        figs["Figure 7b: held-out pass@1 (95% CI band) of adapter snapshots during training; step 0 is "
             "the untrained base, the last point the final adapters (points: figures/fig7b.csv)"] = rel(args.fig7b)
    headline = [name for name in tables if spec["tables"].get(name, {}).get("kind") == "claims"]
    report.write_report(out, title=f"Agon reproduction - run {spec['run']}", config=spec,
                        tables=tables, figures=figs, provenance=provenance, notes=notes, headline=headline)


PROVENANCE_FILES = ("provenance.json", "train_summary.json", "agon_base.json", "manifest.json")


def find_provenance(path: Path) -> tuple[Path, dict]:
    """The provenance block that covers `path`: its own, or that of the artifact it lies in."""
    path = path.resolve()
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
    p.add_argument("--out-prefix", required=True)
    p.set_defaults(func=cmd_training_curves)

    p = sub.add_parser("curve", help="Figure 7b: evaluate one row's adapter snapshots of one cell")
    p.add_argument("--spec", required=True)
    p.set_defaults(func=cmd_curve)

    p = sub.add_parser("figure7b", help="Figure 7b from the curve jobs' points")
    p.add_argument("--points", nargs="*", default=[], help="curve files (none: a figure saying so)")
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
