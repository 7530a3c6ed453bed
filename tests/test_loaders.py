"""Real-source loaders (DeepMath, GSM8K, MATH-500, CodeContests) on tiny local files.

The fixtures in tests/data/ are in each dataset's real schema; the hub itself is
never contacted (the unreachable-hub tests force offline mode).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from agon.data import check_problem
from agon.data import codecontests, deepmath, gsm8k, hub, math500
from agon.data.deepmath import is_binary_answer
from agon.data.hub import DataSourceError
from agon.data.sources import SOURCES, load_source

DATA = Path(__file__).parent / "data"
MODULES = {"deepmath": deepmath, "gsm8k": gsm8k, "math500": math500, "codecontests": codecontests}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    """One `datasets` cache for the module, so repeated loads of a fixture are cheap."""
    return str(tmp_path_factory.mktemp("hf_cache"))


def sample(name: str) -> Path:
    return DATA / f"{name}_sample.jsonl"


def rows_of(name: str) -> list[dict]:
    return [json.loads(line) for line in sample(name).read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def load(name: str, cache: str, path=None, **cfg) -> tuple[list[dict], dict]:
    counts: dict = {}
    problems = load_source(name, {"local_path": str(path or sample(name)), "cache_dir": cache, **cfg},
                           counts=counts)
    return problems, counts


# --- binary answers -----------------------------------------------------------

BINARY = [
    "Yes", "no", "YES.", "No!", "True", "false", r"\text{Yes}", r"\boxed{No}", r"$\boxed{\text{True}}$",
    r"\(\mathrm{False}\)", "**Yes**", "Correct", "incorrect", "Valid", "Invalid", "Possible",
    "Impossible", "Exists", "exist", "Does not exist", "doesn't exist", r"\text{Does not exist}",
    "DNE", "Converges", "Diverges", "convergent", "Divergent", "The series converges",
    "It diverges", "converges absolutely", "Converges conditionally", "It is not possible",
    "No, it does not.", "Yes, because the group is abelian", "Not valid", "never", "Always",
]
NOT_BINARY = [
    "0", "1", "2", "-1", "x=1", "x = 1", r"\frac{1}{2}", r"\infty", "no solution", "No solutions",
    "none", "undefined", "n", "e", r"\boxed{0}", "1, 2, 3", "0.5", r"\text{(A)}", "A",
    "infinitely many", "yesterday", "note", "True and False", "(a) Yes (b) No", "",
    r"\{0\}", "2^{n} - 1", "\\text{Converges to } 1",
]


@pytest.mark.parametrize("answer", BINARY)
def test_binary_answers_are_recognised(answer):
    assert is_binary_answer(answer), answer


@pytest.mark.parametrize("answer", NOT_BINARY)
def test_values_are_not_binary(answer):
    assert not is_binary_answer(answer), answer


# --- DeepMath -----------------------------------------------------------------


def test_deepmath_hard_split_eq_removes_binary(cache):
    problems, counts = load("deepmath", cache)
    assert counts == {"rows": 16, "after_difficulty": 9, "after_binary": 5, "after_dedupe": 5, "kept": 5}
    assert all(p["difficulty"] == 8.0 for p in problems)
    assert sorted(p["answer"] for p in problems) == sorted(["4", "0", "x = 1", "no solution", "2"])
    assert not any(is_binary_answer(p["answer"]) for p in problems)
    assert problems[0]["meta"]["topic"].startswith("Mathematics")


def test_deepmath_ge_includes_harder_levels(cache):
    problems, counts = load("deepmath", cache, difficulty_match="ge")
    assert counts["after_difficulty"] == 13 and counts["kept"] == 8
    assert sorted({p["difficulty"] for p in problems}) == [8.0, 8.5, 9.0]
    # eq at another level: 7 takes 7.0 only, not 7.5
    problems, counts = load("deepmath", cache, difficulty=7)
    assert counts["after_difficulty"] == 1 and [p["answer"] for p in problems] == [r"\frac{1}{3}"]


def test_deepmath_keep_binary(cache):
    problems, counts = load("deepmath", cache, keep_binary=True)
    assert counts["after_binary"] == counts["after_difficulty"] == 9


def test_deepmath_bad_filter_config(cache):
    with pytest.raises(DataSourceError, match="difficulty_match"):
        load("deepmath", cache, difficulty_match="gt")
    with pytest.raises(DataSourceError, match="difficulty must be a number"):
        load("deepmath", cache, difficulty="8")


def test_deepmath_ids_stable_unique_and_order_independent(cache, tmp_path):
    first, _ = load("deepmath", cache, difficulty_match="ge")
    again, _ = load("deepmath", cache, difficulty_match="ge")
    reversed_file = write_jsonl(tmp_path / "reversed.jsonl", rows_of("deepmath")[::-1])
    shuffled, _ = load("deepmath", cache, path=reversed_file, difficulty_match="ge")
    ids = [p["id"] for p in first]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"deepmath-[0-9a-f]{16}", i) for i in ids)
    assert first == again
    assert {p["id"]: p for p in shuffled} == {p["id"]: p for p in first}


def test_deepmath_duplicates_collapse_or_drop_on_conflict(cache, tmp_path):
    rows = rows_of("deepmath")
    hard = [r for r in rows if r["difficulty"] == 8 and r["final_answer"] == "4"][0]
    other = [r for r in rows if r["difficulty"] == 8 and r["final_answer"] == "0"][0]
    extra = [dict(hard, topic="copy"), dict(other, final_answer="1")]  # same answer / conflict
    problems, counts = load("deepmath", cache, path=write_jsonl(tmp_path / "dup.jsonl", rows + extra))
    assert counts["after_binary"] == 7 and counts["after_dedupe"] == 4
    answers = sorted(p["answer"] for p in problems)
    assert answers == sorted(["4", "x = 1", "no solution", "2"])


# --- GSM8K --------------------------------------------------------------------


def test_gsm8k_answers_after_hashes(cache):
    problems, counts = load("gsm8k", cache)
    assert counts == {"rows": 4, "after_dedupe": 4, "kept": 4}
    assert [p["answer"] for p in problems] == ["72", "10", "1200000", "-3"]
    assert [p["difficulty"] for p in problems] == [2, 2, 2, 1]
    assert gsm8k.final_answer("a\n#### 1,234 ") == "1234"
    assert gsm8k.final_answer("no marker") is None


def test_gsm8k_row_without_hashes_is_an_error(cache, tmp_path):
    rows = rows_of("gsm8k")
    rows[1]["answer"] = "She earned $10."
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(DataSourceError, match=r"row 1 .*Weng earns.*####"):
        load("gsm8k", cache, path=path)


# --- MATH-500 -----------------------------------------------------------------


def test_math500_ids_and_levels(cache):
    problems, counts = load("math500", cache)
    assert counts["kept"] == 5
    assert problems[0]["id"] == "math500-test-precalculus-807"
    assert [p["difficulty"] for p in problems] == [2, 3, 3, 3, 5]
    assert problems[1]["answer"] == r"\frac{14}{3}"
    assert problems[0]["meta"] == {"unique_id": "test/precalculus/807.json", "subject": "Precalculus"}


def test_bad_cell_names_the_row(cache, tmp_path):
    rows = rows_of("math500")
    rows[3]["answer"] = "  "
    with pytest.raises(DataSourceError, match=r"row 3 has answer="):
        load("math500", cache, path=write_jsonl(tmp_path / "bad.jsonl", rows))


# --- CodeContests -------------------------------------------------------------


def test_codecontests_easy_split_and_tests(cache):
    problems, counts = load("codecontests", cache)
    assert counts == {"rows": 7, "after_difficulty": 5, "after_cf_rating": 5, "after_file_io": 4,
                      "after_tests": 3, "after_dedupe": 3, "kept": 3}
    by_name = {p["meta"]["name"]: p for p in problems}
    assert sorted(by_name) == ["1000_A. Sum of Two", "1001_A. Rated Reverse", "EVENODD"]
    ab = by_name["1000_A. Sum of Two"]
    assert ab["public_tests"] == [{"input": "1 2\n", "output": "3\n"}]
    # private + generated, the duplicate generated test removed, public ones never graded
    assert ab["tests"] == [{"input": "5 7\n", "output": "12\n"}, {"input": "0 0\n", "output": "0\n"},
                           {"input": "-1 1\n", "output": "0\n"}]
    assert ab["difficulty"] == 7 and ab["meta"]["difficulty_name"] == "A"
    assert ab["meta"]["source"] == "CODEFORCES" and ab["meta"]["time_limit_s"] == 2.0
    assert by_name["EVENODD"]["meta"]["time_limit_s"] == 1.5
    assert by_name["1001_A. Rated Reverse"]["meta"]["time_limit_s"] is None
    assert all("answer" not in p for p in problems)


def test_codecontests_filters(cache):
    problems, counts = load("codecontests", cache, max_cf_rating=1000)
    assert counts["after_cf_rating"] == 4  # the 1500-rated A goes; the unrated EASY stays
    assert sorted(p["meta"]["name"] for p in problems) == ["1000_A. Sum of Two", "EVENODD"]
    problems, _ = load("codecontests", cache, difficulties=["easy"])
    assert [p["meta"]["name"] for p in problems] == ["EVENODD"]
    problems, counts = load("codecontests", cache, drop_file_io=False)
    assert counts["kept"] == 4
    with pytest.raises(DataSourceError, match="unknown value 'EASIEST'"):
        load("codecontests", cache, difficulties=["EASIEST"])


# --- all sources: schema, errors, local formats ---------------------------------


@pytest.mark.parametrize("name", sorted(MODULES))
def test_schema_and_unique_ids(name, cache):
    problems, counts = load(name, cache)
    assert counts["kept"] == len(problems) > 0
    for p in problems:
        check_problem(p, name)
        assert p["source"] == name and p["id"].startswith(f"{name}-")
    assert len({p["id"] for p in problems}) == len(problems)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_missing_column_names_column_and_dataset(name, cache, tmp_path):
    spec = MODULES[name].SPEC
    column = spec.required[1]
    rows = [{k: v for k, v in r.items() if k != column} for r in rows_of(name)]
    with pytest.raises(DataSourceError) as err:
        load(name, cache, path=write_jsonl(tmp_path / "cut.jsonl", rows))
    assert repr(column) in str(err.value) and spec.hub_id in str(err.value)


@pytest.mark.parametrize("name, cfg, stage", [
    ("deepmath", {"difficulty": 3}, "difficulty filter"),
    ("codecontests", {"difficulties": [3]}, "difficulty filter"),
    ("codecontests", {"max_cf_rating": 100, "difficulties": ["A"]}, "cf_rating filter"),
])
def test_empty_after_filtering_is_an_error(name, cfg, stage, cache):
    with pytest.raises(DataSourceError, match=f"no problems left after the {stage}"):
        load(name, cache, **cfg)


def test_all_binary_is_an_error(cache, tmp_path):
    rows = [r for r in rows_of("deepmath") if r["difficulty"] == 8 and is_binary_answer(r["final_answer"])]
    with pytest.raises(DataSourceError, match="binary"):
        load("deepmath", cache, path=write_jsonl(tmp_path / "binary.jsonl", rows))


@pytest.fixture
def offline(monkeypatch):
    """Force datasets/huggingface_hub offline: no network attempt, fast failure."""
    import datasets
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    # both libraries read the variables at import; set their constants too
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_unreachable_hub_gives_advice(name, offline, tmp_path):
    for cfg in ({}, {"hub_id": "agon-test/no-such-dataset"}):
        with pytest.raises(DataSourceError) as err:
            load_source(name, {"cache_dir": str(tmp_path), **cfg})
        msg = str(err.value)
        assert (cfg.get("hub_id") or MODULES[name].SPEC.hub_id) in msg
        assert "hub" in msg and f"datasets.{name}.options.local_path" in msg and "cache_dir" in msg


def test_local_parquet_file_and_snapshot_directories(cache, tmp_path):
    import datasets

    want, _ = load("codecontests", cache)
    ds = datasets.Dataset.from_list(rows_of("codecontests"))
    ds.to_parquet(str(tmp_path / "cc.parquet"))
    assert load("codecontests", cache, path=tmp_path / "cc.parquet")[0] == want
    # a hub snapshot: files named by split
    (tmp_path / "snap" / "data").mkdir(parents=True)
    ds.to_parquet(str(tmp_path / "snap" / "data" / "test-00000-of-00001.parquet"))
    ds.select(range(2)).to_parquet(str(tmp_path / "snap" / "data" / "train-00000-of-00001.parquet"))
    assert load("codecontests", cache, path=tmp_path / "snap")[0] == want
    # save_to_disk output
    datasets.DatasetDict({"test": ds}).save_to_disk(str(tmp_path / "saved"))
    assert load("codecontests", cache, path=tmp_path / "saved")[0] == want
    with pytest.raises(DataSourceError, match="no split 'valid'"):
        load("codecontests", cache, path=tmp_path / "saved", split="valid")
    # gsm8k snapshot layout without README: main/ and socratic/ configs side by side
    g = datasets.Dataset.from_list(rows_of("gsm8k"))
    for config in ("main", "socratic"):
        (tmp_path / "gsm" / config).mkdir(parents=True)
        g.to_parquet(str(tmp_path / "gsm" / config / "test-00000-of-00001.parquet"))
    assert load("gsm8k", cache, path=tmp_path / "gsm")[1]["rows"] == 4
    # ... and with the hub's README, which lists the configs
    g.select(range(1)).to_parquet(str(tmp_path / "gsm" / "socratic" / "test-00000-of-00001.parquet"))
    (tmp_path / "gsm" / "README.md").write_text(
        "---\nconfigs:\n" + "".join(
            f"- config_name: {c}\n  data_files:\n  - split: test\n    path: {c}/test-*\n"
            for c in ("main", "socratic")) + "---\n")
    assert load("gsm8k", cache, path=tmp_path / "gsm")[1]["rows"] == 4
    assert load("gsm8k", cache, path=tmp_path / "gsm", hub_config="socratic")[1]["rows"] == 1


def test_bad_local_paths(cache, tmp_path):
    with pytest.raises(DataSourceError, match="does not exist"):
        load("math500", cache, path=tmp_path / "nope.jsonl")
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(DataSourceError, match="unsupported extension"):
        load("math500", cache, path=tmp_path / "x.csv")
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(DataSourceError, match="could not read"):
        load("math500", cache, path=tmp_path / "broken.jsonl")


# --- registry -----------------------------------------------------------------


def test_registry(cache, caplog):
    assert set(SOURCES) >= {"deepmath", "gsm8k", "math500", "codecontests"}
    with pytest.raises(DataSourceError, match=r"unknown problem source 'mathh'.*'deepmath'"):
        load_source("mathh", {})
    with caplog.at_level(logging.WARNING, logger="agon.data"):
        load("math500", cache, levels=[5])
    assert "unknown config key(s) ['levels']" in caplog.text
    assert issubclass(DataSourceError, ValueError) and hub.DataSourceError is DataSourceError


# --- CodeContests: memory ------------------------------------------------------


def test_codecontests_filters_before_materialising_rows(cache, tmp_path):
    """Rows the easy split drops are never turned into Python objects.

    The hub's train split carries several GB of private/generated tests. Here
    rows outside the split (wrong difficulty, too high a cf_rating, file I/O)
    carry 48 MB of generated tests; reading them through Python would show up
    in tracemalloc's peak, while Arrow's buffers do not.
    """
    import tracemalloc

    import datasets

    rows = rows_of("codecontests")
    big = "7" * 1_000_000 + "\n"  # one 1 MB test; a Python str per cell when materialised
    heavy = {"input": [big] * 3, "output": [big] * 3}
    template = rows[0]
    drops = [dict(difficulty=2, source=1), dict(difficulty=8), dict(difficulty=6, source=6),
             dict(difficulty=9), dict(cf_rating=2500), dict(input_file="input.txt"),
             dict(output_file="output.txt"), dict(difficulty=3, source=1)]
    large = [dict(template, name=f"heavy {i}", description=f"A problem with huge tests, #{i}.",
                  generated_tests=heavy, **change) for i, change in enumerate(drops)]
    big_bytes = sum(len(t) for r in large for cells in r["generated_tests"].values() for t in cells)
    assert big_bytes >= 40_000_000
    path = tmp_path / "cc_heavy.parquet"
    datasets.Dataset.from_list(large[:4] + rows + large[4:]).to_parquet(str(path))
    del large, heavy

    want, want_counts = load("codecontests", cache, max_cf_rating=2000)
    load("codecontests", cache, path=path, max_cf_rating=2000)  # build the Arrow cache first
    tracemalloc.start()
    try:
        got, counts = load("codecontests", cache, path=path, max_cf_rating=2000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == want
    assert counts == dict(want_counts, rows=want_counts["rows"] + 8,
                          after_difficulty=want_counts["after_difficulty"] + 3,
                          after_cf_rating=want_counts["after_cf_rating"] + 2)
    assert peak < big_bytes / 20, f"Python heap peak {peak / 1e6:.1f} MB while loading"


# --- stand-in datasets for a CPU run of the paper's config (tests/data/paper_cpu) ---

PAPER_CPU = DATA / "paper_cpu"
PAPER_OPTIONS = {  # config/paper.yaml's options for each source
    "deepmath": {"difficulty": 8, "difficulty_match": "eq", "keep_binary": False},
    "gsm8k": {},
    "math500": {},
    "codecontests": {"split": "train", "difficulties": [1, 7], "drop_file_io": True},
}


def test_paper_cpu_stand_ins_load_and_every_filter_drops_rows(cache):
    counts = {}
    for name, options in PAPER_OPTIONS.items():
        problems, counts[name] = load(name, cache, path=PAPER_CPU / f"{name}.jsonl", **options)
        assert len(problems) == counts[name]["kept"]
    dm, cc = counts["deepmath"], counts["codecontests"]
    assert dm["after_difficulty"] < dm["rows"] and dm["after_binary"] < dm["after_difficulty"]
    assert cc["after_difficulty"] < cc["rows"]
    assert cc["after_file_io"] < cc["after_difficulty"] and cc["after_tests"] < cc["after_file_io"]
    # the numbers README.md gives
    assert dm == {"rows": 52, "after_difficulty": 42, "after_binary": 34, "after_dedupe": 34, "kept": 34}
    assert cc == {"rows": 23, "after_difficulty": 18, "after_cf_rating": 18, "after_file_io": 17,
                  "after_tests": 16, "after_dedupe": 16, "kept": 16}
    assert counts["gsm8k"] == counts["math500"] == {"rows": 10, "after_dedupe": 10, "kept": 10}


def test_paper_cpu_stand_ins_regenerate_byte_for_byte(tmp_path):
    import subprocess
    import sys

    subprocess.run([sys.executable, str(PAPER_CPU / "make_data.py"), str(tmp_path)], check=True,
                   capture_output=True, text=True, timeout=300)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(f"{name}.jsonl" for name in PAPER_OPTIONS)
    for name in names:
        assert (tmp_path / name).read_bytes() == (PAPER_CPU / name).read_bytes(), name
