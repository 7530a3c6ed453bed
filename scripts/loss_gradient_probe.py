"""How close each bf16 loss pass's gradient is to the fp32 one, on real rollouts.

    python scripts/loss_gradient_probe.py [--base models/toy] [--steps 6] [--method agon]

Trains `--steps` steps of the method on the pinned toy base (the default config's train and
sampling settings, the compact loss pass), samples one more step's streams, then computes
that step's adapter gradients four ways on the same rollouts: the compact loss pass and
transformers + peft, each in bf16 and in fp32. Prints, per adapter, the cosine of each bf16
gradient to the fp32 one of transformers (the reference: no rounding beyond fp32), and of
the compact fp32 gradient to it (1 up to float sums: the same function). A development probe
behind `train.loss_forward`'s choice; docs/measurements.md has its output.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=str(ROOT / "models" / "toy"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--method", default="agon")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F

    from agon import precision
    from agon.config import load
    from agon.data import toy_math
    from agon.jobs import Job
    from agon.jobs.train import trainer_for
    from agon.rl.trainer import StepContext

    torch.set_num_threads(1)
    cfg = load(ROOT / "config" / "config.yaml")
    if precision.resolve("auto") != "bf16":
        sys.exit("loss_gradient_probe: this CPU has no native bf16; nothing to compare")
    train = {**cfg["train"], "max_steps": args.steps + 1, "checkpoint_every": 10**6, "loss_forward": "compact"}
    job = Job({"base_path": args.base, "prompt_style": "toy", "attn_implementation": "eager", "device": "cpu",
               "generation": {"backend": "compact"}, "precision": "bf16", "train": train,
               "method": cfg["methods"][args.method], "sampling": cfg["sampling"]["train"], "seed": 0}, "probe")
    trainer = trainer_for(job, *job.load())
    per_step = train["problems_per_step"]
    problems = toy_math.generate((args.steps + 1) * per_step, 123, levels=[5])
    with tempfile.TemporaryDirectory() as tmp:
        trainer.fit(problems, Path(tmp) / "m.jsonl", Path(tmp) / "c.pt", log=lambda *_: None, stop_after=args.steps)
    ctx = StepContext(trainer.policies, trainer.backend, trainer.fmt, trainer.grader, trainer.method,
                      trainer.sampling, train["lam"], trainer.step, trainer.seed, trainer.adapters)
    streams = trainer.method_fn(ctx, problems[-per_step:])
    compact_config = trainer.compact_config

    def gradient(loss_forward: str, resolved: str) -> dict:
        trainer.compact_config = compact_config if loss_forward == "compact" else None
        trainer.precision = resolved
        trainer.policies.model.zero_grad(set_to_none=True)
        for stream in streams:
            trainer._stream_loss(stream)
        return {a: torch.cat([p.grad.flatten() for p in trainer.policies.parameters(a) if p.grad is not None])
                for a in trainer.adapters}

    reference = gradient("transformers", "fp32")
    rows = {"compact bf16": gradient("compact", "bf16"), "transformers bf16 (autocast)": gradient("transformers", "bf16"),
            "compact fp32": gradient("compact", "fp32")}
    print(f"{args.method}, {args.steps} steps trained, the next step's rollouts; cosine to transformers fp32:")
    for name, grads in rows.items():
        cosines = ", ".join(f"{a} {float(F.cosine_similarity(grads[a], reference[a], dim=0)):.4f}" for a in grads)
        print(f"  {name:30} {cosines}")


if __name__ == "__main__":
    main()
