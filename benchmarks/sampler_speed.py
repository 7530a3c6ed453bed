"""Benchmark: the compact Qwen3 sampler against transformers' `generate`, side by side.

Samples the toy base's rollouts the way a training step does (GRPO: 8 problems x
16 on the plain prompt; a pair's challenger: 64 rollouts reading a rival draft)
with both backends, interleaved in one process, and prints seconds and the ratio.

    python benchmarks/sampler_speed.py [--base models/toy] [--repeats 3]

It samples the search world's problems on its pinned base (models/toy) by default.
Numbers vary with machine load: read the ratios, not the absolute seconds.
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
    ap.add_argument("--base", default=str(ROOT / "models" / "toy"))
    ap.add_argument("--repeats", type=int, default=3, help="best of this many runs per cell")
    ap.add_argument("--precision", default="auto")
    args = ap.parse_args()
    if not (Path(args.base) / "config.json").exists():
        raise SystemExit(f"no toy base at {args.base}: pass --base")
    import torch

    from agon import precision
    from agon.config import load
    from agon.data import toy_math
    from agon.generate import CompactBackend, TransformersBackend
    from agon.models import load_base
    from agon.prompts import PromptFormat, summary

    torch.set_num_threads(1)
    cfg = load(ROOT / "config" / "search.yaml")   # the search world's problems and cap, on its base (models/toy)
    sampling = cfg["sampling"]["train"]
    model, tok = load_base(args.base)
    model.set_attn_implementation("eager")
    dtype = precision.dtype(precision.resolve(args.precision))
    backends = {"transformers": TransformersBackend(model, tok, dtype), "compact": CompactBackend.over_model(model, tok, dtype)}
    fmt = PromptFormat("toy")
    problems = toy_math.generate(8, 123, levels=cfg["datasets"]["toy_math"]["options"]["levels"])
    plain = [fmt.plain(p) for p in problems for _ in range(16)]
    drafts = backends["compact"].sample(None, plain[:64], sampling, seed=0)
    attempt = [fmt.with_attempt(p, summary(d.text)) for p, d in zip([p for p in problems for _ in range(8)], drafts)]
    cells = {"grpo: 128 plain prompts": plain, "pair challenger: 64 attempt prompts": attempt}
    best = {(c, b): float("inf") for c in cells for b in backends}
    for r in range(args.repeats):  # interleaved, so load drifts over both backends alike
        for cell, prompts in cells.items():
            for name, backend in backends.items():
                t0 = time.perf_counter()
                backend.sample(None, prompts, sampling, seed=r)
                best[cell, name] = min(best[cell, name], time.perf_counter() - t0)
    print(f"precision {precision.resolve(args.precision)}, one thread, best of {args.repeats}")
    print(f"{'batch':38} {'transformers s':>15} {'compact s':>10} {'speed-up':>9}")
    for cell in cells:
        slow, fast = best[cell, "transformers"], best[cell, "compact"]
        print(f"{cell:38} {slow:15.3f} {fast:10.3f} {slow / fast:8.2f}x")


if __name__ == "__main__":
    main()
