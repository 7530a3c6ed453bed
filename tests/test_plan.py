"""The workflow's planner (src/agon/plan/) without snakemake: the results layout, what every table
kind reads in the default and the paper's config, the cells and metrics those reads imply, and
the job specs."""

import json
from pathlib import Path

import pytest

from agon.config import load as load_config
from agon.plan import UNTRAINED, Cell, Layout, Plan
from agon.plan import needs as N

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"results", "design", "preconditions", "contrasts", "claims"}


@pytest.fixture(scope="module", params=["config.yaml", "paper.yaml"])
def plan(request):
    return Plan(load_config(ROOT / "config" / request.param), ROOT)


def test_the_layout_builds_every_path_from_named_parts_and_serves_as_the_rules_patterns():
    layout = Layout("results/toy")
    assert layout.records("toy", "agon", "agon_ab", 0, "heldout") == "results/toy/eval/toy/agon/seed0/agon_ab.heldout.jsonl"
    assert layout.metrics("toy", "grpo", 2) == "results/toy/train/toy/grpo/seed2/metrics.jsonl"
    assert layout.adapters("{model}", "{method}", "{seed}") == "results/toy/train/{model}/{method}/seed{seed}/adapters"
    assert layout.eval_dir(*Cell("toy", UNTRAINED, 1)) == "results/toy/eval/toy/untrained/seed1"
    assert not Cell("toy", UNTRAINED, 0).trained and Cell("toy", "agon", 0).trained


def test_every_table_kind_reads_configured_evaluations_on_configured_benchmarks(plan):
    config = plan.config
    kinds = {N.table_kind(config, t) for t in config["tables"]}
    assert kinds == KINDS, f"a table kind without a planner test: {kinds - KINDS}"
    for table in config["tables"]:
        needs = N.table_needs(config, table)
        if N.table_kind(config, table) == "design" or not N.table_models(config, table):
            assert needs == [], table
            continue
        assert needs and len(set(needs)) == len(needs), table
        for evaluation, benchmark in needs:
            assert evaluation in config["evaluations"] and benchmark in config["benchmarks"], (table, evaluation)
        # every file a table reads is written by a cell the run plans
        cells = set(plan.eval_dirs(plan.all_cells()))
        assert all(str(Path(f).parent) in cells for f in plan.records_of(table)), table


def test_a_pick_reads_each_candidate_on_the_benchmark_and_on_validation_only_there():
    config = load_config(ROOT / "config" / "config.yaml")
    needs = N.table_needs(config, "table3_main")
    for candidate in config["picks"]["agon"]:
        assert (candidate, "heldout") in needs and (candidate, "validation") in needs
    assert ("zero_shot", "validation") not in needs          # a plain row is never read on validation
    claims = N.table_needs(config, "claims")
    assert ("agon_ab", "transfer_easy") in claims and ("agon_ab", "validation") in claims
    assert ("grpo", "transfer_easy") in claims and ("grpo", "validation") not in claims
    assert N.table_needs(config, "table1_design") == []
    assert set(N.table_needs(config, "table0_preconditions")) >= {("zero_shot", "heldout"),
                                                                   ("untrained_cascade", "heldout")}
    contrasts = N.table_needs(config, "table9_contrasts")
    assert ("coop_ba", "validation") in contrasts and ("untrained_cascade", "heldout") in contrasts


def test_the_table_spec_carries_the_picks_of_its_rows_contrasts_and_claims():
    plan = Plan(load_config(ROOT / "config" / "config.yaml"), ROOT)
    spec = json.loads(plan.table_spec("claims"))
    assert spec["picks"]["agon"] == plan.config["picks"]["agon"] and "grpo" not in spec["picks"]
    assert set(spec["splits"]) == {"heldout", "validation", "transfer_easy"}
    assert spec["absent_models"] == [] and spec["paper_models"] == {"toy": "qwen3-0.6b"}
    t5 = json.loads(plan.table_spec("table5_scaling"))
    assert "qwen3-4b" in t5["absent_models"]
    design = json.loads(plan.table_spec("table1_design"))
    assert design["method_order"] == list(plan.config["methods"])


def test_each_cell_evaluates_what_tables_and_figure_7b_read_of_it_in_config_order():
    config = load_config(ROOT / "config" / "config.yaml")
    agon = N.eval_needs(config, "toy", "agon")
    assert {N.cell_of(config, e) for e, _ in agon} == {"agon"}
    read = {n for t in config["tables"] if "toy" in config["tables"][t].get("models", [])
            for n in N.table_needs(config, t) if N.cell_of(config, n[0]) == "agon"}
    assert set(agon) == read | {n for n in N.figure_needs(config) if N.cell_of(config, n[0]) == "agon"}
    untrained = N.eval_needs(config, "toy", UNTRAINED)
    assert ("zero_shot", "heldout") in untrained and ("moa", "heldout") in untrained


def test_cells_metrics_and_trained_models_of_the_default():
    config = load_config(ROOT / "config" / "config.yaml")
    plan = Plan(config, ROOT)
    cells = plan.all_cells()
    assert Cell("toy", UNTRAINED, 0) in cells and Cell("toy_code", "agon", 0) in cells
    assert {c.cell for c in cells if c.model == "toy" and c.trained} == set(config["methods"])
    assert plan.trained_models() == ["toy", "toy_code"]
    metrics = plan.all_metrics()
    assert len(metrics) == sum(c.trained for c in cells) and metrics == sorted(metrics)
    assert plan.all_metrics("toy_code") == [m for m in metrics if "/train/toy_code/" in m]
    assert plan.table_metrics("table0_preconditions") == metrics  # section 7: the code model's cells too
    assert plan.table_metrics("table3_main") == []
    snapshots = plan.curve_snapshots()  # Figure 7b checks each curve against its cell's snapshots
    assert list(snapshots) == plan.curve_files()
    assert snapshots[plan.layout.curve("toy", "agon", 0)] == plan.layout.snapshots("toy", "agon", 0)
    assert plan.base_priority("toy") == 100 + sum(c.model == "toy" for c in cells)


def test_the_job_specs_name_their_inputs_and_outputs():
    config = load_config(ROOT / "config" / "config.yaml")
    plan = Plan(config, ROOT)
    train = json.loads(plan.train_spec("toy", "agon", 0))
    assert train["method"] == config["methods"]["agon"] and train["seed"] == 0
    assert train["base_path"] == "results/toy/models/toy/base" and train["sampling"] == config["sampling"]["train"]
    code = json.loads(plan.train_spec("toy_code", "grpo", 1))
    assert code["train"]["problems_per_step"] == 4 and code["train"]["lr"] == config["models"]["toy_code"]["train"]["lr"]
    evaluation = json.loads(plan.eval_spec("toy", "agon", 0))
    assert evaluation["adapter_dir"] == plan.eval_inputs("toy", "agon", 0)["adapters"]
    assert evaluation["out_dir"] == "results/toy/eval/toy/agon/seed0" and evaluation["adapters"] == ["A", "B"]
    assert [tuple(n) for n in evaluation["needs"]] == N.eval_needs(config, "toy", "agon")
    untrained = plan.eval_inputs("toy", UNTRAINED, 0)
    assert "adapters" not in untrained and untrained["benchmark_heldout"] == "results/toy/data/toy_carries/heldout.jsonl"
    assert plan.eval_inputs("toy_code", "grpo", 0)["sandbox"] == "results/toy/sandbox.json"   # code is graded in the sandbox
    curve = json.loads(plan.curve_spec("toy", "agon", 0))
    assert curve["candidates"] == config["picks"]["agon"] and curve["snapshots"].endswith("/train/toy/agon/seed0/snapshots")
    assert plan.curve_records("toy", "grpo", 0) == ["results/toy/eval/toy/untrained/seed0/zero_shot.heldout.jsonl",
                                                   "results/toy/eval/toy/grpo/seed0/grpo.heldout.jsonl"]
    assert len(plan.curve_files()) == len(config["figures"]["fig7b"]["rows"]) * len(config["seeds"])


def test_a_missing_pinned_base_stops_the_plan_naming_the_key(tmp_path):
    config = load_config(ROOT / "config" / "config.yaml")
    config["models"]["toy"]["base"]["pinned_path"] = str(tmp_path / "nowhere")
    from agon.plan import PlanError

    with pytest.raises(PlanError, match="models.toy.base.pinned_path"):
        Plan(config, ROOT).base_inputs("toy")
