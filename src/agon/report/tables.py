"""Tables from per-problem evaluation records, beside the paper's numbers.

Every row is derived from records files: k correct of n, pass@1 = k/n, a 95%
Clopper-Pearson interval, mean final-stage length (the paper's length) and
mean total generated tokens over all stages (ours). Each table is written as
csv (every column, machine-readable), md and tex (the readable columns; tex is a
booktabs tabular with every cell escaped).

A table spec (config `tables.<name>`, completed by the planner, agon.plan.Plan.table_spec):

  benchmarks       our benchmarks, one block of rows each (`benchmark: x` is
                   shorthand for `benchmarks: [x]`). Table 2 has one at toy scale
                   (transfer_easy) beside two of the paper's (GSM8K, MATH-500).
  models           our models; a name in `absent_models` (not configured in this
                   run, e.g. the paper's Qwen3-4B at toy scale) gets one row per
                   table row marked `absent at this scale`: no k, n or pass@1,
                   only the paper's numbers. Nothing is invented.
  rows             evaluations or picks; `picks` maps a pick to its candidates.
  baseline         a row: every other row gets `diff_vs_baseline` (pass@1
                   difference) and an exact McNemar p-value on the same problems.
  paper            {table, benchmark}: where config/reported.yaml holds the
                   paper's numbers. `table` may be a list (a field is taken from
                   the first table that has it: Table 4 reads its intervals from
                   table4_ci and its points from table3_main). `benchmark` is one
                   paper benchmark, a list (each gets its own column group,
                   suffixed `_<benchmark>`), or a mapping {our benchmark: either}.

Columns (csv; ours as fractions, the paper's in percent as published):

  n_rival_correct, mean_length_rival_correct   on a cascade row: how many drafts were
                   correct, and the challenger's (final stage's) mean length on those problems,
                   beside its mean over all problems (`mean_length`): the paper's Sec. 5.5 says
                   a challenger that read a correct draft writes less than its stage's mean.
  selected         for a pick row (a pair's better cascade direction): which
                   evaluation was chosen, and on which split. `<name>` is chosen
                   on the validation split (ours); `<name> (post hoc)` on the
                   row's own benchmark, as the paper did.
  diff_vs_baseline, p_vs_baseline   against the baseline row (same model, seed, benchmark).
  seed_std, seed_min, seed_max      on a `mean` row (several seeds): the spread of the
                   per-seed pass@1; its ci_low/ci_high are a 95% Student-t interval
                   of the seed mean (agon.evaluate.stats.seed_mean_interval). The
                   per-seed rows stay in the table.
  status           `absent at this scale (...)` for a row of an unconfigured model.
  paper_*          the published value of each field for the cell (pass_at_1,
                   ci_low, ci_high, mean_length, delta_vs_grpo), `paper_in_ci`:
                   whether the published pass@1 lies inside our interval, and
                   `paper_benchmark`; blank when the paper has no such cell.
"""

from __future__ import annotations

import json

import re
from fractions import Fraction
from pathlib import Path

from .. import io
from ..evaluate.stats import (aggregate_seeds, clopper_pearson, mcnemar_exact, paired_by_id,
                              seed_mean_interval)
from ..evaluate.records import index_records, pick, records_for, tie_note
from . import numbers
from . import reported as reported_mod

ABSENT = "absent at this scale"
COLUMNS = ["method", "model", "benchmark", "seed", "k", "n", "pass_at_1", "ci_low", "ci_high",
           "mean_length", "mean_total_tokens", "n_rival_correct", "mean_length_rival_correct", "selected",
           "diff_vs_baseline", "p_vs_baseline", "seed_std", "seed_min", "seed_max", "status"]
PAPER_FIELDS = ["pass_at_1", "ci_low", "ci_high", "mean_length", "delta_vs_grpo"]


# --- spec helpers --------------------------------------------------------------

def table_benchmarks(spec: dict) -> list[str]:
    """Our benchmarks of a table: `benchmarks`, or the one `benchmark`."""
    if spec.get("benchmarks"):
        return list(spec["benchmarks"])
    return [spec["benchmark"]]


def paper_benchmarks(spec: dict, benchmark: str) -> list[str]:
    """The paper's benchmarks printed beside the rows of our `benchmark`."""
    paper = spec.get("paper") or {}
    value = paper.get("benchmark")
    if isinstance(value, dict):
        value = value.get(benchmark)
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def paper_tables(spec: dict) -> list[str]:
    table = (spec.get("paper") or {}).get("table")
    if table is None:
        return []
    return [table] if isinstance(table, str) else list(table)


def paper_suffixed(spec: dict) -> bool:
    """Whether paper columns carry a benchmark suffix (some row stands beside several)."""
    return any(len(paper_benchmarks(spec, b)) > 1 for b in table_benchmarks(spec))


def paper_column_groups(spec: dict) -> list[tuple[str, str]]:
    """[(paper benchmark or "", column prefix)]: one group per paper benchmark shown."""
    if not spec.get("paper"):
        return []
    if not paper_suffixed(spec):
        return [("", "paper_")]
    seen = dict.fromkeys(p for b in table_benchmarks(spec) for p in paper_benchmarks(spec, b))
    return [(p, f"paper_{p}_") for p in seen]


def columns(spec: dict) -> list[str]:
    out = list(COLUMNS)
    groups = paper_column_groups(spec)
    if groups and groups[0][0] == "":
        out.append("paper_benchmark")
    for _, prefix in groups:
        out += [prefix + f for f in ("pass_at_1", "in_ci", "ci_low", "ci_high", "mean_length",
                                     "delta_vs_grpo")]
    return out


# --- rows --------------------------------------------------------------------------

def summarize(records: list[dict]) -> dict:
    if not records:
        raise ValueError("summarize: no records")
    n = len(records)
    k = sum(int(r["correct"]) for r in records)
    low, high = clopper_pearson(k, n)
    out = {
        "k": k, "n": n, "pass_at_1": k / n, "ci_low": low, "ci_high": high,
        "mean_length": sum(r["final_length"] for r in records) / n,
        "mean_total_tokens": sum(r["total_tokens"] for r in records) / n,
    }
    if all(len(r["stages"]) == 2 for r in records):  # a cascade: the final stage read the first
        after_correct = [r["final_length"] for r in records if r["stages"][0]["correct"]]
        out["n_rival_correct"] = len(after_correct)
        out["mean_length_rival_correct"] = sum(after_correct) / len(after_correct) if after_correct else None
    return out


def choice(index, spec: dict, model: str, row: str, evaluation: str, seed: int) -> list[str]:
    """How a pick's direction was chosen, for a table's `selected` column: [] for a plain row."""
    if row == evaluation:
        return []
    tie = tie_note(index, model, spec["picks"][row], seed, spec.get("select_on", "validation"))
    return [f"{row} -> {evaluation} (seed {seed}){tie}"]


def resolve_row(index, spec: dict, model: str, row: str, seed: int, benchmark: str) -> tuple[str, list[dict]]:
    """A row's evaluation and its records on `benchmark`: a pick (spec["picks"]) is the candidate
    chosen on the spec's `select_on` (default validation) for this seed, any other row itself."""
    picks = spec.get("picks", {})
    evaluation = (pick(index, model, picks[row], seed, spec.get("select_on", "validation"))
                  if row in picks else row)
    return evaluation, records_for(index, model, evaluation, seed, benchmark)


def absent_row(name: str, model: str, benchmark: str) -> dict:
    return {"method": name, "model": model, "benchmark": benchmark, "seed": "",
            "status": f"{ABSENT} (model {model!r} is not configured in this run)",
            "_paper_method": name, "_absent": True}


def build_rows(spec: dict, index) -> list[dict]:
    select_on = spec.get("select_on", "validation")
    picks = spec.get("picks", {})
    absent = set(spec.get("absent_models", []))
    rows = []
    for bench in table_benchmarks(spec):
        for model in spec["models"]:
            if model in absent:
                rows += [absent_row(name, model, bench) for name in spec["rows"]]
                continue
            for name in spec["rows"]:
                variants = [(name, None)]
                if name in picks:
                    variants = [(name, select_on), (f"{name} (post hoc)", bench)]
                for label, chosen_on in variants:
                    per_seed = []
                    for seed in spec["seeds"]:
                        evaluation = name if chosen_on is None else pick(index, model, picks[name], seed,
                                                                         chosen_on)
                        records = records_for(index, model, evaluation, seed, bench)
                        row = {"method": label, "model": model, "benchmark": bench, "seed": seed,
                               **summarize(records), "_records": records, "_paper_method": name}
                        if chosen_on is not None:
                            row["selected"] = (f"{evaluation} on {chosen_on}"
                                               + tie_note(index, model, picks[name], seed, chosen_on))
                        per_seed.append(row)
                    rows += per_seed
                    if len(per_seed) > 1:
                        rows.append(seed_mean_row(per_seed))
    _add_baseline_tests(rows, spec.get("baseline"))
    return rows


def seed_mean_row(per_seed: list[dict]) -> dict:
    """The mean over seeds: pass@1 mean, sample sd, min, max and a t-interval of the mean."""
    values = [r["pass_at_1"] for r in per_seed]
    agg = aggregate_seeds(values)
    low, high = seed_mean_interval(values)
    first = per_seed[0]
    mean = lambda key: sum(r[key] for r in per_seed) / len(per_seed)  # noqa: E731
    return {"method": first["method"], "model": first["model"], "benchmark": first["benchmark"],
            "seed": "mean", "k": sum(r["k"] for r in per_seed), "n": sum(r["n"] for r in per_seed),
            "pass_at_1": agg["mean"], "ci_low": max(0.0, low), "ci_high": min(1.0, high),
            "seed_std": agg["std"], "seed_min": agg["min"], "seed_max": agg["max"],
            "mean_length": mean("mean_length"), "mean_total_tokens": mean("mean_total_tokens"),
            **_rival_length_mean(per_seed),
            "_paper_method": first["_paper_method"], "_seed_values": agg["values"]}


def _rival_length_mean(per_seed: list[dict]) -> dict:
    """A cascade's length after a correct draft over seeds: pooled over every such problem."""
    if any("n_rival_correct" not in r for r in per_seed):
        return {}
    n = sum(r["n_rival_correct"] for r in per_seed)
    total = sum(r["n_rival_correct"] * r["mean_length_rival_correct"] for r in per_seed if r["n_rival_correct"])
    return {"n_rival_correct": n, "mean_length_rival_correct": total / n if n else None}


def _rate_difference(r: dict, other: dict) -> float:
    """pass@1(r) - pass@1(other): from the counts where both rows are one seed's (the float
    nearest k/n - k'/n', which a recount of the records gives), else from the seed means."""
    if r["seed"] != "mean" and other["seed"] != "mean":
        return float(Fraction(r["k"], r["n"]) - Fraction(other["k"], other["n"]))
    return r["pass_at_1"] - other["pass_at_1"]


def _add_baseline_tests(rows: list[dict], baseline: str | None) -> None:
    if not baseline:
        return
    base = {(r["model"], r["seed"], r["benchmark"]): r for r in rows if r["method"] == baseline
            and "pass_at_1" in r}
    for r in rows:
        other = base.get((r["model"], r["seed"], r["benchmark"]))
        if other is None or "pass_at_1" not in r or r is other:
            continue
        r["diff_vs_baseline"] = _rate_difference(r, other)
        if "_records" in r and "_records" in other:
            paired = paired_by_id(r["_records"], other["_records"])
            r["p_vs_baseline"] = mcnemar_exact(paired.a, paired.b)["p_value"]


def _paper_model(spec: dict, model: str, reported: dict) -> str | None:
    """The paper's model a row is compared with: the configured `paper_model`, or an
    absent model's own name when it is one of the paper's models."""
    mapped = spec.get("paper_models", {}).get(model)
    if mapped:
        return mapped
    if model in spec.get("absent_models", []) and model in reported["keys"]["models"]:
        return model
    return None


def add_paper_columns(rows: list[dict], spec: dict, reported: dict) -> None:
    tables = paper_tables(spec)
    if not tables:
        return
    known_methods = reported["keys"]["methods"]
    suffixed = paper_suffixed(spec)
    for r in rows:
        model = _paper_model(spec, r["model"], reported)
        benches = paper_benchmarks(spec, r["benchmark"])
        if not suffixed and benches:
            r["paper_benchmark"] = benches[0]
        if model is None or r["_paper_method"] not in known_methods:
            continue  # our own rows (e.g. coop_drafter_alone) have no paper cell
        for bench in benches:
            prefix = f"paper_{bench}_" if suffixed else "paper_"
            for field in PAPER_FIELDS:
                for table in tables:
                    value = reported_mod.lookup(reported, table, model, bench, r["_paper_method"], field)
                    if value is not None:
                        r[prefix + field] = value
                        break
            value = r.get(prefix + "pass_at_1")
            if value is not None and r.get("ci_low") is not None:
                r[prefix + "in_ci"] = reported_mod.inside_interval(value, 100 * r["ci_low"],
                                                                   100 * r["ci_high"])


# --- rendering ---------------------------------------------------------------------

def _pct(x) -> str:
    return "" if x is None or x == "" else numbers.pct(x)


def _num(x, digits=1) -> str:
    if x is None or x == "":
        return ""
    return numbers.fixed(x, digits) if isinstance(x, float) else str(x)


def _yes_no(x) -> str:
    return "" if x is None or x == "" else ("yes" if x else "no")


def _paper_interval(r, prefix) -> str:
    low, high = r.get(prefix + "ci_low"), r.get(prefix + "ci_high")
    return "" if low is None or high is None else f"[{low:.1f}, {high:.1f}]"


def display(spec: dict, rows: list[dict]) -> tuple[list[str], list[str], list[list[str]]]:
    """(header, column alignment l/r, body): the readable columns shared by md and tex.

    Optional columns appear only when some row has a value; every cell is text.
    """
    several_benchmarks = len(table_benchmarks(spec)) > 1
    baseline = spec.get("baseline")
    cols: list[tuple[str, str, object]] = [
        ("method", "l", lambda r: r["method"]),
        ("model", "l", lambda r: r["model"]),
    ]
    if several_benchmarks:
        cols.append(("benchmark", "l", lambda r: r["benchmark"]))
    cols += [
        ("seed", "l", lambda r: str(r["seed"])),
        ("k/n", "r", lambda r: "" if r.get("_absent") else f"{r['k']}/{r['n']}"),
        ("pass@1 %", "r", lambda r: ABSENT if r.get("_absent") else _pct(r["pass_at_1"])),
        ("95% CI", "r", lambda r: "" if r.get("_absent") else f"[{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]"),
        ("mean length", "r", lambda r: _num(r.get("mean_length"))),
        ("total tokens", "r", lambda r: _num(r.get("mean_total_tokens"))),
    ]
    optional = [
        ("seed_std", "seed sd / min-max %", "r",
         lambda r: "" if r.get("seed_std") is None else
         f"{_pct(r['seed_std'])} / {_pct(r['seed_min'])}-{_pct(r['seed_max'])}"),
        ("selected", "direction chosen", "l", lambda r: r.get("selected") or ""),
    ]
    if spec.get("rival_length"):  # Sec. 5.5's claim, beside the row's mean length
        optional.append(("mean_length_rival_correct", "length after a correct draft (n)", "r",
                         lambda r: "" if r.get("n_rival_correct") is None else
                         f"{_num(r.get('mean_length_rival_correct'))} ({r['n_rival_correct']})"))
    optional += [
        ("diff_vs_baseline", f"Δ vs {baseline} (pp)", "r",
         lambda r: "" if r.get("diff_vs_baseline") is None else numbers.pp(r["diff_vs_baseline"])),
        ("p_vs_baseline", f"p vs {baseline}", "r",
         lambda r: "" if r.get("p_vs_baseline") is None else numbers.p_value(r["p_vs_baseline"])),
    ]
    groups = paper_column_groups(spec)
    for bench, prefix in groups:
        tag = f" ({bench})" if bench else ""
        optional += [
            (prefix + "pass_at_1", f"paper pass@1 %{tag}", "r", lambda r, p=prefix: _num(r.get(p + "pass_at_1"), 0)),
            (prefix + "in_ci", f"paper in our CI{tag}", "l", lambda r, p=prefix: _yes_no(r.get(p + "in_ci"))),
            (prefix + "ci_low", f"paper 95% CI{tag}", "r", lambda r, p=prefix: _paper_interval(r, p)),
            (prefix + "mean_length", f"paper length{tag}", "r",
             lambda r, p=prefix: _num(r.get(p + "mean_length"), 0)),
            (prefix + "delta_vs_grpo", f"paper Δ vs grpo (pp){tag}", "r",
             lambda r, p=prefix: "" if r.get(p + "delta_vs_grpo") is None else f"{r[p + 'delta_vs_grpo']:+.0f}"),
        ]
    for key, label, align, fn in optional:
        if any(r.get(key) not in (None, "") for r in rows):
            cols.append((label, align, fn))
    head = [c[0] for c in cols]
    aligns = [c[1] for c in cols]
    body = [[fn(r) for _, _, fn in cols] for r in rows]
    return head, aligns, body


def notes(spec: dict, rows: list[dict]) -> list[str]:
    out = ["pass@1 with a 95% Clopper-Pearson interval; lengths in tokens (mean final-stage "
           "completion, as the paper reports; and total over all stages)."]
    if any(r["seed"] == "mean" for r in rows):
        out.append("A `mean` row averages the seeds above it: its interval is a 95% Student-t "
                   "interval of the seed mean; sd is the sample standard deviation over seeds.")
    if spec.get("paper"):
        out.append("Paper values are the published Qwen3-scale numbers (config/reported.yaml, "
                   f"{', '.join(paper_tables(spec))}), printed beside ours for reference: the toy "
                   "world is not expected to match them.")
    if spec.get("picks"):
        out.append("A pair's row uses the cascade direction (a single-pass pair: the adapter) with "
                   "the better pass@1 on the "
                   f"{spec.get('select_on', 'validation')} split; `(post hoc)` rows pick it on the "
                   "reported benchmark itself, as the paper did, and are optimistic by construction.")
    if spec.get("rival_length"):
        out.append("length after a correct draft: the challenger's (final stage's) mean length on the "
                   "problems whose draft was correct, and how many; the paper (Sec. 5.5) says it is "
                   "below the challenger stage's mean over all problems (`mean length`). Single-pass "
                   "rows have no draft.")
    if spec.get("unisolated_code"):
        out.append("Code was graded with rlimits alone, WITHOUT the sandbox's isolation "
                   "(config `sandbox.isolation: rlimits`): programs could read and reach what the user can.")
    if "shared_rival" in spec.get("rows", []):
        out.append("shared_rival: one draft per problem is every rollout's rival. The paper calls it "
                   "inert by construction; that holds only where the rival is right, or where the "
                   "format term is constant within the group. Where the shared rival is wrong, "
                   "its reward 3c + lambda phi is coop's with the format weight cut to 2/3, so its "
                   "advantages differ from coop's whenever correctness and format both vary in the group "
                   "(tests/test_rewards.py; the training metrics count such groups per step: "
                   "groups_unlike_coop, max_gap_to_coop).")
    if any(r.get("_absent") for r in rows):
        absent = ", ".join(dict.fromkeys(r["model"] for r in rows if r.get("_absent")))
        out.append(f"`{ABSENT}`: no model of this run stands for {absent}; only the paper's "
                   "numbers are shown, nothing is estimated.")
    return out + spec.get("base_notes", [])


def base_notes(record_files: list[str]) -> list[str]:
    """A note per toy model naming its base: where it came from and its weights' sha256, as the
    evaluation jobs recorded them beside the records (provenance.json, agon.toy.pinned.identity)."""
    bases: dict[str, set] = {}
    for path in record_files:
        prov = Path(path).parent / "provenance.json"  # eval/<model>/<cell>/seed<seed>/provenance.json
        base = io.read_json(prov).get("base") if prov.exists() else None
        if base:
            with open(path) as f:  # the records name their model
                model = json.loads(f.readline())["model"]
            bases.setdefault(model, set()).add(
                (base["source"], base.get("pinned_path", ""), base["sha256"]))
    out = []
    for model, found in sorted(bases.items()):
        described = [f"the pinned base {where}" if source == "pinned" else "a base trained by this run"
                     for source, where, _ in sorted(found)]
        shas = ", ".join(sha for *_, sha in sorted(found))
        out.append(f"Base of {model}: {'; '.join(described)} (model.safetensors sha256 {shas}).")
    return out


def _benchmark_line(spec: dict) -> str:
    parts = []
    for b in table_benchmarks(spec):
        paper = paper_benchmarks(spec, b)
        parts.append(f"{b} (paper: {', '.join(paper)})" if paper else b)
    word = "Benchmarks" if len(parts) > 1 else "Benchmark"
    return f"{word}: {'; '.join(parts)}."


def md_cell(text) -> str:
    """A markdown table cell: pipes escaped, newlines flattened."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def md_table(head: list[str], body: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(md_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in body]
    return lines


def to_markdown(title: str, rows: list[dict], spec: dict) -> str:
    head, _, body = display(spec, rows)
    lines = [f"# {title}", "", _benchmark_line(spec), ""] + md_table(head, body)
    lines += [""] + notes(spec, rows)
    return "\n".join(lines) + "\n"


# LaTeX: every text cell goes through tex_escape; the output is a table float
# holding a booktabs tabular (\usepackage{booktabs}).
_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "Δ": r"$\Delta$",
        "\n": " ", "\r": " "}


def tex_escape(text) -> str:
    return "".join(_TEX.get(c, c) for c in str(text))


def tex_table(title: str, label: str, head: list[str], aligns: list[str], body: list[list[str]],
              notes: list[str] = (), rules_after: tuple[int, ...] = ()) -> str:
    """A table float with a booktabs tabular; `rules_after` adds \\midrule after those body rows.

    A body row of one cell spans every column (\\multicolumn).
    """
    lines = [f"% {tex_escape(title)}", "% generated by `agon table`; do not edit",
             r"\begin{table}[htbp]", r"\centering", rf"\caption{{{tex_escape(title)}}}",
             rf"\label{{tab:{re.sub(r'[^A-Za-z0-9_:-]', '-', label)}}}",
             rf"\begin{{tabular}}{{{''.join(aligns)}}}",
             r"\toprule", " & ".join(tex_escape(h) for h in head) + r" \\", r"\midrule"]
    for i, row in enumerate(body):
        if len(row) == 1 and len(head) > 1:  # one cell spanning the whole width
            lines.append(rf"\multicolumn{{{len(head)}}}{{p{{0.95\linewidth}}}}{{{tex_escape(row[0])}}} \\")
        else:
            lines.append(" & ".join(tex_escape(c) for c in row) + r" \\")
        if i in rules_after and i != len(body) - 1:
            lines.append(r"\midrule")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if notes:
        lines += [r"\par\smallskip", r"\footnotesize " + " ".join(tex_escape(n).replace("`", "") for n in notes)]
    lines += [r"\end{table}"]
    return "\n".join(lines) + "\n"


def to_tex(title: str, rows: list[dict], spec: dict, label: str) -> str:
    head, aligns, body = display(spec, rows)
    breaks = tuple(i for i in range(len(rows) - 1) if rows[i]["benchmark"] != rows[i + 1]["benchmark"])
    return tex_table(title, label, head, aligns, body, [_benchmark_line(spec)] + notes(spec, rows), breaks)


def write_plain_table(out_prefix: Path, title: str, rows: list[dict], csv_columns: list[str], head: list[str],
                      body: list[list[str]], notes: list[str]) -> None:
    """<out_prefix>.csv (every column of `rows`), .md and .tex (`head` and `body`, one text column
    each), written atomically. In the md file the first note precedes the table, the others follow."""
    out_prefix = Path(out_prefix)
    io.write_csv(str(out_prefix) + ".csv", rows, csv_columns)
    md = [f"# {title}", "", notes[0], ""] + md_table(head, body) + ([""] + notes[1:] if notes[1:] else [])
    io.write_text(str(out_prefix) + ".md", "\n".join(md) + "\n")
    io.write_text(str(out_prefix) + ".tex", tex_table(title, out_prefix.name, head, ["l"] * len(head), body, notes))


def write_table(spec: dict, record_files: list[str], out_prefix: Path, reported_path=None) -> list[dict]:
    """Rows from records; <out_prefix>.csv, .md and .tex written atomically."""
    index = index_records(record_files, spec.get("splits"))
    rows = build_rows(spec, index)
    if reported_path and spec.get("paper"):
        add_paper_columns(rows, spec, reported_mod.load_reported(reported_path))
    out_prefix = Path(out_prefix)
    spec = {**spec, "base_notes": base_notes(record_files)}
    io.write_csv(str(out_prefix) + ".csv", rows, columns(spec))
    io.write_text(str(out_prefix) + ".md", to_markdown(spec["title"], rows, spec))
    io.write_text(str(out_prefix) + ".tex", to_tex(spec["title"], rows, spec, out_prefix.name))
    return rows
