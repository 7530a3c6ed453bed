"""The paper's published numbers: the yaml parses, matches PAPER.md, and lookups never invent."""

from pathlib import Path

import pytest

from agon.evaluate.stats import clopper_pearson
from agon.report.reported import inside_interval, load_reported, lookup

PATH = Path(__file__).resolve().parents[1] / "config" / "reported.yaml"


@pytest.fixture(scope="module")
def rep():
    return load_reported(PATH)


def test_spot_checks_against_paper(rep):
    assert lookup(rep, "table3_main", "qwen3-0.6b", "deepmath_hard", "agon") == 61
    assert lookup(rep, "table3_main", "qwen3-0.6b", "deepmath_hard", "agon", "mean_length") == 3500
    assert lookup(rep, "table3_main", "qwen3-0.6b", "deepmath_hard", "zero_shot", "mean_length") == 6100
    assert lookup(rep, "table3_main", "qwen3-0.6b", "deepmath_hard", "agon_drafter_alone") == 46
    assert lookup(rep, "table5_scaling", "qwen3-4b", "deepmath_hard", "grpo") == 59
    assert lookup(rep, "table6_code", "qwen3-1.7b", "codecontests_easy", "agon") == 34
    assert lookup(rep, "table2_transfer", "qwen3-0.6b", "gsm8k", "agon") == 75
    assert lookup(rep, "table2_transfer", "qwen3-0.6b", "math500", "zero_shot") == 45
    assert lookup(rep, "table4_ci", "qwen3-0.6b", "deepmath_hard", "zero_shot", "ci_high") == 28.3
    assert lookup(rep, "table7_ablations", "qwen3-0.6b", "deepmath_hard", "margin") == 49
    assert lookup(rep, "table8_density", "qwen3-0.6b", "deepmath_hard", "length_tiebreak",
                  "mean_length") == 2600
    f = rep["facts"]["drafter_conversion"]
    assert (f["drafter_pass_at_1"], f["net_converted_pp"], f["drafter_failures_pp"]) == (46, 15, 54)
    assert f["drafter_pass_at_1"] + f["net_converted_pp"] == f["cascade_pass_at_1"] == 61


def test_absent_cells_are_none(rep):
    # Not published: never invented.
    assert lookup(rep, "table7_ablations", "qwen3-0.6b", "deepmath_hard", "hidden_rival") is None
    assert lookup(rep, "table2_transfer", "qwen3-0.6b", "gsm8k", "coop") is None
    assert lookup(rep, "table2_transfer", "qwen3-0.6b", "gsm8k", "agon", "mean_length") is None
    assert lookup(rep, "table3_main", "qwen3-0.6b", "deepmath_hard", "agon_drafter_alone",
                  "mean_length") is None
    assert lookup(rep, "table5_scaling", "qwen3-4b", "gsm8k", "agon") is None
    assert lookup(rep, "table6_code", "qwen3-0.6b", "codecontests_easy", "agon") is None


def test_typos_are_errors_not_none(rep):
    with pytest.raises(ValueError, match="unknown table"):
        lookup(rep, "table9", "qwen3-0.6b", "deepmath_hard", "agon")
    with pytest.raises(ValueError, match="unknown method"):
        lookup(rep, "table3_main", "qwen3-0.6b", "deepmath_hard", "Agon")
    with pytest.raises(ValueError, match="unknown model"):
        lookup(rep, "table3_main", "qwen3-06b", "deepmath_hard", "agon")


def _cells(rep):
    for table, spec in rep["tables"].items():
        for model, benches in spec["results"].items():
            for bench, methods in benches.items():
                for method, cell in methods.items():
                    yield table, model, bench, method, cell


def test_every_pass_at_1_is_a_percentage(rep):
    values = [c["pass_at_1"] for *_, c in _cells(rep) if "pass_at_1" in c]
    assert len(values) > 30
    assert all(0 <= v <= 100 for v in values)


def test_table5_deltas_and_shared_cells_agree(rep):
    for model in rep["keys"]["models"]:
        agon = lookup(rep, "table5_scaling", model, "deepmath_hard", "agon")
        grpo = lookup(rep, "table5_scaling", model, "deepmath_hard", "grpo")
        delta = lookup(rep, "table5_scaling", model, "deepmath_hard", "agon", "delta_vs_grpo")
        assert agon - grpo == delta
    # The same run appears in several tables with the same value.
    for table in ("table5_scaling", "table7_ablations", "table8_density"):
        assert lookup(rep, table, "qwen3-0.6b", "deepmath_hard", "agon") == 61
    for method in ("zero_shot", "grpo"):
        assert (lookup(rep, "table5_scaling", "qwen3-0.6b", "deepmath_hard", method)
                == lookup(rep, "table3_main", "qwen3-0.6b", "deepmath_hard", method))


def test_table4_cp_check_is_what_clopper_pearson_says(rep):
    spec = rep["tables"]["table4_ci"]
    n = spec["n"]
    cps = {k: tuple(round(100 * x, 1) for x in clopper_pearson(k, n)) for k in range(n + 1)}
    for method, cell in spec["results"]["qwen3-0.6b"]["deepmath_hard"].items():
        pub = (cell["ci_low"], cell["ci_high"])
        exact = [k for k, ci in cps.items() if ci == pub]
        nearest = min(cps, key=lambda k: max(abs(cps[k][0] - pub[0]), abs(cps[k][1] - pub[1])))
        check = spec["cp_check"][method]
        assert check["exact_k"] == (exact[0] if exact else None), method
        assert check["nearest_k"] == nearest and list(cps[nearest]) == check["nearest_cp"], method
        # Table 3's rounded pass@1 sits inside its own published interval.
        p = lookup(rep, "table3_main", "qwen3-0.6b", "deepmath_hard", method)
        assert inside_interval(p, *pub)
    assert {m for m, c in spec["cp_check"].items() if c["exact_k"]} == {"coop", "agon"}


def test_inside_interval():
    assert inside_interval(61.0, 55.2, 66.6) is True
    assert inside_interval(55.2, 55.2, 66.6) is True
    assert inside_interval(50.0, 55.2, 66.6) is False
    assert inside_interval(None, 55.2, 66.6) is None
    assert inside_interval(50.0, None, 66.6) is None


def test_load_rejects_bad_files(tmp_path):
    text = PATH.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("agon: {pass_at_1: 75}", "agon: {pass_at_1: 175}"))
    with pytest.raises(ValueError, match="outside"):
        load_reported(bad)
    bad.write_text(text.replace("agon: {pass_at_1: 75}", "agonn: {pass_at_1: 75}"))
    with pytest.raises(ValueError, match="unknown method 'agonn'"):
        load_reported(bad)
