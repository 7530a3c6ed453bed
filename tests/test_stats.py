import pytest
from hypothesis import given, strategies as st

from agon.evaluate.stats import clopper_pearson


def test_paper_table4_values():
    # PAPER.md Table 4: 95% CP intervals over 300 problems. Only coop (138/300) and
    # Agon (183/300) match an exact CP interval to the published decimal; the other
    # rows match no k (e.g. zero-shot [18.4, 28.3] vs 69/300 -> [18.4, 28.2]).
    for k, (lo, hi) in {183: (55.2, 66.6), 138: (40.3, 51.8)}.items():
        low, high = clopper_pearson(k, 300)
        assert round(100 * low, 1) == lo and round(100 * high, 1) == hi


def test_edges():
    assert clopper_pearson(0, 10) == (0.0, pytest.approx(0.3084971, abs=1e-6))
    low, high = clopper_pearson(10, 10)
    assert high == 1.0 and low == pytest.approx(0.6915029, abs=1e-6)
    # known value: k=5, n=10 -> [0.187086, 0.812914]
    low, high = clopper_pearson(5, 10)
    assert low == pytest.approx(0.187086, abs=1e-6) and high == pytest.approx(0.812914, abs=1e-6)


@given(n=st.integers(1, 400), frac=st.floats(0, 1))
def test_interval_contains_estimate(n, frac):
    k = round(frac * n)
    low, high = clopper_pearson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_bad_counts():
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)
    with pytest.raises(ValueError):
        clopper_pearson(0, 0)
