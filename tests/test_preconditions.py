"""Table 0 (src/agon/report/preconditions.py) on records whose counts are known by construction."""

from pathlib import Path

import pytest

from agon import io
from agon.report import preconditions

SPEC = {"title": "Table 0", "kind": "preconditions", "benchmark": "heldout", "models": ["toy"], "seeds": [0],
        "solo": "zero_shot", "cascade": "untrained_cascade", "mixture": "moa",
        "pairs": {"agon": ["agon_drafter_a", "agon_drafter_b"]}, "reference": "grpo", "retraction": " no"}
IDS = [f"p{i}" for i in range(20)]


def stage(correct, length=10, truncated=False, completion=""):
    return {"correct": int(correct), "length": length, "truncated": truncated, "completion": completion}


def write(tmp_path, evaluation, stages_of, seed=0, benchmark="heldout"):
    """stages_of(i) -> stage list for problem i; the record's correct/final_length from the last stage."""
    records = []
    for i, pid in enumerate(IDS):
        stages = stages_of(i)
        records.append({"id": pid, "difficulty": 1, "stages": stages, "correct": stages[-1]["correct"],
                        "final_length": stages[-1]["length"], "total_tokens": sum(s["length"] for s in stages),
                        "evaluation": evaluation, "model": "toy", "seed": seed, "benchmark": benchmark})
    path = tmp_path / f"seed{seed}" / f"{evaluation}.{benchmark}.jsonl"
    io.write_jsonl(path, records)
    return str(path)


@pytest.fixture
def files(tmp_path):
    draft = lambda i: i < 10                         # noqa: E731  the base's draft: right on p0-p9
    return [
        # zero-shot: wrong on p10-p19, of which p15-p19 hit the cap; p0-p3 retracted a try first
        write(tmp_path, "zero_shot", lambda i: [stage(draft(i), length=i, truncated=i >= 15,
                                                      completion="1|2 no;2|2" if i < 4 else "2|2")]),
        # after a right draft: right on 9 of 10; after a wrong one: right on 2 of 10
        write(tmp_path, "untrained_cascade", lambda i: [stage(draft(i)), stage(i < 9 or 10 <= i < 12)]),
        # the independent second proposal: right on p0-p6 and p10-p13; the final stage on p0-p11
        write(tmp_path, "moa", lambda i: [stage(draft(i)), stage(i < 7 or 10 <= i < 14), stage(i < 12)]),
        write(tmp_path, "agon_drafter_a", lambda i: [stage(i < 8)]),
        write(tmp_path, "agon_drafter_b", lambda i: [stage(4 <= i < 12)]),
        # the trained reference: right on p0-p7, wrong on p8-p19, of which p16-p19 hit the cap
        write(tmp_path, "grpo", lambda i: [stage(i < 8, truncated=i >= 16)]),
    ]


def rows_by_quantity(rows):
    return {r["quantity"]: r for r in rows}


def test_each_section_counts_what_it_says(files, tmp_path):
    rows = preconditions.build_rows(SPEC, preconditions.tables.index_records(files), [])
    by = rows_by_quantity(rows)
    right = by["after reading a right draft's summary"]
    assert (right["k"], right["n"], right["meets"]) == (9, 10, "yes")          # 0.90 >= 0.90
    assert (by["alone on the problems whose draft was right"]["k"], by["alone on the problems whose draft was right"]["n"]) == (7, 10)
    wrong = by["after reading a wrong draft's summary"]
    alone_wrong = by["alone on the problems whose draft was wrong"]
    assert (wrong["k"], alone_wrong["k"]) == (2, 4)
    assert wrong["meets"] == "yes" and wrong["target"].startswith(">= 0.200")   # half of 4/10
    mix = by["moa (untrained mixture)"]
    assert (mix["k"], mix["n"], mix["meets"]) == (12, 20, "yes")                # 12 > 10 zero-shot
    solo = by["zero_shot (the base alone)"]
    assert (solo["k"], solo["target"], solo["meets"]) == (10, "0.30 - 0.55", "yes")
    # step 0: zero-shot's sample against the mixture's second proposal
    assert by["step 0 (two base samples): disagreement (one right, one wrong)"]["k"] == 3 + 4
    # trained: A right on p0-p7, B on p4-p11: disagree on 8, both wrong on 8 of 12 with a failure
    assert by["agon, trained: disagreement (one right, one wrong)"]["k"] == 8
    overlap = by["agon, trained: failure overlap (both wrong / either wrong)"]
    assert (overlap["k"], overlap["n"]) == (8, 16)
    cut = by["base's wrong completions cut by the token cap"]
    assert (cut["k"], cut["n"]) == (5, 10)
    trained_cut = by["grpo's wrong completions cut by the token cap"]
    assert (trained_cut["k"], trained_cut["n"]) == (4, 12)
    paid = by["base's correct completions that retracted first ('no')"]
    assert (paid["k"], paid["n"], paid["meets"]) == (4, 10, "yes")   # Clopper-Pearson low end of 4/10 > 0
    quartiles = [r for r in rows if "length group" in r["quantity"]]
    assert [r["n"] for r in quartiles] == [5, 5, 5, 5] and quartiles[0]["k"] == 5 and quartiles[-1]["k"] == 0
    assert not any(r["quantity"].startswith("grpo, two seeds") for r in rows)  # one seed: no reference row


def test_two_seeds_add_the_reference_and_training_lengths_come_from_metrics(files, tmp_path):
    spec = {**SPEC, "seeds": [0, 1], "pairs": {}}
    more = [write(tmp_path, e, (lambda i: [stage(i < 10)]), seed=1)
            for e in ("zero_shot", "agon_drafter_a", "agon_drafter_b")]
    more.append(write(tmp_path, "untrained_cascade", lambda i: [stage(i < 10), stage(i < 10)], seed=1))
    more.append(write(tmp_path, "moa", lambda i: [stage(1), stage(i < 5), stage(1)], seed=1))
    grpo = [write(tmp_path, "grpo", lambda i: [stage(i < 5)], seed=1)]  # seed 0's is the fixture's: right on p0-p7
    cell = tmp_path / "train" / "toy" / "grpo" / "seed0"
    io.write_jsonl(cell / "metrics.jsonl", [{"step": s, "streams": {"policy:A": {"mean_length": 10.0 + s}}}
                                            for s in range(20)])
    io.write_json(cell / "adapters" / "train_summary.json", {"steps": 20})
    rows = preconditions.build_rows(spec, preconditions.tables.index_records(files + more + grpo),
                                    [str(cell / "metrics.jsonl")])
    by = rows_by_quantity(rows)
    assert by["grpo, two seeds (reference): disagreement (one right, one wrong)"]["k"] == 3  # p5-p7
    length = by["grpo policy:A: mean length, first 2 -> last 2 step(s)"]
    assert (length["first"], length["last"], length["value"]) == (10.5, 28.5, 18.0)
    assert length["k"] == length["n"] == "" and length["ci_low"] is None  # no counts, no interval


def test_the_habit_section_counts_completions_by_pattern(files, tmp_path):
    # zero-shot retried (" no;") on p0-p3, all right; without it right on p4-p9 of p4-p19.
    # the trained reference, rewritten over the fixture's file, shows it on p0-p4
    spec = {**SPEC, "habit": {"name": "retry", "pattern": r" no;"}}
    write(tmp_path, "grpo", lambda i: [stage(1, completion="1|2 no;2|2" if i < 5 else "")])
    by = rows_by_quantity(preconditions.build_rows(spec, preconditions.tables.index_records(files), []))
    shows = by["base completions that show the habit (retry)"]
    assert (shows["k"], shows["n"]) == (4, 20)
    with_it, without = by["base accuracy with the habit (retry)"], by["base accuracy without the habit (retry)"]
    assert (with_it["k"], with_it["n"], without["k"], without["n"]) == (4, 4, 6, 16)
    assert with_it["target"] == "> 0.375 (without it)" and with_it["meets"] == "yes"  # 4/4's low end 0.398
    trained = by["grpo completions that show the habit (retry), trained"]
    assert (trained["k"], trained["n"]) == (5, 20)
    trained_right = by["grpo accuracy with the habit (retry), trained"]
    assert (trained_right["k"], trained_right["n"]) == (5, 5)
    assert shows["target"] == "" and shows["meets"] == ""  # no min_share: no target on the share
    for min_share, meets in ((0.2, "yes"), (0.25, "no")):  # the base shows it in 4/20 = 0.2
        habit = {**spec["habit"], "min_share": min_share}
        by_share = rows_by_quantity(preconditions.build_rows(
            {**spec, "habit": habit}, preconditions.tables.index_records(files), []))
        row = by_share["base completions that show the habit (retry)"]
        assert (row["target"], row["meets"]) == (f">= {min_share:.3f}", meets)
    spec["habit"]["pattern"] = "2\\|2$"  # every completion: nothing to compare with, no verdict
    by = rows_by_quantity(preconditions.build_rows(spec, preconditions.tables.index_records(files), []))
    assert by["base accuracy with the habit (retry)"]["meets"] == ""


def test_the_table_files_are_written(files, tmp_path):
    out = tmp_path / "tables" / "table0"
    preconditions.write_preconditions(SPEC, files, [], out)
    md = Path(str(out) + ".md").read_text()
    assert "after reading a right draft's summary" in md and "Targets met: 5 of 5." in md
    assert Path(str(out) + ".tex").read_text().count("\\\\") > 10
    import csv

    assert len(list(csv.DictReader(open(str(out) + ".csv")))) == len(preconditions.build_rows(
        SPEC, preconditions.tables.index_records(files), []))


def test_a_record_without_its_second_stage_is_an_error_naming_it(files, tmp_path):
    files[1] = write(tmp_path, "untrained_cascade", lambda i: [stage(1)])
    with pytest.raises(ValueError, match="record 'p0' of 'untrained_cascade' has 1 stage"):
        preconditions.build_rows(SPEC, preconditions.tables.index_records(files), [])


@pytest.mark.parametrize("key, value, message", [
    ("cascade", "zero_shot", "tables.table0_preconditions.cascade: 'zero_shot' must be an untrained cascade"),
    ("mixture", "nope", "tables.table0_preconditions.mixture: unknown evaluation 'nope'"),
    ("pairs", {"agon": ["agon_drafter_a", "coop_drafter_b"]}, "both evaluations must come from one method"),
    ("reference", "agon_ab", "tables.table0_preconditions.reference: 'agon_ab' must be a trained single-pass"),
    ("reading_gate", "nope", "tables.table0_preconditions.reading_gate: unknown method 'nope'"),
    ("reading_cascades", ["grpo"], "tables.table0_preconditions.reading_cascades: 'grpo' must be a cascade evaluation"),
    ("transfer", "nowhere", "tables.table0_preconditions.transfer: unknown benchmark 'nowhere'"),
    ("targets", {"solo": [0.5, 0.2]}, "tables.table0_preconditions.targets.solo: its low end 0.5 is above its high end"),
    ("targets", {"sol": [0.2, 0.5]}, "tables.table0_preconditions.targets.sol: unknown target"),
])
def test_a_wrong_role_in_table_0_is_a_config_error_naming_the_key(key, value, message):
    from agon import config as cfg

    config = cfg.load(Path(__file__).resolve().parents[1] / "config" / "config.yaml")
    config["tables"]["table0_preconditions"][key] = value
    with pytest.raises(cfg.ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        cfg.validate(config, "config.yaml")


def test_an_unknown_contrast_row_is_a_config_error():
    from agon import config as cfg

    config = cfg.load(Path(__file__).resolve().parents[1] / "config" / "config.yaml")
    config["tables"]["table9_contrasts"]["contrasts"].append(["agon", "gpro"])
    with pytest.raises(cfg.ConfigError, match="table9_contrasts.contrasts: unknown evaluation or pick 'gpro'"):
        cfg.validate(config, "config.yaml")


def test_no_retraction_in_any_right_completion_does_not_meet(files, tmp_path):
    spec = {**SPEC, "retraction": " never"}
    by = rows_by_quantity(preconditions.build_rows(spec, preconditions.tables.index_records(files), []))
    paid = by["base's correct completions that retracted first ('never')"]
    assert (paid["k"], paid["n"], paid["meets"]) == (0, 10, "no")
    assert not any("retracted" in q for q in rows_by_quantity(preconditions.build_rows(
        {k: v for k, v in SPEC.items() if k != "retraction"}, preconditions.tables.index_records(files), [])))


def test_a_stage_without_its_completion_is_an_error_naming_the_record(files, tmp_path):
    records = io.read_jsonl(files[0])
    del records[3]["stages"][0]["completion"]
    io.write_jsonl(files[0], records)
    with pytest.raises(ValueError, match=r"'p3' of 'zero_shot'.*\['completion'\]"):
        preconditions.build_rows(SPEC, preconditions.tables.index_records(files), [])


def test_a_habit_pattern_that_does_not_compile_is_a_config_error_naming_the_key():
    from agon import config as cfg

    config = cfg.load(Path(__file__).resolve().parents[1] / "config" / "config.yaml")
    config["tables"]["table0_preconditions"]["habit"] = {"name": "bisection", "pattern": " no[+-;"}
    with pytest.raises(cfg.ConfigError, match=r"table0_preconditions\.habit\.pattern.*regex"):
        cfg.validate(config, "config.yaml")


def _learning_cell(tmp_path, steps, method="grpo", model="toy"):
    cell = tmp_path / "train" / model / method / "seed0"
    io.write_jsonl(cell / "metrics.jsonl", steps)
    io.write_json(cell / "adapters" / "train_summary.json", {"steps": len(steps)})
    return str(cell / "metrics.jsonl")


def test_the_learning_section_compares_each_streams_first_quarter_with_its_last(tmp_path):
    """Section 7 on metrics whose quarters are known: a policy whose pass rate climbs keeps its
    numbers but cannot resolve a rise over quarters of 4 steps (a longer run's verdict: the test
    below), a challenger whose reward and conversion rate fall does not meet 'does not fall', and a
    stream seen on every other step (rotated roles) is read on its own steps only, in windows
    widened from a quarter (2 of its values) to a half (4)."""
    steps = []
    for s in range(16):  # quarters of 4 steps
        noise = 0.01 * (s % 2)
        streams = {"policy:A": {"reward": 1.0 + 0.05 * s + noise, "pass_rate": 0.30 + 0.02 * s + noise}}
        if s % 2 == 0:
            streams["challenger:B"] = {"reward": 2.0 - 0.1 * s + noise, "pass_rate": 0.5,
                                       "conversion_rate": 0.4 - 0.02 * s + noise}
        steps.append({"step": s, "streams": streams})
    rows = {r["quantity"]: r for r in preconditions.learning_rows([_learning_cell(tmp_path, steps)])}
    rises = rows["grpo policy:A: training pass rate, first -> last 4 steps"]
    assert rises["first"] == pytest.approx(0.335) and rises["last"] == pytest.approx(0.575)  # steps 0-3, 12-15
    assert rises["k"] == rises["n"] == ""
    assert rises["value"] == pytest.approx(0.24) and rises["ci_low"] > 0 and rises["meets"] == ""
    assert rises["target"].startswith("cannot resolve a rise: 4 and 4 step values")
    widened = " (widened: a quarter held too few of its values)"
    falls = rows[f"grpo challenger:B: training reward, first -> last 8 steps{widened}"]
    assert falls["first"] == pytest.approx(2.0 - 0.1 * 3)  # its steps 0, 2, 4 and 6 only
    assert falls["ci_high"] < 0 and falls["meets"] == "no" and falls["target"] == preconditions.HOLDS
    assert rows[f"grpo challenger:B: training conversion rate, first -> last 8 steps{widened}"]["meets"] == "no"
    flat = rows[f"grpo challenger:B: training pass rate, first -> last 8 steps{widened}"]
    assert flat["target"] == "" and flat["meets"] == "" and flat["ci_low"] is None  # no spread: no interval
    display = preconditions.display(list(rows.values()))
    assert ["0.335 -> 0.575", "+0.240"] == display[[r for r in rows].index(rises["quantity"])][4:6]


def test_a_run_too_short_for_a_verdict_says_so_in_its_rows(tmp_path):
    """6 steps: a half holds 3 values, fewer than a verdict needs. The rows keep their means, give no
    interval and no verdict, say why, and the summary counts them apart from the targets."""
    steps = [{"step": s, "streams": {"policy:A": {"reward": 0.1 * s, "pass_rate": 0.2 + 0.01 * s}}} for s in range(6)]
    rows = preconditions.learning_rows([_learning_cell(tmp_path, steps, model="toy_code")])
    assert [r["model"] for r in rows] == ["toy_code", "toy_code"]
    reward = rows[0]
    assert reward["quantity"] == "grpo policy:A: training reward, first -> last 3 steps (widened: a quarter held too " \
                                 "few of its values)"
    assert reward["first"] == pytest.approx(0.1) and reward["last"] == pytest.approx(0.4)
    assert reward["value"] == pytest.approx(0.3) and reward["ci_low"] is None and reward["meets"] == ""
    assert reward["target"] == ("cannot resolve: 3 and 3 step values in its first and last 3 steps (a verdict "
                                "needs 4 each)")
    (line,) = [x for x in preconditions.summary_lines({"benchmark": "heldout"}, rows) if x.startswith("RL learned")]
    assert line == "RL learned (section 7): targets met: 0 of 0; 2 row(s) too short to resolve, no verdict."


def test_length_groups_keep_equal_lengths_together():
    # 438 of 800 at the 96-token cap, 10 at 55 straddling the first quartile's cut: the cap is one
    # group, not split by problem id across quartiles 2-4, the 55s one (cut at their nearer end),
    # and no length is in two groups
    lengths = [40] * 195 + [55] * 10 + [70] * 157 + [96] * 438
    records = [{"id": f"p{i:03d}", "final_length": n} for i, n in enumerate(lengths)]
    groups = preconditions.length_groups(records)
    assert [len(g) for g in groups] == [195, 167, 438]   # the 55s start the second
    assert sum(map(len, groups)) == len(records)
    spans = [{r["final_length"] for r in g} for g in groups]
    assert all(not (a & b) for i, a in enumerate(spans) for b in spans[i + 1:])
    distinct = [{"id": f"q{i}", "final_length": i} for i in range(10)]
    assert [len(g) for g in preconditions.length_groups(distinct)] == [2, 3, 2, 3]
    assert preconditions.length_groups([]) == []


def test_a_pass_rate_rise_needs_windows_long_enough_to_resolve_one(tmp_path):
    """16 steps (the code model's): quarters of 4 values give reward its 'does not fall' verdict,
    but a rise of the size a long run shows cannot be told from noise there: the pass-rate row
    keeps its numbers and interval, has no verdict, and says why; 48 steps (12 a quarter) get one."""
    def steps(n):
        return [{"step": s, "streams": {"policy:A": {"reward": 1.0 + 0.01 * (s % 3),
                                                     "pass_rate": 0.3 + 0.01 * s + 0.02 * (s % 2)}}}
                for s in range(n)]
    short = {r["quantity"].split(", first")[0]: r for r in
             preconditions.learning_rows([_learning_cell(tmp_path / "short", steps(16), model="toy_code")])}
    rise = short["grpo policy:A: training pass rate"]
    assert rise["target"] == ("cannot resolve a rise: 4 and 4 step values in its first and last 4 steps (a rise "
                              "needs 12 each)")
    assert rise["meets"] == "" and rise["ci_low"] is not None and rise["value"] == pytest.approx(0.12)
    assert short["grpo policy:A: training reward"]["meets"] == "yes"
    long = {r["quantity"].split(", first")[0]: r for r in
            preconditions.learning_rows([_learning_cell(tmp_path / "long", steps(48), model="toy")])}
    assert long["grpo policy:A: training pass rate"]["target"] == preconditions.RISES
    assert long["grpo policy:A: training pass rate"]["meets"] == "yes"


TARGETS = {"solo": [0.25, 0.45], "after_right": [0.55, 0.80], "after_wrong_ratio": [0.4, 0.9],
           "mixture_gain": [0.05, 0.15], "cascade_gain": [0.0, 0.12], "failure_overlap": [0.55, 1.0],
           "checkable_wrong": [0.5, 1.0], "verifying_reads": [0.125, 0.5], "transfer_solo": [0.4, 0.7]}
READING = {"verify": r"^<think>\d+\+\d+=\d+\?", "checkable": r"^\d+\+\d+=\d+(,\d+\+\d+=\d+)*$"}


def test_range_targets_reading_rows_transfer_and_reading_after_training(files, tmp_path):
    """The world's untrained targets as ranges, the reading rows from completions, the transfer set's
    zero-shot and section 8's cascades after right / wrong drafts beside searching twice."""
    def draft(i):  # right on p0-p9; wrong drafts p10-p15 state steps, p16-p19 were cut (no summary)
        text = "<think>1+2=3</think>1+2=3<answer>3</answer>" if i < 16 else "<think>1+2="
        return stage(i < 10, completion=text)

    def read(i):  # after a right draft right on p0-p6; after a wrong one on p10-p11; p0-p4 check the steps
        return stage(i < 7 or 10 <= i < 12, completion="<think>1+2=3?ok" if i < 5 else "<think>3")
    cascade = write(tmp_path, "untrained_cascade", lambda i: [draft(i), read(i)])
    trained = [write(tmp_path, "agon_ab", lambda i: [stage(i < 12), stage(i < 11 or i == 15)], benchmark=b)
               for b in ("heldout", "transfer")]
    transfer = write(tmp_path, "zero_shot", lambda i: [stage(i < 11)], benchmark="transfer")
    trained.append(write(tmp_path, "untrained_cascade", lambda i: [draft(i), read(i)], benchmark="transfer"))
    spec = {**SPEC, "targets": TARGETS, "reading": READING, "transfer": "transfer",
            "reading_cascades": ["untrained_cascade", "agon_ab"]}
    assert ("agon_ab", "transfer") in preconditions.needs(spec) and ("zero_shot", "transfer") in preconditions.needs(spec)
    rows = preconditions.build_rows(spec, preconditions.tables.index_records(
        [f for f in files if "untrained_cascade" not in f] + [cascade, transfer] + trained), [])
    by = rows_by_quantity(rows)
    right = by["after reading a right draft's summary"]
    assert (right["k"], right["n"], right["target"], right["meets"]) == (7, 10, "0.55 - 0.80", "yes")
    wrong = by["after reading a wrong draft's summary"]   # 2/10 against the independent 4/10: 0.5x
    assert (wrong["k"], wrong["meets"]) == (2, "yes") and "0.160 - 0.360" in wrong["target"]
    checkable = by["wrong drafts whose summary states steps to check"]
    assert (checkable["k"], checkable["n"], checkable["meets"]) == (6, 10, "yes")
    verify = by["reads that check the rival's steps"]
    assert (verify["k"], verify["n"], verify["meets"]) == (5, 20, "yes")
    cascade_row = by["untrained_cascade (untrained cascade)"]   # 9/20 against zero-shot's 10/20
    assert cascade_row["meets"] == "no" and "gain -0.050" in cascade_row["target"]
    mixture = by["moa (untrained mixture)"]   # 12/20: +0.10
    assert mixture["meets"] == "yes"
    solo = by["zero_shot (the base alone)"]   # 0.50, above 0.45
    assert (solo["target"], solo["meets"]) == ("0.25 - 0.45", "no")
    assert by["zero_shot on transfer (the base alone, transfer)"]["k"] == 11
    overlap = by["step 0 (two base samples): failure overlap (both wrong / either wrong)"]
    assert overlap["target"].startswith(">= 0.55, interval above independence") and overlap["meets"] == "no"
    eight = [r for r in rows if r["section"] == "8 reading after training"]
    assert [r["section"] for r in rows[-len(eight):]] == ["8 reading after training"] * 12  # printed last
    after = by["agon_ab on transfer: after a wrong draft"]
    assert (after["k"], after["n"]) == (1, 8)   # p15 of p12-p19
    final = [r for r in eight if r["quantity"].startswith("agon_ab on heldout: final")][0]
    assert "0.600 gives 0.840" in final["quantity"] and final["k"] == 12


def test_the_reading_gate_needs_the_gate_method_s_challenger_to_read_better(tmp_path):
    """Section 7: in the `reading_gate` method, the challenger's conversion rate and its share of
    reads that check the rival's steps must rise; elsewhere they need only not fall."""
    files = []
    for method in ("self_refine", "coop"):
        cell = tmp_path / "train" / "toy" / method / "seed0"
        io.write_jsonl(cell / "metrics.jsonl", [
            {"step": s, "streams": {"challenger:A": {"reward": 1.0, "conversion_rate": 0.2 + 0.01 * s + 0.02 * (s % 2),
                                                     "verifying_share": 0.3 - 0.001 * s + 0.02 * (s % 2)}}}
            for s in range(48)])
        io.write_json(cell / "adapters" / "train_summary.json", {"steps": 48})
        files.append(str(cell / "metrics.jsonl"))
    rows = preconditions.learning_rows(files, gate="self_refine")
    gate = [r for r in rows if r["quantity"].startswith("self_refine") and "check the rival" in r["quantity"]]
    assert gate and gate[0]["target"] == preconditions.RISES and gate[0]["meets"] == "no"   # it fell
    conversion = [r for r in rows if r["quantity"].startswith("self_refine") and "conversion" in r["quantity"]]
    assert conversion[0]["target"] == preconditions.RISES and conversion[0]["meets"] == "yes"
    coop = [r for r in rows if r["quantity"].startswith("coop") and "check the rival" in r["quantity"]]
    assert coop[0]["target"] == ""


def test_a_challenger_that_reads_no_draft_has_no_conversion_target_but_keeps_its_numbers(tmp_path):
    """The shared and hidden rivals' challengers answer the plain prompt: their conversion rate is a
    pass rate on the rival's failures, which narrow as the rival learns. The same falling metrics
    miss 'does not fall' in a cell whose challenger reads the draft, and have no target in a blind
    one; the reward's target stays. The config names the blind methods by their exchange."""
    files = []
    for method in ("hidden_rival", "agon"):
        cell = tmp_path / "train" / "toy" / method / "seed0"
        io.write_jsonl(cell / "metrics.jsonl", [
            {"step": s, "streams": {"challenger:B": {"reward": 1.0 + 0.01 * (s % 2),
                                                     "conversion_rate": 0.5 - 0.005 * s + 0.02 * (s % 2)}}}
            for s in range(48)])
        io.write_json(cell / "adapters" / "train_summary.json", {"steps": 48})
        files.append(str(cell / "metrics.jsonl"))
    rows = preconditions.learning_rows(files, blind=["hidden_rival"])
    conversion = {r["quantity"].split()[0]: r for r in rows if "conversion" in r["quantity"]}
    assert conversion["agon"]["target"] == preconditions.HOLDS and conversion["agon"]["meets"] == "no"
    blind = conversion["hidden_rival"]
    assert blind["target"] == preconditions.NO_DRAFT and blind["meets"] == ""
    assert blind["value"] == conversion["agon"]["value"] and blind["ci_high"] < 0   # the numbers stay
    reward = [r for r in rows if r["quantity"].startswith("hidden_rival") and "reward" in r["quantity"]]
    assert reward[0]["target"] == preconditions.HOLDS
    from agon.config import load as load_config
    from agon.plan import needs

    config = load_config(Path(__file__).resolve().parents[1] / "config" / "config.yaml")
    assert needs.blind_challengers(config) == ["hidden_rival", "shared_rival"]


def test_a_gain_on_the_edge_of_its_range_meets_it():
    """20 more right of 400 is a gain of exactly +0.05, though 168/400 - 148/400 is 0.04999... in floats."""
    def records(right):
        return [{"id": f"p{i}", "correct": int(i < right)} for i in range(400)]
    names = {"solo": "zero_shot", "cascade": "untrained_cascade", "mixture": "moa"}
    rows = preconditions.protocol_rows("toy", 0, records(148), records(148), records(168), names,
                                       {"mixture_gain": [0.05, 0.15], "cascade_gain": [0.01, 0.12]})
    assert 168 / 400 - 148 / 400 < 0.05
    assert [r["meets"] for r in rows] == ["yes", "no", "yes"]   # the solo 0.37; no cascade gain; +0.05
