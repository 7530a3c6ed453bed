"""The paper-scale training path on a GPU, in minutes, with nothing fetched.

    bash scripts/device_check.sh                 (CUDA, bf16: what a GPU machine runs)
    bash scripts/device_check.sh --tiny --device cpu   (the same code at toy size: tests/test_device_check.py)

Needs torch, transformers and peft only (no vLLM, no network, no install: PYTHONPATH=src).
A randomly initialised Qwen3-architecture model at Qwen3-0.6B's width and vocabulary
(hidden 1024, 16 heads, 8 KV heads, head_dim 128, 151,936 tokens; fewer layers), in bf16
on the device, runs:
  * GRPO steps and Agon steps through agon's Trainer (transformers generation, the
    micro-batched loss with paper.yaml's gradient checkpointing and LoRA targets, AdamW,
    adapter sync), then
  * an evaluation of the trained adapters (a cascade and a single pass, through
    agon.evaluate.protocols as `agon evaluate` runs them), then
  * benchmarks/loss_memory.py at the same width, vocabulary and dtype.
A random model's answers are never right, so every group would have one reward and the
loss would never run: the steps are graded by a coin (a hash of the completion), which
gives every group reward variance. This checks the machinery (device placement, memory,
speed), not learning. It prints the peak GPU memory of each phase, and tokens per second
for sampling and for the loss.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# Qwen3-0.6B's config.json (hub: Qwen/Qwen3-0.6B), but for the number of layers (28 there)
QWEN3_06B = {"hidden_size": 1024, "intermediate_size": 3072, "num_attention_heads": 16, "num_key_value_heads": 8,
             "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960, "rope_theta": 1000000,
             "rms_norm_eps": 1e-6, "tie_word_embeddings": True}
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "vocab_size": 512, "max_position_embeddings": 4096, "tie_word_embeddings": True}


def log(msg: str) -> None:
    print(msg, flush=True)


class CoinGrader:
    """agon's Grader, with correctness a coin drawn from the completion's text (see the docstring)."""

    def __init__(self):
        from agon.verify.grading import Grader

        self.inner = Grader()
        self.counts, self.mechanism = self.inner.counts, None

    def __call__(self, problem, completion):
        self.inner(problem, completion)  # the real grading runs (and is counted) as well
        coin = hashlib.sha256(completion.text.encode()).digest()[0] % 2
        return coin, int(coin == 0 and len(completion.text) % 3 == 0)


class Timed:
    """A backend wrapper that times sampling and counts what it generated."""

    def __init__(self, inner):
        self.inner, self.seconds, self.tokens = inner, 0.0, 0

    def sample(self, adapter, prompts, sampling, seed):
        t0 = time.perf_counter()
        out = self.inner.sample(adapter, prompts, sampling, seed)
        sync()
        self.seconds += time.perf_counter() - t0
        self.tokens += sum(c.length for c in out)
        return out

    def sync(self, policies):
        self.inner.sync(policies)


DEVICE = "cpu"


def sync() -> None:
    if DEVICE == "cuda":
        import torch

        torch.cuda.synchronize()


def peak_mib(reset: bool = False) -> float | None:
    if DEVICE != "cuda":
        return None
    import torch

    value = torch.cuda.max_memory_allocated() / 2**20
    if reset:
        torch.cuda.reset_peak_memory_stats()
    return value


def build_base(arch: dict, layers: int, dtype: str, out: Path, vocab_size: int):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from agon.toy.tokenizer import build_tokenizer

    tok = build_tokenizer(vocab_size)
    config = Qwen3Config(**arch, num_hidden_layers=layers, pad_token_id=tok.pad_token_id,
                         eos_token_id=tok.eos_token_id, bos_token_id=None)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config).to(getattr(torch, dtype))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return sum(p.numel() for p in model.parameters())


def train(spec: dict, method: dict, train_cfg: dict, sampling: dict, problems, steps: int, out: Path):
    import torch

    from agon.jobs import Job
    from agon.rl.trainer import Trainer

    job = Job(spec, "device check: train")
    base, tok, fmt = job.load()
    timed = {}

    def factory(model):
        timed["backend"] = Timed(job.backend(model, tok))
        return timed["backend"]

    trainer = Trainer(base, tok, fmt, {**train_cfg, "max_steps": steps}, method, sampling, seed=0,
                      precision_name=job.precision, backend_factory=factory, grader=CoinGrader())
    assert next(trainer.policies.model.parameters()).device.type == DEVICE
    peak_mib(reset=True)
    t0 = time.perf_counter()
    history = trainer.fit(problems, out / "metrics.jsonl", out / "checkpoint.pt", log=lambda *_: None)
    sync()
    total = time.perf_counter() - t0
    backend = timed["backend"]
    loss_tokens = sum(s["generated_tokens"] + s["prefill_tokens"] for r in history for s in r["streams"].values()
                      if "loss" in s)
    losses = sum("loss" in s for r in history for s in r["streams"].values())
    for name in trainer.adapters:
        trainer.policies.save(name, out / "adapters" / name)
    result = {"steps": len(history), "streams_with_a_loss": losses,
              "sampled_tokens": backend.tokens, "sampling_tokens_per_s": backend.tokens / max(backend.seconds, 1e-9),
              "loss_tokens": loss_tokens,
              # the rest of the step: the loss passes (forward + backward), optimizer and sync
              "loss_tokens_per_s": loss_tokens / max(total - backend.seconds, 1e-9),
              "seconds": total, "peak_gpu_mib": peak_mib()}
    del trainer, base
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    return result, out / "adapters"


def evaluate(spec: dict, adapters: Path, problems, sampling: dict):
    from agon.evaluate import protocols
    from agon.jobs import Job
    from agon.verify.grading import Grader

    peak_mib(reset=True)
    t0 = time.perf_counter()
    backend, fmt = Job(spec, "device check: evaluate").open_backend({n: str(adapters / n) for n in ("A", "B")})
    timed = Timed(backend)
    sample = protocols.make_sampler(timed, sampling, seed=1)
    out = {}
    for protocol, policies in (("cascade", ["A", "B"]), ("single", ["B"])):
        records = protocols.run(protocol, policies, problems, sample, fmt, Grader())
        out[protocol] = {"problems": len(records), "stages": sum(len(r["stages"]) for r in records)}
    sync()
    return {**out, "sampled_tokens": timed.tokens, "sampling_tokens_per_s": timed.tokens / max(timed.seconds, 1e-9),
            "seconds": time.perf_counter() - t0, "peak_gpu_mib": peak_mib()}


def main() -> int:
    global DEVICE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--tiny", action="store_true", help="toy sizes (a CPU test of this script)")
    parser.add_argument("--layers", type=int, default=None, help="decoder layers (default 4; Qwen3-0.6B has 28)")
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--problems-per-step", type=int, default=None)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--no-benchmark", action="store_true")
    args = parser.parse_args()

    import peft
    import torch
    import transformers

    from agon import precision
    from agon.data import toy_math
    from agon.gpu_check import GpuUnavailable, require_gpu

    DEVICE = args.device
    facts = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "transformers": transformers.__version__,
             "peft": peft.__version__, "device": DEVICE}
    if DEVICE == "cuda":
        try:
            facts["gpu"] = require_gpu("device check")
        except GpuUnavailable as e:
            print(f"device check: {e}", file=sys.stderr)
            return 2
    arch = TINY if args.tiny else QWEN3_06B
    layers = args.layers or (1 if args.tiny else 4)
    max_new = args.max_new_tokens or (8 if args.tiny else 384)
    per_step = args.problems_per_step or (2 if args.tiny else 8)
    group = 2 if args.tiny else 8
    resolved = precision.resolve("bf16" if DEVICE == "cuda" else "fp32", DEVICE)
    dtype = "bfloat16" if resolved == "bf16" else "float32"
    log(f"# device check: {json.dumps(facts)}")
    log(f"model: random Qwen3, hidden {arch['hidden_size']}, {layers} layers, vocab {arch['vocab_size']}, "
        f"{dtype} weights, precision {resolved}; {per_step} problems x group {group} per stream, "
        f"completions up to {max_new} tokens")
    results = {"facts": facts}
    with tempfile.TemporaryDirectory(prefix="agon-device-check-") as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        params = build_base(arch, layers, dtype, tmp / "base", arch["vocab_size"])
        log(f"base: {params / 1e6:.0f}M parameters, built and saved in {time.perf_counter() - t0:.1f} s")
        spec = {"base_path": str(tmp / "base"), "prompt_style": "toy", "dtype": dtype, "precision": resolved,
                "generation": {"backend": "transformers"}, "device": DEVICE}
        train_cfg = {"problems_per_step": per_step, "epochs": 1, "lr": 5e-5, "warmup_ratio": 0.1,
                     "weight_decay": 0.0, "max_grad_norm": 1.0, "loss_type": "dapo", "clip_low": 0.2,
                     "clip_high": 0.2, "beta": 0.0, "lam": 0.5, "adapter_a_init_sigma": 0.001,
                     "checkpoint_every": 10, "loss_micro_batch_tokens": 16384, "gradient_checkpointing": True,
                     "lora": {"rank": 16, "alpha": 32, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj",
                                                                          "gate_proj", "up_proj", "down_proj"]}}
        sampling = {"temperature": 0.6, "top_p": 0.95, "max_new_tokens": max_new}
        problems = toy_math.generate(per_step * args.steps, 7, levels=[1, 2, 3])
        methods = {"grpo": {"kind": "grpo", "group_size": 2 * group},
                   "agon": {"kind": "pair", "group_size": group, "mode": "adv", "exchange": "visible",
                            "roles": "rotate"}}
        adapters = None
        for name, method in methods.items():
            (tmp / name).mkdir()
            results[name], cell = train(spec, method, train_cfg, sampling, problems, args.steps, tmp / name)
            adapters = cell if name == "agon" else adapters
            r = results[name]
            log(f"{name}: {r['steps']} steps in {r['seconds']:.1f} s; sampling {r['sampling_tokens_per_s']:.0f} tok/s "
                f"({r['sampled_tokens']} tokens); loss {r['loss_tokens_per_s']:.0f} tok/s ({r['loss_tokens']} tokens, "
                f"{r['streams_with_a_loss']} streams); peak GPU memory {r['peak_gpu_mib'] or 0:.0f} MiB")
            if r["streams_with_a_loss"] == 0:
                log(f"device check: {name} ran no loss (every group had one reward)")
                return 1
        results["evaluate"] = evaluate(spec, adapters, problems[:per_step], {**sampling, "temperature": 0.6})
        r = results["evaluate"]
        log(f"evaluate: cascade A->B and single B on {r['cascade']['problems']} problems in {r['seconds']:.1f} s; "
            f"sampling {r['sampling_tokens_per_s']:.0f} tok/s; peak GPU memory {r['peak_gpu_mib'] or 0:.0f} MiB")
    if not args.no_benchmark:
        log("loss-memory benchmark (benchmarks/loss_memory.py) at the same width, vocabulary and dtype:")
        bench = [sys.executable, str(ROOT / "benchmarks" / "loss_memory.py"), f"--device={DEVICE}",
                 f"--vocab={arch['vocab_size']}", f"--hidden={arch['hidden_size']}", f"--layers={layers}",
                 f"--heads={arch['num_attention_heads']}", f"--kv-heads={arch['num_key_value_heads']}",
                 f"--head-dim={arch['head_dim']}", f"--intermediate={arch['intermediate_size']}", f"--dtype={dtype}"]
        bench += (["--prompt=8", "--completion=8", "--budget=64"] if args.tiny
                  else ["--prompt=512", "--completion=1536", "--budget=16384"])
        done = subprocess.run(bench, env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "src")})
        if done.returncode != 0:
            return done.returncode
    log("# results " + json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
