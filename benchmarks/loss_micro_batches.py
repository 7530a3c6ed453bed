"""Benchmark: the loss pass's time by micro-batch grouping, measured side by side.

    python benchmarks/loss_micro_batches.py [--base models/toy] [--caps 96,208] [--repeats 6]

For each completion cap, one GRPO stream (8 training problems x G = 16) is sampled from
the toy base, then the same loss pass (forward + backward through adapter A, bf16 where
the CPU has it, 1 thread) runs over it in several groupings, interleaved round by round
so that machine load hits them alike:
  * "in stream order, 16384": rows grouped as they come, the grouping before rows were
    sorted by length (the reference: ratio 1.0);
  * "by length, B": agon.rl.logprobs.micro_batches at train.loss_micro_batch_tokens = B.
It prints the padded tokens of each grouping (the tokens the forward computes) beside the
real ones, and each grouping's time as a ratio to the reference. The goal: the toy default's
grouping at most 0.85 of the reference at its own cap. Read the ratios, not the seconds.
It samples the search world's problems on its pinned base (models/toy) by default.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=str(ROOT / "models" / "toy"))
    parser.add_argument("--caps", default="96,208", help="completion caps (sampling max_new_tokens)")
    parser.add_argument("--budgets", default="16384,4096,2048")
    parser.add_argument("--repeats", type=int, default=6)
    args = parser.parse_args()

    import torch

    from agon import precision
    from agon.config import load
    from agon.data import toy_math
    from agon.jobs import Job
    from agon.jobs.train import trainer_for
    from agon.models import load_base
    from agon.prompts import PromptFormat
    from agon.rl import methods
    from agon.rl.logprobs import group_rows, micro_batches
    from agon.rl.trainer import StepContext
    from timing import loss_pass_seconds

    torch.set_num_threads(1)
    cfg = load(ROOT / "config" / "search.yaml")
    resolved = precision.resolve("auto")
    problems = toy_math.generate(8, 7, levels=[toy_math.SEARCH_LEVEL])
    budgets = [int(b) for b in args.budgets.split(",")]
    print(f"toy base {args.base}, {resolved}, 1 thread; one loss pass over 8 problems x 16 rollouts")
    for cap in (int(c) for c in args.caps.split(",")):
        sampling = {**cfg["sampling"]["train"], "max_new_tokens": cap}
        model, tok = load_base(args.base)  # fresh: peft wraps a model once
        model.set_attn_implementation("eager")
        job = Job({"generation": {"backend": "compact"}, "precision": resolved, "device": "cpu",
                   "train": cfg["train"], "method": {"kind": "grpo", "group_size": 16}, "sampling": sampling,
                   "seed": 0}, "benchmark")
        trainer = trainer_for(job, model, tok, PromptFormat("toy"))
        ctx = StepContext(trainer.policies, trainer.backend, trainer.fmt, trainer.grader, trainer.method,
                          sampling, cfg["train"]["lam"], 0, 0, trainer.adapters)
        completions = methods.kind_of("grpo").step(ctx, problems)[0].completions
        lengths = [len(c.prompt_ids) + len(c.completion_ids) for c in completions]
        advantages = torch.randn(len(completions), generator=torch.Generator().manual_seed(0))
        groupings = {"in stream order, 16384": group_rows(lengths, range(len(lengths)), 16384)}
        groupings.update({f"by length, {b}": micro_batches(completions, b) for b in budgets})

        def loss_pass(groups) -> float:
            return loss_pass_seconds(trainer, completions, advantages, groups)

        for groups in groupings.values():  # untimed: the first passes warm allocator and caches
            loss_pass(groups)
        seconds = dict.fromkeys(groupings, 0.0)
        for _ in range(args.repeats):
            for name, groups in groupings.items():
                seconds[name] += loss_pass(groups)
        reference = seconds["in stream order, 16384"]
        print(f"\ncap {cap}: {len(completions)} rows, {sum(lengths)} real tokens, "
              f"{sum(c.truncated for c in completions)} rows cut at the cap")
        print(f"{'grouping':<24} {'groups':>6} {'padded tokens':>14} {'time ratio':>11}")
        for name, groups in groupings.items():
            padded = sum(len(g) * max(lengths[i] for i in g) for g in groups)
            print(f"{name:<24} {len(groups):>6} {padded:>14} {seconds[name] / reference:>11.3f}")
        print(f"(reference: {reference / args.repeats:.2f} s per pass)")


if __name__ == "__main__":
    main()
