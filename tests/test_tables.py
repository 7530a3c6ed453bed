"""Tables from a small fixed set of per-problem records: exact values, picks, paper columns."""

from pathlib import Path

import pytest

from agon import io
from agon.evaluate.stats import clopper_pearson
from agon.report import tables

ROOT = Path(__file__).resolve().parents[1]


def _records(evaluation, benchmark, correct, seed=0, lengths=None):
    lengths = lengths or [10] * len(correct)
    return [{"id": f"p{i}", "evaluation": evaluation, "model": "toy", "seed": seed, "benchmark": benchmark,
             "correct": c, "final_length": n, "total_tokens": 2 * n, "stages": []}
            for i, (c, n) in enumerate(zip(correct, lengths))]


@pytest.fixture
def files(tmp_path):
    data = {
        # validation prefers B->A; held-out prefers A->B: a validation pick must not peek at held-out
        ("agon_ab", "validation"): [1, 0, 0, 0],
        ("agon_ba", "validation"): [1, 1, 1, 0],
        ("agon_ab", "heldout"): [1, 1, 1, 1, 1, 0, 0, 0],
        ("agon_ba", "heldout"): [1, 0, 0, 0, 0, 0, 0, 0],
        ("grpo", "heldout"): [1, 1, 0, 0, 0, 0, 0, 0],
    }
    paths = []
    for (evaluation, bench), correct in data.items():
        path = tmp_path / f"{evaluation}.{bench}.jsonl"
        io.write_jsonl(path, _records(evaluation, bench, correct, lengths=list(range(1, len(correct) + 1))))
        paths.append(str(path))
    return paths


SPEC = {"title": "T", "benchmark": "heldout", "models": ["toy"], "rows": ["grpo", "agon"], "seeds": [0],
        "picks": {"agon": ["agon_ab", "agon_ba"]}, "baseline": "grpo",
        "paper": {"table": "table3_main", "benchmark": "deepmath_hard"}, "paper_models": {"toy": "qwen3-0.6b"}}


def test_rows_exact_and_pick_uses_validation(files, tmp_path):
    rows = tables.write_table(SPEC, files, tmp_path / "t", ROOT / "config" / "reported.yaml")
    by = {r["method"]: r for r in rows}
    assert list(by) == ["grpo", "agon", "agon (post hoc)"]
    assert (by["grpo"]["k"], by["grpo"]["n"], by["grpo"]["pass_at_1"]) == (2, 8, 0.25)
    assert by["grpo"]["mean_length"] == 4.5 and by["grpo"]["mean_total_tokens"] == 9.0
    # validation picks B->A (3/4 > 1/4) although A->B is far better on held-out
    assert by["agon"]["selected"] == "agon_ba on validation" and by["agon"]["k"] == 1
    assert by["agon (post hoc)"]["selected"] == "agon_ab on heldout" and by["agon (post hoc)"]["k"] == 5
    # exact McNemar vs grpo: agon_ba right only on p0 (grpo right on p0, p1) -> 1 discordant pair
    assert by["agon"]["p_vs_baseline"] == 1.0
    assert by["agon"]["paper_pass_at_1"] == 61.0 and by["agon"]["paper_in_ci"] is False
    assert by["grpo"]["paper_pass_at_1"] == 30.0 and by["grpo"]["paper_in_ci"] is True
    csv_text = (tmp_path / "t.csv").read_text().splitlines()
    assert csv_text[0].startswith("method,model,benchmark,seed,k,n,pass_at_1,ci_low,ci_high")
    md = (tmp_path / "t.md").read_text()
    assert "| agon | toy | 0 | 1/8 | 12.5 |" in md and "agon_ba on validation" in md


def test_seed_mean_row(tmp_path):
    paths = []
    for seed, correct in ((0, [1, 1, 0, 0]), (1, [1, 1, 1, 0])):
        path = tmp_path / f"g{seed}.jsonl"
        io.write_jsonl(path, _records("grpo", "heldout", correct, seed=seed))
        paths.append(str(path))
    spec = {**SPEC, "rows": ["grpo"], "seeds": [0, 1], "picks": {}, "baseline": None, "paper": None}
    rows = tables.write_table(spec, paths, tmp_path / "s")
    assert [r["seed"] for r in rows] == [0, 1, "mean"]
    mean = rows[-1]
    assert mean["pass_at_1"] == pytest.approx(0.625) and mean["seed_std"] == pytest.approx(0.1767767, abs=1e-6)


def test_missing_records_are_named(files, tmp_path):
    spec = {**SPEC, "rows": ["grpo", "coop"]}
    with pytest.raises(ValueError, match="no records for model 'toy', evaluation 'coop'"):
        tables.write_table(spec, files, tmp_path / "x")
    assert not (tmp_path / "x.csv").exists()  # nothing half-written


# --- several benchmarks, absent models, tex, seed means, Table 1, Figure 7b picks -----

REPORTED = ROOT / "config" / "reported.yaml"


def _write(tmp_path, data, seed=0):
    """{(evaluation, benchmark): correct list} -> records files (lengths 1..n)."""
    paths = []
    for (evaluation, bench), correct in data.items():
        path = tmp_path / f"{evaluation}.{bench}.s{seed}.jsonl"
        io.write_jsonl(path, _records(evaluation, bench, correct, seed=seed,
                                      lengths=list(range(1, len(correct) + 1))))
        paths.append(str(path))
    return paths


TRANSFER = {
    ("zero_shot", "transfer_easy"): [1, 1, 0, 0, 0, 0, 0, 0, 0, 0],
    ("grpo", "transfer_easy"): [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
    ("agon_ab", "transfer_easy"): [1, 1, 1, 1, 1, 1, 1, 1, 1, 0],
    ("agon_ba", "transfer_easy"): [0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    ("agon_ab", "validation"): [0, 0, 0, 1],
    ("agon_ba", "validation"): [1, 1, 0, 0],   # validation picks B->A: the worse one on transfer
}
TRANSFER_SPEC = {"title": "Table 2 - transfer", "benchmarks": ["transfer_easy"], "models": ["toy"],
                 "rows": ["zero_shot", "grpo", "agon"], "seeds": [0], "baseline": "grpo",
                 "picks": {"agon": ["agon_ab", "agon_ba"]}, "paper_models": {"toy": "qwen3-0.6b"},
                 "paper": {"table": "table2_transfer", "benchmark": ["gsm8k", "math500"]}}


def test_table2_one_benchmark_beside_two_of_the_paper(tmp_path):
    rows = tables.write_table(TRANSFER_SPEC, _write(tmp_path, TRANSFER), tmp_path / "t2", REPORTED)
    by = {r["method"]: r for r in rows}
    assert list(by) == ["zero_shot", "grpo", "agon", "agon (post hoc)"]
    assert [(by[m]["k"], by[m]["n"]) for m in by] == [(2, 10), (5, 10), (1, 10), (9, 10)]
    assert by["agon"]["selected"] == "agon_ba on validation"
    assert by["agon (post hoc)"]["selected"] == "agon_ab on transfer_easy"
    assert by["zero_shot"]["diff_vs_baseline"] == pytest.approx(-0.3)
    assert by["agon"]["diff_vs_baseline"] == pytest.approx(-0.4)
    # the paper's GSM8K and MATH-500 numbers beside ours, each with "inside our interval?"
    assert (by["grpo"]["paper_gsm8k_pass_at_1"], by["grpo"]["paper_math500_pass_at_1"]) == (68.0, 52.0)
    low, high = clopper_pearson(5, 10)
    assert by["grpo"]["paper_math500_in_ci"] is (100 * low <= 52 <= 100 * high) is True
    assert by["grpo"]["paper_gsm8k_in_ci"] is True and by["agon"]["paper_gsm8k_in_ci"] is False
    header = (tmp_path / "t2.csv").read_text().splitlines()[0].split(",")
    assert header[:9] == ["method", "model", "benchmark", "seed", "k", "n", "pass_at_1", "ci_low", "ci_high"]
    assert "paper_gsm8k_pass_at_1" in header and "paper_math500_in_ci" in header
    assert "paper_pass_at_1" not in header
    md = (tmp_path / "t2.md").read_text()
    assert "Benchmark: transfer_easy (paper: gsm8k, math500)." in md
    assert "paper pass@1 % (gsm8k)" in md and "paper pass@1 % (math500)" in md
    assert "| grpo | toy | 0 | 5/10 | 50.0 | [18.7, 81.3] |" in md


def test_several_of_our_benchmarks_one_block_each(tmp_path):
    data = {**TRANSFER, ("zero_shot", "heldout"): [1, 0, 0, 0], ("grpo", "heldout"): [1, 1, 0, 0],
            ("agon_ab", "heldout"): [1, 1, 1, 0], ("agon_ba", "heldout"): [1, 1, 1, 1]}
    spec = {**TRANSFER_SPEC, "benchmarks": ["heldout", "transfer_easy"],
            "paper": {"table": ["table2_transfer", "table3_main"],
                      "benchmark": {"heldout": "deepmath_hard", "transfer_easy": "gsm8k"}}}
    rows = tables.write_table(spec, _write(tmp_path, data), tmp_path / "t", REPORTED)
    assert [(r["benchmark"], r["method"], r["k"]) for r in rows] == [
        ("heldout", "zero_shot", 1), ("heldout", "grpo", 2), ("heldout", "agon", 4),
        ("heldout", "agon (post hoc)", 4),
        ("transfer_easy", "zero_shot", 2), ("transfer_easy", "grpo", 5), ("transfer_easy", "agon", 1),
        ("transfer_easy", "agon (post hoc)", 9)]
    # one validation pick for both benchmarks; McNemar and differences within a benchmark
    assert rows[2]["selected"] == rows[6]["selected"] == "agon_ba on validation"
    assert rows[2]["diff_vs_baseline"] == pytest.approx(0.5) and rows[6]["diff_vs_baseline"] == pytest.approx(-0.4)
    # a mapping gives one plain paper column group, with the paper benchmark named per row
    assert [(r["paper_benchmark"], r["paper_pass_at_1"]) for r in rows[:3]] == [
        ("deepmath_hard", 23.0), ("deepmath_hard", 30.0), ("deepmath_hard", 61.0)]
    assert rows[5]["paper_benchmark"] == "gsm8k" and rows[5]["paper_pass_at_1"] == 68.0
    md = (tmp_path / "t.md").read_text()
    assert "| method | model | benchmark | seed |" in md
    tex = (tmp_path / "t.tex").read_text()
    assert tex.count(r"\midrule") == 2          # header rule + one between the two benchmark blocks


def test_absent_models_are_shown_not_invented(tmp_path):
    data = {("zero_shot", "heldout"): [1, 0, 0, 0], ("grpo", "heldout"): [1, 1, 0, 0],
            ("agon_ab", "heldout"): [1, 1, 1, 0], ("agon_ba", "heldout"): [0, 0, 0, 0],
            ("agon_ab", "validation"): [1, 0], ("agon_ba", "validation"): [0, 0]}
    spec = {"title": "Table 5 - scaling", "benchmark": "heldout", "models": ["toy", "qwen3-4b", "toy_code"],
            "absent_models": ["qwen3-4b", "toy_code"], "rows": ["zero_shot", "grpo", "agon"], "seeds": [0],
            "baseline": "grpo", "picks": {"agon": ["agon_ab", "agon_ba"]}, "paper_models": {"toy": "qwen3-0.6b"},
            "paper": {"table": "table5_scaling", "benchmark": "deepmath_hard"}}
    rows = tables.write_table(spec, _write(tmp_path, data), tmp_path / "t5", REPORTED)
    toy = [r for r in rows if r["model"] == "toy"]
    assert [(r["method"], r["k"], r["n"]) for r in toy] == [("zero_shot", 1, 4), ("grpo", 2, 4), ("agon", 3, 4),
                                                           ("agon (post hoc)", 3, 4)]
    assert toy[2]["diff_vs_baseline"] == pytest.approx(0.25)
    assert toy[2]["paper_delta_vs_grpo"] == 31.0 and toy[2]["paper_pass_at_1"] == 61.0
    absent = [r for r in rows if r["model"] != "toy"]
    assert [(r["model"], r["method"]) for r in absent] == [
        ("qwen3-4b", "zero_shot"), ("qwen3-4b", "grpo"), ("qwen3-4b", "agon"),
        ("toy_code", "zero_shot"), ("toy_code", "grpo"), ("toy_code", "agon")]
    for r in absent:
        assert r["status"].startswith("absent at this scale") and "k" not in r and "pass_at_1" not in r
        assert "diff_vs_baseline" not in r and "paper_in_ci" not in r
    # the paper's Qwen3-4B numbers (it is one of the paper's models); none for an unknown model
    assert [r["paper_pass_at_1"] for r in absent[:3]] == [52.0, 59.0, 71.0]
    assert absent[2]["paper_delta_vs_grpo"] == 12.0
    assert all("paper_pass_at_1" not in r for r in absent[3:])
    lines = (tmp_path / "t5.csv").read_text().splitlines()
    assert lines[5].startswith("zero_shot,qwen3-4b,heldout,,,,,,,") and "absent at this scale" in lines[5]
    md = (tmp_path / "t5.md").read_text()
    assert "| agon | qwen3-4b |  |  | absent at this scale |" in md and "71 |" in md
    assert "no model of this run stands for qwen3-4b, toy_code" in md
    assert r"absent at this scale" in (tmp_path / "t5.tex").read_text()


def test_seed_mean_row_keeps_seeds_and_gives_a_t_interval(tmp_path):
    paths = []
    for seed, k in ((0, 4), (1, 5), (2, 6)):
        paths += _write(tmp_path, {("grpo", "heldout"): [1] * k + [0] * (8 - k)}, seed=seed)
    spec = {**SPEC, "rows": ["grpo"], "seeds": [0, 1, 2], "picks": {}, "baseline": None}
    rows = tables.write_table(spec, paths, tmp_path / "s", REPORTED)
    assert [(r["seed"], r["k"], r["n"]) for r in rows] == [(0, 4, 8), (1, 5, 8), (2, 6, 8), ("mean", 15, 24)]
    mean = rows[-1]
    assert mean["pass_at_1"] == pytest.approx(0.625) and mean["seed_std"] == pytest.approx(0.125)
    assert (mean["seed_min"], mean["seed_max"]) == (0.5, 0.75)
    half = 4.302652729911275 * 0.125 / 3 ** 0.5          # t_{0.975, 2} * sd / sqrt(3)
    assert (mean["ci_low"], mean["ci_high"]) == (pytest.approx(0.625 - half), pytest.approx(0.625 + half))
    assert mean["paper_in_ci"] is False                  # paper 30 outside [31.4, 93.6]
    md = (tmp_path / "s.md").read_text()
    assert "| grpo | toy | mean | 15/24 | 62.5 | [31.4, 93.6] |" in md and "12.5 / 50.0-75.0" in md


def test_tex_escaping():
    assert tables.tex_escape(r"a_b & 50% #1 {x} ~y^2 \ $z$ <p|q>") == (
        r"a\_b \& 50\% \#1 \{x\} \textasciitilde{}y\textasciicircum{}2 \textbackslash{} \$z\$ "
        r"\textless{}p\textbar{}q\textgreater{}")
    assert tables.tex_escape("Δ vs grpo\nnext") == r"$\Delta$ vs grpo next"


def test_tex_table_is_booktabs_and_escaped(files, tmp_path):
    tables.write_table({**SPEC, "title": "T3 & 50% of_it"}, files, tmp_path / "table3_main", REPORTED)
    tex = (tmp_path / "table3_main.tex").read_text().splitlines()
    assert r"\begin{table}[htbp]" in tex and r"\caption{T3 \& 50\% of\_it}" in tex
    assert r"\label{tab:table3_main}" in tex             # a label is not typeset: no escapes
    start, end = tex.index(r"\toprule"), tex.index(r"\bottomrule")
    assert tex[start - 1].startswith(r"\begin{tabular}{lllrrrrrl") and tex[end + 1] == r"\end{tabular}"
    assert tex[start + 2] == r"\midrule"
    header, body = tex[start + 1], tex[start + 3:end]
    assert header.startswith(r"method & model & seed & k/n & pass@1 \% & 95\% CI &")
    assert len(body) == 3 and all(line.endswith(r" \\") for line in body)
    assert body[1].startswith(r"agon & toy & 0 & 1/8 & 12.5 & [") and r"agon\_ba on validation" in body[1]
    assert all(line.count(" & ") == header.count(" & ") for line in body)
    # every special character outside commands is escaped
    for line in body:
        assert "_" not in line.replace(r"\_", "") and "%" not in line.replace(r"\%", "")


def test_pick_reads_only_the_selection_split(files):
    index = tables.index_records([f for f in files if "validation" in f])   # no held-out at all
    assert tables.pick(index, "toy", ["agon_ab", "agon_ba"], 0, "validation") == "agon_ba"
    with pytest.raises(ValueError, match="no records .* benchmark 'heldout'"):
        tables.pick(index, "toy", ["agon_ab", "agon_ba"], 0, "heldout")


# --- Table 1 -------------------------------------------------------------------------

def test_table1_design_from_the_config(tmp_path):
    from agon.config import load as load_config
    from agon.report import design

    config = load_config(ROOT / "config" / "config.yaml")
    spec = {"title": "Table 1 - design", "kind": "design", "methods": config["methods"],
            "evaluations": config["evaluations"]}
    rows = design.write_design(spec, tmp_path / "table1_design", REPORTED)
    cells = design.matrix(rows)
    assert cells[0] == ["no competition", "grpo", "coop"]
    assert cells[1][0] == "competition"
    assert cells[1][1] == ("shared_rival (group-constant shared rival, inert by construction); "
                           "hidden_rival (per-rollout hidden rival; not in the paper)")
    assert cells[1][2] == ("agon; margin (margin reward); fixed_roles (fixed roles); "
                           "length_tiebreak (length tie-break gamma=0.5)")
    by = {r["name"]: r for r in rows}
    assert by["self_refine"]["role"] == "training control"
    assert by["moa"]["role"] == "inference control" and "untrained mixture of agents" in by["moa"]["qualifiers"]
    assert by["grpo_self_cascade"]["role"] == "inference control"
    assert by["agon_drafter_a"]["role"] == "inference control" and by["zero_shot"]["role"] == "reference"
    assert "agon_ab" not in by and "coop_ba" not in by       # a pair's deployment is not a control
    assert by["hidden_rival"]["in_paper"] == "no" and by["agon"]["in_paper"] == "yes"
    assert by["shared_rival"]["paper_cell"].startswith("shared rival (inert by construction)")
    md = (tmp_path / "table1_design.md").read_text()
    assert "|  | no exchange | exchange |" in md and "| no competition | grpo | coop |" in md
    tex = (tmp_path / "table1_design.tex").read_text()
    assert r"no competition & grpo & coop \\" in tex and r"hidden\_rival" in tex
    assert r"\multicolumn{3}{p{0.95\linewidth}}{training control: self\_refine" in tex
    assert (tmp_path / "table1_design.csv").read_text().startswith("name,type,role,competition,exchange,")


def test_table1_empty_cell_and_other_knobs():
    from agon.report import design

    methods = {"g": {"kind": "grpo", "group_size": 4},
               "c": {"kind": "pair", "group_size": 4, "mode": "coop", "exchange": "hidden", "roles": "rotate"}}
    rows = design.design_rows(methods, {}, None)
    assert design.matrix(rows) == [
        ["no competition", "g; c (per-rollout hidden rival)", "(empty: no configured method)"],
        ["competition", "(empty: no configured method)", "(empty: no configured method)"]]


def test_unisolated_code_is_said_in_the_notes():
    """sandbox.isolation: rlimits (programs ran without isolation) is named in a code table's notes."""
    from agon.report.tables import notes

    spec = {"rows": ["zero_shot"], "models": ["toy_code"], "benchmark": "code_heldout"}
    assert not any("WITHOUT" in n for n in notes(spec, []))
    assert any("WITHOUT the sandbox's isolation" in n and "rlimits" in n
               for n in notes({**spec, "unisolated_code": True}, []))


def test_a_cascade_row_shows_the_challengers_length_after_a_correct_draft(tmp_path):
    """Sec. 5.5's claim, beside the row's mean: the final stage's mean length on problems whose
    draft was right, and how many; pooled over seeds on a mean row; absent for one pass."""
    def cascade(seed, drafts, lengths):
        return [{"id": f"p{i}", "evaluation": "agon_ab", "model": "toy", "seed": seed, "benchmark": "heldout",
                 "correct": True, "final_length": n, "total_tokens": 2 * n,
                 "stages": [{"correct": d, "length": 1}, {"correct": True, "length": n}]}
                for i, (d, n) in enumerate(zip(drafts, lengths))]

    paths = []
    for seed, drafts, lengths in ((0, [1, 0, 1, 0], [2, 10, 4, 12]), (1, [1, 0, 0, 0], [6, 8, 8, 8])):
        path = tmp_path / f"agon_ab.{seed}.heldout.jsonl"
        io.write_jsonl(path, cascade(seed, drafts, lengths))
        paths.append(str(path))
    single = tmp_path / "grpo.heldout.jsonl"
    io.write_jsonl(single, [{**r, "stages": [{"correct": True, "length": 3}]} for r in _records("grpo", "heldout", [1, 0])])
    spec = {"title": "T", "benchmark": "heldout", "models": ["toy"], "rows": ["agon_ab"], "seeds": [0, 1],
            "rival_length": True}
    rows = tables.write_table(spec, paths, tmp_path / "t")
    by = {r["seed"]: r for r in rows}
    assert (by[0]["n_rival_correct"], by[0]["mean_length_rival_correct"], by[0]["mean_length"]) == (2, 3.0, 7.0)
    assert (by[1]["n_rival_correct"], by[1]["mean_length_rival_correct"]) == (1, 6.0)
    assert (by["mean"]["n_rival_correct"], by["mean"]["mean_length_rival_correct"]) == (3, 4.0)  # (2+4+6)/3
    md = (tmp_path / "t.md").read_text()
    assert "length after a correct draft (n)" in md and "| 3.0 (2) |" in md and "Sec. 5.5" in md
    assert "n_rival_correct" not in tables.summarize(io.read_jsonl(single))
    # without the key the column stays in the csv only
    tables.write_table({**spec, "rival_length": False}, paths, tmp_path / "u")
    assert "length after a correct draft" not in (tmp_path / "u.md").read_text()
    assert "mean_length_rival_correct" in (tmp_path / "u.csv").read_text().splitlines()[0]
