"""Paired exact McNemar test, id alignment, and seed aggregation."""

import math

import pytest
from hypothesis import given, strategies as st

from agon.evaluate.stats import aggregate_seeds, mcnemar_exact, mcnemar_power, paired_by_id


def _pairs(both, only_a, only_b, neither):
    a = [1] * both + [1] * only_a + [0] * only_b + [0] * neither
    b = [1] * both + [0] * only_a + [1] * only_b + [0] * neither
    return a, b


def _exact_two_sided(x, y):
    # By hand: under H0 each discordant pair is a fair coin; double the smaller tail.
    d = x + y
    tail = sum(math.comb(d, i) for i in range(min(x, y) + 1)) / 2 ** d
    return min(1.0, 2 * tail)


def test_no_discordant_pairs_gives_p_one():
    r = mcnemar_exact(*_pairs(both=7, only_a=0, only_b=0, neither=3))
    assert r == {"n": 10, "both": 7, "only_a": 0, "only_b": 0, "neither": 3,
                 "p_value": 1.0, "diff": 0.0}


def test_five_to_zero():
    r = mcnemar_exact(*_pairs(both=2, only_a=5, only_b=0, neither=3))
    assert r["p_value"] == pytest.approx(2 * 0.5 ** 5)  # 0.0625
    assert r["diff"] == pytest.approx(0.5)
    assert (r["only_a"], r["only_b"], r["n"]) == (5, 0, 10)


def test_ten_to_two():
    a, b = _pairs(both=20, only_a=10, only_b=2, neither=8)
    r = mcnemar_exact(a, b)
    # 2 * (C(12,0) + C(12,1) + C(12,2)) / 2^12 = 2 * 79 / 4096
    assert r["p_value"] == pytest.approx(2 * (1 + 12 + 66) / 4096)
    assert r["p_value"] == pytest.approx(_exact_two_sided(10, 2))
    assert r["diff"] == pytest.approx(8 / 40)


def test_balanced_discordance_is_p_one():
    assert mcnemar_exact(*_pairs(0, 4, 4, 0))["p_value"] == 1.0


def test_symmetric_and_accepts_bools():
    a, b = _pairs(3, 9, 1, 5)
    ra, rb = mcnemar_exact(a, b), mcnemar_exact(b, a)
    assert ra["p_value"] == rb["p_value"]
    assert ra["diff"] == -rb["diff"] and ra["only_a"] == rb["only_b"]
    assert mcnemar_exact([bool(x) for x in a], [bool(x) for x in b]) == ra


def test_mismatched_lengths_and_bad_values():
    with pytest.raises(ValueError, match="3 problems but b has 2"):
        mcnemar_exact([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="no problems"):
        mcnemar_exact([], [])
    with pytest.raises(ValueError, match="non-0/1"):
        mcnemar_exact([1, 2], [1, 0])


def _recs(pairs):
    return [{"id": i, "correct": c} for i, c in pairs]


def test_paired_by_id_aligns_in_a_order():
    ra = _recs([("p1", True), ("p2", False), ("p3", True)])
    rb = _recs([("p3", False), ("p1", True), ("p2", True)])
    p = paired_by_id(ra, rb)
    assert p.ids == ["p1", "p2", "p3"]
    assert p.a == [1, 0, 1] and p.b == [1, 1, 0]
    assert mcnemar_exact(p.a, p.b)["only_a"] == 1


def test_paired_by_id_names_missing_and_extra():
    ra = _recs([("p1", 1), ("p2", 0), ("p3", 1)])
    rb = _recs([("p1", 1), ("p4", 0)])
    with pytest.raises(ValueError) as e:
        paired_by_id(ra, rb)
    msg = str(e.value)
    assert "missing from records_b" in msg and "'p2'" in msg and "'p3'" in msg
    assert "extra id(s) in records_b" in msg and "'p4'" in msg
    with pytest.raises(ValueError, match="duplicate id 'p1' in records_b"):
        paired_by_id(ra, _recs([("p1", 1), ("p1", 0), ("p2", 1), ("p3", 1)]))


def test_aggregate_seeds():
    r = aggregate_seeds([0.5, 0.6, 0.7])
    assert r["mean"] == pytest.approx(0.6)
    assert r["std"] == pytest.approx(0.1)  # ddof=1: sqrt((0.01 + 0 + 0.01) / 2)
    assert (r["min"], r["max"], r["n_seeds"], r["values"]) == (0.5, 0.7, 3, [0.5, 0.6, 0.7])
    one = aggregate_seeds([61.0])
    assert one["std"] is None and one["mean"] == 61.0 and one["n_seeds"] == 1
    with pytest.raises(ValueError):
        aggregate_seeds([])


_correct = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300)


@given(_correct)
def test_p_in_unit_interval_and_swap_invariant(pairs):
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    r, s = mcnemar_exact(a, b), mcnemar_exact(b, a)
    assert 0.0 <= r["p_value"] <= 1.0
    assert r["p_value"] == s["p_value"]
    assert r["both"] + r["only_a"] + r["only_b"] + r["neither"] == r["n"] == len(pairs)


@given(st.integers(0, 40), st.integers(0, 40))
def test_matches_hand_binomial(x, y):
    r = mcnemar_exact(*_pairs(1, x, y, 1))
    assert r["p_value"] == pytest.approx(_exact_two_sided(x, y), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("n,q,w,alpha", [(9, 0.6, 0.8, 0.2), (12, 0.3, 0.7, 0.05), (7, 1.0, 0.9, 0.1)])
def test_mcnemar_power_is_the_tests_own_rejection_rate(n, q, w, alpha):
    # By enumeration: every (discordant d, a's wins k) outcome, its probability, and whether
    # mcnemar_exact itself says a is better at p < alpha.
    expected = 0.0
    for d in range(n + 1):
        for k in range(d + 1):
            a = [1] * k + [0] * (d - k) + [0] * (n - d)
            b = [0] * k + [1] * (d - k) + [0] * (n - d)
            r = mcnemar_exact(a, b)
            if r["p_value"] < alpha and r["only_a"] > r["only_b"]:
                expected += (math.comb(n, d) * q ** d * (1 - q) ** (n - d)
                             * math.comb(d, k) * w ** k * (1 - w) ** (d - k))
    assert mcnemar_power(n, q, w, alpha) == pytest.approx(expected, abs=1e-12)


def test_mcnemar_power_grows_with_problems_and_stays_below_alpha_without_an_effect():
    powers = [mcnemar_power(n, 0.42, 0.58) for n in (100, 300, 800)]
    assert powers == sorted(powers) and powers[-1] > 0.8 > powers[0]
    assert mcnemar_power(300, 0.42, 0.5) <= 0.025
    with pytest.raises(ValueError, match="mcnemar_power"):
        mcnemar_power(0, 0.4, 0.6)
