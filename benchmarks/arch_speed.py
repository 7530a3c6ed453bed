"""Benchmark: how a toy training step's time scales with the base's width and depth, side by side.

For each architecture, on random weights (only time is measured): sampling one GRPO step's
rollouts with the compact sampler (128 rows: 50 prompt tokens, then config.yaml's training
sampling with no stop token, so every row runs to the cap), then the trainer's own loss pass
over them through its LoRA adapter (config.yaml's `train`: its micro-batches, its loss, bf16
autocast where the CPU has it). Prints seconds and the ratio to the default's architecture
(config.yaml's `models.toy.base.arch`), which runs first untimed to warm up, then timed, then
again last.

    python benchmarks/arch_speed.py [--repeats 2]

What it answers: where a smaller toy world would save time. On the 2-core Intel CPU of
2026-12-03 a narrower model saves less than a shallower one: much of a step is per-op
overhead, paid per layer (README, "Run time").
Numbers vary with machine load: read the ratios, not the absolute seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

PROMPT_TOKENS, ROWS = 50, 128  # a GRPO step: 8 problems x G = 16


def variants(default: dict) -> dict[str, dict]:
    def arch(**changes):
        return {**default, **changes}

    return {
        "default": default,
        "hidden 96": arch(hidden_size=96, intermediate_size=384),
        "hidden 64": arch(hidden_size=64, intermediate_size=256),
        "3 layers": arch(num_layers=3),
        "2 layers": arch(num_layers=2),
    }


def step_seconds(arch: dict, cfg: dict, precision_name: str) -> tuple[float, float]:
    """(sampling seconds, loss-pass seconds) of one GRPO-sized step on `arch`, with the
    config's sampling and train settings: the trainer's own micro-batches and loss."""
    import torch

    from agon import precision
    from agon.compact import CompactQwen3, sample_ids
    from agon.completion import Completion
    from agon.jobs import Job
    from agon.jobs.train import trainer_for
    from agon.prompts import PromptFormat
    from agon.rl.logprobs import LOSS_MICRO_BATCH_TOKENS, micro_batches
    from agon.toy.sft import build_model
    from agon.toy.tokenizer import build_tokenizer
    from timing import loss_pass_seconds

    torch.manual_seed(0)
    tokenizer = build_tokenizer()
    model = build_model(arch, tokenizer)
    model.set_attn_implementation("eager")
    model.eval()
    dtype = precision.dtype(precision_name)
    compact = CompactQwen3(model.config.to_dict(), {k: v.to(dtype) for k, v in model.state_dict().items()})
    prompts = [[5 + (i + j) % 20 for j in range(PROMPT_TOKENS)] for i in range(ROWS)]
    sampling = cfg["sampling"]["train"]
    sample_ids(compact, prompts[:8], sampling, ())  # warm-up
    start = time.perf_counter()
    sampled = sample_ids(compact, prompts, sampling, ())  # no stop token: every row to the cap
    sampling_s = time.perf_counter() - start

    job = Job({"generation": {"backend": "compact"}, "precision": precision_name, "device": "cpu",
               "train": cfg["train"], "method": {"kind": "grpo", "group_size": 16}, "sampling": sampling,
               "seed": 0}, "benchmark")
    trainer = trainer_for(job, model, tokenizer, PromptFormat("toy"))
    completions = [Completion("", "", p, ids, truncated=True) for p, ids in zip(prompts, sampled)]
    advantages = torch.randn(ROWS, generator=torch.Generator().manual_seed(0))
    groups = micro_batches(completions, cfg["train"].get("loss_micro_batch_tokens", LOSS_MICRO_BATCH_TOKENS))

    loss_pass_seconds(trainer, completions, advantages, groups)  # warm-up
    return sampling_s, loss_pass_seconds(trainer, completions, advantages, groups)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2, help="best of this many measurements per architecture")
    ap.add_argument("--precision", default="auto")
    args = ap.parse_args()
    import torch

    from agon import precision
    from agon.config import load

    torch.set_num_threads(1)  # as a training job runs
    precision_name = precision.resolve(args.precision)
    cfg = load(ROOT / "config" / "config.yaml")
    default = cfg["models"]["toy"]["base"]["arch"]
    archs = variants(default)
    step_seconds(default, cfg, precision_name)  # the process's first step pays one-off warm-up costs
    results = {}
    for name, arch in list(archs.items()) + [("default, again", default)]:
        runs = [step_seconds(arch, cfg, precision_name) for _ in range(args.repeats)]
        results[name] = min(runs, key=sum)
    reference = min(sum(results["default"]), sum(results["default, again"]))
    cap = cfg["sampling"]["train"]["max_new_tokens"]
    print(f"precision {precision_name}; {ROWS} rows x ({PROMPT_TOKENS} + {cap}) tokens; 1 thread")
    print(f"{'architecture':<16}{'sampling s':>11}{'loss s':>9}{'step s':>9}{'x default':>11}")
    for name, (sampling_s, loss_s) in results.items():
        print(f"{name:<16}{sampling_s:>11.2f}{loss_s:>9.2f}{sampling_s + loss_s:>9.2f}"
              f"{(sampling_s + loss_s) / reference:>11.2f}")


if __name__ == "__main__":
    main()
