"""The default's world (config/config.yaml, the facts world) end to end at tiny sizes: its base
trained from its recipe, every cell Table 0 reads, and the rows only these worlds' spec asks for
(the reading rows, the transfer set, the range targets, the reading gate, reading after
training). About 2-3 minutes on 2 cores; nothing else runs these configs' own Table 0 through the
real pipeline. The carries world differs only in its solver (carries.Solver, unit-tested in
tests/test_worlds.py)."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow

SMALL = """extends: {root}/config/config.yaml
run: small
datasets:                     # one or two additions: a tiny base closes the format at 64 tokens
  toy_carries: {{seed: 7, heldout: 16, validation: 8, train: 4,
                options: {{pool_size: 80, terms: [2, 3], weights: [1, 1, 1, 0]}}}}
  toy_carries_transfer: {{heldout: 8, options: {{pool_size: 20, terms: [2, 3]}}}}
models:
  replace: true
  toy:
    kind: toy
    prompt_style: toy
    train_data: toy_carries
    attn_implementation: eager
    paper_model: qwen3-0.6b
    base: {{source: train, world: facts, seed: 0, steps: 600, batch_size: 16, lr: 0.02, threads: 1,
           level_weights: [1, 1, 1, 1], attempt_prob: 0.5, attempt_wrong_prob: 0.5, two_attempts_prob: 0.3,
           loss_weighting: token, slip_prob: 0.2, check_slip_prob: 0.3, no_carry_sums: [10, 11], copy_prob: 0.45,
           verify_prob: 0.25,
           arch: {{hidden_size: 32, num_layers: 2, num_heads: 2, num_kv_heads: 1, intermediate_size: 64,
                  max_positions: 256}}}}
train: {{problems_per_step: 4, epochs: 1, checkpoint_every: 1, snapshot_every: 1, lora: {{rank: 4, alpha: 8}}}}
sampling:
  train: {{temperature: 1.0, top_p: 1.0, max_new_tokens: 64}}
  eval: {{max_new_tokens: 64}}
"""


def test_the_facts_world_s_table_0_runs_end_to_end(tmp_path):
    config = tmp_path / "small.yaml"
    config.write_text(SMALL.format(root=ROOT))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path), "--cores", "2",
           "results/small/tables/table0_preconditions.csv", "--configfile", str(config)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    results = tmp_path / "results" / "small"
    rows = {r["quantity"]: r for r in csv.DictReader(open(results / "tables" / "table0_preconditions.csv"))}
    for quantity in ("wrong drafts whose summary states steps to check", "reads that check the rival's steps",
                     "zero_shot on transfer_easy (the base alone, transfer)"):
        assert rows[quantity]["target"] and rows[quantity]["meets"] in ("yes", "no"), quantity
    overlap = rows["step 0 (two base samples): failure overlap (both wrong / either wrong)"]
    assert "above independence" in overlap["target"]
    # section 8: every reading cascade on held-out and on the transfer set, after right / wrong drafts
    for cascade in ("untrained_cascade", "grpo_self_cascade", "self_refine", "agon_ab", "coop_ba"):
        for bench in ("heldout", "transfer_easy"):
            right = rows[f"{cascade} on {bench}: after a right draft"]
            wrong = rows[f"{cascade} on {bench}: after a wrong draft"]
            assert int(right["n"]) + int(wrong["n"]) == (16 if bench == "heldout" else 8)
    # the reading gate: self-refine's challenger logs its checking reads each step, and Table 0 reads them
    metrics = [json.loads(line) for line in open(results / "train" / "toy" / "self_refine" / "seed0" / "metrics.jsonl")]
    assert all("verifying_share" in m["streams"]["challenger:A"] for m in metrics)
    gate = [q for q in rows if q.startswith("self_refine challenger:A") and "check the rival" in q]
    assert gate, "section 7 has no row for the gate's checking reads"
