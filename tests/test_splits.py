import pytest

from agon.data import splits, toy_math


def _pool():
    return toy_math.generate(500, 11)


def test_disjoint_and_sized():
    parts = splits.split_problems(_pool(), heldout=100, validation=50, seed=1, train=200)
    ids = {k: {p["id"] for p in v} for k, v in parts.items()}
    assert [len(parts[k]) for k in ("heldout", "validation", "train")] == [100, 50, 200]
    assert not ids["heldout"] & ids["validation"]
    assert not ids["heldout"] & ids["train"]
    assert not ids["validation"] & ids["train"]


def test_seeded_and_order_independent():
    pool = _pool()
    a = splits.split_problems(pool, 100, 50, seed=1)
    b = splits.split_problems(list(reversed(pool)), 100, 50, seed=1)
    c = splits.split_problems(pool, 100, 50, seed=2)
    assert a == b
    assert a["heldout"] != c["heldout"]


def test_heldout_does_not_depend_on_train_cap():
    pool = _pool()
    assert (splits.split_problems(pool, 100, 50, 1, train=10)["heldout"]
            == splits.split_problems(pool, 100, 50, 1)["heldout"])


def test_hash_is_stable_across_runs_and_versions():
    parts = splits.split_problems(toy_math.generate(60, 0, levels=toy_math.ARITHMETIC_LEVELS), 10, 5, seed=0)
    # Pinned: a change here means every recorded split hash changes; bump it deliberately.
    assert splits.split_hash(parts["heldout"]) == splits.split_hash(
        splits.split_problems(toy_math.generate(60, 0, levels=toy_math.ARITHMETIC_LEVELS), 10, 5, seed=0)["heldout"])
    assert splits.split_hash(parts["heldout"]) == PINNED_HELDOUT_HASH


PINNED_HELDOUT_HASH = "2bee7ccb53eb745a"


def test_errors_name_the_problem():
    pool = _pool()
    with pytest.raises(ValueError, match="pool has 500"):
        splits.split_problems(pool, 400, 200, 0)
    with pytest.raises(ValueError, match="duplicate problem id"):
        splits.split_problems(pool + pool[:1], 10, 10, 0)


def test_benchmark_only_dataset_takes_the_whole_pool():
    pool = toy_math.generate(30, 3)
    parts = splits.split_problems(pool, None, 0, seed=1, train=0)
    assert len(parts["heldout"]) == 30 and parts["validation"] == [] and parts["train"] == []
    with pytest.raises(ValueError, match="cannot both be null"):
        splits.split_problems(pool, None, 0, seed=1, train=None)
