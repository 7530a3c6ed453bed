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


# tokenizer_config.json classes that are tokenizers' own fast tokenizer (the toy tokenizer's):
# AutoTokenizer would resolve them to this same class, but importing it costs seconds more
# (docs/measurements.md, "Where the time goes").
_PLAIN_FAST_TOKENIZERS = {"TokenizersBackend", "PreTrainedTokenizerFast"}


def load_tokenizer(path: str):
    """The base directory's tokenizer, left-padding (for batched generation), with a pad token."""
    import json

    path = str(path)
    read_config(path)  # a model directory, or an error that says what is missing
    settings = Path(path) / "tokenizer_config.json"
    declared = json.loads(settings.read_text()).get("tokenizer_class") if settings.exists() else None
    if declared in _PLAIN_FAST_TOKENIZERS:
        from transformers import PreTrainedTokenizerFast as Loader
    else:
        from transformers import AutoTokenizer as Loader
    tokenizer = Loader.from_pretrained(path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def stop_token_ids(tokenizer, base_path: str | Path | None = None, model=None) -> tuple[int, ...]:
    """Every token id that ends a completion, sorted: the tokenizer's eos and the eos ids of the
    model's generation config (`model.generation_config`, else the base directory's
    generation_config.json), an int or a list there.

    The two differ in the paper's models: Qwen3's tokenizer ends on `<|im_end|>` and its
    generation config adds `<|endoftext|>`; Gemma-4's adds its end of turn, `<turn|>`. vLLM
    (0.33, `SamplingParams.update_from_generation_config`) stops on the generation config's ids
    as well, so every backend stops on, and cuts off, this same set.
    """
    ids = set() if tokenizer.eos_token_id is None else {int(tokenizer.eos_token_id)}
    configured = None
    if model is not None and getattr(model, "generation_config", None) is not None:
        configured = model.generation_config.eos_token_id
    elif base_path is not None and (Path(base_path) / "generation_config.json").exists():
        import json

        configured = json.loads((Path(base_path) / "generation_config.json").read_text()).get("eos_token_id")
    if configured is not None:
        ids |= {int(configured)} if isinstance(configured, int) else {int(i) for i in configured}
    if not ids:
        raise ValueError("neither the tokenizer nor the generation config names an eos token: "
                         "completions could never stop")
    return tuple(sorted(ids))


def base_dtype(spec: dict) -> str:
    """The dtype a job's base weights are held in (`models.<m>.dtype`, default float32)."""
    return spec.get("dtype", "float32")


def load_for_job(spec: dict, weights: bool = True, device: str = "cpu"):
    """(base, tokenizer, PromptFormat) of a train/evaluate/curve job's spec, the base on `device`.

    `weights=False` skips the model (base is None): a job that samples with vLLM or
    the compact sampler's saved-file path needs only the tokenizer and the prompt
    format here; the backend loads the weights.
    """
    from .prompts import PromptFormat

    if not weights:
        tokenizer = load_tokenizer(spec["base_path"])
        return None, tokenizer, PromptFormat(spec["prompt_style"], tokenizer, thinking=spec.get("thinking"))
    base, tokenizer = load_base(spec["base_path"], base_dtype(spec))
    base.to(device)  # LoRA layers peft adds later are made on their base layer's device
    if spec.get("attn_implementation"):
        # `eager` beats SDPA on CPU for the toy model's short sequences (benchmarks/train_speed.py)
        base.set_attn_implementation(spec["attn_implementation"])
    return base, tokenizer, PromptFormat(spec["prompt_style"], tokenizer, thinking=spec.get("thinking"))


def lora_targets(model, names: list[str]):
    r"""peft's `target_modules` for the module names `names` on `model`.

    A plain causal LM gets the names as they are. A model with other towers beside its
    language model gets a pattern that keeps LoRA inside the language model: for Gemma-4,
    transformers' AutoModelForCausalLM builds Gemma4ForConditionalGeneration, whose vision
    and audio encoders hold `q_proj`, ... as Gemma4ClippableLinear, which peft refuses
    ("Target module ... is not supported"). The pattern has the form of peft's own default
    for gemma4 (peft 0.21.2, utils/constants.py: r".*language_model\..*\.(q_proj|v_proj)"),
    fully matched against each module's path.
    """
    if model is None or not any(".language_model." in f".{path}." for path, _ in model.named_modules()):
        return list(names)
    import re

    return r".*language_model\..*\.(" + "|".join(re.escape(n) for n in names) + ")"


def lora_config(lora: dict, model=None):
    from peft import LoraConfig

    return LoraConfig(
        r=lora["rank"],
        lora_alpha=lora["alpha"],
        lora_dropout=0.0,
        target_modules=lora_targets(model, lora["target_modules"]),
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


def lora_layers(peft_model) -> dict:
    """{module path in the plain base: peft LoRA layer} of a PeftModel."""
    from peft.tuners.lora import LoraLayer

    prefix = "base_model.model."
    return {name.removeprefix(prefix): module for name, module in peft_model.named_modules()
            if isinstance(module, LoraLayer)}


def merged_weight(layer, adapter: str) -> torch.Tensor:
    """A LoRA layer's base weight with `adapter`'s update added, as peft merges it (0.21.2:
    `get_delta_weight`, B @ A times the scaling), in the base weight's dtype; differentiable
    in the adapter. The one merge both the samplers' copies and the compact loss pass use."""
    return layer.get_base_layer().weight + layer.get_delta_weight(adapter)


class LoraPolicies:
    """One frozen base with named LoRA adapters, each trainable on its own."""

    def __init__(self, base, names: tuple[str, ...], lora: dict, init: dict[str, float], seed: int):
        from peft import get_peft_model

        torch.manual_seed(seed)
        config = lora_config(lora, base)
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
        self.model.eval()  # peft makes its LoRA modules in training mode; nothing here trains in it
        self._frozen_cast: dict[torch.dtype, dict[str, torch.Tensor]] = {}  # merged_weights' frozen part
        self._lora_layers = lora_layers(self.model)  # found once: merged_weights runs every loss micro-batch
        # saved adapters carry the checkpoint's module names, which vLLM reads (adapter_names.py)
        from .adapter_names import checkpoint_module_names

        self._saved_names = checkpoint_module_names(self.model.get_base_model(), self._lora_layers)

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

    def merged_weights(self, name: str | None, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        """The plain base's state-dict weights in `dtype` with adapter `name` merged (None: the
        bare base): the weights the samplers sample as `name`, merged and cast as they merge them
        (`merged_weight`), still differentiable in the adapter. The frozen weights are cast once
        and kept (they never change); a tied head is left out, as `save_pretrained` leaves it."""
        frozen = self._frozen_cast.get(dtype)
        if frozen is None:
            frozen = {pname.replace(".base_layer.", "."): p.detach().to(dtype)
                      for pname, p in self.model.get_base_model().named_parameters() if "lora_" not in pname}
            self._frozen_cast[dtype] = frozen
        if name is None:
            return dict(frozen)
        if name not in self.names:
            raise ValueError(f"unknown adapter {name!r}; known: {list(self.names)}")
        merged = {f"{path}.weight": merged_weight(layer, name).to(dtype)
                  for path, layer in self._lora_layers.items() if name in layer.lora_A}
        return {**frozen, **merged}

    def save(self, name: str, directory: str | Path) -> None:
        """Adapter `name` in peft's format, under the base checkpoint's module names
        (adapter_names.py: what vLLM applies; peft maps them back when it loads the files)."""
        from peft import get_peft_model_state_dict
        from safetensors.torch import save_file

        from .adapter_names import rename_adapter_state

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = rename_adapter_state(get_peft_model_state_dict(self.model, adapter_name=name), self._saved_names)
        save_file({k: v.contiguous() for k, v in state.items()}, directory / "adapter_model.safetensors")
        self.model.peft_config[name].save_pretrained(str(directory))

    def state_dict(self, name: str) -> dict[str, torch.Tensor]:
        from peft import get_peft_model_state_dict

        return {k: v.clone() for k, v in get_peft_model_state_dict(self.model, adapter_name=name).items()}

    def load_state_dict(self, name: str, state: dict[str, torch.Tensor]) -> None:
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(self.model, state, adapter_name=name)


def load_adapters(base, adapter_dirs: dict[str, str]):
    """A PeftModel over `base` with each saved adapter loaded under its name (`load_saved_adapter`)."""
    from peft import PeftConfig, get_peft_model

    model = None
    for name, d in adapter_dirs.items():
        if not (Path(d) / "adapter_model.safetensors").exists():
            raise FileNotFoundError(f"adapter {name!r}: no adapter_model.safetensors in {d!r}")
        config = PeftConfig.from_pretrained(str(d))
        config.inference_mode = True
        if model is None:
            model = get_peft_model(base, config, adapter_name=name)
        else:
            model.add_adapter(name, config)
        load_saved_adapter(model, name, d)
    model.eval()
    return model


def load_saved_adapter(model, name: str, directory: str | Path) -> None:
    """Set adapter `name` of the PeftModel `model` from a saved adapter directory.

    The files name modules as the base's checkpoint does (`LoraPolicies.save`); they are mapped
    back to the model's own paths here, as peft 0.21.2 does not undo transformers' renaming of a
    base loaded through another class (Qwen3.5's text-only model). Every saved tensor must land
    on a LoRA weight of `name`, and each of its LoRA weights must be given one: peft itself only
    warns about keys it cannot place, which would leave the adapter at its init."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    from .adapter_names import checkpoint_module_names, rename_adapter_state

    paths = [p for p, layer in lora_layers(model).items() if name in layer.lora_A]
    back = {saved: own for own, saved in checkpoint_module_names(model.get_base_model(), paths).items()}
    try:
        state = rename_adapter_state(load_file(Path(directory) / "adapter_model.safetensors"), back)
    except KeyError as e:
        raise ValueError(f"adapter {name!r} in {directory}: {e.args[0]}: not an adapter of this model") from None
    result = set_peft_model_state_dict(model, state, adapter_name=name)
    missing = [k for k in result.missing_keys if "lora_" in k and f".{name}." in k]
    if result.unexpected_keys or missing:
        raise ValueError(f"adapter {name!r} in {directory} does not fit the model: "
                         f"unexpected {list(result.unexpected_keys)[:3]}, no tensor for {missing[:3]}")


# ---------------------------------------------------------------- saved files, without transformers or peft
# The compact sampler's evaluation jobs read the base and the adapters straight from
# their files: importing transformers' models and peft costs more than a toy evaluation
# samples (docs/measurements.md, "Where the time goes"; tests/test_compact.py checks these
# weights are exactly those of the transformers + peft path).

def read_config(path: str | Path) -> dict:
    """A base model directory's config.json."""
    import json

    if not Path(path).exists():
        raise FileNotFoundError(f"base model directory {str(path)!r} does not exist")
    file = Path(path) / "config.json"
    if not file.exists():
        raise FileNotFoundError(f"base model directory {str(path)!r} has no config.json (not a transformers model)")
    return json.loads(file.read_text())


def read_weights(path: str | Path) -> dict[str, torch.Tensor]:
    """A base model directory's tensors (model.safetensors, or the shards its index lists), as stored."""
    import json

    from safetensors.torch import load_file

    path = Path(path)
    index = path / "model.safetensors.index.json"
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    elif (path / "model.safetensors").exists():
        shards = ["model.safetensors"]
    else:
        raise FileNotFoundError(f"base model directory {str(path)!r} has no model.safetensors (nor an index of shards)")
    weights: dict[str, torch.Tensor] = {}
    for shard in shards:
        weights.update(load_file(path / shard))
    return weights


def lora_delta(lora_A: torch.Tensor, lora_B: torch.Tensor, scaling: float) -> torch.Tensor:
    """A LoRA update of a Linear weight as peft's `Linear.get_delta_weight` computes it (fp32, no fan_in_fan_out)."""
    return (lora_B @ lora_A) * scaling


# adapter_config.json keys whose non-default values change the update beyond B @ A * alpha / r
_PLAIN_LORA = {"use_dora": False, "fan_in_fan_out": False, "bias": "none", "rank_pattern": {},
               "alpha_pattern": {}, "modules_to_save": None, "lora_bias": False}


def merge_saved_adapter(weights: dict[str, torch.Tensor], adapter_dir: str | Path) -> dict[str, torch.Tensor]:
    """`weights` (a base's, as `load_base` holds them) with a saved peft LoRA adapter merged in, as a new dict."""
    import json
    import math

    from safetensors.torch import load_file

    adapter_dir = Path(adapter_dir)
    config_file, tensors_file = adapter_dir / "adapter_config.json", adapter_dir / "adapter_model.safetensors"
    for f in (config_file, tensors_file):
        if not f.exists():
            raise FileNotFoundError(f"adapter {str(adapter_dir)!r}: no {f.name}")
    config = json.loads(config_file.read_text())
    if config.get("peft_type") != "LORA":
        raise ValueError(f"{config_file}: peft_type {config.get('peft_type')!r}, only LORA adapters can be merged")
    for key, plain in _PLAIN_LORA.items():
        if config.get(key, plain) not in (plain, None):
            raise ValueError(f"{config_file}: {key} = {config[key]!r} is not supported here (only plain LoRA)")
    r, alpha = config["r"], config["lora_alpha"]
    scaling = alpha / math.sqrt(r) if config.get("use_rslora") else alpha / r
    tensors = load_file(tensors_file)
    other = [k for k in tensors if not k.endswith((".lora_A.weight", ".lora_B.weight"))]
    if other:
        raise ValueError(f"{tensors_file}: tensors other than Linear LoRA A/B pairs, e.g. {other[0]!r}")
    a_keys = sorted(k for k in tensors if k.endswith(".lora_A.weight"))
    if 2 * len(a_keys) != len(tensors):
        raise ValueError(f"{tensors_file}: lora_A and lora_B tensors do not pair up")
    merged = dict(weights)
    prefix = "base_model.model."
    for key in a_keys:
        module = key.removeprefix(prefix).removesuffix(".lora_A.weight")
        b_key = key.replace(".lora_A.weight", ".lora_B.weight")
        if b_key not in tensors or f"{module}.weight" not in weights:
            raise ValueError(f"{tensors_file}: {key} has no matching lora_B or base weight {module}.weight")
        merged[f"{module}.weight"] = weights[f"{module}.weight"] + lora_delta(tensors[key], tensors[b_key], scaling)
    return merged
