"""CodeContests (`deepmind/code_contests`, split "test"): the code evaluation set.

Columns used: name, description, public_tests, private_tests, generated_tests
(each `{"input": [str], "output": [str]}`), difficulty (int enum, below);
kept as metadata when present: source, cf_rating, time_limit
(`{"seconds", "nanos"}`), memory_limit_bytes, input_file, output_file.
Solutions are never read.

Tests. `public_tests` (list of {"input", "output"}) are the examples a
contestant sees; they are visible to the model (the prompt layer may show
them) and are NOT used to grade. `tests` = private + generated tests (exact
duplicates removed, order kept) are used only to grade. Problems with no
grading tests are dropped (counted).

Easy split. CodeContests' `difficulty` is an enum whose meaning depends on the
problem's source -- EASY..HARDEST (1-5) for CodeChef/HackerEarth-style
gradings, the problem letter A, B, C, ... (7, 8, 9, ...) for Codeforces,
EXTERNAL (6) for others -- so its values are NOT comparable across sources
and not ordered as numbers. The easy split is therefore a set of enum values,
from config (under `datasets.<name>.options` of a dataset with `source: codecontests`, besides hub.COMMON_KEYS):

    difficulties   list of enum values or names, default [1, 7] = [EASY, A]
    max_cf_rating  optional int: drop Codeforces problems rated above it
                   (cf_rating 0 means unrated; unrated problems are kept)
    drop_file_io   bool, default true: drop problems that read/write named
                   files (input_file/output_file) instead of stdin/stdout,
                   which a stdin/stdout grader cannot run

Problem fields: difficulty = the enum value (source's own scale); `meta` has
name, source (enum name), difficulty_name, cf_rating, time_limit_s,
memory_limit_bytes. ids are `codecontests-<hash of the stripped description>`.

Counts (filled into `counts`): rows, after_difficulty, after_cf_rating,
after_file_io, after_tests, after_dedupe, kept.
"""

from __future__ import annotations

from .hub import DataSourceError, SourceSpec, Tally, content_id, label, open_rows, value

SPEC = SourceSpec(
    name="codecontests",
    hub_id="deepmind/code_contests",
    split="test",
    required=("name", "description", "public_tests", "private_tests", "generated_tests",
              "difficulty"),
    optional=("source", "cf_rating", "time_limit", "memory_limit_bytes", "input_file",
              "output_file"),
    keys=("difficulties", "max_cf_rating", "drop_file_io"),
)

# From contest_problem.proto of google-deepmind/code_contests (18 is unused).
DIFFICULTY = {
    0: "UNKNOWN_DIFFICULTY", 1: "EASY", 2: "MEDIUM", 3: "HARD", 4: "HARDER", 5: "HARDEST",
    6: "EXTERNAL", 7: "A", 8: "B", 9: "C", 10: "D", 11: "E", 12: "F", 13: "G", 14: "H",
    15: "I", 16: "J", 17: "K", 19: "L", 20: "M", 21: "N", 22: "O", 23: "P", 24: "Q",
    25: "R", 26: "S", 27: "T", 28: "U", 29: "V",
}
SOURCE = {0: "UNKNOWN_SOURCE", 1: "CODECHEF", 2: "CODEFORCES", 3: "HACKEREARTH",
          4: "CODEJAM", 6: "ATCODER", 7: "AIZU"}
DEFAULT_DIFFICULTIES = (1, 7)


def difficulty_codes(spec_values, name: str) -> set[int]:
    """Enum values from a list of ints or names ("EASY", "a"); unknown ones are an error."""
    by_name = {v: k for k, v in DIFFICULTY.items()}
    codes = set()
    for v in spec_values:
        code = v if isinstance(v, int) and not isinstance(v, bool) else by_name.get(str(v).upper())
        if code not in DIFFICULTY:
            raise DataSourceError(
                f"{name}: {SPEC.key('difficulties')} has unknown value {v!r}; use enum "
                f"values or names from {DIFFICULTY}")
        codes.add(code)
    return codes


def tests_of(row: dict, column: str, index: int, name: str) -> list[dict]:
    """`{"input": [...], "output": [...]}` -> [{"input", "output"}, ...]."""
    cell = row.get(column) or {}
    if not isinstance(cell, dict):
        raise DataSourceError(f"{name}: row {index} ({row.get('name')!r}) has {column} of type "
                              f"{type(cell).__name__}, expected {{'input': [...], 'output': [...]}}")
    inputs, outputs = cell.get("input") or [], cell.get("output") or []
    if len(inputs) != len(outputs):
        raise DataSourceError(f"{name}: row {index} ({row.get('name')!r}) has {len(inputs)} "
                              f"{column} inputs but {len(outputs)} outputs")
    return [{"input": i, "output": o} for i, o in zip(inputs, outputs)]


def _time_limit_s(cell) -> float | None:
    if not isinstance(cell, dict) or cell.get("seconds") is None:
        return None
    return cell["seconds"] + (cell.get("nanos") or 0) / 1e9


def load(cfg: dict, counts: dict | None = None) -> list[dict]:
    """CodeContests problems in the project schema; fills `counts` with per-stage counts."""
    cfg = dict(cfg or {})
    name = label(SPEC, cfg)
    wanted = difficulty_codes(cfg.get("difficulties", DEFAULT_DIFFICULTIES), name)
    max_rating = cfg.get("max_cf_rating")
    tally = Tally(SPEC, cfg)
    # The filters read only their own (small) columns, in Arrow; just the rows left
    # are materialised, one at a time (the train split's tests are several GB).
    rows = tally.stage("rows", open_rows(SPEC, cfg, ["cf_rating"] if max_rating is not None else []),
                       "reading the data")

    rows = tally.stage("after_difficulty", rows.where(["difficulty"], lambda d: d in wanted),
                       f"the difficulty filter (difficulty in {sorted(wanted)})")
    if max_rating is not None:
        rows = rows.where(["cf_rating"], lambda rating: not (rating or 0) > max_rating)
    rows = tally.stage("after_cf_rating", rows, f"the cf_rating filter (<= {max_rating})")
    if cfg.get("drop_file_io", True):
        rows = rows.where(["input_file", "output_file"], lambda i, o: not (i or o))
    rows = tally.stage("after_file_io", rows, "dropping problems with file input/output")

    problems = []
    for i, row in enumerate(rows):
        description = value(row, "description", i, name).strip()
        grading, seen = [], set()
        for t in tests_of(row, "private_tests", i, name) + tests_of(row, "generated_tests", i, name):
            if (t["input"], t["output"]) not in seen:
                seen.add((t["input"], t["output"]))
                grading.append(t)
        if not grading:
            continue
        problems.append({
            "id": content_id(SPEC.name, description),
            "prompt": description,
            "tests": grading,
            "public_tests": tests_of(row, "public_tests", i, name),
            "difficulty": int(row["difficulty"]),
            "source": SPEC.name,
            "meta": {
                "name": row.get("name"),
                "source": SOURCE.get(row.get("source"), row.get("source")),
                "difficulty_name": DIFFICULTY[row["difficulty"]],
                "cf_rating": row.get("cf_rating"),
                "time_limit_s": _time_limit_s(row.get("time_limit")),
                "memory_limit_bytes": row.get("memory_limit_bytes"),
            },
        })
    problems = tally.stage("after_tests", problems, "dropping problems with no private/generated tests")
    return tally.finish(problems, counts)
