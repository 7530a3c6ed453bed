"""The headline contrasts over training seeds: one row per (a, b) of `contrasts`.

A contrast compares two table rows (evaluations or picks; a pick is a pair's cascade
direction chosen on `select_on`, per seed, as in the results tables) on the same
problems. Per contrast:

  per seed      pass@1(a) - pass@1(b), with each seed's exact McNemar p-value;
  mean_diff     the mean of the per-seed differences;
  ci_low/high   a 95% Student-t interval of that mean over seeds (seeds are the sample:
                run-to-run noise; none with one seed);
  pooled test   an exact McNemar test on every seed's problems pooled: the discordant
                problems of all seeds together (under H0, each is a fair coin in every
                seed, so the pooled count is binomial too): only_a, only_b, p_pooled.

Nothing is averaged away: the per-seed differences are printed beside the mean.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..evaluate.records import index_records
from ..evaluate.stats import mcnemar_exact, paired_by_id, seed_mean_interval
from . import numbers, tables

COLUMNS = ["a", "b", "model", "benchmark", "seeds", "per_seed_diff", "per_seed_p", "mean_diff", "ci_low",
           "ci_high", "only_a", "only_b", "n_pooled", "p_pooled", "selected"]


def evaluations(spec: dict) -> list[str]:
    """The rows the table reads (each contrast's two sides, in order)."""
    return list(dict.fromkeys(x for pair in spec["contrasts"] for x in pair))


def build_rows(spec: dict, index) -> list[dict]:
    rows = []
    for model in spec["models"]:
        if model in spec.get("absent_models", []):
            continue
        for a, b in spec["contrasts"]:
            diffs, ps, pooled_a, pooled_b, chosen = [], [], [], [], []
            for seed in spec["seeds"]:
                ea, ra = tables.resolve_row(index, spec, model, a, seed, spec["benchmark"])
                eb, rb = tables.resolve_row(index, spec, model, b, seed, spec["benchmark"])
                paired = paired_by_id(ra, rb)
                test = mcnemar_exact(paired.a, paired.b)
                diffs.append(test["diff"])
                ps.append(test["p_value"])
                pooled_a += paired.a
                pooled_b += paired.b
                for row, ev in ((a, ea), (b, eb)):
                    chosen += tables.choice(index, spec, model, row, ev, seed)
            pooled = mcnemar_exact(pooled_a, pooled_b)
            interval = seed_mean_interval(diffs)
            rows.append({"a": a, "b": b, "model": model, "benchmark": spec["benchmark"],
                         "seeds": " ".join(map(str, spec["seeds"])),
                         # exact (Python's shortest repr of each float): a recount of the
                         # records gives these values, and the display rounds them once
                         "per_seed_diff": " ".join(f"{d:+}" for d in diffs),
                         "per_seed_p": " ".join(repr(p) for p in ps),
                         "mean_diff": math.fsum(diffs) / len(diffs),
                         "ci_low": interval[0] if interval else None, "ci_high": interval[1] if interval else None,
                         "only_a": pooled["only_a"], "only_b": pooled["only_b"], "n_pooled": pooled["n"],
                         "p_pooled": pooled["p_value"], "selected": "; ".join(chosen)})
    return rows


HEAD = ["contrast", "model", "seeds", "per-seed diff (pp)", "mean diff (pp)", "95% CI over seeds",
        "only a / only b (pooled)", "p (pooled McNemar)"]


def display(rows: list[dict]) -> list[list[str]]:
    body = []
    for r in rows:
        ci = (f"[{numbers.pp(r['ci_low'])}, {numbers.pp(r['ci_high'])}]" if r["ci_low"] is not None
              else "one seed: none")
        per_seed = " ".join(numbers.pp(float(d)) for d in r["per_seed_diff"].split())
        body.append([f"{r['a']} vs {r['b']}", r["model"], r["seeds"], per_seed, numbers.pp(r["mean_diff"]), ci,
                     f"{r['only_a']} / {r['only_b']}", numbers.p_value(r["p_pooled"])])
    return body


def write_contrasts(spec: dict, record_files: list[str], out_prefix: Path) -> list[dict]:
    index = index_records(record_files, spec.get("splits"))
    rows = build_rows(spec, index)
    notes = [f"Benchmark: {spec['benchmark']}. A difference is pass@1(a) - pass@1(b) in percentage points on "
             "the same problems; its interval is a 95% Student-t interval of the mean over seeds; the test pools "
             "every seed's problems into one exact McNemar test (src/agon/report/contrasts.py). A pair's row uses "
             f"the cascade direction chosen on {spec.get('select_on', 'validation')}, per seed."]
    tables.write_plain_table(out_prefix, spec["title"], rows, COLUMNS, HEAD, display(rows),
                             notes + tables.base_notes(record_files))
    return rows
