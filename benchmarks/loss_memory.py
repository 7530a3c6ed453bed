"""Peak memory of one loss pass (forward + backward of a stream), micro-batched against one pass.

    python benchmarks/loss_memory.py [--vocab 16384] [--prompt 64] [--completion 192] [--budget 2048]
        [--hidden 256 --layers 2 --heads 4 --kv-heads 2 --head-dim 64 --intermediate 512]
        [--dtype float32|bfloat16] [--device auto|cpu|cuda]

(scripts/device_check.sh runs it at Qwen3-0.6B's width and vocabulary, in bf16, on CUDA.)

For streams of 16, 64 and 128 rollouts, each pass runs in a fresh subprocess on a randomly
initialised Qwen3-architecture model with LoRA (peft), and the peak is read there: the
process's peak resident memory on CPU (getrusage; the baseline of an idle model is printed
and subtracted), torch.cuda.max_memory_allocated on CUDA. "one pass" is the former loss
(every position's full-vocabulary logits of the whole stream at once, tests/test_loss_micro_batch.py
keeps it as the reference); "micro-batched" is agon.rl.logprobs' pass at a fixed
train.loss_micro_batch_tokens. The goal: micro-batched peaks flat (within 10%) across stream sizes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(args) -> None:
    import resource

    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "tests"))
    from agon.generate import Completion
    from agon.models import LoraPolicies
    from agon.rl import logprobs
    from agon.rl.loss import policy_loss
    from reference_loss import one_pass_logps

    from agon import precision

    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    torch.set_num_threads(2)
    config = Qwen3Config(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.kv_heads, head_dim=args.head_dim, tie_word_embeddings=True)
    model = Qwen3ForCausalLM(config).to(device=device, dtype=getattr(torch, args.dtype))
    # bf16 weights compute under bf16 autocast, as a job with precision bf16 does
    autocast = precision.autocast("bf16" if args.dtype == "bfloat16" else "fp32", device)
    for p in model.parameters():
        p.requires_grad_(False)
    policies = LoraPolicies(model, ("A",), {"rank": 8, "alpha": 16, "target_modules": ["q_proj", "v_proj"]},
                            {"A": 0.001}, seed=0)
    g = torch.Generator().manual_seed(1)
    completions = [Completion("", "", torch.randint(0, args.vocab, (args.prompt,), generator=g).tolist(),
                              torch.randint(0, args.vocab, (args.completion,), generator=g).tolist(), False)
                   for _ in range(args.rollouts)]
    advantages = torch.randn(args.rollouts, generator=g).to(device)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()  # the model and its adapter: not the pass's
    else:
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with policies.use("A") as m, autocast:
        if args.mode == "one-pass":
            logp, mask = one_pass_logps(m, completions, 1.0, 0)
            policy_loss(logp, logp.detach(), advantages, mask.to(device), "dapo").backward()
        else:
            for group in logprobs.micro_batches(completions, args.budget):
                logp, mask = logprobs.sequence_logps(m, [completions[i] for i in group], 1.0, 0)
                policy_loss(logp, logp.detach(), advantages[group], mask, "dapo").backward()
    peak = (torch.cuda.max_memory_allocated() if device == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024) - base
    print(json.dumps({"peak_mib": peak / 2**20, "device": device}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--completion", type=int, default=192)
    parser.add_argument("--budget", type=int, default=2048, help="train.loss_micro_batch_tokens")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--intermediate", type=int, default=512)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="micro")
    parser.add_argument("--rollouts", type=int, default=16)
    args = parser.parse_args()
    if args.child:
        return child(args)
    print(f"vocab {args.vocab}, hidden {args.hidden} x {args.layers} layers, {args.dtype}, rows of {args.prompt} "
          f"prompt + {args.completion} completion tokens, micro-batch {args.budget} tokens; peak memory of one "
          "loss pass (MiB, above the loaded model):")
    print(f"{'rollouts':>8} {'one pass':>10} {'micro-batched':>14} {'ratio':>7}")
    for rollouts in (16, 64, 128):
        peaks = {}
        for mode in ("one-pass", "micro"):
            shared = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()
                      if k not in ("child", "mode", "rollouts")]
            out = subprocess.run([sys.executable, __file__, "--child", "--mode", mode, "--rollouts", str(rollouts),
                                  *shared], capture_output=True, text=True)
            # a pass the machine cannot hold is killed (out of memory): reported, not fatal
            peaks[mode] = (json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"] if out.returncode == 0
                           else None)
        shown = [f"{v:.0f}" if v is not None else "killed" for v in (peaks["one-pass"], peaks["micro"])]
        ratio = (f"{peaks['one-pass'] / max(peaks['micro'], 1e-9):.1f}x"
                 if None not in (peaks["one-pass"], peaks["micro"]) else "-")
        print(f"{rollouts:>8} {shown[0]:>10} {shown[1]:>14} {ratio:>7}", flush=True)
        if out.returncode != 0 and peaks["micro"] is None:
            print(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}")


if __name__ == "__main__":
    main()
