"""The claims table (src/agon/report/claims.py): differences, intervals, tests and verdicts on
records whose counts are known by construction; the config's checks; the report opens with it."""

import statistics

import pytest
from scipy import stats as st

from agon import io
from agon.config import ConfigError, load as load_config, validate
from agon.evaluate.stats import mcnemar_exact, mean_interval, seed_mean_interval
from agon.report import claims, report, tables

N = 20
IDS = [f"p{i}" for i in range(N)]


def write(tmp_path, evaluation, seed, right, benchmark="heldout", length=lambda i: 10, draft=None):
    """Records of one evaluation: `right(i)` says whether problem i is solved, `length(i)` its final
    stage's length; with `draft(i)` a two-stage cascade whose draft was right or not."""
    records = []
    for i, pid in enumerate(IDS):
        stages = [{"correct": int(draft(i))}, {"correct": int(right(i))}] if draft else [{"correct": int(right(i))}]
        records.append({"id": pid, "difficulty": 1, "stages": stages, "correct": int(right(i)),
                        "final_length": length(i), "total_tokens": length(i), "evaluation": evaluation,
                        "model": "toy", "seed": seed, "benchmark": benchmark})
    path = tmp_path / f"s{seed}" / f"{evaluation}.{benchmark}.jsonl"
    io.write_jsonl(path, records)
    return str(path)


def spec(*items, seeds=(0,), picks=None):
    return {"title": "Claims", "kind": "claims", "benchmark": "heldout", "models": ["toy"], "seeds": list(seeds),
            "claims": list(items), "picks": picks or {}}


@pytest.mark.parametrize("expect, low, high, word", [
    ("greater", 0.01, 0.2, claims.HOLDS), ("greater", -0.2, -0.01, claims.REVERSED),
    ("greater", -0.01, 0.2, claims.UNRESOLVED), ("greater", 0.0, 0.2, claims.UNRESOLVED),
    ("less", -0.2, -0.01, claims.HOLDS), ("less", 0.01, 0.2, claims.REVERSED),
    ("at_most", -0.2, -0.01, claims.HOLDS), ("at_most", -0.2, 0.05, claims.UNRESOLVED),
    ("at_most", 0.01, 0.2, claims.REVERSED), ("greater", None, None, claims.UNRESOLVED)])
def test_the_verdict_reads_the_interval_only(expect, low, high, word):
    assert claims.verdict(expect, low, high) == word


def test_a_pass_claim_on_one_seed_is_the_paired_difference_with_its_interval_and_mcnemar(tmp_path):
    files = [write(tmp_path, "agon", 0, lambda i: i < 15), write(tmp_path, "coop", 0, lambda i: 3 <= i < 8)]
    (row,) = claims.build_rows(spec({"claim": "Agon beats coop", "a": "agon", "b": "coop", "expect": "greater"}),
                               tables.index_records(files))
    a, b = [int(i < 15) for i in range(N)], [int(3 <= i < 8) for i in range(N)]
    assert (row["a_value"], row["b_value"], row["diff"]) == pytest.approx((0.75, 0.25, 0.5))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(mean_interval([x - y for x, y in zip(a, b)]))
    assert row["p_value"] == pytest.approx(mcnemar_exact(a, b)["p_value"]) and row["n"] == N
    assert row["verdict"] == claims.HOLDS


def test_the_other_way_round_is_reversed_and_a_tie_is_not_resolved(tmp_path):
    files = [write(tmp_path, "moa", 0, lambda i: i < 15), write(tmp_path, "agon", 0, lambda i: i < 5),
             write(tmp_path, "grpo", 0, lambda i: i < 5)]
    rows = claims.build_rows(spec({"claim": "MoA below Agon", "a": "moa", "b": "agon", "expect": "less"},
                                  {"claim": "no better", "a": "grpo", "b": "agon", "expect": "at_most"}),
                             tables.index_records(files))
    assert [r["verdict"] for r in rows] == [claims.REVERSED, claims.UNRESOLVED]
    assert rows[1]["p_value"] == 1.0 and rows[1]["diff"] == 0


def test_a_side_at_100_or_0_percent_makes_a_pass_claim_untestable_not_reversed(tmp_path):
    files = [write(tmp_path, "agon", 0, lambda i: i < 15, benchmark="transfer"),
             write(tmp_path, "grpo", 0, lambda i: 1, benchmark="transfer"),
             write(tmp_path, "zero_shot", 0, lambda i: 0, benchmark="transfer")]
    rows = claims.build_rows(spec({"claim": "Agon transfers better", "a": "agon", "b": "grpo", "expect": "greater",
                                   "benchmark": "transfer"},
                                  {"claim": "Agon beats zero-shot", "a": "agon", "b": "zero_shot",
                                   "expect": "greater", "benchmark": "transfer"}),
                             tables.index_records(files))
    assert rows[0]["ci_high"] < 0 and rows[0]["verdict"] == claims.CEILING   # the interval alone says reversed
    assert rows[1]["ci_low"] > 0 and rows[1]["verdict"] == claims.FLOOR
    assert "2 untestable here" in claims.notes(spec(seeds=(0,)), rows)[0]


def test_a_length_claim_pairs_the_problems_and_uses_a_paired_t_test(tmp_path):
    la, lb = (lambda i: 30 + i % 3), (lambda i: 50 + 2 * (i % 5))
    files = [write(tmp_path, "agon", 0, lambda i: 1, length=la), write(tmp_path, "grpo", 0, lambda i: 0, length=lb)]
    (row,) = claims.build_rows(spec({"claim": "shorter", "measure": "length", "a": "agon", "b": "grpo",
                                     "expect": "less"}), tables.index_records(files))
    xs, ys = [la(i) for i in range(N)], [lb(i) for i in range(N)]
    assert row["diff"] == pytest.approx(statistics.fmean(xs) - statistics.fmean(ys))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(mean_interval([x - y for x, y in zip(xs, ys)]))
    assert row["p_value"] == pytest.approx(st.ttest_rel(xs, ys).pvalue) and row["verdict"] == claims.HOLDS


def test_the_rival_length_claim_compares_after_a_right_draft_with_after_a_wrong_one(tmp_path):
    # drafts right on the even problems; the challenger writes 20-22 tokens after them, 60-64 after the others
    files = [write(tmp_path, "agon_ab", 0, lambda i: 1, draft=lambda i: i % 2 == 0,
                   length=lambda i: 20 + i % 3 if i % 2 == 0 else 60 + i % 5)]
    (row,) = claims.build_rows(spec({"claim": "less after a right draft", "measure": "rival_length",
                                     "a": "agon_ab", "expect": "less"}), tables.index_records(files))
    right = [20 + i % 3 for i in range(0, N, 2)]
    wrong = [60 + i % 5 for i in range(1, N, 2)]
    assert (row["a_value"], row["b_value"]) == pytest.approx((statistics.fmean(right), statistics.fmean(wrong)))
    assert row["verdict"] == claims.HOLDS and row["b"] == "" and row["test"] == "Welch t"


def test_rival_length_refuses_a_single_pass_row(tmp_path):
    files = [write(tmp_path, "grpo", 0, lambda i: 1)]
    with pytest.raises(ValueError, match="not a two-stage cascade"):
        claims.build_rows(spec({"claim": "x", "measure": "rival_length", "a": "grpo", "expect": "less"}),
                          tables.index_records(files))


def test_several_seeds_use_the_seeds_interval_and_picks_are_chosen_on_validation(tmp_path):
    files = []
    for seed in (0, 1, 2):
        files.append(write(tmp_path, "grpo", seed, lambda i: i < 8))
        # held-out favours agon_ba every seed; validation picks agon_ab in seeds 0 and 1
        files.append(write(tmp_path, "agon_ab", seed, lambda i, s=seed: i < 9 + s))
        files.append(write(tmp_path, "agon_ba", seed, lambda i: i < 18))
        files.append(write(tmp_path, "agon_ab", seed, lambda i, s=seed: i < (12 if s < 2 else 2), "validation"))
        files.append(write(tmp_path, "agon_ba", seed, lambda i: i < 6, "validation"))
    (row,) = claims.build_rows(spec({"claim": "Agon beats GRPO", "a": "agon", "b": "grpo", "expect": "greater"},
                                    seeds=(0, 1, 2), picks={"agon": ["agon_ab", "agon_ba"]}),
                               tables.index_records(files))
    diffs = [1 / N, 2 / N, 10 / N]
    assert row["diff"] == pytest.approx(statistics.fmean(diffs))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(seed_mean_interval(diffs))
    assert row["selected"] == "agon -> agon_ab (seed 0); agon -> agon_ab (seed 1); agon -> agon_ba (seed 2)"
    assert row["n"] == 3 * N and row["verdict"] == claims.UNRESOLVED   # three seeds this far apart: wide


def test_records_of_different_problems_stop_the_table(tmp_path):
    files = [write(tmp_path, "agon", 0, lambda i: 1)]
    short = tmp_path / "coop.heldout.jsonl"
    io.write_jsonl(short, [{**r, "evaluation": "coop"} for r in io.read_jsonl(files[0])[:-1]])
    with pytest.raises(ValueError, match="missing from records_b"):
        claims.build_rows(spec({"claim": "x", "a": "agon", "b": "coop", "expect": "greater"}),
                          tables.index_records(files + [str(short)]))


def test_the_papers_numbers_come_from_reported_yaml_or_its_words():
    from pathlib import Path

    from agon.report.reported import load_reported

    reported = load_reported(Path(__file__).resolve().parents[1] / "config" / "reported.yaml")
    table3 = {"table": "table3_main", "benchmark": "deepmath_hard"}
    text = claims.paper_text({"a": "agon", "b": "coop", "paper": table3}, "qwen3-0.6b", reported)
    assert text == "61% vs 46% (+15 pp)"
    assert claims.paper_text({"a": "agon", "b": "grpo", "measure": "length", "paper": table3}, "qwen3-0.6b",
                             reported) == "3.5k vs 8.1k tok"
    transfer = {"table": "table2_transfer", "benchmark": ["gsm8k", "math500"]}
    assert claims.paper_text({"a": "agon", "b": "grpo", "paper": transfer}, "qwen3-0.6b", reported) == \
        "gsm8k 75% vs 68% (+7 pp); math500 64% vs 52% (+12 pp)"
    # a row the paper never published (the untrained cascade) leaves the cell blank, not invented
    assert claims.paper_text({"a": "agon", "b": "untrained_cascade", "paper": table3}, "qwen3-0.6b", reported) == "-"


def test_the_files_and_the_report_open_with_the_claims(tmp_path):
    files = [write(tmp_path, "agon", 0, lambda i: i < 15), write(tmp_path, "coop", 0, lambda i: i < 5)]
    s = spec({"claim": "Agon beats coop", "a": "agon", "b": "coop", "expect": "greater"})
    claims.write_claims(s, files, tmp_path / "claims")
    md = (tmp_path / "claims.md").read_text()
    assert md.splitlines()[2] == "Verdicts: 1 hold, 0 reversed, 0 not resolved at this sample size, of 1."
    assert "| Agon beats coop | toy | - | 75.0% vs 25.0% | +50.0 pp [" in md
    text = report.render_report(title="T", config={}, tables={"table3_main": "# Table 3\n", "claims": md},
                                figures={}, provenance=[], notes=[], headline=["claims"])
    assert text.index("<!-- table: claims -->") < text.index("## What ran") < text.index("<!-- table: table3_main")
    assert text.count("<!-- table: claims -->") == 1


@pytest.mark.parametrize("claim, message", [
    ({"claim": "x", "a": "agon", "b": "nope", "expect": "greater"}, "unknown evaluation or pick 'nope'"),
    ({"claim": "x", "a": "agon", "expect": "greater"}, "claims[0] ('x').b'"),
    ({"claim": "x", "a": "grpo", "measure": "rival_length", "expect": "less"}, "rival_length needs a cascade"),
    ({"claim": "x", "a": "agon", "b": "grpo", "expect": "greater", "benchmark": "nope"}, "unknown benchmark 'nope'"),
    ({"claim": "x", "a": "agon", "b": "grpo", "expect": "sideways"}, "sideways"),
    ({"claim": "x", "a": "agon", "measure": "rival_length", "expect": "less",
      "paper": {"table": "table3_main", "benchmark": "deepmath_hard"}}, "publishes no number for rival_length"),
])
def test_a_wrong_claim_is_refused_naming_it(claim, message):
    from pathlib import Path

    config = load_config(Path(__file__).resolve().parents[1] / "config" / "config.yaml")
    config["tables"]["claims"]["claims"] = [claim]
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]").replace(".", r"\.")):
        validate(config)


def test_a_claims_csv_reads_back_to_the_markdown_the_run_wrote(tmp_path):
    files = [write(tmp_path, "agon", 0, lambda i: i < 15, length=lambda i: 7 + i),
             write(tmp_path, "coop", 0, lambda i: i % 3 == 0, length=lambda i: 9)]
    s = spec({"claim": "Agon beats coop", "a": "agon", "b": "coop", "expect": "greater"},
             {"claim": "shorter", "measure": "length", "a": "agon", "b": "coop", "expect": "less"})
    claims.write_claims(s, files, tmp_path / "claims")
    lines = claims.markdown(claims.read_rows(tmp_path / "claims.csv"))
    md = (tmp_path / "claims.md").read_text().splitlines()
    assert md[md.index(lines[0]):md.index(lines[0]) + len(lines)] == lines
    with pytest.raises(ValueError, match="not a claims table"):
        claims.read_rows(files[0])


def test_the_readme_shows_the_defaults_expected_claims_as_its_csv_renders_them():
    """docs/expected/claims_toy.csv is the default's claims.csv from a reference run;
    scripts/expected_claims.py copies it and rewrites the README's table from it."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import expected_claims

    text = expected_claims.README.read_text()
    begin, end = expected_claims.readme_block(text)
    assert text.splitlines()[begin + 1:end] == expected_claims.rendered(), \
        "README's claims table differs from docs/expected/claims_toy.csv: run scripts/expected_claims.py"


def test_the_readmes_expected_claims_are_the_defaults_claims():
    """The reference run's claims are config.yaml's, in order, on its benchmarks, model and held-out
    size: a change of the default's claims leaves no stale table behind (rerun the default, then
    scripts/expected_claims.py)."""
    import csv
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    config = load_config(root / "config" / "config.yaml")
    table = config["tables"]["claims"]
    rows = list(csv.DictReader(open(root / "docs" / "expected" / "claims_toy.csv")))
    assert [(r["claim"], r["a"], r["b"], r["expect"]) for r in rows] == [
        (c["claim"], c["a"], c.get("b", ""), c["expect"]) for c in table["claims"]]
    assert {r["model"] for r in rows} == set(table["models"]) and {r["seeds"] for r in rows} == {"0"}
    assert [r["benchmark"] for r in rows] == [c.get("benchmark", table["benchmark"]) for c in table["claims"]]
    assert {int(r["n"]) for r in rows if r["benchmark"] == "heldout"} == {config["datasets"]["toy_carries"]["heldout"]}


def test_a_claims_table_selecting_on_an_unknown_benchmark_is_refused():
    from pathlib import Path

    config = load_config(Path(__file__).resolve().parents[1] / "config" / "config.yaml")
    config["tables"]["claims"]["select_on"] = "nope"
    with pytest.raises(ConfigError, match=r"tables\.claims\.select_on: unknown benchmark 'nope'"):
        validate(config)


def test_a_seed_whose_drafts_were_all_right_leaves_the_rival_length_without_an_interval(tmp_path):
    files = [write(tmp_path, "agon_ab", seed, lambda i: 1, draft=(lambda i: 1) if seed == 1 else (lambda i: i % 2),
                   length=lambda i: 20 + i % 3 if i % 2 else 60 + i % 5) for seed in (0, 1)]
    (row,) = claims.build_rows(spec({"claim": "less after a right draft", "measure": "rival_length",
                                     "a": "agon_ab", "expect": "less"}, seeds=(0, 1)), tables.index_records(files))
    assert row["ci_low"] is None and row["verdict"] == claims.UNRESOLVED
    assert row["b_value"] == pytest.approx(statistics.fmean(60 + i % 5 for i in range(0, N, 2)))  # seed 0's alone
    assert "nan" not in "".join(claims.markdown([row]))
