"""Figure 7b: held-out pass@1 of adapter snapshots taken during training.

One `curve` job per (model, figure row, seed). A row is an evaluation (e.g.
`grpo`, `self_refine`) or a pick (e.g. `agon`: the better of agon_ab / agon_ba).
Its points, all on the same fixed subset (the first `problems` problems of the
benchmark split, which is itself a seeded draw):

  step 0        the untrained base on the plain prompt (the `step0` evaluation,
                zero_shot): the common first point of every line, read from that
                evaluation's records (no new sampling).
  snapshots     each adapter snapshot the training job saved every
                `train.snapshot_every` steps (train/<model>/<method>/seed<s>/snapshots/
                step<k>/), evaluated here with the row's protocol through the same
                `protocols.run` and backend (agon.jobs.Job.open_backend) as `agon evaluate`; one backend
                (one vLLM engine) serves every snapshot, each loaded in turn.
  final step    the trained adapters: the row's records from the cell's own
                evaluation job, restricted to the subset (no new sampling).

Direction rule for a pick: the candidate the tables pick, i.e. the better pass@1
on `select_on` (validation) of the FINAL adapters, ties to the first listed; the
same direction is used at every snapshot. Only the `select_on` records are read
for the choice, never the figure's benchmark.

Output: one JSON line per point {row, evaluation, model, seed, step, k, n,
source, records: [{id, correct, final_length}]}.
"""

from __future__ import annotations

from pathlib import Path

from .. import io
from .records import complete, flag, index_records, pick, tie_note


def subset(problems: list[dict], n: int) -> list[dict]:
    if n > len(problems):
        raise ValueError(f"curve: figure asks for {n} problems but the benchmark split has {len(problems)}")
    return problems[:n]


def restrict(records: list[dict], ids: list, where: str) -> list[dict]:
    """`records` of exactly the problems `ids`, in that order (an absent id is an error)."""
    by_id = {r["id"]: r for r in records}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise ValueError(f"curve: {where} has no records for {len(missing)} subset problem(s), e.g. {missing[:3]}")
    return [by_id[i] for i in ids]


def choose_evaluation(spec: dict) -> tuple[str, str | None]:
    """(evaluation, how it was chosen) of the row; a pick reads only `select_on` records."""
    if not spec.get("candidates"):
        return spec["evaluation"], None
    select_on = spec["select_on"]
    files = [str(Path(spec["eval_dir"]) / f"{c}.{select_on}.jsonl") for c in spec["candidates"]]
    index = index_records(files, {select_on: spec["select_on_path"]})  # checked against its split
    chosen = pick(index, spec["model"], spec["candidates"], spec["seed"], select_on)
    return chosen, f"{chosen} on {select_on}" + tie_note(index, spec["model"], spec["candidates"], spec["seed"],
                                                           select_on)


def point(spec: dict, evaluation: str, step: int, records: list[dict], source: str,
          selected: str | None) -> dict:
    return {"row": spec["row"], "evaluation": evaluation, "model": spec["model"], "seed": spec["seed"],
            "step": step, "k": sum(int(r["correct"]) for r in records), "n": len(records), "source": source,
            "selected": selected,
            "records": [{"id": r["id"], "correct": int(r["correct"]), "final_length": r["final_length"]}
                        for r in records]}


def snapshot_steps(snapshots_dir) -> list[int]:
    manifest = Path(snapshots_dir) / "snapshots.json"
    if not manifest.exists():
        return []
    return [int(s) for s in io.read_json(manifest)["steps"]]


def expected_steps(snapshots_dir) -> list[int]:
    """The steps a curve of this cell must hold: step 0, each snapshot the training job published
    (its snapshots.json), and the final adapters at the run's last step."""
    manifest = Path(snapshots_dir) / "snapshots.json"
    record = io.read_json(manifest)
    if not isinstance(record, dict) or not isinstance(record.get("steps"), list) or \
            type(record.get("total_steps")) is not int:
        raise ValueError(f"{manifest}: no 'steps' list and 'total_steps' number (the training job writes them)")
    return [0, *(int(s) for s in record["steps"]), record["total_steps"]]


def run_curve(spec: dict, backend_factory, log=print, device: str = "cpu", write: bool = True) -> list[dict]:
    """The row's points (written to spec["out"] unless `write` is false); every snapshot is sampled
    through ONE backend (one vLLM engine), which `load_saved` points at each snapshot's adapters in
    turn. `backend_factory(spec, dirs, device)` -> (backend, fmt): the job's (agon.jobs.Job.open_backend)."""
    from ..verify.grading import Grader
    from . import protocols
    from .records import read_records

    bench = spec["benchmark"]
    split = io.read_jsonl(spec["benchmark_path"])
    split_ids = [p["id"] for p in split]  # the evaluation records read below are checked against it
    problems = subset(split, spec["problems"])
    ids = [p["id"] for p in problems]
    evaluation, selected = choose_evaluation(spec)
    ev = spec["evaluations"][evaluation]
    step0 = spec["step0"]
    first = read_records(Path(step0["eval_dir"]) / f"{step0['evaluation']}.{bench}.jsonl", split_ids)
    # read (and checked) before any snapshot is sampled: a damaged file stops the job at once
    final = read_records(Path(spec["eval_dir"]) / f"{evaluation}.{bench}.jsonl", split_ids)
    points = [point(spec, step0["evaluation"], 0, restrict(first, ids, step0["evaluation"]),
                    f"untrained base ({step0['evaluation']} records)", None)]
    total = int(io.read_json(Path(spec["adapter_dir"]) / "train_summary.json")["steps"])
    backend = fmt = None
    try:
        for step in snapshot_steps(spec["snapshots"]):
            if not 0 < step < total:
                continue
            dirs = {a: str(Path(spec["snapshots"]) / f"step{step}" / a) for a in spec["adapters"]}
            if backend is None:
                backend, fmt = backend_factory(spec, dirs, device)
            else:
                backend.load_saved(dirs)
            sample = protocols.make_sampler(backend, spec["sampling"], io.derived_seed(spec["seed"], "curve", step))
            grader = Grader.for_spec(spec)
            records = protocols.run(ev["protocol"], ev["policies"], problems, sample, fmt, grader)
            points.append(point(spec, evaluation, step, records, "snapshot", selected))
            log(f"{spec['row']} step {step}/{total}: {points[-1]['k']}/{len(records)} correct")
    finally:
        if backend is not None and hasattr(backend, "close"):
            backend.close()  # the vLLM engine and its adapter versions
    points.append(point(spec, evaluation, total, restrict(final, ids, evaluation),
                        "final adapters (evaluation records)", selected))
    if write:
        io.write_jsonl(spec["out"], points)
    return points


REDO_CURVE = "delete it and rerun its curve job"


def check_curve(path, points: list[dict], expected: list[int] | None = None) -> None:
    """Raise ValueError unless a curve file holds one row's points, from step 0 (the untrained
    base) to the final adapters, in rising steps, each counting its own records: a file cut at a
    line boundary, or a point edited, would otherwise move or drop a line of Figure 7b. With
    `expected` (expected_steps of its cell) every snapshot must be there: a point lost in the
    middle leaves a line that still runs from step 0 to the end."""
    fields = ("row", "model", "seed", "step", "k", "n", "evaluation", "source")
    for line, p in enumerate(points, 1):
        missing = [f for f in fields if f not in p]
        if missing:
            raise ValueError(f"{path}:{line}: a curve point without {missing[0]!r}; {REDO_CURVE}")
        if (p["row"], p["model"], p["seed"]) != (points[0]["row"], points[0]["model"], points[0]["seed"]):
            raise ValueError(f"{path}:{line}: a point of row {p['row']!r}, model {p['model']!r}, seed {p['seed']!r} "
                             f"in the file of line 1's; {REDO_CURVE}")
        before = points[line - 2]["step"] if line > 1 else None
        if type(p["step"]) is not int or before is not None and not p["step"] > before:
            after = f" after step {before!r}" if before is not None else ""
            raise ValueError(f"{path}:{line}: step {p['step']!r}{after} (steps are integers rising from 0); "
                             f"{REDO_CURVE}")
        records = p.get("records")
        flags = isinstance(records, list) and all(isinstance(r, dict) and flag(r.get("correct")) is not None
                                                  for r in records)
        if records is not None and not (
                flags and (p["n"], p["k"]) == (len(records), sum(r["correct"] for r in records))):
            raise ValueError(f"{path}:{line}: step {p['step']}: k {p['k']!r} / n {p['n']!r} is not what its "
                             f"{len(records)} records count; {REDO_CURVE}")
    if points[0]["step"] != 0 or not str(points[-1]["source"]).startswith("final adapters"):
        raise ValueError(f"{path}: a curve runs from step 0 to the final adapters; this one from step "
                         f"{points[0]['step']!r} to a {points[-1]['source']!r} point (cut short?); {REDO_CURVE}")
    steps = [p["step"] for p in points]
    if expected is not None and steps != expected:
        missing, extra = sorted(set(expected) - set(steps)), sorted(set(steps) - set(expected))
        raise ValueError(f"{path}: steps {steps}, but its cell's snapshots give {expected}"
                         + (f" (missing {missing})" if missing else "") + (f" (not a snapshot: {extra})" if extra else "")
                         + f"; {REDO_CURVE}")


def load_points(paths: list[str], snapshots: dict[str, str] | None = None) -> list[dict]:
    """Every point of the curve files (each checked: `check_curve`, against the steps of its cell's
    snapshots when `snapshots` maps each path to its cell's snapshots directory), for
    figures.training_curves (method = the row)."""
    out = []
    for path in paths:
        complete(path, "curve file", REDO_CURVE)
        points = io.read_jsonl(path, blank_lines=False)
        if snapshots is not None and path not in snapshots:
            raise ValueError(f"{path}: no snapshots directory given for this curve file")
        check_curve(path, points, expected_steps(snapshots[path]) if snapshots is not None else None)
        for p in points:
            out.append({"method": p["row"], "model": p["model"], "seed": p["seed"], "step": p["step"],
                        "k": p["k"], "n": p["n"], "evaluation": p["evaluation"], "source": p["source"],
                        "selected": p.get("selected") or ""})
    return out
