"""MATH-500 (`HuggingFaceH4/MATH-500`, split "test"): an evaluation set.

Columns used: problem, answer, level (int 1-5), unique_id (e.g.
"test/precalculus/807.json"); subject is kept as metadata when present.
`difficulty` is the MATH level. ids are `math500-<unique_id>` with the
".json" suffix dropped and every run of characters other than letters, digits,
"_", "." and "-" replaced by "-" (e.g. "math500-test-precalculus-807").

Counts (filled into `counts`): rows, after_dedupe, kept.
"""

from __future__ import annotations

import re

from .hub import SourceSpec, Tally, label, load_rows, value

SPEC = SourceSpec(
    name="math500",
    hub_id="HuggingFaceH4/MATH-500",
    split="test",
    required=("problem", "answer", "level", "unique_id"),
    optional=("subject",),
)


def problem_id(unique_id: str) -> str:
    stem = unique_id.strip().removesuffix(".json")
    return f"{SPEC.name}-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-")


def load(cfg: dict, counts: dict | None = None) -> list[dict]:
    """MATH-500 problems in the project schema; fills `counts` with per-stage counts."""
    cfg = dict(cfg or {})
    name = label(SPEC, cfg)
    tally = Tally(SPEC, cfg)
    rows = tally.stage("rows", load_rows(SPEC, cfg), "reading the data")

    problems = []
    for i, row in enumerate(rows):
        problem = {
            "id": problem_id(value(row, "unique_id", i, name)),
            "prompt": value(row, "problem", i, name).strip(),
            "answer": value(row, "answer", i, name).strip(),
            "difficulty": int(value(row, "level", i, name, kind="number")),
            "source": SPEC.name,
        }
        meta = {"unique_id": row["unique_id"]}
        if row.get("subject"):
            meta["subject"] = row["subject"]
        problem["meta"] = meta
        problems.append(problem)
    return tally.finish(problems, counts)
