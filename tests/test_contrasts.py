"""Table 9 (src/agon/report/contrasts.py): per-seed differences, their mean and interval over
seeds, and the pooled paired test, on records whose counts are known by construction."""

import pytest

from agon import io
from agon.evaluate.stats import mcnemar_exact, seed_mean_interval
from agon.report import contrasts, tables

IDS = [f"p{i}" for i in range(10)]


def write(tmp_path, evaluation, seed, right, benchmark="heldout", ids=IDS):
    records = [{"id": pid, "difficulty": 1, "stages": [{"correct": int(right(i))}], "correct": int(right(i)),
                "final_length": 5, "total_tokens": 5, "evaluation": evaluation, "model": "toy", "seed": seed,
                "benchmark": benchmark} for i, pid in enumerate(ids)]
    path = tmp_path / f"s{seed}" / f"{evaluation}.{benchmark}.jsonl"
    io.write_jsonl(path, records)
    return str(path)


SPEC = {"title": "T9", "kind": "contrasts", "benchmark": "heldout", "models": ["toy"], "seeds": [0, 1, 2],
        "contrasts": [["agon", "grpo"]], "picks": {"agon": ["agon_ab", "agon_ba"]}}


def test_a_contrast_over_three_seeds(tmp_path):
    files = []
    for seed in (0, 1, 2):
        files.append(write(tmp_path, "grpo", seed, lambda i: i < 4))
        # agon_ab is better on validation in seeds 0 and 1, agon_ba in seed 2
        files.append(write(tmp_path, "agon_ab", seed, lambda i, s=seed: i < 5 + s))
        files.append(write(tmp_path, "agon_ba", seed, lambda i: i < 9))
        files.append(write(tmp_path, "agon_ab", seed, lambda i, s=seed: i < (6 if s < 2 else 1), "validation"))
        files.append(write(tmp_path, "agon_ba", seed, lambda i: i < 3, "validation"))
    (row,) = contrasts.build_rows(SPEC, tables.index_records(files))
    diffs = [0.1, 0.2, 0.5]                                  # seed 2 picked agon_ba: 9 - 4 right
    assert row["per_seed_diff"] == "+0.1 +0.2 +0.5"
    assert row["mean_diff"] == pytest.approx(sum(diffs) / 3)
    low, high = seed_mean_interval(diffs)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
    pooled = mcnemar_exact([int(i < 5) for i in range(10)] + [int(i < 6) for i in range(10)]
                           + [int(i < 9) for i in range(10)], [int(i < 4) for i in range(10)] * 3)
    assert (row["only_a"], row["only_b"], row["n_pooled"]) == (8, 0, 30)
    assert row["p_pooled"] == pytest.approx(pooled["p_value"])
    assert row["selected"] == "agon -> agon_ab (seed 0); agon -> agon_ab (seed 1); agon -> agon_ba (seed 2)"


def test_one_seed_has_no_interval_and_the_files_say_so(tmp_path):
    files = [write(tmp_path, "grpo", 0, lambda i: i < 4), write(tmp_path, "zero_shot", 0, lambda i: i < 2)]
    spec = {**SPEC, "seeds": [0], "contrasts": [["grpo", "zero_shot"]], "picks": {}}
    rows = contrasts.write_contrasts(spec, files, tmp_path / "t9")
    assert rows[0]["ci_low"] is None and rows[0]["mean_diff"] == pytest.approx(0.2)
    assert "one seed: none" in (tmp_path / "t9.md").read_text()


def test_the_files_keep_each_difference_exact_and_every_column_rounds_it_alike(tmp_path):
    # 800 problems, a right on 1, 2 or 62 more: +0.125, +0.25 and +7.75 pp, ties at the printed
    # digit. A per-seed value stored at three decimals (0.003 for 0.0025) printed +0.3 beside a
    # mean of +0.2; a recount of only a / only b must give the file's value.
    ids = [f"q{i}" for i in range(800)]
    for gap, printed in ((1, "+0.1"), (2, "+0.3"), (62, "+7.8")):
        files = [write(tmp_path / str(gap), "grpo", 0, lambda i: i < 300 + gap, ids=ids),
                 write(tmp_path / str(gap), "zero_shot", 0, lambda i: i < 300, ids=ids)]
        spec = {**SPEC, "seeds": [0], "contrasts": [["grpo", "zero_shot"]], "picks": {}}
        (row,) = contrasts.write_contrasts(spec, files, tmp_path / str(gap) / "t9")
        assert float(row["per_seed_diff"]) == (row["only_a"] - row["only_b"]) / row["n_pooled"] == gap / 800
        assert float(row["per_seed_p"]) == row["p_pooled"]
        (shown,) = contrasts.display([row])
        assert shown[3] == shown[4] == printed


def test_contrasted_records_must_hold_the_same_problems(tmp_path):
    files = [write(tmp_path, "grpo", 0, lambda i: i < 4)]
    other = tmp_path / "zero_shot.heldout.jsonl"
    io.write_jsonl(other, io.read_jsonl(files[0])[:-1])
    records = io.read_jsonl(other)
    for r in records:
        r["evaluation"] = "zero_shot"
    io.write_jsonl(other, records)
    spec = {**SPEC, "seeds": [0], "contrasts": [["grpo", "zero_shot"]], "picks": {}}
    with pytest.raises(ValueError, match="missing from records_b"):
        contrasts.build_rows(spec, tables.index_records(files + [str(other)]))


def test_a_direction_left_to_a_tie_on_validation_says_so(tmp_path):
    files = [write(tmp_path, "grpo", 0, lambda i: i < 4)]
    for evaluation, right in (("agon_ab", 5), ("agon_ba", 7)):
        files.append(write(tmp_path, evaluation, 0, lambda i, k=right: i < k))
        files.append(write(tmp_path, evaluation, 0, lambda i: i < 3, "validation"))   # 3 of 10 each
    spec = {**SPEC, "seeds": [0]}
    (row,) = contrasts.build_rows(spec, tables.index_records(files))
    assert row["selected"] == "agon -> agon_ab (seed 0) (a tie: the first listed)"
    assert row["per_seed_diff"] == "+0.1"
    table = tables.build_rows({**spec, "rows": ["agon"], "baseline": None}, tables.index_records(files))
    assert table[0]["selected"] == "agon_ab on validation (a tie: the first listed)"
