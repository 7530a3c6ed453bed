"""How tables print numbers (src/agon/report/numbers.py): exact ties of counts round alike
whichever way the float was computed, half away from zero, symmetric in sign."""

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agon.report import numbers


def exact_pp(k: int, n: int) -> str:
    """k/n in signed percentage points, rounded half away from zero on the exact rational; a
    difference that rounds to zero prints +0.0 whatever its sign (-1/2001 is -0.05 points)."""
    q = Fraction(100 * k, n)
    value = (Decimal(q.numerator) / Decimal(q.denominator)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{abs(value) if value == 0 else value:+.1f}"


@given(st.integers(1, 5000), st.data())
def test_a_difference_of_counts_prints_its_exact_rounding_however_it_was_computed(n, data):
    k_a, k_b = data.draw(st.integers(0, n)), data.draw(st.integers(0, n))
    exact = exact_pp(k_a - k_b, n)
    # the same difference three ways: a count difference, two rates subtracted, a mean of 0/1s
    assert numbers.pp((k_a - k_b) / n) == exact
    assert numbers.pp(k_a / n - k_b / n) == exact
    assert numbers.pp(sum([1.0] * k_a) / n - sum([1.0] * k_b) / n) == exact
    # and its reverse prints the same digits with the other sign (a zero keeps its +)
    reverse = numbers.pp((k_b - k_a) / n)
    assert reverse[1:] == exact[1:] and reverse == exact_pp(k_b - k_a, n)
    assert reverse[0] != exact[0] or exact == "+0.0"


@pytest.mark.parametrize("k, n, printed", [(350, 800, "43.8"), (334, 800, "41.8"), (501, 1000, "50.1"),
                                           (1, 8, "12.5"), (0, 800, "0.0"), (800, 800, "100.0")])
def test_rates_print_as_percentages(k, n, printed):
    assert numbers.pct(k / n) == printed


def test_the_tie_that_printed_two_ways():
    # 10 of 800 more right: Table 7 printed fixed_roles - agon as +1.3 beside Table 9's -1.2
    assert numbers.pp(519 / 800 - 509 / 800) == "+1.3"
    assert numbers.pp((509 - 519) / 800) == "-1.3"


def test_non_finite_values_print_as_python_prints_them():
    assert numbers.fixed(float("nan")) == "nan"
    assert numbers.pp(float("inf")) == "+inf"


def test_p_values_keep_three_significant_figures():
    assert numbers.p_value(1.86e-51) == "1.86e-51"
    assert numbers.p_value(0.01779582890197334) == "0.0178"
    assert numbers.p_value(1.0) == "1"


def test_zero_prints_without_a_sign_from_float_noise_and_large_values_print():
    # (+3 - 1 - 2) / 800 averaged in another order leaves -1e-19 or +1e-19 behind
    assert numbers.pp(-1e-19) == numbers.pp(1e-19) == numbers.pp(0.0) == "+0.0"
    assert numbers.fixed(-0.0) == "0.0"
    assert numbers.fixed(1e30, 3) == "1" + "0" * 30 + ".000"   # beyond Decimal's default 28 digits
