"""scripts/learning_probe.py: the lift (a step's training pass rate minus the base's on the same problems) and its --set settings."""

import importlib.util
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("learning_probe",
                                              Path(__file__).resolve().parents[1] / "scripts" / "learning_probe.py")
probe = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(probe)


def test_the_lift_reads_each_step_against_its_own_problems():
    order = [{"id": f"p{i}"} for i in range(12)]           # 6 steps of 2 problems
    base = {f"p{i}": (0.2 if i % 2 else 0.6) for i in range(12)}  # each step's problems average 0.4
    records = [{"step": s, "streams": {"policy:A": {"pass_rate": 0.4 + 0.1 * s}}} for s in range(6)]
    lifts = probe.lift_by_part(records, order, 2, base, "policy:A", parts=3)
    assert lifts == pytest.approx([0.05, 0.25, 0.45])
    # a stream seen on every other step (rotated roles) is read on its own steps; a part without one is None
    rotated = [{"step": s, "streams": {"drafter:A": {"pass_rate": 0.4}} if s % 2 == 0 else {}} for s in range(6)]
    assert probe.lift_by_part(rotated, order, 2, base, "drafter:A", parts=6) == [
        pytest.approx(0.0), None, pytest.approx(0.0), None, pytest.approx(0.0), None]


def test_settings_reach_train_sampling_and_the_method():
    sections = {"train": {"epochs": 1}, "sampling": {}, "method": {"kind": "grpo", "group_size": 16}}
    probe.apply_settings(["train.epochs=4", "sampling.temperature=1.0", "method.group_size=8"], sections)
    assert sections == {"train": {"epochs": 4}, "sampling": {"temperature": 1.0},
                        "method": {"kind": "grpo", "group_size": 8}}
    for bad in ("epochs=4", "model.x=1", "train.epochs"):
        with pytest.raises(SystemExit, match="expected train.KEY=VALUE"):
            probe.apply_settings([bad], sections)
