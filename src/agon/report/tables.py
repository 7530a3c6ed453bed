"""Tables from per-problem evaluation records, beside the paper's numbers.

Every row is derived from records files: k correct of n, pass@1 = k/n, a 95%
Clopper-Pearson interval, mean final-stage length (the paper's length) and
mean total generated tokens over all stages (ours). Optional columns:

  selected         for a pick row (a pair's better cascade direction): which
                   evaluation was chosen, and on which split. `<name>` is chosen
                   on the validation split (ours); `<name> (post hoc)` on the
                   table's own benchmark, as the paper did.
  p_vs_<baseline>  exact McNemar p-value against the table's baseline row, on
                   the same problems and seed.
  paper_*          the published value for the cell (config/reported.yaml) and
                   whether it falls inside our interval; blank when the paper
                   has no such cell.
With several seeds, each seed has its row and a `mean` row gives the mean
(and spread) over seeds.
"""

from __future__ import annotations

from pathlib import Path

from .. import io
from ..evaluate.stats import aggregate_seeds, clopper_pearson, mcnemar_exact, paired_by_id
from . import reported as reported_mod

COLUMNS = ["method", "model", "benchmark", "seed", "k", "n", "pass_at_1", "ci_low", "ci_high",
           "mean_length", "mean_total_tokens", "selected", "p_vs_baseline",
           "paper_pass_at_1", "paper_in_ci", "paper_mean_length", "seed_std"]


def summarize(records: list[dict]) -> dict:
    if not records:
        raise ValueError("summarize: no records")
    n = len(records)
    k = sum(int(r["correct"]) for r in records)
    low, high = clopper_pearson(k, n)
    return {
        "k": k, "n": n, "pass_at_1": k / n, "ci_low": low, "ci_high": high,
        "mean_length": sum(r["final_length"] for r in records) / n,
        "mean_total_tokens": sum(r["total_tokens"] for r in records) / n,
    }


def index_records(paths: list[str]) -> dict[tuple, list[dict]]:
    """{(model, evaluation, seed, benchmark): records} from records files."""
    index = {}
    for path in paths:
        records = io.read_jsonl(path)
        if not records:
            raise ValueError(f"{path}: no evaluation records")
        first = records[0]
        key = (first["model"], first["evaluation"], int(first["seed"]), first["benchmark"])
        ids = [r["id"] for r in records]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{path}: duplicate problem ids")
        if key in index:
            raise ValueError(f"{path}: a second records file for {key}")
        index[key] = records
    return index


def _records(index, model, evaluation, seed, benchmark):
    try:
        return index[(model, evaluation, seed, benchmark)]
    except KeyError:
        raise ValueError(f"table: no records for model {model!r}, evaluation {evaluation!r}, "
                         f"seed {seed}, benchmark {benchmark!r}") from None


def _pass(index, model, evaluation, seed, benchmark) -> float:
    records = _records(index, model, evaluation, seed, benchmark)
    return sum(int(r["correct"]) for r in records) / len(records)


def pick(index, model, candidates: list[str], seed: int, benchmark: str) -> str:
    """The candidate with the best pass@1 on `benchmark` (ties: the first listed)."""
    scores = [_pass(index, model, c, seed, benchmark) for c in candidates]
    return candidates[scores.index(max(scores))]


def build_rows(spec: dict, index) -> list[dict]:
    bench, select_on = spec["benchmark"], spec.get("select_on", "validation")
    picks = spec.get("picks", {})
    rows = []
    for model in spec["models"]:
        for name in spec["rows"]:
            variants = [(name, None)]
            if name in picks:
                variants = [(name, select_on), (f"{name} (post hoc)", bench)]
            for label, chosen_on in variants:
                per_seed = []
                for seed in spec["seeds"]:
                    evaluation = name if chosen_on is None else pick(index, model, picks[name], seed, chosen_on)
                    records = _records(index, model, evaluation, seed, bench)
                    row = {"method": label, "model": model, "benchmark": bench, "seed": seed,
                           **summarize(records), "_records": records, "_paper_method": name}
                    if chosen_on is not None:
                        row["selected"] = f"{evaluation} on {chosen_on}"
                    per_seed.append(row)
                rows += per_seed
                if len(per_seed) > 1:
                    rows.append(seed_mean_row(per_seed))
    _add_baseline_tests(rows, spec.get("baseline"))
    return rows


def seed_mean_row(per_seed: list[dict]) -> dict:
    agg = aggregate_seeds([r["pass_at_1"] for r in per_seed])
    first = per_seed[0]
    mean = lambda key: sum(r[key] for r in per_seed) / len(per_seed)  # noqa: E731
    return {"method": first["method"], "model": first["model"], "benchmark": first["benchmark"],
            "seed": "mean", "k": sum(r["k"] for r in per_seed), "n": sum(r["n"] for r in per_seed),
            "pass_at_1": agg["mean"], "ci_low": agg["min"], "ci_high": agg["max"],
            "seed_std": agg["std"], "mean_length": mean("mean_length"),
            "mean_total_tokens": mean("mean_total_tokens"), "_paper_method": first["_paper_method"]}


def _add_baseline_tests(rows: list[dict], baseline: str | None) -> None:
    if not baseline:
        return
    base = {(r["model"], r["seed"]): r for r in rows if r["method"] == baseline and "_records" in r}
    for r in rows:
        other = base.get((r["model"], r["seed"]))
        if other is None or "_records" not in r or r is other:
            continue
        paired = paired_by_id(r["_records"], other["_records"])
        r["p_vs_baseline"] = mcnemar_exact(paired.a, paired.b)["p_value"]


def add_paper_columns(rows: list[dict], spec: dict, reported: dict) -> None:
    paper = spec.get("paper")
    if not paper:
        return
    for r in rows:
        model = spec["paper_models"].get(r["model"])
        if model is None or r["_paper_method"] not in reported["keys"]["methods"]:
            continue  # our own rows (e.g. coop_drafter_alone) have no paper cell
        value = reported_mod.lookup(reported, paper["table"], model, paper["benchmark"], r["_paper_method"])
        if value is None:
            continue
        r["paper_pass_at_1"] = value
        r["paper_mean_length"] = reported_mod.lookup(reported, paper["table"], model, paper["benchmark"],
                                                     r["_paper_method"], "mean_length")
        if r["seed"] != "mean":
            r["paper_in_ci"] = reported_mod.inside_interval(value, 100 * r["ci_low"], 100 * r["ci_high"])


def _pct(x) -> str:
    return "" if x is None or x == "" else f"{100 * x:.1f}"


def _num(x, digits=1) -> str:
    if x is None or x == "":
        return ""
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def to_markdown(title: str, rows: list[dict], spec: dict) -> str:
    head = ["method", "model", "seed", "k/n", "pass@1 %", "95% CI", "mean length", "total tokens"]
    has = lambda key: any(r.get(key) not in (None, "") for r in rows)  # noqa: E731
    extra = [(key, label) for key, label in [
        ("selected", "direction chosen"), ("p_vs_baseline", f"p vs {spec.get('baseline')}"),
        ("paper_pass_at_1", "paper pass@1 %"), ("paper_in_ci", "paper in our CI"),
        ("paper_mean_length", "paper length")] if has(key)]
    head += [label for _, label in extra]
    lines = [f"# {title}", "", f"Benchmark: {spec['benchmark']}.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ci = (f"[{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]" if r["seed"] != "mean"
              else f"sd {_pct(r.get('seed_std'))} (min {_pct(r['ci_low'])}, max {_pct(r['ci_high'])})")
        cells = [r["method"], r["model"], str(r["seed"]), f"{r['k']}/{r['n']}", _pct(r["pass_at_1"]), ci,
                 _num(r["mean_length"]), _num(r["mean_total_tokens"])]
        for key, _ in extra:
            value = r.get(key)
            if key == "p_vs_baseline" and value is not None:
                value = f"{value:.3g}"
            elif key == "paper_in_ci" and value is not None:
                value = "yes" if value else "no"
            cells.append(_num(value, 0) if isinstance(value, float) else ("" if value is None else str(value)))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "pass@1 with a 95% Clopper-Pearson interval; lengths in tokens (mean final-stage "
              "completion, as the paper reports; and total over all stages). A `mean` row averages "
              "seeds (sd = sample standard deviation over seeds).",
              "Paper values are the published Qwen3-scale numbers, printed beside ours for "
              "reference: the toy world is not expected to match them."]
    if spec.get("picks"):
        lines.append("A pair's row uses the cascade direction with the better pass@1 on the "
                     "validation split; `(post hoc)` rows pick it on the reported benchmark itself, "
                     "as the paper did, and are optimistic by construction.")
    return "\n".join(lines) + "\n"


def write_table(spec: dict, record_files: list[str], out_prefix: Path, reported_path=None) -> list[dict]:
    index = index_records(record_files)
    rows = build_rows(spec, index)
    if reported_path and spec.get("paper"):
        add_paper_columns(rows, spec, reported_mod.load_reported(reported_path))
    io.write_csv(str(out_prefix) + ".csv", rows, COLUMNS)
    io.write_text(str(out_prefix) + ".md", to_markdown(spec["title"], rows, spec))
    return rows
