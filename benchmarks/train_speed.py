"""Benchmark: Agon vs vanilla GRPO at matched rollouts, measured side by side.

Prints seconds per training problem (goal: Agon within 1.2x of GRPO), the
default's speed-up (precision, attention, sampler) over fp32 + SDPA + transformers'
`generate`, the compact loss pass's (train.loss_forward) over transformers + peft under
autocast, and the peak memory of the adapter pair against a single adapter (goal: within 5%).
Each configuration runs in its own fresh process (so peak RSS is its own), on
the same base model, the same problems and the same number of rollouts per
problem (GRPO G = 16; Agon N = 8 drafts + 8 challenges).

    python benchmarks/train_speed.py [--base results/toy/models/toy/base] [--steps 6]

It needs the toy base (`snakemake --cores all results/toy/models/toy/base`).
Numbers vary with machine load: read the ratios, not the absolute seconds.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

METHODS = {
    "grpo": {"kind": "grpo", "group_size": 16},
    "agon": {"kind": "pair", "group_size": 8, "mode": "adv", "exchange": "visible", "roles": "rotate"},
}


def run_one(base: str, method: str, steps: int, problems_per_step: int, precision_name: str,
            attn: str, sampler: str, loss_forward: str) -> dict:
    """Train `steps` steps of one method in this process; report time and peak RSS."""
    import torch

    from agon.config import load
    from agon.data import toy_math
    from agon.jobs import Job
    from agon.jobs.train import trainer_for

    torch.set_num_threads(1)
    cfg = load(ROOT / "config" / "config.yaml")
    train = {**cfg["train"], "problems_per_step": problems_per_step, "max_steps": steps,
             "checkpoint_every": 10**6, "loss_forward": loss_forward}
    job = Job({"base_path": base, "prompt_style": "toy", "attn_implementation": attn, "device": "cpu",
               "generation": {"backend": sampler}, "precision": precision_name, "train": train,
               "method": METHODS[method], "sampling": cfg["sampling"]["train"], "seed": 0}, "benchmark")
    resolved = job.precision
    trainer = trainer_for(job, *job.load())
    problems = toy_math.generate(steps * problems_per_step, 123, levels=cfg["datasets"]["toy_math"]["options"]["levels"])
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        trainer.fit(problems, Path(tmp) / "m.jsonl", Path(tmp) / "c.pt", log=lambda *_: None)
        seconds = time.perf_counter() - t0
    return {"method": method, "precision": resolved, "attn": attn,
            "sampler": sampler, "loss_forward": loss_forward,
            "seconds_per_problem": seconds / len(problems),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_before_training_mb": rss_before / 1024, "adapters": list(trainer.adapters)}


def ensure_base(path: str) -> str:
    if not (Path(path) / "config.json").exists():
        raise SystemExit(f"no toy base at {path}: build it with "
                         "`snakemake --cores all results/toy/models/toy/base` or pass --base")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=str(ROOT / "results" / "toy" / "models" / "toy" / "base"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--problems-per-step", type=int, default=8)
    ap.add_argument("--precision", default="auto", help="the default config's setting (auto | bf16 | fp32)")
    ap.add_argument("--attn", default="eager", help="attention implementation of the default config")
    ap.add_argument("--sampler", default="compact", help="generation.backend of the default config")
    ap.add_argument("--loss-forward", default="compact", help="train.loss_forward of the default config")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one method, print JSON
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.base, args.one, args.steps, args.problems_per_step, args.precision,
                                 args.attn, args.sampler, args.loss_forward)))
        return
    base = ensure_base(args.base)

    def measure(method, precision_name, attn, sampler, loss_forward=args.loss_forward):
        out = subprocess.run([sys.executable, __file__, "--one", method, "--base", base,
                              "--steps", str(args.steps), "--problems-per-step", str(args.problems_per_step),
                              "--precision", precision_name, "--attn", attn,
                              "--sampler", sampler, "--loss-forward", loss_forward],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    # Interleaved, so machine load drifts over all configurations alike.
    g = measure("grpo", args.precision, args.attn, args.sampler)
    slow = measure("grpo", "fp32", "sdpa", "transformers", "transformers")
    peft_loss = measure("grpo", args.precision, args.attn, args.sampler, "transformers")
    a = measure("agon", args.precision, args.attn, args.sampler)
    print(f"{'method':6} {'precision':9} {'attn':6} {'sampler':12} {'loss':12} {'s/problem':>10} {'peak RSS MB':>12} adapters")
    for r in (g, slow, peft_loss, a):
        print(f"{r['method']:6} {r['precision']:9} {r['attn']:6} {r['sampler']:12} {r['loss_forward']:12} "
              f"{r['seconds_per_problem']:10.3f} {r['peak_rss_mb']:12.1f} {','.join(r['adapters'])}")
    time_ratio = a["seconds_per_problem"] / g["seconds_per_problem"]
    mem_ratio = a["peak_rss_mb"] / g["peak_rss_mb"]
    print(f"time  Agon / GRPO = {time_ratio:.2f}x   (goal <= 1.20x)")
    print(f"memory pair / single adapter = {mem_ratio:.3f}x   (goal <= 1.05x)")
    print(f"speed-up of {g['precision']}+{g['attn']}+{g['sampler']} over fp32+sdpa+transformers (GRPO) = "
          f"{slow['seconds_per_problem'] / g['seconds_per_problem']:.2f}x")
    print(f"speed-up of the {g['loss_forward']} loss pass over transformers (GRPO step, same sampler) = "
          f"{peft_loss['seconds_per_problem'] / g['seconds_per_problem']:.2f}x")


if __name__ == "__main__":
    main()
