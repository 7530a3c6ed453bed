"""Tables from a small fixed set of per-problem records: exact values, picks, paper columns."""

from pathlib import Path

import pytest

from agon import io
from agon.report import tables

ROOT = Path(__file__).resolve().parents[1]


def _records(evaluation, benchmark, correct, seed=0, lengths=None):
    lengths = lengths or [10] * len(correct)
    return [{"id": f"p{i}", "evaluation": evaluation, "model": "toy", "seed": seed, "benchmark": benchmark,
             "correct": c, "final_length": n, "total_tokens": 2 * n, "stages": []}
            for i, (c, n) in enumerate(zip(correct, lengths))]


@pytest.fixture
def files(tmp_path):
    data = {
        # validation prefers B->A; held-out prefers A->B: a validation pick must not peek at held-out
        ("agon_ab", "validation"): [1, 0, 0, 0],
        ("agon_ba", "validation"): [1, 1, 1, 0],
        ("agon_ab", "heldout"): [1, 1, 1, 1, 1, 0, 0, 0],
        ("agon_ba", "heldout"): [1, 0, 0, 0, 0, 0, 0, 0],
        ("grpo", "heldout"): [1, 1, 0, 0, 0, 0, 0, 0],
    }
    paths = []
    for (evaluation, bench), correct in data.items():
        path = tmp_path / f"{evaluation}.{bench}.jsonl"
        io.write_jsonl(path, _records(evaluation, bench, correct, lengths=list(range(1, len(correct) + 1))))
        paths.append(str(path))
    return paths


SPEC = {"title": "T", "benchmark": "heldout", "models": ["toy"], "rows": ["grpo", "agon"], "seeds": [0],
        "picks": {"agon": ["agon_ab", "agon_ba"]}, "baseline": "grpo",
        "paper": {"table": "table3_main", "benchmark": "deepmath_hard"}, "paper_models": {"toy": "qwen3-0.6b"}}


def test_rows_exact_and_pick_uses_validation(files, tmp_path):
    rows = tables.write_table(SPEC, files, tmp_path / "t", ROOT / "config" / "reported.yaml")
    by = {r["method"]: r for r in rows}
    assert list(by) == ["grpo", "agon", "agon (post hoc)"]
    assert (by["grpo"]["k"], by["grpo"]["n"], by["grpo"]["pass_at_1"]) == (2, 8, 0.25)
    assert by["grpo"]["mean_length"] == 4.5 and by["grpo"]["mean_total_tokens"] == 9.0
    # validation picks B->A (3/4 > 1/4) although A->B is far better on held-out
    assert by["agon"]["selected"] == "agon_ba on validation" and by["agon"]["k"] == 1
    assert by["agon (post hoc)"]["selected"] == "agon_ab on heldout" and by["agon (post hoc)"]["k"] == 5
    # exact McNemar vs grpo: agon_ba right only on p0 (grpo right on p0, p1) -> 1 discordant pair
    assert by["agon"]["p_vs_baseline"] == 1.0
    assert by["agon"]["paper_pass_at_1"] == 61.0 and by["agon"]["paper_in_ci"] is False
    assert by["grpo"]["paper_pass_at_1"] == 30.0 and by["grpo"]["paper_in_ci"] is True
    csv_text = (tmp_path / "t.csv").read_text().splitlines()
    assert csv_text[0].startswith("method,model,benchmark,seed,k,n,pass_at_1,ci_low,ci_high")
    md = (tmp_path / "t.md").read_text()
    assert "| agon | toy | 0 | 1/8 | 12.5 |" in md and "agon_ba on validation" in md


def test_seed_mean_row(tmp_path):
    paths = []
    for seed, correct in ((0, [1, 1, 0, 0]), (1, [1, 1, 1, 0])):
        path = tmp_path / f"g{seed}.jsonl"
        io.write_jsonl(path, _records("grpo", "heldout", correct, seed=seed))
        paths.append(str(path))
    spec = {**SPEC, "rows": ["grpo"], "seeds": [0, 1], "picks": {}, "baseline": None, "paper": None}
    rows = tables.write_table(spec, paths, tmp_path / "s")
    assert [r["seed"] for r in rows] == [0, 1, "mean"]
    mean = rows[-1]
    assert mean["pass_at_1"] == pytest.approx(0.625) and mean["seed_std"] == pytest.approx(0.1767767, abs=1e-6)


def test_missing_records_are_named(files, tmp_path):
    spec = {**SPEC, "rows": ["grpo", "coop"]}
    with pytest.raises(ValueError, match="no records for model 'toy', evaluation 'coop'"):
        tables.write_table(spec, files, tmp_path / "x")
    assert not (tmp_path / "x.csv").exists()  # nothing half-written
