"""Table 0: the preconditions of the paper's mechanism, measured from the run's own records.

Agon rewards a challenger for converting a rival's failure. That can only pay if the
base model gains from reading a correct attempt, is not always misled by a wrong one,
and the two adapters fail on different problems. The paper's pretrained models are
assumed to have these properties; a testbed must be shown to have them. Each section
is computed from per-problem records (and, for section 5, training metrics):

  1 reading a rival   the untrained cascade (`cascade`: base drafts, base answers after
                      reading the draft's summary): P(correct | the draft was right) and
                      P(correct | it was wrong), each beside an INDEPENDENT base sample on
                      the same problems (the mixture's second proposal, stage 1 of
                      `mixture`, drawn on the plain prompt with its own seed).
                      Targets: >= 0.90 after a right draft; after a wrong one at least
                      half the independent sample's accuracy on those problems. With the
                      spec's `reading` patterns (a world's shapes): the wrong drafts whose
                      summary states steps to check, and the reads that check the rival's.
  2 protocols         the untrained cascade and mixture against the base alone (`solo`):
                      pass@1 with its interval, the difference and an exact McNemar p.
                      Targets: the base alone between 30% and 55% (RL has headroom and
                      signal), the mixture above it. With `transfer`, the base alone on
                      that benchmark too.
  3 two adapters      strength (pass@1 of each) and how differently they fail: the
                      disagreement rate (one right, the other wrong) and the overlap of
                      failures (both wrong / either wrong), at step 0 (two independent
                      base samples: `solo` and the mixture's second proposal) and after
                      training (each pair's drafters alone, `pairs`), beside two seeds of
                      `reference` (GRPO) when the run has two seeds.
  4 length            whether writing more can buy accuracy at all: the base's accuracy by
                      length group (quartiles, each cut moved to an end of the run of equal
                      lengths it falls in, so that ties stay in one group: fewer than four
                      groups where one length, such as the token cap, fills more than a
                      quarter); its wrong completions cut by the token cap (more room might
                      have answered them); and, where the spec names the world's
                      `retraction` marker, the share of its correct completions that
                      retracted something first (a retry that paid).
                      Target: that share above zero (its interval's low end > 0). Beside
                      the base's cut share, the trained `reference`'s: RL that learns to
                      finish inside the cap (the format term pays a finished wrong answer,
                      not a cut one) without getting more right shows there.
  5 length in training  each trained cell's mean completion length per role over its first and
                      last steps (a tenth of the run each, at least one step).
  6 a habit to sharpen  where the spec names a `habit` ({name, pattern}: a regular
                      expression on the final completion), the base's share of
                      completions that show it and its accuracy with and without it;
                      then the same share for `reference` (GRPO) after training. RL
                      sharpens what a base already does: a better habit that the base
                      seldom shows is headroom it can take. Targets: accuracy with the
                      habit above accuracy without it (the with-interval's low end); and,
                      where the spec sets `min_share`, the base showing it in at least that
                      share of its completions (GRPO's advantages are relative within a
                      group of samples, so a habit a group never samples gets no credit).
                      A marker only shows where the habit left a trace (the toy's
                      bisection marks its retractions, so one right at its first try
                      counts as without it): the with / without split understates it.
  7 RL learned        each trained stream's training reward, pass rate and (a challenger's)
                      conversion rate over the first quarter of its cell's steps against the
                      last, with Welch's interval of the difference over the steps' values;
                      for every trained model of the run (the code model too). Where a quarter
                      holds fewer than MIN_VALUES of a stream's values (a short run, a pair's
                      rotating roles) the windows widen up to halves; a stream with too few
                      even then keeps its means, has no verdict, and its row says so.
                      Targets: no stream's reward or conversion rate falls (the interval's
                      high end >= 0; no conversion target where the challenger reads no
                      draft, the spec's `blind_challengers`: NO_DRAFT); a lone policy's (GRPO's) pass rate rises (low end > 0)
                      where its windows hold RISE_MIN_VALUES steps each (a shorter run's row
                      keeps its numbers and says it cannot resolve a rise).
                      The training-curves figure marks each verdict (stream_verdicts).

  8 reading after training  with `reading_cascades`: each cascade's final stage after a right
                      and after a wrong draft, on the benchmark (and `transfer`), and the
                      cascade beside 1 - (1 - p)^2 from its drafter's single pass p: what
                      searching twice would give.

A spec's `targets` ({name: [low, high]}, config.TABLE0_TARGETS) replaces the default targets by
ranges and adds those of the reading rows, the transfer row, each protocol's gain and the step-0
failure overlap (at least its low end, and its interval above what independence predicts). With
`reading_gate` (a method), section 7 requires that cell's challenger conversion rate and share of
checking reads to rise. A target row says `meets` yes / no; the numbers are reported whatever they are.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import io, prompts
from ..evaluate.records import index_records, records_for
from ..evaluate.stats import clopper_pearson, mcnemar_exact
from . import numbers, tables

# k / n: counts (sections 1-4, 6); first / last: a training metric's means over the start and
# the end of the run (sections 5 and 7), whose `value` is their difference (last - first);
# ci_low / ci_high: always an interval of `value`, empty where there is none
COLUMNS = ["section", "quantity", "model", "seed", "k", "n", "first", "last", "value", "ci_low", "ci_high",
           "target", "meets", "p_value"]
KEYS = ("solo", "cascade", "mixture")
SOLO_RANGE = (0.30, 0.55)  # headroom for RL, and enough right answers for a reward signal


def evaluations(spec: dict) -> list[str]:
    """Every evaluation the table reads, in order (what the workflow must provide)."""
    names = [spec[k] for k in KEYS] + [e for pair in (spec.get("pairs") or {}).values() for e in pair]
    if spec.get("reference"):
        names.append(spec["reference"])
    return list(dict.fromkeys(names + list(spec.get("reading_cascades") or [])))


def needs(spec: dict) -> list[tuple[str, str]]:
    """(evaluation, benchmark) pairs the table reads: every evaluation on its benchmark; on the
    `transfer` benchmark, zero-shot (section 2) and the reading cascades (section 8)."""
    out = [(e, spec["benchmark"]) for e in evaluations(spec)]
    if spec.get("transfer"):
        out += [(e, spec["transfer"]) for e in [spec["solo"], *(spec.get("reading_cascades") or [])]]
    return list(dict.fromkeys(out))


def _range_text(low, high, fmt=lambda x: numbers.fixed(x, 2)) -> str:
    return f"{fmt(low)} - {fmt(high)}"


# A value on a range's edge meets it: 168/400 - 148/400 is 0.04999999999999999 in floats, and a
# gain of exactly 20 problems in 400 meets a target of +0.05.
EDGE = 1e-9


def _inside(value, bounds) -> bool:
    return bounds[0] - EDGE <= value <= bounds[1] + EDGE


def _by_id(records: list[dict]) -> dict:
    return {r["id"]: r for r in records}


def _right(records: list[dict]) -> int:
    return sum(int(r["correct"]) for r in records)


def _fraction(section, quantity, model, seed, k, n, target=None, meets=None, p_value=None) -> dict:
    low, high = clopper_pearson(k, n) if n else (None, None)
    return {"section": section, "quantity": quantity, "model": model, "seed": seed, "k": k, "n": n,
            "value": k / n if n else None, "ci_low": low, "ci_high": high, "target": target or "",
            "meets": "" if meets is None else ("yes" if meets else "no"), "p_value": p_value}


def _stage_correct(record: dict, stage: int) -> int:
    stages = record["stages"]
    if stage >= len(stages):
        raise ValueError(f"record {record['id']!r} of {record.get('evaluation')!r} has {len(stages)} stage(s), "
                         f"not {stage + 1}")
    return int(stages[stage]["correct"])


def rival_rows(model, seed, cascade: list[dict], mixture: list[dict], targets: dict | None = None,
               reading: dict | None = None) -> list[dict]:
    """Section 1: the base after reading a right / wrong draft, beside an independent sample;
    with `reading` patterns, its wrong drafts that state steps to check and its reads that check them.
    `targets` (a table's `targets`) replaces the default targets by ranges."""
    targets = targets or {}
    other = _by_id(mixture)
    rows = []
    for right in (1, 0):
        subset = [r for r in cascade if _stage_correct(r, 0) == right]
        after = sum(_stage_correct(r, 1) for r in subset)
        alone = sum(_stage_correct(other[r["id"]], 1) for r in subset)
        what = "right" if right else "wrong"
        alone_row = _fraction("1 reading a rival", f"alone on the problems whose draft was {what}", model, seed,
                              alone, len(subset))
        if right and "after_right" in targets:
            bounds = targets["after_right"]
            target, meets = _range_text(*bounds), _inside(after / len(subset), bounds) if subset else None
        elif not right and "after_wrong_ratio" in targets and subset:
            low, high = (x * alone_row["value"] for x in targets["after_wrong_ratio"])
            target = (f"{_range_text(*targets['after_wrong_ratio'])}x the independent sample "
                      f"({_range_text(low, high, lambda x: numbers.fixed(x, 3))})")
            meets = _inside(after / len(subset), (low, high))
        elif right:
            target, meets = ">= 0.90", (after / len(subset) >= 0.90) if subset else None
        else:
            half = alone_row["value"] / 2 if subset else None
            target = (f">= {numbers.fixed(half, 3)} (half the independent sample)" if subset
                      else ">= half the independent sample")
            meets = (after / len(subset) >= half) if subset else None
        rows.append(_fraction("1 reading a rival", f"after reading a {what} draft's summary", model, seed, after,
                              len(subset), target, meets))
        rows.append(alone_row)
    if reading:
        rows += reading_habit_rows(model, seed, cascade, reading, targets)
    return rows


def _target(targets: dict, key: str, value) -> tuple[str, bool | None]:
    """A range target's text and whether `value` meets it ("" and None where none is set)."""
    if key not in targets:
        return "", None
    return _range_text(*targets[key]), (None if value is None else _inside(value, targets[key]))


def reading_habit_rows(model, seed, cascade: list[dict], reading: dict, targets: dict) -> list[dict]:
    """Section 1: whether a wrong draft gives a reader something to check (its summary states worked
    steps: `reading.checkable`), and how often the reader checks the rival's steps (`reading.verify`,
    on the final stage's completion) rather than copying or ignoring them."""
    checkable, verify = re.compile(reading["checkable"]), re.compile(reading["verify"])
    wrong = [r["stages"][0] for r in cascade if not r["stages"][0]["correct"]]
    for s in wrong:
        if "completion" not in s:
            raise ValueError(f"record of {cascade[0].get('evaluation')!r}: a draft stage has no completion")
    k = sum(bool(checkable.search(prompts.summary(s["completion"]))) for s in wrong)
    text, meets = _target(targets, "checkable_wrong", k / len(wrong) if wrong else None)
    rows = [_fraction("1 reading a rival", "wrong drafts whose summary states steps to check", model, seed, k,
                      len(wrong), text, meets)]
    k = sum(bool(verify.search(r["stages"][-1]["completion"])) for r in cascade)
    text, meets = _target(targets, "verifying_reads", k / len(cascade) if cascade else None)
    rows.append(_fraction("1 reading a rival", "reads that check the rival's steps", model, seed, k, len(cascade),
                          text, meets))
    return rows


def protocol_rows(model, seed, solo, cascade, mixture, names, targets: dict | None = None) -> list[dict]:
    """Section 2: the untrained two-pass protocols against the base alone. With `targets`, each
    protocol's gain over the base alone (`cascade_gain`, `mixture_gain`) must lie in its range."""
    targets = targets or {}
    base = _by_id(solo)
    k = _right(solo)
    bounds = targets.get("solo", SOLO_RANGE)
    rows = [_fraction("2 protocols", f"{names['solo']} (the base alone)", model, seed, k, len(solo),
                      _range_text(*bounds), _inside(k / len(solo), bounds) if solo else None)]
    for key, records in (("cascade", cascade), ("mixture", mixture)):
        test = mcnemar_exact([int(base[r["id"]]["correct"]) for r in records], [int(r["correct"]) for r in records])
        k = _right(records)
        gain = k / len(records) - rows[0]["value"]
        if f"{key}_gain" in targets:
            bounds = targets[f"{key}_gain"]
            target = (f"{names['solo']} {numbers.fixed(bounds[0], 2, sign=True)} to "
                      f"{numbers.fixed(bounds[1], 2, sign=True)} (gain {numbers.fixed(gain, 3, sign=True)})")
            meets = _inside(gain, bounds)
        else:
            target, meets = (f"> {names['solo']}", gain > 0) if key == "mixture" else (None, None)
        rows.append(_fraction("2 protocols", f"{names[key]} (untrained {key})", model, seed, k, len(records),
                              target, meets, test["p_value"]))
    return rows


def transfer_row(model, seed, name: str, benchmark: str, records: list[dict], targets: dict) -> dict:
    """Section 2: the base alone on the transfer set (a form its supervised data never held)."""
    k = _right(records)
    text, meets = _target(targets, "transfer_solo", k / len(records) if records else None)
    return _fraction("2 protocols", f"{name} on {benchmark} (the base alone, transfer)", model, seed, k,
                     len(records), text, meets)


def overlap_target(rows: list[dict], targets: dict) -> None:
    """Section 3, step 0: the failure overlap of two base samples against `failure_overlap`'s floor
    and what independence predicts from their pass rates, (1-a)(1-b) / (1 - ab): hardness that
    belongs to the problem puts the interval above it (the rows are `pair_rows`' four, in order)."""
    if "failure_overlap" not in targets:
        return
    a, b, _, overlap = rows
    independent = (1 - a["value"]) * (1 - b["value"]) / (1 - a["value"] * b["value"])
    low = targets["failure_overlap"][0]
    overlap["target"] = f">= {numbers.fixed(low, 2)}, interval above independence ({numbers.fixed(independent, 3)})"
    overlap["meets"] = "yes" if overlap["value"] >= low and overlap["ci_low"] > independent else "no"


def reading_rows(model, seed, name: str, benchmark: str, records: list[dict]) -> list[dict]:
    """Section 8: a cascade's final stage after a right and after a wrong draft, and the cascade beside
    what a second independent search from its drafter's single pass p would give, 1 - (1 - p)^2: a
    two-pass protocol that does no more than search twice lands on it."""
    section, rows = "8 reading after training", []
    for right in (1, 0):
        subset = [r for r in records if _stage_correct(r, 0) == right]
        rows.append(_fraction(section, f"{name} on {benchmark}: after a {'right' if right else 'wrong'} draft", model,
                              seed, sum(_stage_correct(r, 1) for r in subset), len(subset)))
    p = sum(_stage_correct(r, 0) for r in records) / len(records) if records else 0.0
    rows.append(_fraction(section, f"{name} on {benchmark}: final (searching twice from its draft's "
                                   f"{numbers.fixed(p, 3)} gives {numbers.fixed(1 - (1 - p) ** 2, 3)})",
                          model, seed, _right(records), len(records)))
    return rows


def pair_rows(section_label, model, seed, a: list[tuple], b: list[tuple]) -> list[dict]:
    """Strength of each, disagreement and failure overlap of two per-problem correctness lists."""
    (name_a, right_a), (name_b, right_b) = a, b
    n = len(right_a)
    disagree = sum(x != y for x, y in zip(right_a, right_b))
    both_wrong = sum(not x and not y for x, y in zip(right_a, right_b))
    either_wrong = sum(not x or not y for x, y in zip(right_a, right_b))
    return [
        _fraction("3 two adapters", f"{section_label}: {name_a} pass@1", model, seed, sum(right_a), n),
        _fraction("3 two adapters", f"{section_label}: {name_b} pass@1", model, seed, sum(right_b), n),
        _fraction("3 two adapters", f"{section_label}: disagreement (one right, one wrong)", model, seed, disagree, n),
        _fraction("3 two adapters", f"{section_label}: failure overlap (both wrong / either wrong)", model, seed,
                  both_wrong, either_wrong),
    ]


def _aligned(*record_lists) -> list[list[int]]:
    ids = [r["id"] for r in record_lists[0]]
    out = []
    for records in record_lists:
        by = _by_id(records)
        if set(by) != set(ids):
            raise ValueError("preconditions: two evaluations compared problem by problem hold different problems")
        out.append([int(by[i]["correct"]) for i in ids])
    return out


def length_groups(records: list[dict]) -> list[list[dict]]:
    """`records` by final length, cut at the quartiles, each cut moved to the nearer end of the
    run of equal lengths it falls in: equal lengths stay in one group, so a length that fills
    more than a quarter (the token cap, often) makes fewer than four groups, never an
    arbitrary split by problem id."""
    ordered = sorted(records, key=lambda r: (r["final_length"], r["id"]))
    lengths = [r["final_length"] for r in ordered]
    n, cuts = len(ordered), {0, len(ordered)}
    for q in range(1, 4):
        i = q * n // 4
        if 0 < i < n and lengths[i] == lengths[i - 1]:
            start, end = lengths.index(lengths[i]), n - lengths[::-1].index(lengths[i])
            i = start if i - start <= end - i else end
        cuts.add(i)
    bounds = sorted(cuts)
    return [ordered[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def length_rows(model, seed, solo: list[dict], retraction: str | None = None) -> list[dict]:
    """Section 4: accuracy by group of the base's final length (`length_groups`), wrong
    completions cut by the cap, and correct ones that retracted first (`retraction`)."""
    rows = []
    groups = length_groups(solo)
    for j, part in enumerate(groups, 1):
        lo, hi = part[0]["final_length"], part[-1]["final_length"]
        rows.append(_fraction("4 length", f"base accuracy, length group {j} of {len(groups)} ({lo}-{hi} tokens)",
                              model, seed, _right(part), len(part)))
    rows.append(cut_row("base's", model, seed, solo))
    final = [r["stages"][-1] for r in solo]
    if retraction:
        right = [s for s in final if s["correct"]]
        paid = sum(retraction in s["completion"] for s in right)
        low = clopper_pearson(paid, len(right))[0] if right else None
        rows.append(_fraction("4 length", f"base's correct completions that retracted first ({retraction.strip()!r})",
                              model, seed, paid, len(right), "> 0 (interval)", low > 0 if right else None))
    return rows


def cut_row(whose: str, model, seed, records: list[dict]) -> dict:
    """Section 4: the share of wrong completions the token cap cut. For a trained reference beside
    the base's: a policy that learns to finish inside the cap without getting more right (the
    format term pays a finished wrong answer, not a cut one) shows it here first."""
    for r in records:
        missing = sorted({"truncated", "completion"} - set(r["stages"][-1]))
        if missing:
            raise ValueError(f"record {r['id']!r} of {r.get('evaluation')!r}: its final stage has no {missing}")
    wrong = [r["stages"][-1] for r in records if not r["stages"][-1]["correct"]]
    return _fraction("4 length", f"{whose} wrong completions cut by the token cap", model, seed,
                     sum(bool(s["truncated"]) for s in wrong), len(wrong))


def habit_rows(model, seed, solo: list[dict], trained: list[dict] | None, habit: dict,
               trained_name: str | None = None) -> list[dict]:
    """Section 6: how often the base shows `habit` and what it is worth; how often `trained` shows it."""
    pattern, name, section = re.compile(habit["pattern"]), habit["name"], "6 a habit to sharpen"
    shows = lambda r: bool(pattern.search(r["stages"][-1]["completion"]))  # noqa: E731
    with_habit = [r for r in solo if shows(r)]
    without = [r for r in solo if not shows(r)]
    right_without = _right(without)
    share = _fraction(section, f"base completions that show the habit ({name})", model, seed, len(with_habit),
                      len(solo))
    if habit.get("min_share") is not None and solo:
        # GRPO credits a habit only inside a group that samples it: the share sets how often one does
        share["target"] = f">= {numbers.fixed(habit['min_share'], 3)}"
        share["meets"] = "yes" if share["value"] >= habit["min_share"] else "no"
    rows = [share]
    with_row = _fraction(section, f"base accuracy with the habit ({name})", model, seed,
                         _right(with_habit), len(with_habit),
                         f"> {numbers.fixed(right_without / len(without), 3)} (without it)" if without
                         else "> accuracy without it")
    if with_habit and without:
        with_row["meets"] = "yes" if with_row["ci_low"] > right_without / len(without) else "no"
    rows += [with_row, _fraction(section, f"base accuracy without the habit ({name})", model, seed, right_without,
                                 len(without))]
    if trained:
        trained_with = [r for r in trained if shows(r)]
        rows += [_fraction(section, f"{trained_name} completions that show the habit ({name}), trained", model,
                           seed, len(trained_with), len(trained)),
                 _fraction(section, f"{trained_name} accuracy with the habit ({name}), trained", model, seed,
                           _right(trained_with), len(trained_with))]
    return rows


def cell_steps(path: str) -> tuple[str, str, int, list[dict]]:
    """(model, method, seed, every step's record) of one cell's metrics.jsonl
    (results/<run>/train/<model>/<method>/seed<s>/), checked to hold each step of its run once,
    in order (train_summary.json beside its adapters says how many)."""
    from ..evaluate.records import read_steps

    cell = Path(path).parent
    steps = read_steps(path, io.read_json(cell / "adapters" / "train_summary.json")["steps"])
    return cell.parent.parent.name, cell.parent.name, int(cell.name.removeprefix("seed")), steps


def training_length_rows(metrics_files: list[str]) -> list[dict]:
    """Section 5: mean completion length per role over the first and last tenth of each cell's steps."""
    rows = []
    for path in sorted(metrics_files):
        model, method, seed, steps = cell_steps(path)
        span = max(1, len(steps) // 10)
        for role in dict.fromkeys(k for s in steps for k in s["streams"]):
            means = []
            for part in (steps[:span], steps[-span:]):
                lengths = [s["streams"][role]["mean_length"] for s in part if role in s["streams"]]
                means.append(sum(lengths) / len(lengths) if lengths else None)
            first, last = means
            rows.append({"section": "5 length in training", "quantity": f"{method} {role}: mean length, first "
                         f"{span} -> last {span} step(s)", "model": model, "seed": seed, "k": "", "n": "",
                         "first": first, "last": last,
                         "value": None if first is None or last is None else last - first,
                         "ci_low": None, "ci_high": None, "target": "", "meets": "", "p_value": None})
    return rows


# Section 7: per trained stream, a training metric over the run's first quarter of steps against
# its last. Each step's value is one sample, so the interval is Welch's over the two windows' step
# values. Within an epoch every step's problems are new; with several epochs the last quarter may
# repeat problems of the first, a positive correlation this unpaired interval ignores, which widens it.
# A short run (the code model's 16 steps), or a stream seen every other step (a pair's rotating
# roles), leaves a quarter too few values for an interval worth the name: the windows then widen,
# up to halves, until each holds MIN_VALUES; a stream that has fewer even then gets its means and
# no verdict, and its row says so.
LEARNING_METRICS = (("reward", "reward"), ("pass_rate", "pass rate"), ("conversion_rate", "conversion rate"),
                    ("verifying_share", "share of reads that check the rival's steps"))
# The reading gate: in the table's `reading_gate` method (a single-adapter reading control), the
# challenger's conversion rate and its share of reads that check the rival's steps must both rise.
GATE_METRICS = ("conversion_rate", "verifying_share")
RISES, HOLDS = "rises (interval above 0)", "does not fall (interval not below 0)"
# A challenger that reads no draft (the shared and hidden rivals: exchange other than visible) has
# no reading to lose. Its conversion rate is its pass rate on the problems its rival failed, and
# those narrow to the hardest as the rival learns: the rate can fall while nothing was unlearned
# (the facts world's misconception problems, which no single pass gets right). It is printed
# without a target.
NO_DRAFT = "none: it reads no draft (a pass rate on its rival's failures, which narrow as the rival learns)"
MIN_VALUES = 4  # per window: Welch's t on fewer than 4 and 4 values has 6 degrees of freedom or less
# A rise needs more: GRPO's pass rate in the default's math cell rose +0.061 with an interval of
# +-0.040 over windows of 24 steps. Over windows of 4 (the code model's 16 steps) the same spread
# would give about +-0.12, twice the rise; over 12, about +-0.06. A shorter window keeps "does not
# fall" for reward and conversion but cannot resolve a rise, and its pass-rate row says so.
RISE_MIN_VALUES = 12


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _window(at: list[int], total: int) -> int:
    """The steps in each of the first and last windows: a quarter of the run, widened (up to a half)
    until both hold MIN_VALUES of the steps `at` where the stream has a value."""
    span, most = max(1, total // 4), max(1, total // 2)
    while span < most and min(sum(s < span for s in at), sum(s >= total - span for s in at)) < MIN_VALUES:
        span += 1
    return span


def stream_verdicts(steps: list[dict], gate: bool = False, reads: bool = True) -> list[dict]:
    """Section 7 for one cell: per stream and metric of LEARNING_METRICS, its windows, their means,
    the difference's interval and the verdict against its target (what Table 0 prints and the
    training-curves figure marks). Keys: stream, metric, label, span (steps per window), widened
    (wider than a quarter), windows ((first, last) step of each), n_first / n_last (values in each), first, last, difference,
    ci ((low, high) or None), p_value, target, meets ("yes", "no" or ""), resolved. `gate`: the cell is the
    reading gate's, whose challenger metrics of GATE_METRICS must rise. `reads`: the cell's challenger
    reads its rival's draft; where it does not, its conversion rate has no target (NO_DRAFT)."""
    from ..evaluate.stats import welch_difference

    total, quarter, out = len(steps), len(steps) // 4, []
    for stream in dict.fromkeys(k for s in steps for k in s["streams"]):
        for key, label in LEARNING_METRICS:
            values = {s["step"]: s["streams"][stream][key] for s in steps
                      if s["streams"].get(stream, {}).get(key) is not None}
            if not values:
                continue
            span = _window(list(values), total)
            first = [v for s, v in values.items() if s < span]
            last = [v for s, v in values.items() if s >= total - span]
            v = {"stream": stream, "metric": key, "label": label, "span": span, "widened": span > max(1, quarter),
                 "windows": ((0, span - 1), (total - span, total - 1)), "n_first": len(first), "n_last": len(last),
                 "first": _mean(first), "last": _mean(last), "difference": None, "ci": None, "p_value": None,
                 "meets": "", "resolved": min(len(first), len(last)) >= MIN_VALUES}
            rises = (key == "pass_rate" and stream.startswith("policy:")) or (
                gate and key in GATE_METRICS and stream.startswith("challenger:"))
            target = RISES if rises else HOLDS if key in ("reward", "conversion_rate") else ""
            if key == "conversion_rate" and not reads:
                target = NO_DRAFT
            if not v["resolved"]:
                v["target"] = (f"cannot resolve: {len(first)} and {len(last)} step values in its first and last "
                               f"{span} steps (a verdict needs {MIN_VALUES} each)")
                if first and last:
                    v["difference"] = v["last"] - v["first"]
                out.append(v)
                continue
            d = welch_difference(first, last)
            v.update(first=d["first"], last=d["last"], difference=d["difference"], ci=d["ci"],
                     p_value=d["p_value"], target=target)
            if target == RISES and min(len(first), len(last)) < RISE_MIN_VALUES:
                v.update(resolved=False,
                         target=f"cannot resolve a rise: {len(first)} and {len(last)} step values in its first and "
                                f"last {span} steps (a rise needs {RISE_MIN_VALUES} each)")
                out.append(v)
                continue
            if target in (RISES, HOLDS) and d["ci"] is not None:
                v["meets"] = "yes" if (d["ci"][0] > 0 if target == RISES else d["ci"][1] >= 0) else "no"
            out.append(v)
    return out


def learning_rows(metrics_files: list[str], gate: str | None = None, blind=()) -> list[dict]:
    """Section 7: did RL learn? Each stream's training reward, pass rate and (challengers)
    conversion rate, first quarter -> last quarter of its steps (stream_verdicts), with the
    difference's interval. Targets: no stream's reward or conversion rate falls; a lone policy's
    (GRPO's) pass rate rises; in the `gate` method, the challenger's conversion rate and share of
    reads that check the rival's steps rise. The `blind` methods' challengers read no draft: their
    conversion rate has no target. A stream too short for a verdict says so in its row."""
    rows = []
    for path in sorted(metrics_files):
        model, method, seed, steps = cell_steps(path)
        for v in stream_verdicts(steps, gate=method == gate, reads=method not in blind):
            widened = " (widened: a quarter held too few of its values)" if v["widened"] else ""
            rows.append({"section": "7 RL learned", "model": model, "seed": seed,
                         "quantity": f"{method} {v['stream']}: training {v['label']}, first -> last {v['span']} "
                                     f"steps{widened}",
                         "k": "", "n": "", "first": v["first"], "last": v["last"], "value": v["difference"],
                         "ci_low": v["ci"][0] if v["ci"] else None, "ci_high": v["ci"][1] if v["ci"] else None,
                         "target": v["target"], "meets": v["meets"], "p_value": v["p_value"]})
    return rows


def build_rows(spec: dict, index, metrics_files: list[str]) -> list[dict]:
    names = {k: spec[k] for k in KEYS}
    bench = spec["benchmark"]
    reference, seeds = spec.get("reference"), spec["seeds"]
    targets, transfer = spec.get("targets") or {}, spec.get("transfer")
    rows, habits, reading = [], [], []  # section 6 prints after section 5, section 8 last
    for model in spec["models"]:
        if model in spec.get("absent_models", []):
            continue
        for seed in seeds:
            get = lambda e: records_for(index, model, e, seed, bench)  # noqa: E731
            solo, cascade, mixture = get(names["solo"]), get(names["cascade"]), get(names["mixture"])
            rows += rival_rows(model, seed, cascade, mixture, targets, spec.get("reading"))
            rows += protocol_rows(model, seed, solo, cascade, mixture, names, targets)
            if transfer:
                rows.append(transfer_row(model, seed, names["solo"], transfer,
                                         records_for(index, model, names["solo"], seed, transfer), targets))
            step0 = [[int(r["stages"][0]["correct"]) for r in solo]]
            other = _by_id(mixture)
            step0.append([_stage_correct(other[r["id"]], 1) for r in solo])
            rows += pair_rows("step 0 (two base samples)", model, seed, ("sample 1", step0[0]),
                              ("sample 2", step0[1]))
            overlap_target(rows[-4:], targets)
            for name in spec.get("reading_cascades") or []:
                for where in [bench] + ([transfer] if transfer else []):
                    reading += reading_rows(model, seed, name, where, records_for(index, model, name, seed, where))
            for pair, (ea, eb) in (spec.get("pairs") or {}).items():
                right_a, right_b = _aligned(get(ea), get(eb))
                rows += pair_rows(f"{pair}, trained", model, seed, (ea, right_a), (eb, right_b))
            rows += length_rows(model, seed, solo, spec.get("retraction"))
            if reference:
                rows.append(cut_row(f"{reference}'s", model, seed, get(reference)))
            if spec.get("habit"):
                habits += habit_rows(model, seed, solo, get(reference) if reference else None, spec["habit"],
                                   reference)
        if reference and len(seeds) >= 2:
            right_a, right_b = _aligned(*(records_for(index, model, reference, s, bench) for s in seeds[:2]))
            rows += pair_rows(f"{reference}, two seeds (reference)", model, f"{seeds[0]},{seeds[1]}",
                              (f"seed {seeds[0]}", right_a), (f"seed {seeds[1]}", right_b))
    learned = learning_rows(metrics_files, spec.get("reading_gate"), spec.get("blind_challengers", ()))
    return rows + training_length_rows(metrics_files) + habits + learned + reading


def _cell(x, digits=3) -> str:
    if x is None or x == "":
        return ""
    return numbers.fixed(x, digits) if isinstance(x, float) else str(x)


HEAD = ["section", "quantity", "model", "seed", "k / n", "value", "95% CI", "target", "meets", "p"]


def display(rows: list[dict]) -> list[list[str]]:
    """The readable cells of each row (md and tex print the same)."""
    body = []
    for r in rows:
        if r["section"].startswith("5"):
            k_n, value, ci = "", f"{_cell(r['first'], 1)} -> {_cell(r['last'], 1)}", ""
        elif r["section"].startswith("7"):  # first -> last, then their difference and its interval
            k_n = f"{_cell(r['first'])} -> {_cell(r['last'])}"
            value = "" if r["value"] is None else numbers.fixed(r["value"], 3, sign=True)
            ci = (f"[{numbers.fixed(r['ci_low'], 3, sign=True)}, {numbers.fixed(r['ci_high'], 3, sign=True)}]"
                  if r["ci_low"] is not None else "")
        else:
            k_n = f"{r['k']} / {r['n']}"
            value = _cell(r["value"])
            ci = f"[{_cell(r['ci_low'])}, {_cell(r['ci_high'])}]" if r["ci_low"] is not None else ""
        body.append([r["section"], r["quantity"], r["model"], str(r["seed"]), k_n, value, ci, r["target"],
                     r["meets"], "" if r["p_value"] in (None, "") else numbers.p_value(r["p_value"])])
    return body


def summary_lines(spec: dict, rows: list[dict]) -> list[str]:
    """The targets met, the base's preconditions (sections 1-6) apart from whether RL learned (7)."""
    lines = [f"Benchmark: {spec['benchmark']}. Computed from the run's records (src/agon/report/preconditions.py "
             "says how each row is counted); section 5 shows first -> last mean length; section 7 first -> last "
             "training value, their difference and its interval."]
    for label, part in (("Targets met", [r for r in rows if not r["section"].startswith("7")]),
                        ("RL learned (section 7): targets met", [r for r in rows if r["section"].startswith("7")])):
        if not part:
            continue
        unmet = [r["quantity"] for r in part if r["meets"] == "no"]
        unresolved = sum(str(r["target"]).startswith("cannot resolve") for r in part)
        lines.append(f"{label}: {sum(r['meets'] == 'yes' for r in part)} of {sum(r['meets'] != '' for r in part)}"
                     + (f"; not met: {'; '.join(unmet)}" if unmet else "")
                     + (f"; {unresolved} row(s) too short to resolve, no verdict" if unresolved else "") + ".")
    return lines


def write_preconditions(spec: dict, record_files: list[str], metrics_files: list[str], out_prefix: Path) -> list:
    index = index_records(record_files, spec.get("splits"))
    rows = build_rows(spec, index, metrics_files)
    tables.write_plain_table(out_prefix, spec["title"], rows, COLUMNS, HEAD, display(rows),
                             summary_lines(spec, rows) + tables.base_notes(record_files))
    return rows
