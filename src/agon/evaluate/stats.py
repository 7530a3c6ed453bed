"""Statistics over per-problem records: intervals, paired tests, seed aggregation."""

from __future__ import annotations

import statistics
from typing import NamedTuple

import numpy as np
from scipy import stats as _st


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) binomial interval for k successes out of n."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"clopper_pearson: need 0 <= k <= n and n > 0, got k={k}, n={n}")
    alpha = 1.0 - confidence
    low = 0.0 if k == 0 else float(_st.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(_st.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


# --- Paired comparison of two methods on the same problems -------------------
# Two methods evaluated on the same 300 held-out problems are not independent
# samples: most problems are easy or hard for both. Comparing their separate
# Clopper-Pearson intervals wastes that pairing (overlapping intervals can hide a
# clear difference), so the paired question is asked directly: on the problems
# where exactly one method is right, is the split further from 50/50 than chance?


def _two_sided_p(smaller, discordant: int):
    """The exact McNemar p-value when the smaller side holds `smaller` of `discordant` problems
    (a number or an array of them): the doubled binomial tail, at most 1."""
    return np.minimum(1.0, 2.0 * _st.binom.cdf(smaller, discordant, 0.5))


def mcnemar_exact(a: list[int | bool], b: list[int | bool]) -> dict:
    """Exact (binomial) McNemar test of method a vs method b on the same problems.

    `a[i]` and `b[i]` are the 0/1 correctness of the two methods on problem i
    (same order, same length). Only discordant problems carry information about
    which method is better; under H0 each discordant problem is a fair coin, so
    the two-sided p-value is min(1, 2 * P[Binom(d, 1/2) <= min(only_a, only_b)]),
    with d = only_a + only_b (p = 1.0 when d = 0). The exact form is used because
    discordant counts on 300 problems can be small, where the chi-square form is
    unreliable. `diff` is pass@1(a) - pass@1(b) as a fraction.
    """
    if len(a) != len(b):
        raise ValueError(f"mcnemar_exact: a has {len(a)} problems but b has {len(b)}; "
                         "align them first (see paired_by_id)")
    if not a:
        raise ValueError("mcnemar_exact: no problems")
    for name, xs in (("a", a), ("b", b)):
        bad = [i for i, x in enumerate(xs) if x not in (0, 1)]
        if bad:
            raise ValueError(f"mcnemar_exact: {name} has non-0/1 values at positions {bad[:10]}")
    both = sum(1 for x, y in zip(a, b) if x and y)
    only_a = sum(1 for x, y in zip(a, b) if x and not y)
    only_b = sum(1 for x, y in zip(a, b) if y and not x)
    n = len(a)
    d = only_a + only_b
    # min() of the two tails makes the result exactly symmetric in a and b.
    p = 1.0 if d == 0 else float(_two_sided_p(min(only_a, only_b), d))
    return {"n": n, "both": both, "only_a": only_a, "only_b": only_b,
            "neither": n - both - only_a - only_b, "p_value": p,
            "diff": (only_a - only_b) / n}


class Paired(NamedTuple):
    ids: list
    a: list[int]
    b: list[int]


def paired_by_id(records_a: list[dict], records_b: list[dict]) -> Paired:
    """Align two per-problem record lists (dicts with `id` and `correct`) by id.

    A paired test is only valid when both methods answered exactly the same
    problems; a silently dropped or duplicated problem would bias it, so any
    mismatch is an error that names the offending ids. Order follows records_a.
    """
    def index(records: list[dict], name: str) -> dict:
        out: dict = {}
        for r in records:
            if r["id"] in out:
                raise ValueError(f"paired_by_id: duplicate id {r['id']!r} in records_{name}")
            out[r["id"]] = int(r["correct"])
        return out

    ia, ib = index(records_a, "a"), index(records_b, "b")
    missing = [i for i in ia if i not in ib]
    extra = [i for i in ib if i not in ia]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} id(s) missing from records_b: {missing[:10]}")
        if extra:
            parts.append(f"{len(extra)} extra id(s) in records_b: {extra[:10]}")
        raise ValueError("paired_by_id: " + "; ".join(parts))
    ids = list(ia)
    return Paired(ids, [ia[i] for i in ids], [ib[i] for i in ids])


def mcnemar_power(n: int, discordant_rate: float, win_share: float, alpha: float = 0.05) -> float:
    """Chance that `mcnemar_exact` finds method a better than b at p < `alpha` on n problems.

    The model of a run: each problem is discordant (one method right, the other wrong) with
    probability `discordant_rate`, and a discordant problem goes to a with probability
    `win_share`. Exact, by summing over the number of discordant problems d: the test rejects
    in a's favour when a wins at least d - c of them, c the largest count whose doubled
    binomial tail stays below `alpha` (the test's own p-value). How many held-out problems a
    single seed needs to see a lift of a given size (docs/toy-world.md, "Why 800 held-out problems").
    """
    if n < 1 or not 0 <= discordant_rate <= 1 or not 0 <= win_share <= 1:
        raise ValueError(f"mcnemar_power: need n >= 1 and rates in [0, 1], got n={n}, "
                         f"discordant_rate={discordant_rate}, win_share={win_share}")
    power = 0.0
    for d in range(1, n + 1):
        rejecting = np.flatnonzero(_two_sided_p(np.arange(d // 2 + 1), d) < alpha)
        if rejecting.size == 0:
            continue
        c = int(rejecting[-1])  # a wins at least d - c: the smaller side (b's) has at most c
        power += float(_st.binom.pmf(d, n, discordant_rate) * _st.binom.sf(d - c - 1, d, win_share))
    return power


# --- Aggregation over training seeds -------------------------------------------
# The paper reports one training run per number. We run several seeds and report
# their spread next to the mean, so a gap can be compared with run-to-run noise.


def aggregate_seeds(values: list[float]) -> dict:
    """Mean, sample std (ddof=1), min and max of one metric over training seeds.

    The std is the sample (n-1) estimate because seeds are a sample of possible
    runs; with a single seed it is None rather than 0, since one run says nothing
    about variance. The per-seed values are kept so tables can show them.
    """
    if not values:
        raise ValueError("aggregate_seeds: no values")
    vals = [float(v) for v in values]
    return {"mean": statistics.fmean(vals),
            "std": statistics.stdev(vals) if len(vals) > 1 else None,
            "min": min(vals), "max": max(vals), "n_seeds": len(vals), "values": vals}


def seed_mean_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Student-t interval for the mean of one metric over training seeds.

    Seeds are the sample (each is one training run), so the interval is
    mean +- t_{(1+c)/2, n-1} * sd / sqrt(n): it says how well the seed mean is
    known given run-to-run spread, not how well one run's pass@1 is (that is the
    per-seed Clopper-Pearson interval). None for fewer than two seeds.
    """
    return mean_interval(values, confidence)


def mean_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """mean +- t_{(1+c)/2, n-1} * sd / sqrt(n), the Student-t interval of a mean (over seeds, or over
    problems' paired differences). None for fewer than two values."""
    vals = [float(v) for v in values]
    if len(vals) < 2:
        return None
    mean = statistics.fmean(vals)
    half = float(_st.t.ppf(0.5 + confidence / 2, len(vals) - 1)) * statistics.stdev(vals) / len(vals) ** 0.5
    return mean - half, mean + half


def welch_difference(first: list[float], last: list[float], confidence: float = 0.95) -> dict:
    """mean(last) - mean(first) with Welch's t interval and two-sided p, for two independent samples
    of per-step values (a training metric over a run's first and last quarter). None for the
    interval and p when either side has fewer than two values or neither varies."""
    a, b = [float(v) for v in first], [float(v) for v in last]
    if not a or not b:
        raise ValueError("welch_difference: an empty sample")
    diff = statistics.fmean(b) - statistics.fmean(a)
    out = {"first": statistics.fmean(a), "last": statistics.fmean(b), "difference": diff,
           "ci": None, "p_value": None}
    if len(a) < 2 or len(b) < 2:
        return out
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0:
        return out
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    se = (va + vb) ** 0.5
    half = float(_st.t.ppf(0.5 + confidence / 2, df)) * se
    out["ci"] = (diff - half, diff + half)
    out["p_value"] = float(2 * _st.t.sf(abs(diff) / se, df))
    return out
