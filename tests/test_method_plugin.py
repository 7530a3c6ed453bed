"""A training method of one's own, in one place: a MethodKind in a module outside the package,
named in the config, runs through the pipeline and lands in Table 1 and a results table
without a change to any file of src/agon (docs/extending.md)."""

import csv
import os
import textwrap

import pytest

from test_workflow import snakemake

PLUGIN = '''
"""A GRPO whose reward adds `bonus` for a well-formed completion (a test's kind of method)."""
from agon.rl import methods


def step(ctx, problems):
    adapter = ctx.adapters[0]
    expanded, group_ids = methods.expand(problems, ctx.method["group_size"])
    completions = ctx.sample(adapter, [ctx.plain_prompt(p) for p in expanded], tag="policy")
    grades = [ctx.grade(p, c) for p, c in zip(expanded, completions)]
    rewards = [float(c) + ctx.method["bonus"] * phi for c, phi in grades]
    return [methods.Stream(adapter, "policy", completions, rewards, group_ids, [c for c, _ in grades])]


BONUS_GRPO = methods.MethodKind(
    step=step, adapters=lambda m: ("A",), deploys="single",
    classify=lambda m: ("2x2 cell", "no competition", "no exchange", [f"format bonus {m['bonus']}"]),
    knobs={"bonus": {"type": "number", "minimum": 0}}, required=("bonus",))
'''

CONFIG = """
extends: test.yaml
run: plugin
methods:
  bonus_grpo: {kind: "agon_test_bonus_kind:BONUS_GRPO", group_size: 4, bonus: 0.5}
evaluations:
  bonus_grpo: {method: bonus_grpo, protocol: single, policies: [A]}
tables:
  table_plugin:
    title: "A method of one's own beside GRPO"
    benchmark: heldout
    baseline: grpo
    models: [toy]
    rows: [zero_shot, grpo, bonus_grpo]
"""


@pytest.mark.workflow
def test_a_method_kind_outside_the_package_runs_through_the_matrix_and_table_1(tmp_path):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "agon_test_bonus_kind.py").write_text(textwrap.dedent(PLUGIN))
    config = tmp_path / "plugin.yaml"
    config.write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "plugins"), os.environ.get("PYTHONPATH", "")])}
    snakemake(tmp_path, "results/plugin/tables/table_plugin.csv", "results/plugin/tables/table1_design.csv",
              "--configfile", str(config), env=env)
    results = tmp_path / "results" / "plugin"
    metrics = (results / "train" / "toy" / "bonus_grpo" / "seed0" / "metrics.jsonl").read_text().splitlines()
    assert len(metrics) == 2  # test.yaml: 8 training problems, 4 a step
    rows = {r["method"]: r for r in csv.DictReader(open(results / "tables" / "table_plugin.csv"))}
    assert int(rows["bonus_grpo"]["n"]) == 40 and rows["bonus_grpo"]["pass_at_1"] != ""
    design = {r["name"]: r for r in csv.DictReader(open(results / "tables" / "table1_design.csv"))}
    assert design["bonus_grpo"]["role"] == "2x2 cell" and design["bonus_grpo"]["qualifiers"] == "format bonus 0.5"
    assert design["bonus_grpo"]["competition"] == "no competition" and design["bonus_grpo"]["exchange"] == "no exchange"
    assert "bonus_grpo" in (results / "tables" / "table1_design.md").read_text()
