"""Reading result files back, checked: every records file against its split, every
per-step metrics file against its steps.

A table, a figure point or a resumed job counts what these files say, so nothing is
counted from a damaged one: a records file must hold valid JSON to its last line,
end in a newline (a file cut at a line boundary loses whole records, which the id
check then finds), carry each problem of its split exactly once and nothing else, and
count what it claims (`correct` is the final stage's, `total_tokens` the sum of the
stage lengths, `final_length` the final stage's length; every stage's `correct` 0 or 1,
its `length` a count), and name in every record the model, evaluation, seed and benchmark
its file is read as. A metrics file must hold steps 0..N-1, each once, in order, with
finite numbers where a table reads them. Every failure is a ValueError naming the file and the first bad line, id
or step, and what to do about it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from .. import io

REDO = "delete it (or its cell's evaluation directory) and rerun to evaluate again"


def split_ids(path) -> list[str]:
    """The problem ids of a split file, in order (each problem once, each with an id; its content
    the hash its prepare job recorded in manifest.json beside it, where there is one)."""
    from ..data.splits import split_hash

    problems = io.read_jsonl(path, blank_lines=False)
    manifest = Path(path).parent / "manifest.json"
    recorded = io.read_json(manifest).get("splits", {}).get(Path(path).stem, {}) if manifest.exists() else {}
    if "hash" in recorded and split_hash(problems) != recorded["hash"]:
        raise ValueError(f"{path}: its content is not what its prepare job wrote (hash {split_hash(problems)}, "
                         f"{manifest} says {recorded['hash']}): the split is damaged; rerun its prepare job")
    ids, seen = [], {}
    for line, p in enumerate(problems, 1):
        pid = p.get("id")
        if pid is None or pid in seen:
            what = f"problem {pid!r} again (first at line {seen[pid]})" if pid in seen else "a problem without an id"
            raise ValueError(f"{path}:{line}: {what}: the split is damaged; rerun its prepare job "
                             "(its records then no longer match it)")
        seen[pid] = line
        ids.append(pid)
    return ids


def complete(path, what: str = "records file", redo: str = REDO) -> None:
    """Raise ValueError when the file at `path` is empty or does not end in a newline (cut short)."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        if f.tell() == 0:
            raise ValueError(f"{path}: empty {what}; {redo}")
        f.seek(-1, 2)
        if f.read(1) != b"\n":
            raise ValueError(f"{path}: the last line has no newline (the file was cut short); {redo}")


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
        if not isinstance(stages, list) or not stages or not all(map(_counted_stage, stages)):
            raise ValueError(f"{path}:{line}: record of {pid!r}: every stage needs `correct` 0 or 1 and a "
                             f"token `length` (a count), and `truncated`, where present, true or false, "
                             f"`completion` text; {REDO}")
        if flag(r.get("correct")) is None or r["correct"] != stages[-1]["correct"] \
                or r.get("total_tokens") != sum(s["length"] for s in stages) \
                or r.get("final_length") != stages[-1]["length"]:
            raise ValueError(f"{path}:{line}: record of {pid!r} does not count what it claims (correct "
                             f"{r.get('correct')!r}, its final stage's; total_tokens the sum of its stages' lengths; "
                             f"final_length {r.get('final_length')!r}, its final stage's); {REDO}")
    missing = [i for i in ids if i not in seen]
    if missing:
        raise ValueError(f"{path}: {len(missing)} problem(s) of its split ({len(ids)}) missing, first "
                         f"{missing[0]!r}; {REDO}")


def flag(x):
    """x when it is a 0/1 flag (an int or a bool), else None: 2, "yes" or null count nothing."""
    return x if type(x) in (int, bool) and x in (0, 1) else None


def _counted_stage(stage) -> bool:
    return (isinstance(stage, dict) and flag(stage.get("correct")) is not None
            and type(stage.get("length")) is int and stage["length"] >= 0
            and type(stage.get("truncated", False)) is bool and type(stage.get("completion", "")) is str)


def read_records(path, ids: list[str]) -> list[dict]:
    """A records file, checked against its split's `ids` (see the module doc)."""
    complete(path)
    records = io.read_jsonl(path, blank_lines=False)
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
            # a step written later in the file is a swap, not a loss: say which
            later = next((n for n, r in enumerate(history[line:], line + 1) if r.get("step") == want), None)
            what = (f"step {step} again" if isinstance(step, int) and step < want else
                    f"steps out of order: step {step!r} before step {want} (line {later})" if later else
                    f"step {want} missing (found step {step!r})")
            raise ValueError(f"{path}:{line}: {what}: per-step metrics hold steps 0..{steps - 1}, each once, "
                             "in order")
    if len(history) != steps:
        raise ValueError(f"{path}: {len(history)} step(s) recorded, but the run made {steps} "
                         f"(step {len(history)} missing)")
    for line, record in enumerate(history, 1):
        streams = record.get("streams")
        if not isinstance(streams, dict) or not all(isinstance(v, dict) for v in streams.values()):
            raise ValueError(f"{path}:{line}: step {record['step']}: `streams` must map each stream to its numbers")
        for stream, stats in streams.items():
            for key in MEASURED:
                value = stats.get(key)
                if key in stats and not (value is None and key in NULLABLE) and not (
                        type(value) in (int, float) and math.isfinite(value)):
                    raise ValueError(f"{path}:{line}: step {record['step']}: streams.{stream}.{key} ({value!r}) is "
                                     "not a finite number: a table would count it as a value")


# The per-stream numbers tables read (Table 0's sections 5 and 7). A challenger's conversion rate
# is null on a step with no wrong rival. Diagnostics (update_kl, the sampler gap) may be NaN: a
# figure draws a gap there, and no table counts them.
MEASURED = ("reward", "pass_rate", "mean_length", "conversion_rate")
NULLABLE = ("conversion_rate",)


def read_steps(path, steps: int) -> list[dict]:
    """A per-step metrics file, checked to hold steps 0..`steps`-1."""
    history = io.read_jsonl(path, blank_lines=False) if Path(path).exists() else []
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
        key = _file_key(path, records, named=splits is not None)
        ids = [r["id"] for r in records]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{path}: duplicate problem ids")
        if key in index:
            raise ValueError(f"{path}: a second records file for {key}")
        index[key] = records
    return index


def _file_key(path, records: list[dict], named: bool) -> tuple:
    """(model, evaluation, seed, benchmark) that every record of the file names. With `named`
    (the workflow's files, seed<N>/<evaluation>.<benchmark>.jsonl) its path must agree too: a
    record written for another file is found in its own, not blamed on the file whose key it took."""
    keys = ("model", "evaluation", "seed", "benchmark")
    first = records[0]
    if named:
        evaluation, _dot, benchmark = Path(path).name.removesuffix(".jsonl").rpartition(".")
        first = {**first, "evaluation": evaluation, "benchmark": benchmark}
        seed_dir = re.fullmatch(r"seed(\d+)", Path(path).parent.name)  # the workflow's eval/<model>/<cell>/seed<N>/
        if seed_dir:
            first["seed"] = int(seed_dir.group(1))
    for line, r in enumerate(records, 1):
        if any(k not in r for k in keys) or type(r["seed"]) is not int or any(r[k] != first[k] for k in keys):
            raise ValueError(f"{path}:{line}: record of {r.get('id')!r} names model {r.get('model')!r}, evaluation "
                             f"{r.get('evaluation')!r}, seed {r.get('seed')!r}, benchmark {r.get('benchmark')!r}; "
                             f"the file holds model {first.get('model')!r}, evaluation {first.get('evaluation')!r}, "
                             f"seed {first.get('seed')!r}, benchmark {first.get('benchmark')!r}; {REDO}")
    return tuple(first[k] for k in keys)


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
    scores = _scores(index, model, candidates, seed, benchmark)
    return candidates[scores.index(max(scores))]


def tied(index, model, candidates: list[str], seed: int, benchmark: str) -> bool:
    """Whether `pick`'s best pass@1 is shared: its choice is then the first listed, not a measurement."""
    scores = _scores(index, model, candidates, seed, benchmark)
    return scores.count(max(scores)) > 1


TIE = " (a tie: the first listed)"  # beside a direction its selection split left to the order of the candidates


def tie_note(index, model: str, candidates: list[str], seed: int, benchmark: str) -> str:
    """TIE where the pick among `candidates` on `benchmark` was a tie, else "" (every `selected`
    column, the tables' and Figure 7b's, says so the same way)."""
    return TIE if tied(index, model, candidates, seed, benchmark) else ""


def _scores(index, model, candidates: list[str], seed: int, benchmark: str) -> list[float]:
    return [pass_rate(index, model, c, seed, benchmark) for c in candidates]
