"""GPU memory and token counts of config/paper.yaml's jobs for Qwen3-0.6B, 1.7B and 4B: arithmetic.

    python scripts/resource_arithmetic.py [--config config/paper.yaml] [--gpu-gib 80] [--decode-tok-s 5000]
                                          [--steps 3000]

Every number is computed from the models' published architectures (their config.json on the
hub, copied below) and paper.yaml's lengths; none is measured (scripts/device_check.sh
measures the 0.6B width on a GPU). Estimates, each with its formula:
  weights      parameters x 2 bytes (bf16), once in the trainer and once in the vLLM engine
  LoRA state   2 adapters x rank r on every target projection, fp32 weight + grad + 2 AdamW moments (16 B)
  activations  kept for backward per token and layer, bf16, attention by SDPA/flash (no seq^2 term):
               6h + 3(n_q + 2 n_kv) d + 2 n_q d + 4 I  values (norm inputs/outputs, q/k/v before and
               after norm and rotary, attention output, SwiGLU's gate, up, act and product)
               x tokens of the largest micro-batch x layers: train.loss_micro_batch_tokens, or one
               full-length challenger row alone when longer (prompt + a summary of up to one
               completion cap + a completion: generation.max_model_len); with gradient
               checkpointing: h per token and layer, plus one layer's full set
  logits       the micro-batch's completion positions (at most max(micro-batch, completion cap)) x
               vocabulary, bf16, with its gradient (x2), plus one fp32 log-softmax chunk (4096
               tokens x vocabulary x 4 B, x3 for softmax temporaries)
  KV cache     layers x 2 x n_kv x d x 2 B per token (vLLM, bf16)
  tokens       generated per step: rollouts x completion, at the cap and at GRPO's mean length in the
               paper (Table 3: 8.1k); steps: one epoch of datasets.deepmath_hard.train problems, or
               --steps when that is null (every hard problem: the count is known after `prepare`;
               the default 3000 is the secondary source's "still not converged at 3000 steps")
  GPU-hours    generation only, at an ASSUMED throughput (--decode-tok-s for 0.6B, scaled by
               parameters), per training cell of the config's tables and Figure 7b, x seeds
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# config.json of Qwen/Qwen3-0.6B, Qwen/Qwen3-1.7B and Qwen/Qwen3-4B: vocab 151936, head_dim 128, and
# tie_word_embeddings true in all three (one matrix for the embedding and the head)
ARCH = {
    "qwen3-0.6b": {"h": 1024, "layers": 28, "n_q": 16, "n_kv": 8, "d": 128, "I": 3072},
    "qwen3-1.7b": {"h": 2048, "layers": 28, "n_q": 16, "n_kv": 8, "d": 128, "I": 6144},
    "qwen3-4b": {"h": 2560, "layers": 36, "n_q": 32, "n_kv": 8, "d": 128, "I": 9728},
}
# Parameters of the two other families' checkpoints, for the GPU-hour total only (their model
# cards: Qwen3.5-2B ~2B; Gemma-4-E4B ~4B effective, ~8B with its per-layer embeddings)
OTHER_PARAMS = {"qwen3.5-2b": 2.0e9, "gemma-4-e4b": 8.0e9}
PAPER_MEAN_LENGTH = 8100  # Table 3: GRPO's mean final-stage length, the longest the paper reports
VOCAB = 151936
GIB = 2**30
LOGSOFTMAX_CHUNK_TOKENS = 4096  # src/agon/rl/logprobs.py


def params(a: dict) -> int:
    h, d, I = a["h"], a["d"], a["I"]
    attn = h * a["n_q"] * d + 2 * h * a["n_kv"] * d + a["n_q"] * d * h + 2 * d  # q, k, v, o, q/k norms
    mlp = 3 * h * I
    return a["layers"] * (attn + mlp + 2 * h) + VOCAB * h + h  # tied embedding and head, final norm


def projection_shapes(a: dict) -> dict[str, tuple[int, int]]:
    h, d, I = a["h"], a["d"], a["I"]
    return {"q_proj": (h, a["n_q"] * d), "k_proj": (h, a["n_kv"] * d), "v_proj": (h, a["n_kv"] * d),
            "o_proj": (a["n_q"] * d, h), "gate_proj": (h, I), "up_proj": (h, I), "down_proj": (I, h)}


def lora_params(a: dict, rank: int, targets: list[str]) -> int:
    shapes = projection_shapes(a)
    return a["layers"] * sum(rank * (i + o) for name, (i, o) in shapes.items() if name in targets)


def activation_values(a: dict) -> int:
    h, d, I, nq, nkv = a["h"], a["d"], a["I"], a["n_q"], a["n_kv"]
    return 6 * h + 3 * (nq + 2 * nkv) * d + 2 * nq * d + 4 * I


def training_cells(config: dict) -> dict[str, set[str]]:
    """{model: methods} trained for the config's tables and Figure 7b: the planner's trained cells."""
    from agon.plan import Plan

    cells: dict[str, set[str]] = {}
    for cell in Plan(config, ROOT).all_cells():
        if cell.trained:
            cells.setdefault(cell.model, set()).add(cell.cell)
    return cells


def main() -> None:
    import yaml

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "config" / "paper.yaml"))
    parser.add_argument("--gpu-gib", type=float, default=80.0, help="the GPU's memory (80: A100/H100 80GB)")
    parser.add_argument("--decode-tok-s", type=float, default=5000.0,
                        help="ASSUMED vLLM generation throughput, tokens/s (not measured here)")
    parser.add_argument("--steps", type=int, default=3000,
                        help="optimizer steps when datasets.deepmath_hard.train is null (all hard problems)")
    args = parser.parse_args()
    config = yaml.safe_load(Path(args.config).read_text())
    train, generation = config["train"], config.get("generation", {})
    completion = config["sampling"]["train"]["max_new_tokens"]
    prompt = 1024  # ours: a DeepMath question and the instructions (paper.yaml's max_model_len comment)
    longest_row = generation.get("max_model_len", prompt + 2 * completion)
    micro = train.get("loss_micro_batch_tokens", 16384)
    peak_rows = max(micro, longest_row)  # a longer row is a micro-batch alone (src/agon/rl/logprobs.py)
    logit_rows = min(peak_rows, max(micro, completion))
    rank, targets = train["lora"]["rank"], train["lora"]["target_modules"]
    per_step = train["problems_per_step"]
    rollouts = per_step * 16  # GRPO 8 x 16; a pair 8 x (8 drafts + 8 challenges)
    n_train = config["datasets"]["deepmath_hard"]["train"]
    steps = -(-n_train // per_step) if n_train else args.steps
    shares = {"train": generation.get("gpu_memory_utilization", 0.9),
              "eval": generation.get("eval_gpu_memory_utilization", generation.get("gpu_memory_utilization", 0.9))}
    print(f"paper.yaml: completions up to {completion} tokens, prompts ~{prompt} (challenger rows also carry a "
          f"summary, up to {completion}; the longest row {longest_row}), {rollouts} rollouts per step, {steps} steps"
          f"{'' if n_train else ' (--steps)'}; micro-batch {micro} tokens; LoRA r={rank} on {len(targets)} "
          f"projections; vLLM share {shares['train']} in train jobs, {shares['eval']} in evaluation jobs, "
          f"of a {args.gpu_gib:g} GiB GPU")
    head = f"{'':28}" + "".join(f"{m:>13}" for m in ARCH)
    print(head)

    def row(label, values, fmt="{:>13.1f}"):
        print(f"{label:28}" + "".join(fmt.format(v) for v in values))

    P = {m: params(a) for m, a in ARCH.items()}
    row("parameters (B)", [P[m] / 1e9 for m in ARCH], "{:>13.2f}")
    row("weights bf16 (GiB), each", [2 * P[m] / GIB for m in ARCH])
    lora = {m: 2 * lora_params(a, rank, targets) for m, a in ARCH.items()}
    row("LoRA A+B state (GiB)", [16 * lora[m] / GIB for m in ARCH])
    acts = {m: activation_values(a) * 2 * peak_rows * a["layers"] / GIB for m, a in ARCH.items()}
    row("activations (GiB)", list(acts.values()))
    ckpt = {m: (a["h"] * a["layers"] + activation_values(a)) * 2 * peak_rows / GIB for m, a in ARCH.items()}
    row("  with checkpointing (GiB)", list(ckpt.values()))
    logits = (2 * 2 * logit_rows * VOCAB + 3 * 4 * LOGSOFTMAX_CHUNK_TOKENS * VOCAB) / GIB
    row("logits of a micro-batch (GiB)", [logits] * len(ARCH))
    trainer = {m: 2 * P[m] / GIB + 16 * lora[m] / GIB + acts[m] + logits for m in ARCH}
    row("trainer peak (GiB)", list(trainer.values()))
    with_ckpt = {m: 2 * P[m] / GIB + 16 * lora[m] / GIB + ckpt[m] + logits for m in ARCH}
    row("  with checkpointing", list(with_ckpt.values()))
    row("  as share of the GPU", [t / args.gpu_gib for t in trainer.values()], "{:>13.2f}")
    row("  with checkpointing, share", [t / args.gpu_gib for t in with_ckpt.values()], "{:>13.2f}")
    fraction = train.get("gpu_memory_fraction", 1.0)
    row(f"smallest GPU at {fraction:g} (GiB)", [t / fraction for t in with_ckpt.values()], "{:>13.0f}")
    kv = {m: a["layers"] * 2 * a["n_kv"] * a["d"] * 2 for m, a in ARCH.items()}
    row("KV cache (KiB / token)", [kv[m] / 1024 for m in ARCH])
    for job, share in shares.items():
        room = {m: share * args.gpu_gib * GIB - 2 * P[m] for m in ARCH}
        row(f"vLLM KV room, {job} (k tok)", [room[m] / kv[m] / 1000 for m in ARCH], "{:>13.0f}")
        row("  full-length rows at once", [room[m] / kv[m] / longest_row for m in ARCH], "{:>13.0f}")
    per_step_cap, per_step_mean = rollouts * completion, rollouts * min(PAPER_MEAN_LENGTH, completion)
    print(f"generated tokens per step: {per_step_cap / 1e6:.1f}M at the cap, {per_step_mean / 1e6:.1f}M at GRPO's "
          f"mean length in the paper ({PAPER_MEAN_LENGTH}); per run of {steps} steps, at an ASSUMED "
          f"{args.decode_tok_s:g} tok/s for 0.6B (scaled by parameters for the others):")
    sizes = {**{m: P[m] for m in ARCH}, **OTHER_PARAMS}
    hours = lambda model, per_step: steps * per_step / (args.decode_tok_s * P["qwen3-0.6b"] / sizes[model]) / 3600  # noqa: E731
    row("  hours of generation, cap", [hours(m, per_step_cap) for m in ARCH], "{:>13.0f}")
    row("  hours at the paper's mean", [hours(m, per_step_mean) for m in ARCH], "{:>13.0f}")
    cells, seeds = training_cells(config), len(config.get("seeds", [0]))
    total_cap = total_mean = 0.0
    for model, methods in cells.items():
        size = config["models"][model]["paper_model"]  # the published model it runs (the code run's: 1.7B)
        total_cap += len(methods) * seeds * hours(size, per_step_cap)
        total_mean += len(methods) * seeds * hours(size, per_step_mean)
    n_cells = sum(len(m) for m in cells.values())
    print(f"GPU-hours of generation for the whole matrix ({n_cells} training cells x {seeds} seeds): "
          f"{total_cap:,.0f} at the cap, {total_mean:,.0f} at the paper's mean length")


if __name__ == "__main__":
    main()
