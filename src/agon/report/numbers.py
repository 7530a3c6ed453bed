"""How every table prints a number: one rounding rule, applied once, in one place.

Rates and differences of counts often land exactly on a rounding tie at these sizes
(350/800 = 43.75%, 10/800 = 1.25 pp), and the binary float holding such a value sits a hair
above or below the tie depending on how it was computed. Python's own formatting then printed
the same tie up in one table and down in the next (+1.3 in Table 7 beside -1.2 for the same
two rows in Table 9). Here a value is first snapped to 9 decimals, which removes that float
noise and nothing a table shows, then rounded half away from zero: a difference and its
reverse print the same digits with opposite signs, and a quantity prints alike everywhere.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext

SNAP = 9  # decimals kept before rounding: far below any printed digit, far above float noise


def fixed(x: float, digits: int = 1, sign: bool = False) -> str:
    """`x` with `digits` decimals (half away from zero), with a leading + when `sign`."""
    if not math.isfinite(x):  # nan, inf: printed as Python prints them
        return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    with localcontext() as context:
        context.prec = 400  # enough digits for any float's integer part: quantize never overflows
        value = Decimal(repr(round(float(x), SNAP))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    if value.is_zero():  # a zero prints +0.0 / 0.0 whichever side float noise left it on
        value = abs(value)
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def pct(rate: float, digits: int = 1) -> str:
    """A rate (0-1) as a percentage: 0.4375 -> "43.8"."""
    return fixed(100 * rate, digits)


def pp(difference: float, digits: int = 1) -> str:
    """A difference of rates as signed percentage points: 0.0125 -> "+1.3", -0.0125 -> "-1.3"."""
    return fixed(100 * difference, digits, sign=True)


def p_value(p: float) -> str:
    """A p-value with three significant figures, as every table prints them (1.86e-51, 0.0178)."""
    return f"{p:.3g}"
