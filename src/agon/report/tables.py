"""Tables from per-problem evaluation records.

Every row is derived from records files: k correct of n, pass@1 = k/n, a 95%
Clopper-Pearson interval, mean final-stage length (the paper's length) and
mean total generated tokens over all stages (ours).
"""

from __future__ import annotations

from pathlib import Path

from .. import io
from ..evaluate.stats import clopper_pearson

COLUMNS = ["method", "model", "benchmark", "seed", "k", "n", "pass_at_1", "ci_low", "ci_high",
           "mean_length", "mean_total_tokens"]


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


def rows_from_files(paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        records = io.read_jsonl(path)
        if not records:
            raise ValueError(f"{path}: no evaluation records")
        first = records[0]
        ids = [r["id"] for r in records]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{path}: duplicate problem ids")
        rows.append({"method": first["evaluation"], "model": first["model"],
                     "benchmark": first["benchmark"], "seed": first["seed"], **summarize(records)})
    return rows


def _fmt(value, column: str) -> str:
    if isinstance(value, float):
        if column in ("pass_at_1", "ci_low", "ci_high"):
            return f"{100 * value:.1f}"
        return f"{value:.1f}"
    return str(value)


def to_markdown(title: str, rows: list[dict]) -> str:
    head = ["method", "model", "benchmark", "seed", "k/n", "pass@1 %", "95% CI", "mean length",
            "total tokens"]
    lines = [f"# {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([
            r["method"], r["model"], r["benchmark"], str(r["seed"]), f"{r['k']}/{r['n']}",
            _fmt(r["pass_at_1"], "pass_at_1"),
            f"[{_fmt(r['ci_low'], 'ci_low')}, {_fmt(r['ci_high'], 'ci_high')}]",
            _fmt(r["mean_length"], ""), _fmt(r["mean_total_tokens"], ""),
        ]) + " |")
    lines += ["", "pass@1 with a 95% Clopper-Pearson interval; lengths in tokens "
              "(mean final-stage completion; total over all stages)."]
    return "\n".join(lines) + "\n"


def write_table(spec: dict, record_files: list[str], out_prefix: Path) -> list[dict]:
    rows = rows_from_files(record_files)
    order = {name: i for i, name in enumerate(spec["rows"])}
    rows.sort(key=lambda r: (r["model"], order.get(r["method"], len(order)), r["seed"]))
    io.write_csv(str(out_prefix) + ".csv", rows, COLUMNS)
    io.write_text(str(out_prefix) + ".md", to_markdown(spec["title"], rows))
    return rows
