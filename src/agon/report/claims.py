"""The paper's claims, each checked on this run's records: one row per claim and model.

A claim compares row `a` with row `b` (evaluations or picks; a pick is a pair's cascade
direction chosen on `select_on`, per seed, as in the results tables) on one benchmark,
in one of three measures:

  pass          pass@1(a) - pass@1(b) on the same problems (percentage points);
  length        mean final-stage length(a) - length(b) on the same problems (tokens);
  rival_length  a cascade's final stage after a correct draft against after a wrong one
                (tokens; Sec. 5.5: the challenger writes less when its rival was right. The
                paper compares with the challenger stage's mean over all problems, which
                lies between the two, so the sign is the same).

Each claim states the paper's direction (`expect`): `greater` (a above b), `less` (a
below b) or `at_most` (a no better than b). Ours is the difference with a 95% interval
and a paired test:

  one seed      a Student-t interval over problems of the per-problem differences (for
                rival_length, Welch's interval of the two groups' means);
  several seeds the Student-t interval of the per-seed differences over seeds (seeds are
                the sample: run-to-run noise), as Table 9;
  test          pass: the exact McNemar test on every seed's problems pooled; length: a
                paired t-test on every (problem, seed) pooled; rival_length: Welch's test
                on every seed's problems pooled.

The verdict is read from the interval alone: *holds* when it lies wholly on the claim's
side of zero (for `at_most`: wholly below zero, i.e. a is worse, so "no better" is shown,
not assumed), *reversed* when it lies wholly on the other side, and otherwise *not
resolved at this sample size*; a pass-rate claim with either side at 100% or 0% reads
*untestable here (ceiling)* or *(floor)*, since no interval could show the paper's direction
there. No margin is invented: a difference the interval cannot
place is not called either way.
"""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

from scipy import stats as _st

from ..evaluate.records import index_records
from ..evaluate.stats import mcnemar_exact, mean_interval, paired_by_id, seed_mean_interval, welch_difference
from . import numbers
from . import reported as reported_mod
from . import tables

MEASURES = ("pass", "length", "rival_length")
EXPECTS = ("greater", "less", "at_most")
HOLDS, REVERSED, UNRESOLVED = "holds", "reversed", "not resolved at this sample size"
CEILING, FLOOR = "untestable here (ceiling)", "untestable here (floor)"
PAPER_FIELD = {"pass": "pass_at_1", "length": "mean_length"}

COLUMNS = ["claim", "model", "measure", "a", "b", "benchmark", "expect", "seeds", "a_value", "b_value", "diff",
           "ci_low", "ci_high", "test", "p_value", "n", "paper", "verdict", "selected"]


def claim_benchmark(spec: dict, claim: dict) -> str:
    return claim.get("benchmark") or spec["benchmark"]


def needs(spec: dict) -> list[tuple[str, str]]:
    """(row, benchmark) of every claim's sides, in order (a pick is resolved by the workflow)."""
    out = []
    for claim in spec["claims"]:
        bench = claim_benchmark(spec, claim)
        out += [(claim["a"], bench)] + ([(claim["b"], bench)] if claim.get("b") else [])
    return list(dict.fromkeys(out))


def verdict(expect: str, low: float | None, high: float | None) -> str:
    """The claim's verdict from the interval of a - b (see the module's docstring)."""
    if low is None or high is None:
        return UNRESOLVED
    above, below = low > 0, high < 0
    if expect == "greater":
        return HOLDS if above else REVERSED if below else UNRESOLVED
    if expect in ("less", "at_most"):
        return HOLDS if below else REVERSED if above else UNRESOLVED
    raise ValueError(f"claims: unknown expect {expect!r} (one of {', '.join(EXPECTS)})")


def bounded(measure: str, pooled_a: list[float], pooled_b: list[float]) -> str | None:
    """A pass-rate claim one of whose sides is at 100% (ceiling) or 0% (floor): the difference
    there is bounded by construction, so it cannot show the paper's direction, whatever the
    interval says. None for a length claim or a pass claim with room on both sides."""
    if measure != "pass" or not pooled_a or not pooled_b:
        return None
    rates = (statistics.fmean(pooled_a), statistics.fmean(pooled_b))
    return CEILING if 1.0 in rates else FLOOR if 0.0 in rates else None


def _lengths_by_id(records_a: list[dict], records_b: list[dict]) -> tuple[list[float], list[float]]:
    """Final-stage lengths of a and b on the same problems, aligned by id (paired_by_id checks the ids)."""
    paired_by_id(records_a, records_b)
    of_b = {r["id"]: r["final_length"] for r in records_b}
    return [float(r["final_length"]) for r in records_a], [float(of_b[r["id"]]) for r in records_a]


def _after_draft(records: list[dict], where: str) -> tuple[list[float], list[float]]:
    """A cascade's final-stage lengths after a correct draft and after a wrong one."""
    if not all(len(r["stages"]) == 2 for r in records):
        raise ValueError(f"claims: {where} is not a two-stage cascade; rival_length needs one")
    right = [float(r["final_length"]) for r in records if r["stages"][0]["correct"]]
    wrong = [float(r["final_length"]) for r in records if not r["stages"][0]["correct"]]
    return right, wrong


def _mean(values: list[float]) -> float | None:
    """The mean of the defined values (a seed whose drafts were all right has no "after a wrong
    draft" length); None when there are none."""
    defined = [v for v in values if v == v]
    return statistics.fmean(defined) if defined else None


def _one_claim(index, spec: dict, claim: dict, model: str) -> dict:
    measure, bench, seeds = claim.get("measure", "pass"), claim_benchmark(spec, claim), spec["seeds"]
    a, b = claim["a"], claim.get("b")
    diffs, a_values, b_values, chosen = [], [], [], []
    pooled_a, pooled_b, within = [], [], None
    for seed in seeds:
        ea, ra = tables.resolve_row(index, spec, model, a, seed, bench)
        chosen += tables.choice(index, spec, model, a, ea, seed)
        if measure == "rival_length":
            right, wrong = _after_draft(ra, f"{ea} (seed {seed})")
            a_values.append(statistics.fmean(right) if right else float("nan"))
            b_values.append(statistics.fmean(wrong) if wrong else float("nan"))
            pooled_a += right
            pooled_b += wrong
            within = welch_difference(wrong, right) if right and wrong else None
            diffs.append(within["difference"] if within else float("nan"))
            continue
        eb, rb = tables.resolve_row(index, spec, model, b, seed, bench)
        chosen += tables.choice(index, spec, model, b, eb, seed)
        if measure == "pass":
            paired = paired_by_id(ra, rb)
            xs, ys = [float(v) for v in paired.a], [float(v) for v in paired.b]
        else:
            xs, ys = _lengths_by_id(ra, rb)
        a_values.append(statistics.fmean(xs))
        b_values.append(statistics.fmean(ys))
        # one division of the summed difference: for counts and token lengths, the float nearest
        # the exact paired difference, as a recount of the records gives it
        diffs.append((math.fsum(xs) - math.fsum(ys)) / len(xs))
        pooled_a += xs
        pooled_b += ys
    if measure == "pass":
        test = mcnemar_exact([int(v) for v in pooled_a], [int(v) for v in pooled_b])
        p, test_name, n = test["p_value"], "exact McNemar", test["n"]
    elif measure == "length":
        same = all(x == y for x, y in zip(pooled_a, pooled_b))
        p = 1.0 if same else float(_st.ttest_rel(pooled_a, pooled_b).pvalue)
        test_name, n = "paired t", len(pooled_a)
    else:
        pooled = welch_difference(pooled_b, pooled_a) if pooled_a and pooled_b else None
        p = pooled["p_value"] if pooled else None
        test_name, n = "Welch t", len(pooled_a) + len(pooled_b)
    if len(seeds) > 1:
        interval = seed_mean_interval(diffs) if all(d == d for d in diffs) else None
    elif measure == "rival_length":
        interval = within["ci"] if within else None
    else:
        interval = mean_interval([x - y for x, y in zip(pooled_a, pooled_b)])
    low, high = interval if interval else (None, None)
    return {"claim": claim["claim"], "model": model, "measure": measure, "a": a, "b": b or "", "benchmark": bench,
            "expect": claim["expect"], "seeds": " ".join(map(str, seeds)),
            "a_value": _mean(a_values), "b_value": _mean(b_values),
            "diff": _mean(diffs), "ci_low": low, "ci_high": high, "test": test_name,
            "p_value": p, "n": n, "paper": "",
            "verdict": bounded(measure, pooled_a, pooled_b) or verdict(claim["expect"], low, high),
            "selected": "; ".join(chosen)}


def paper_text(claim: dict, paper_model: str | None, reported: dict | None) -> str:
    """What the paper publishes for the claim: `a vs b` per paper benchmark, or its own words."""
    paper = claim.get("paper") or {}
    if "text" in paper:
        return paper["text"]
    if not paper or reported is None or paper_model is None:
        return "-"
    field = PAPER_FIELD[claim.get("measure", "pass")]
    benchmarks = paper["benchmark"] if isinstance(paper["benchmark"], list) else [paper["benchmark"]]
    methods = reported_mod._vocab(reported)["method"]
    parts = []
    for bench in benchmarks:
        values = [reported_mod.lookup(reported, paper["table"], paper_model, bench, m, field)
                  if m in methods else None for m in (claim["a"], claim["b"])]
        if None in values:
            continue
        if field == "pass_at_1":  # as published: whole percent
            shown = f"{values[0]:.0f}% vs {values[1]:.0f}% ({values[0] - values[1]:+.0f} pp)"
        else:  # published as "3.5k" tokens
            shown = f"{values[0] / 1000:.1f}k vs {values[1] / 1000:.1f}k tok"
        parts.append(f"{bench} {shown}" if len(benchmarks) > 1 else shown)
    return "; ".join(parts) or "-"


def build_rows(spec: dict, index, reported: dict | None = None) -> list[dict]:
    rows = []
    for model in spec["models"]:
        if model in spec.get("absent_models", []):
            continue
        paper_model = spec.get("paper_models", {}).get(model)
        for claim in spec["claims"]:
            row = _one_claim(index, spec, claim, model)
            row["paper"] = paper_text(claim, paper_model, reported)
            rows.append(row)
    return rows


HEAD = ["claim", "model", "paper", "ours: a vs b", "difference [95% CI]", "p (test)", "verdict"]


def _value(measure: str, x: float | None) -> str:
    if x is None:
        return "-"
    return f"{numbers.pct(x)}%" if measure == "pass" else numbers.fixed(x)


def _diff(measure: str, x: float | None, unit: bool = True) -> str:
    if x is None:
        return "-"
    number = numbers.pp(x) if measure == "pass" else numbers.fixed(x, sign=True)
    return f"{number} {'pp' if measure == 'pass' else 'tok'}" if unit else number


def display(rows: list[dict]) -> list[list[str]]:
    body = []
    for r in rows:
        m = r["measure"]
        a, b = _value(m, r["a_value"]), _value(m, r["b_value"])
        ours = {"pass": f"{a} vs {b}", "length": f"{a} vs {b} tok",
                "rival_length": f"after a right draft {a} vs after a wrong one {b} tok"}[m]
        ci = (f"[{_diff(m, r['ci_low'], False)}, {_diff(m, r['ci_high'], False)}]"
              if r["ci_low"] is not None else "no interval")
        p = "-" if r["p_value"] is None else f"{numbers.p_value(r['p_value'])} ({r['test']})"
        body.append([r["claim"], r["model"], r["paper"], ours, f"{_diff(m, r['diff'])} {ci}", p, r["verdict"]])
    return body


def markdown(rows: list[dict]) -> list[str]:
    """The table's markdown lines (head and body): what claims.md and the README's copy hold."""
    return tables.md_table(HEAD, display(rows))


NUMBERS = ("a_value", "b_value", "diff", "ci_low", "ci_high", "p_value")


def read_rows(path) -> list[dict]:
    """A claims table's rows back from its csv, numbers as written (an empty cell: None)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or list(rows[0]) != COLUMNS:
        raise ValueError(f"{path}: not a claims table (expected the columns {', '.join(COLUMNS)})")
    for r in rows:
        for key in NUMBERS:
            r[key] = float(r[key]) if r[key] != "" else None
    return rows


def notes(spec: dict, rows: list[dict]) -> list[str]:
    seeds = spec["seeds"]
    how = (f"the 95% interval is a Student-t interval of the mean over the {len(seeds)} seeds"
           if len(seeds) > 1 else "the 95% interval is over problems (one seed: run-to-run noise is not in it)")
    counts = {v: sum(r["verdict"] == v for r in rows) for v in (HOLDS, REVERSED, UNRESOLVED, CEILING, FLOOR)}
    bounded_ = counts[CEILING] + counts[FLOOR]
    out = [f"Verdicts: {counts[HOLDS]} hold, {counts[REVERSED]} reversed, {counts[UNRESOLVED]} not resolved "
           f"at this sample size" + (f", {bounded_} untestable here (a side at 100% or 0%)" if bounded_ else "")
           + f", of {len(rows)}.",
           f"Each claim is the paper's, with its direction; ours is a - b on the same problems; {how}. "
           "The verdict reads the interval only: holds (wholly on the claim's side of 0; for 'no better', "
           "wholly below 0), reversed (wholly on the other side), else not resolved at this sample size "
           "(src/agon/report/claims.py). A pass-rate claim with a side at 100% or 0% is untestable here "
           "(ceiling or floor): its difference is bounded by construction. With no equivalence margin, a 'no better' claim whose rows tie "
           "reads as not resolved.",
           "A pair's row uses the cascade direction chosen on "
           f"{spec.get('select_on', 'validation')}, per seed; the paper chose its direction on held-out."]
    return out


def write_claims(spec: dict, record_files: list[str], out_prefix: Path, reported_path=None) -> list[dict]:
    index = index_records(record_files, spec.get("splits"))
    reported = reported_mod.load_reported(reported_path) if reported_path else None
    rows = build_rows(spec, index, reported)
    tables.write_plain_table(out_prefix, spec["title"], rows, COLUMNS, HEAD, display(rows),
                             notes(spec, rows) + tables.base_notes(record_files))
    return rows
