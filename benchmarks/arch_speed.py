"""Benchmark: how a toy training step's time scales with the base's width and depth, side by side.

For each architecture, on random weights (only time is measured): sampling one GRPO step's
rollouts with the compact sampler (128 rows: 50 prompt tokens, 96 sampled, no stop, so every
row runs to the cap), then one loss pass through a LoRA adapter (peft, rank 16 on every
projection, bf16 autocast where the CPU has it, micro-batches of 4096 tokens, as the trainer
cuts them). Prints seconds and the ratio to the default's architecture (config.yaml's
`models.toy.base.arch`), which runs first untimed to warm up, then timed, then again last.

    python benchmarks/arch_speed.py [--repeats 2]

What it answers: where a smaller toy world would save time. On the 2-core Intel CPU of
2026-12-03 the step is bound by per-op overhead, not arithmetic: a narrower model saves
less than a shallower one (README, "Run time").
Numbers vary with machine load: read the ratios, not the absolute seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

PROMPT_TOKENS, SAMPLED_TOKENS, ROWS = 50, 96, 128
LORA = {"rank": 16, "alpha": 32,
        "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}


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


def step_seconds(arch: dict, precision_name: str) -> tuple[float, float]:
    """(sampling seconds, loss-pass seconds) of one GRPO-sized step on `arch`."""
    import torch

    from agon import precision
    from agon.compact import CompactQwen3, sample_ids
    from agon.models import LoraPolicies
    from agon.rl.trainer import LOSS_MICRO_BATCH_TOKENS
    from agon.toy.sft import build_model
    from agon.toy.tokenizer import build_tokenizer

    torch.manual_seed(0)
    tokenizer = build_tokenizer()
    model = build_model(arch, tokenizer)
    model.set_attn_implementation("eager")
    model.eval()
    dtype = torch.bfloat16 if precision_name == "bf16" else torch.float32
    compact = CompactQwen3(model.config.to_dict(), {k: v.to(dtype) for k, v in model.state_dict().items()})
    prompts = [[5 + (i + j) % 20 for j in range(PROMPT_TOKENS)] for i in range(ROWS)]
    sampling = {"temperature": 0.6, "top_p": 0.95, "max_new_tokens": SAMPLED_TOKENS}
    sample_ids(compact, prompts[:8], sampling, ())  # warm-up
    start = time.perf_counter()
    sample_ids(compact, prompts, sampling, ())
    sampling_s = time.perf_counter() - start

    policies = LoraPolicies(model, ("A",), LORA, {"A": 0.0}, 0)
    ids = torch.randint(5, 30, (ROWS, PROMPT_TOKENS + SAMPLED_TOKENS))
    rows_per_micro_batch = LOSS_MICRO_BATCH_TOKENS // ids.shape[1]

    def loss_pass():
        for first in range(0, ROWS, rows_per_micro_batch):
            with policies.use("A") as m, precision.autocast(precision_name, "cpu"):
                logits = m(input_ids=ids[first:first + rows_per_micro_batch], logits_to_keep=SAMPLED_TOKENS + 1,
                           use_cache=False).logits
            logits.float().log_softmax(-1).mean().backward()

    loss_pass()  # warm-up
    start = time.perf_counter()
    loss_pass()
    return sampling_s, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2, help="best of this many measurements per architecture")
    ap.add_argument("--precision", default="auto")
    args = ap.parse_args()
    import torch
    import yaml

    from agon import precision

    torch.set_num_threads(1)  # as a training job runs
    precision_name = precision.resolve(args.precision)
    default = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["models"]["toy"]["base"]["arch"]
    archs = variants(default)
    step_seconds(default, precision_name)  # the process's first step pays one-off warm-up costs
    results = {}
    for name, arch in list(archs.items()) + [("default, again", default)]:
        runs = [step_seconds(arch, precision_name) for _ in range(args.repeats)]
        results[name] = min(runs, key=sum)
    reference = min(sum(results["default"]), sum(results["default, again"]))
    print(f"precision {precision_name}; {ROWS} rows x ({PROMPT_TOKENS} + {SAMPLED_TOKENS}) tokens; 1 thread")
    print(f"{'architecture':<16}{'sampling s':>11}{'loss s':>9}{'step s':>9}{'x default':>11}")
    for name, (sampling_s, loss_s) in results.items():
        print(f"{name:<16}{sampling_s:>11.2f}{loss_s:>9.2f}{sampling_s + loss_s:>9.2f}"
              f"{(sampling_s + loss_s) / reference:>11.2f}")


if __name__ == "__main__":
    main()
