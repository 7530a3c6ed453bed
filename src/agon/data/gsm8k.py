"""GSM8K (`openai/gsm8k`, config "main", split "test"): an evaluation set.

Columns: question, answer. The answer column is a worked solution ending in
`#### <final answer>`; the gold answer is the text after the last `####`, with
thousands separators (commas) removed and whitespace stripped ("1,200" ->
"1200"). A row without `####` is an error naming the row.

GSM8K has no difficulty label; `difficulty` is the number of solution lines
before `####` (the reasoning steps), a common proxy, on GSM8K's own scale.

ids are `gsm8k-<hash of the stripped question>` (stable across runs and row
orders). Counts (filled into `counts`): rows, after_dedupe, kept.
"""

from __future__ import annotations

from .hub import DataSourceError, SourceSpec, Tally, content_id, label, load_rows, value

SPEC = SourceSpec(
    name="gsm8k",
    hub_id="openai/gsm8k",
    hub_config="main",
    split="test",
    required=("question", "answer"),
)


def final_answer(solution: str) -> str | None:
    """The text after the last `####`, commas removed; None if there is no `####`."""
    if "####" not in solution:
        return None
    return solution.rpartition("####")[2].replace(",", "").strip()


def load(cfg: dict, counts: dict | None = None) -> list[dict]:
    """GSM8K problems in the project schema; fills `counts` with per-stage counts."""
    cfg = dict(cfg or {})
    name = label(SPEC, cfg)
    tally = Tally(SPEC, cfg)
    rows = tally.stage("rows", load_rows(SPEC, cfg), "reading the data")

    problems = []
    for i, row in enumerate(rows):
        question = value(row, "question", i, name).strip()
        solution = value(row, "answer", i, name)
        answer = final_answer(solution)
        if not answer:
            raise DataSourceError(
                f"{name}: row {i} (question {question[:60]!r}) has no final answer after "
                f"'####' in its answer column {solution[-80:]!r}; GSM8K answers end in "
                f"'#### <number>' -- fix or drop that row of the local copy.")
        steps = [line for line in solution.rpartition("####")[0].splitlines() if line.strip()]
        problems.append({
            "id": content_id(SPEC.name, question),
            "prompt": question,
            "answer": answer,
            "difficulty": len(steps),
            "source": SPEC.name,
        })
    return tally.finish(problems, counts)
