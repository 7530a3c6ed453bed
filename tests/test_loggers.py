"""Optional training loggers: TensorBoard event files read back equal metrics.jsonl; a missing
package or a failing logger never stops training."""

import sys

import pytest

from agon import io
from agon.rl import loggers as loggers_mod
from agon.rl.loggers import Loggers, scalars
from test_trainer import AGON, PROBLEMS, _trainer, tiny_base  # noqa: F401  (the fixture)


def test_a_trained_cells_tensorboard_events_equal_its_metrics(tiny_base, tmp_path):  # noqa: F811
    pytest.importorskip("tensorboard", reason="tensorboard is a test extra (pip install -e '.[test]')")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    trainer = _trainer(tiny_base, AGON)
    lg = Loggers({"tensorboard": True}, tmp_path / "loggers", "test/toy/agon/seed3",
                 {"config_hash": "abc", "seed": 3}, warn=lambda m: pytest.fail(m))
    assert list(lg.active) == ["tensorboard"]
    trainer.fit(PROBLEMS, tmp_path / "m.jsonl", tmp_path / "c.pt", log=lambda *_: None, loggers=lg)
    history = io.read_jsonl(tmp_path / "m.jsonl")
    events = EventAccumulator(str(tmp_path / "loggers" / "tensorboard"))
    events.Reload()
    expected = {}
    for record in history:
        for tag, value in scalars(record).items():
            expected.setdefault(tag, []).append((record["step"], value))
    assert set(events.Tags()["scalars"]) == set(expected)
    for tag, points in expected.items():
        got = [(e.step, e.value) for e in events.Scalars(tag)]
        assert [s for s, _ in got] == [s for s, _ in points], tag
        assert [v for _, v in got] == pytest.approx([v for _, v in points], rel=1e-6), tag
    # the metrics the training-curves panels read are logged per step
    assert any(t.startswith("grad_norm/") for t in expected)
    assert any(t.endswith("/update_kl") for t in expected) and any(t.endswith("/truncated_share") for t in expected)


def test_a_missing_logger_package_says_what_to_install_and_training_goes_on(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb -> ImportError
    said = []
    lg = Loggers({"wandb": {"mode": "offline"}, "typo": True}, "/nonexistent", "r", {}, warn=said.append)
    assert lg.active == {}
    assert any("loggers.wandb: off: wandb is not installed (pip install wandb" in m for m in said)
    assert any("loggers.typo: unknown logger" in m for m in said)
    lg.log({"step": 0, "lr": 1.0})  # nothing active: a no-op
    lg.close()


def test_a_logger_that_fails_mid_run_is_switched_off(monkeypatch):
    class Broken:
        def __init__(self, *a):
            pass

        def log(self, step, values):
            raise OSError("disk full")

        def close(self):
            pass

    monkeypatch.setattr(loggers_mod, "TensorBoard", Broken)
    said = []
    lg = Loggers({"tensorboard": True}, "/tmp", "r", {}, warn=said.append)
    lg.log({"step": 4, "lr": 1.0})
    assert lg.active == {} and "loggers.tensorboard: off: logging step 4 failed (OSError: disk full)" in said[0]


def test_scalars_flatten_a_step_record():
    record = {"step": 2, "lr": 0.1, "seconds": 3.0, "grad_norm": {"A": 0.5},
              "streams": {"drafter:A": {"reward": 0.25, "groups": 4, "note": "x"}}}
    assert scalars(record) == {"lr": 0.1, "seconds": 3.0, "grad_norm/A": 0.5, "drafter:A/reward": 0.25,
                               "drafter:A/groups": 4.0}


def test_agon_train_writes_tensorboard_events_where_the_spec_says(tiny_base, tmp_path):  # noqa: F811
    """The job path: a config's `loggers:` reaches `agon train` through the spec (run name, log dir)."""
    pytest.importorskip("tensorboard", reason="tensorboard is a test extra (pip install -e '.[test]')")
    import json
    import subprocess

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from test_trainer import SAMPLING, TRAIN

    io.write_jsonl(tmp_path / "train.jsonl", PROBLEMS)
    spec = {"base_path": str(tiny_base), "prompt_style": "toy", "method": AGON, "train": {**TRAIN, "max_steps": 2},
            "sampling": SAMPLING, "seed": 3, "threads": 1, "loggers": {"tensorboard": True, "wandb": False},
            "run_name": "t/toy/agon/seed3", "log_dir": str(tmp_path / "loggers")}
    cmd = [sys.executable, "-m", "agon.cli", "train", "--spec", json.dumps(spec), "--train",
           str(tmp_path / "train.jsonl"), "--out", str(tmp_path / "adapters"), "--metrics",
           str(tmp_path / "metrics.jsonl"), "--checkpoint-dir", str(tmp_path / "ckpt")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = EventAccumulator(str(tmp_path / "loggers" / "tensorboard"))
    events.Reload()
    lr = [(e.step, e.value) for e in events.Scalars("lr")]
    assert [s for s, _ in lr] == [r["step"] for r in io.read_jsonl(tmp_path / "metrics.jsonl")] == [0, 1]
