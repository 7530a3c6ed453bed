"""Base models and the LoRA pair on one frozen base.

Two named peft adapters ("A" and "B") live on ONE frozen base in one process.
Each has its own parameters, optimizer and schedule; `use(name)` selects
which adapter a forward pass or generation goes through.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

ADAPTERS = ("A", "B")


DTYPES = ("float32", "bfloat16", "float16")


def load_base(path: str, dtype: str = "float32"):
    """A base model + tokenizer from a local directory (toy base, a hub snapshot, a converted GGUF).

    `dtype` is the model's config key (float32 | bfloat16 | float16).
    """
    from transformers import AutoModelForCausalLM

    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r} for the base model (known: {', '.join(DTYPES)})")
    tokenizer = load_tokenizer(path)
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=getattr(torch, dtype))
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, tokenizer


def load_tokenizer(path: str):
    """The base directory's tokenizer, left-padding (for batched generation), with a pad token."""
    from transformers import AutoTokenizer

    path = str(path)
    if not Path(path).exists():
        raise FileNotFoundError(f"base model directory {path!r} does not exist")
    if not (Path(path) / "config.json").exists():
        raise FileNotFoundError(f"base model directory {path!r} has no config.json (not a transformers model)")
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_for_job(spec: dict, weights: bool = True):
    """(base, tokenizer, PromptFormat) of a train/evaluate/curve job's spec.

    `weights=False` skips the model (base is None): a job that samples with vLLM
    needs only the tokenizer and the prompt format here; the engine loads the weights.
    """
    from .prompts import PromptFormat

    if not weights:
        tokenizer = load_tokenizer(spec["base_path"])
        return None, tokenizer, PromptFormat(spec["prompt_style"], tokenizer, thinking=spec.get("thinking"))
    base, tokenizer = load_base(spec["base_path"], spec.get("dtype", "float32"))
    if spec.get("attn_implementation"):
        # `eager` beats SDPA on CPU for the toy model's short sequences (benchmarks/train_speed.py)
        base.set_attn_implementation(spec["attn_implementation"])
    return base, tokenizer, PromptFormat(spec["prompt_style"], tokenizer, thinking=spec.get("thinking"))


def lora_config(lora: dict):
    from peft import LoraConfig

    return LoraConfig(
        r=lora["rank"],
        lora_alpha=lora["alpha"],
        lora_dropout=0.0,
        target_modules=lora["target_modules"],
        task_type="CAUSAL_LM",
    )


def add_noise_init(model, adapter: str, sigma: float, seed: int) -> None:
    """Paper's adapter-A init: the update starts at small Gaussian noise, not exactly zero.

    Standard LoRA init leaves lora_B = 0 (so the update B@A is 0); we draw lora_B
    from N(0, sigma^2) instead, which makes the initial update small but non-zero.
    """
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if f"lora_B.{adapter}." in name:
                param.copy_(torch.randn(param.shape, generator=gen) * sigma)


class LoraPolicies:
    """One frozen base with named LoRA adapters, each trainable on its own."""

    def __init__(self, base, names: tuple[str, ...], lora: dict, init: dict[str, float], seed: int):
        from peft import get_peft_model

        torch.manual_seed(seed)
        config = lora_config(lora)
        self.names = names
        self.model = get_peft_model(base, config, adapter_name=names[0])
        for name in names[1:]:
            self.model.add_adapter(name, config)
        for i, name in enumerate(names):
            if init.get(name, 0.0) > 0:
                add_noise_init(self.model, name, init[name], seed + 1000 + i)
        # Every adapter's parameters stay trainable; peft's set_adapter would
        # freeze the inactive ones, so we select adapters without it.
        for pname, param in self.model.named_parameters():
            param.requires_grad_("lora_" in pname)

    def parameters(self, name: str) -> list[torch.nn.Parameter]:
        return [p for n, p in self.model.named_parameters() if f".{name}." in n and "lora_" in n]

    @contextlib.contextmanager
    def use(self, name: str | None):
        """Route forward passes through adapter `name` (None: the bare base)."""
        if name is None:
            with self.model.disable_adapter():
                yield self.model
            return
        self.model.base_model.set_adapter(name)
        # base_model.set_adapter marks only the active adapter trainable; restore.
        for pname, param in self.model.named_parameters():
            param.requires_grad_("lora_" in pname)
        yield self.model

    def save(self, name: str, directory: str | Path) -> None:
        from peft import get_peft_model_state_dict
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = get_peft_model_state_dict(self.model, adapter_name=name)
        save_file({k: v.contiguous() for k, v in state.items()}, directory / "adapter_model.safetensors")
        self.model.peft_config[name].save_pretrained(str(directory))

    def state_dict(self, name: str) -> dict[str, torch.Tensor]:
        from peft import get_peft_model_state_dict

        return {k: v.clone() for k, v in get_peft_model_state_dict(self.model, adapter_name=name).items()}

    def load_state_dict(self, name: str, state: dict[str, torch.Tensor]) -> None:
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(self.model, state, adapter_name=name)


def load_adapters(base, adapter_dirs: dict[str, str]):
    """A PeftModel over `base` with each saved adapter loaded under its name."""
    from peft import PeftModel

    items = list(adapter_dirs.items())
    for name, d in items:
        if not (Path(d) / "adapter_model.safetensors").exists():
            raise FileNotFoundError(f"adapter {name!r}: no adapter_model.safetensors in {d!r}")
    model = PeftModel.from_pretrained(base, items[0][1], adapter_name=items[0][0])
    for name, d in items[1:]:
        model.load_adapter(d, adapter_name=name)
    model.eval()
    return model
