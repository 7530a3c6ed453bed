"""The benchmarks run (their numbers are read by people, side by side, never asserted here):
benchmarks/train_speed.py at its smallest, on the pinned search-world base it names by default,
prints a row per method and the ratios its goals are read from."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_train_speed_runs_and_prints_its_rows_and_ratios():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "train_speed.py"), "--rounds", "1", "--steps", "2",
                           "--problems-per-step", "2", "--precision", "fp32"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("working tree")]
    assert [r[2] for r in rows[:2]] == ["grpo", "agon"] and all(r[3] == "fp32" for r in rows[:2]), proc.stdout
    assert all(float(r[4]) > 0 and float(r[5]) > 0 for r in rows[:2]), proc.stdout
    assert "Agon / GRPO = " in proc.stdout and "memory pair / single = " in proc.stdout, proc.stdout
