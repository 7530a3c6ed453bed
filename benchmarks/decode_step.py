"""Benchmark: one decode step of the compact sampler, eager against torch.compile, side by side.

A GRPO step of the default samples 128 rows of up to 96 tokens: one decode step per token over
the whole batch. This times that step on the pinned toy base in fp32 (1 thread) as the sampler
runs it, then compiled by TorchInductor (which needs a C++ compiler), and prints both, the
ratio and the compile time: whether the decode step is bound by per-op overhead (which fusing
removes) or by its matrix products (which it does not).

    python benchmarks/decode_step.py [--base models/toy] [--rows 128] [--steps 60]

Numbers vary with machine load: read the ratio, not the absolute milliseconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=str(ROOT / "models" / "toy"), help="a toy base (default: the pinned one)")
    ap.add_argument("--rows", type=int, default=128)
    ap.add_argument("--prompt", type=int, default=40, help="prompt tokens before the decoded ones")
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    import torch

    from agon.compact import CompactQwen3
    from agon.models import read_config, read_weights

    torch.set_num_threads(1)
    config = read_config(args.base)
    model = CompactQwen3(config, {name: t.float() for name, t in read_weights(args.base).items()})
    B, P = args.rows, args.prompt
    total = P + args.steps + 8
    model._rope_table(total)
    cache = [(torch.zeros(B, model.kv_heads, model.head_dim, total), torch.zeros(B, model.kv_heads, total, model.head_dim))
             for _ in model.layers]
    bias = torch.zeros(B, 1, 1, total)
    tokens = torch.randint(0, config["vocab_size"], (B, 1))
    positions = torch.full((B, 1), P)

    def step(tokens, positions, start):
        return model.forward(tokens, positions, cache, start, bias[..., :start + 1])

    def seconds_per_step(fn) -> float:
        for s in range(4):
            fn(tokens, positions, P + s)
        t0 = time.perf_counter()
        for s in range(args.steps):
            fn(tokens, positions, P + s)
        return (time.perf_counter() - t0) / args.steps

    eager = seconds_per_step(step)
    compiled_fn = torch.compile(step, dynamic=True)
    t0 = time.perf_counter()
    compiled_fn(tokens, positions, P)
    compile_seconds = time.perf_counter() - t0
    compiled = seconds_per_step(compiled_fn)
    print(f"decode step, {B} rows, fp32, 1 thread: eager {eager * 1e3:.2f} ms, compiled {compiled * 1e3:.2f} ms "
          f"(first call {compile_seconds:.1f} s); eager / compiled = {eager / compiled:.2f}x")


if __name__ == "__main__":
    main()
