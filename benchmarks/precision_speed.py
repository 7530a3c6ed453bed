"""Benchmark: a GRPO training step in bf16 against fp32 on this CPU, side by side.

`precision: auto` picks bf16 only where the CPU has native bf16 (AVX512-BF16 or AMX on x86,
src/agon/precision.py). This prints the CPU's flags, what `auto` resolves, and the seconds per
training problem in each precision (each in its own fresh process, interleaved over
`--repeats` rounds, best of them), so the choice can be checked on any machine.

    python benchmarks/precision_speed.py [--base models/toy] [--steps 3] [--repeats 2]

Numbers vary with machine load: read the ratio, not the absolute seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=str(ROOT / "models" / "toy"), help="a toy base (default: the pinned one)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    import torch

    from agon import precision

    flags = {name: bool(getattr(torch.cpu, f"_is_{name}_supported", lambda: False)())
             for name in ("avx512", "avx512_bf16", "amx_tile")}
    print(f"CPU: {flags}; precision auto resolves {precision.resolve('auto')}")
    best: dict[str, float] = {}
    for _ in range(args.repeats):
        for name in ("bf16", "fp32"):
            out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "train_speed.py"), "--one", "grpo",
                                  "--base", args.base, "--steps", str(args.steps), "--precision", name],
                                 capture_output=True, text=True, check=True)
            seconds = json.loads(out.stdout.strip().splitlines()[-1])["seconds_per_problem"]
            best[name] = min(best.get(name, float("inf")), seconds)
    for name, seconds in best.items():
        print(f"{name}: {seconds:.3f} s per training problem (GRPO, 1 thread, best of {args.repeats})")
    print(f"bf16 / fp32 = {best['bf16'] / best['fp32']:.2f}x")


if __name__ == "__main__":
    main()
