"""scripts/lift_power.py: a run's lift and the power of one seed to see it, from its records."""

import importlib.util
import json
from pathlib import Path

import pytest

from agon.evaluate.stats import mcnemar_power

SPEC = importlib.util.spec_from_file_location("lift_power", Path(__file__).resolve().parents[1] / "scripts" / "lift_power.py")
lift_power = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(lift_power)


def _write(path: Path, correct: list[int]) -> None:
    """Records as an evaluation job writes them: eval/<model>/<cell>/seed<s>/<evaluation>.<benchmark>.jsonl."""
    evaluation, benchmark = path.name.removesuffix(".jsonl").split(".")
    key = {"model": path.parents[2].name, "evaluation": evaluation, "seed": int(path.parent.name[4:]),
           "benchmark": benchmark}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({**key, "id": f"p{i}", "correct": c}) + "\n" for i, c in enumerate(correct)))


def test_pools_the_seeds_discordant_problems(tmp_path, capsys):
    # seed 0: grpo alone right on 3, zero-shot alone on 1; seed 1: 2 and 2 (10 problems each)
    _write(tmp_path / "eval/toy/grpo/seed0/grpo.heldout.jsonl", [1, 1, 1, 0, 1, 0, 0, 0, 0, 0])
    _write(tmp_path / "eval/toy/untrained/seed0/zero_shot.heldout.jsonl", [0, 0, 0, 1, 1, 0, 0, 0, 0, 0])
    _write(tmp_path / "eval/toy/grpo/seed1/grpo.heldout.jsonl", [1, 1, 0, 0, 0, 0, 0, 0, 0, 1])
    _write(tmp_path / "eval/toy/untrained/seed1/zero_shot.heldout.jsonl", [0, 0, 1, 1, 0, 0, 0, 0, 0, 1])
    assert lift_power.main([str(tmp_path), "--n", "50"]) == 0
    out = capsys.readouterr().out
    assert "seed 0: 10 problems, grpo right alone on 3, zero_shot alone on 1: +20.0 pp" in out
    assert "seed 1: 10 problems, grpo right alone on 2, zero_shot alone on 2: +0.0 pp" in out
    assert "pooled: discordant 8/20 (0.400), grpo's share 0.625, lift +10.0 pp" in out
    assert f"n = 50: a seed finds grpo better at p < 0.05 with probability {mcnemar_power(50, 0.4, 0.625):.2f}" in out


def test_a_run_without_both_evaluations_says_so(tmp_path, capsys):
    _write(tmp_path / "eval/toy/grpo/seed0/grpo.heldout.jsonl", [1, 0])
    assert lift_power.main([str(tmp_path)]) == 2
    assert "no seed of" in capsys.readouterr().err


def test_mismatched_problems_name_the_ids(tmp_path):
    _write(tmp_path / "eval/toy/grpo/seed0/grpo.heldout.jsonl", [1, 0, 1])
    _write(tmp_path / "eval/toy/untrained/seed0/zero_shot.heldout.jsonl", [1, 0])
    with pytest.raises(ValueError, match="p2"):
        lift_power.main([str(tmp_path)])
