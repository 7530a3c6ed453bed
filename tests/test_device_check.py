"""scripts/device_check.sh, the GPU check, run here at toy size on the CPU: the same code
(GRPO and Agon steps through the Trainer, an evaluation, the loss-memory benchmark), with
only what the GPU machine has (no install: PYTHONPATH=src)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_device_check_runs_end_to_end_at_toy_size():
    done = subprocess.run(["bash", str(ROOT / "scripts" / "device_check.sh"), "--tiny", "--device", "cpu"],
                          capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable},
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    results = json.loads(out.split("# results ", 1)[1].splitlines()[0])
    for phase in ("grpo", "agon"):
        r = results[phase]
        assert r["steps"] == 2 and r["streams_with_a_loss"] >= 1 and r["sampled_tokens"] > 0
        assert r["sampling_tokens_per_s"] > 0 and r["loss_tokens_per_s"] > 0
    assert results["agon"]["streams_with_a_loss"] >= 3  # drafter and challenger streams
    assert results["evaluate"]["cascade"] == {"problems": 2, "stages": 4}
    bench = out.split("rollouts   one pass  micro-batched", 1)[1].splitlines()[1:4]
    assert [line.split()[0] for line in bench] == ["16", "64", "128"]


def test_the_device_check_refuses_a_machine_without_a_gpu():
    import torch

    if torch.cuda.is_available():
        return  # a GPU machine runs the check for real
    done = subprocess.run(["bash", str(ROOT / "scripts" / "device_check.sh"), "--tiny"], capture_output=True,
                          text=True, env={**os.environ, "PYTHON": sys.executable}, timeout=300)
    assert done.returncode == 2 and "device check" in done.stderr
