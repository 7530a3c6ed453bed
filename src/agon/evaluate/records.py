"""Reading result files back, checked: every records file against its split, every
per-step metrics file against its steps.

A table, a figure point or a resumed job counts what these files say, so nothing is
counted from a damaged one: a records file must hold valid JSON to its last line,
end in a newline (a file cut at a line boundary loses whole records, which the id
check then finds), carry each problem of its split exactly once and nothing else, and
count what it claims (`correct` is the final stage's, `total_tokens` the sum of the
stage lengths). A metrics file must hold steps 0..N-1, each once, in order. Every
failure is a ValueError naming the file and the first bad line, id or step, and what
to do about it.
"""

from __future__ import annotations

from pathlib import Path

from .. import io

REDO = "delete it (or its cell's evaluation directory) and rerun to evaluate again"


def split_ids(path) -> list[str]:
    """The problem ids of a split file, in order."""
    return [p["id"] for p in io.read_jsonl(path)]


def _complete(path) -> None:
    with open(path, "rb") as f:
        f.seek(0, 2)
        if f.tell() == 0:
            raise ValueError(f"{path}: empty records file; {REDO}")
        f.seek(-1, 2)
        if f.read(1) != b"\n":
            raise ValueError(f"{path}: the last line has no newline (the file was cut short); {REDO}")


def check_records(path, records: list[dict], ids: list[str]) -> None:
    """Raise ValueError unless `records` (read from `path`) are exactly the split `ids`, each once,
    each counting what it claims."""
    expected = set(ids)
    seen: dict[str, int] = {}
    for line, r in enumerate(records, 1):
        pid = r.get("id")
        if pid in seen:
            raise ValueError(f"{path}:{line}: problem {pid!r} again (first at line {seen[pid]}); {REDO}")
        if pid not in expected:
            raise ValueError(f"{path}:{line}: problem {pid!r} is not in its split; {REDO}")
        seen[pid] = line
        stages = r.get("stages")
        if not isinstance(stages, list) or not stages or r.get("correct") not in (0, 1) \
                or r["correct"] != stages[-1].get("correct") \
                or r.get("total_tokens") != sum(s.get("length", 0) for s in stages):
            raise ValueError(f"{path}:{line}: record of {pid!r} does not count what it claims (correct "
                             f"{r.get('correct')!r}, its final stage's, total_tokens the sum of its stages); {REDO}")
    missing = [i for i in ids if i not in seen]
    if missing:
        raise ValueError(f"{path}: {len(missing)} problem(s) of its split ({len(ids)}) missing, first "
                         f"{missing[0]!r}; {REDO}")


def read_records(path, ids: list[str]) -> list[dict]:
    """A records file, checked against its split's `ids` (see the module doc)."""
    _complete(path)
    records = io.read_jsonl(path)
    check_records(path, records, ids)
    return records


def is_complete(path, ids: list[str]) -> bool:
    """Whether a records file exists and passes `read_records` (an interrupted job's reuse)."""
    try:
        read_records(path, ids)
        return True
    except (OSError, ValueError):
        return False


def check_steps(path, history: list[dict], steps: int) -> None:
    """Raise ValueError unless `history` (read from `path`) holds the records of steps
    0..`steps`-1 (the trainer counts from 0), each once, in order."""
    for line, record in enumerate(history, 1):
        step, want = record.get("step"), line - 1
        if step != want:
            what = (f"step {step} again" if isinstance(step, int) and step < want else
                    f"step {want} missing (found step {step!r})")
            raise ValueError(f"{path}:{line}: {what}: per-step metrics hold steps 0..{steps - 1}, each once, "
                             "in order")
    if len(history) != steps:
        raise ValueError(f"{path}: {len(history)} step(s) recorded, but the run made {steps} "
                         f"(step {len(history)} missing)")


def read_steps(path, steps: int) -> list[dict]:
    """A per-step metrics file, checked to hold steps 0..`steps`-1."""
    history = io.read_jsonl(path) if Path(path).exists() else []
    check_steps(path, history, steps)
    return history


# --- an index of records files, as tables and curves read them ---------------------------

def index_records(paths: list[str], splits: dict[str, str] | None = None) -> dict[tuple, list[dict]]:
    """{(model, evaluation, seed, benchmark): records} from records files.

    `splits` ({benchmark: split file}, what the workflow passes) checks each file against
    its benchmark's split first (agon.evaluate.records): a damaged file stops the table,
    named, instead of shrinking a row.
    """
    ids_of = {b: split_ids(path) for b, path in (splits or {}).items()}
    index = {}
    for path in paths:
        benchmark = Path(path).name.removesuffix(".jsonl").rsplit(".", 1)[-1]
        if splits is not None and benchmark not in ids_of:
            raise ValueError(f"{path}: benchmark {benchmark!r} has no split file in the table's spec")
        records = read_records(path, ids_of[benchmark]) if splits is not None else io.read_jsonl(path)
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


def records_for(index, model, evaluation, seed, benchmark):
    try:
        return index[(model, evaluation, seed, benchmark)]
    except KeyError:
        raise ValueError(f"no records for model {model!r}, evaluation {evaluation!r}, "
                         f"seed {seed}, benchmark {benchmark!r}") from None


def pass_rate(index, model, evaluation, seed, benchmark) -> float:
    records = records_for(index, model, evaluation, seed, benchmark)
    return sum(int(r["correct"]) for r in records) / len(records)


def pick(index, model, candidates: list[str], seed: int, benchmark: str) -> str:
    """The candidate with the best pass@1 on `benchmark` (ties: the first listed).

    Reads only the `benchmark` records of the candidates: a pick on validation
    never sees held-out.
    """
    scores = [pass_rate(index, model, c, seed, benchmark) for c in candidates]
    return candidates[scores.index(max(scores))]
