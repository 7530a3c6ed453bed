"""The module names a saved LoRA adapter carries: the base checkpoint's own names.

The trainer wraps the model transformers builds, which is not always the checkpoint's
architecture. Qwen3.5's hub checkpoint is a `Qwen3_5ForConditionalGeneration` (weights under
`model.language_model.layers.N`); `AutoModelForCausalLM` builds the text-only
`Qwen3_5ForCausalLM` and renames the weights on load (transformers 5.20.2,
conversion_mapping.py: a `PrefixChange` for `qwen3_5_text`), so peft's keys read
`base_model.model.model.layers.N...`.

vLLM loads the checkpoint's architecture and reads an adapter's keys the way it reads the
checkpoint's weights: `parse_fine_tuned_lora_name` strips `base_model.model.`, applies the
architecture's `hf_to_vllm_mapper` (its renames only: `get_rename_mapper()`), and the LoRA
manager then looks the result up among its wrapped modules by exact name, packed ones
(`qkv_proj`, `gate_up_proj`, `in_proj_qkvz`, ...) through `packed_modules_mapping`
(vllm 0.32.0 and 0.33.0: lora/worker_manager.py `_load_adapter`, lora/utils.py
`parse_fine_tuned_lora_name`, lora/model_manager.py `activate_adapter`). Those mappers are
written for checkpoint names: Qwen3_5ForConditionalGeneration maps `model.language_model.`
to `language_model.model.` (through Qwen3VLForConditionalGeneration's mapper in both
versions), the text-only Qwen3_5ForCausalLM and Gemma4ForCausalLM map it to `model.`. A key in
the text-only naming matches no module of the multimodal class, and vLLM 0.32 skips it with a
DEBUG line: the adapter is not applied and nothing says so (0.33 retries such a key under the
text-only name, `_get_text_lora_name`).

So adapters are written with the names the checkpoint has, which every vLLM mapper is made to
read. The renaming is transformers' own: `revert_weight_conversion`, what `save_pretrained`
uses to write a model back in its checkpoint's names. peft 0.21.2 applies the forward
conversion when it loads such an adapter into the text-only model
(utils/save_and_load.py, `convert_peft_adapter_state_dict_for_transformers`), so the
transformers path reads the same files. Whether vLLM applied every saved module is checked on
the engine itself (vllm_lora_check.py).
"""

from __future__ import annotations

from typing import Iterable

PEFT_PREFIX = "base_model.model."


def checkpoint_module_names(model, modules: Iterable[str]) -> dict[str, str]:
    """{module path in `model` (the plain base transformers built): that module's path in the
    checkpoint the model was loaded from}. Raises where transformers converts the module's
    weight into another shape (a fused or split tensor): a LoRA on it could not be renamed."""
    import torch
    from transformers.core_model_loading import revert_weight_conversion

    names = {}
    for module in modules:
        reverted = list(revert_weight_conversion(model, {f"{module}.weight": torch.empty(0)}))
        if len(reverted) != 1 or not reverted[0].endswith(".weight"):
            raise ValueError(f"transformers converts the weight of {module!r} when it saves the checkpoint "
                             f"({reverted}): its LoRA cannot be written under the checkpoint's names")
        names[module] = reverted[0].removesuffix(".weight")
    return names


def adapter_module(key: str) -> str:
    """The module a peft adapter tensor key belongs to (`base_model.model.X.lora_A.weight` -> `X`)."""
    return key.removeprefix(PEFT_PREFIX).split(".lora_", 1)[0]


def rename_adapter_state(state: dict, names: dict[str, str]) -> dict:
    """A peft adapter state dict with each module path replaced by its checkpoint name."""
    out = {}
    for key, tensor in state.items():
        module = adapter_module(key)
        if module not in names:
            raise KeyError(f"adapter tensor {key!r}: module {module!r} has no checkpoint name")
        out[PEFT_PREFIX + names[module] + key.removeprefix(PEFT_PREFIX)[len(module):]] = tensor
    return out


def vllm_unserved_targets(config: dict, target_modules) -> list[str]:
    """Trained projections vLLM leaves out where the base shares one projection between two roles.

    Gemma-4's `attention_k_eq_v` (transformers 5.20.2 Gemma4TextAttention: full-attention layers
    have no v_proj and take V from k_proj's output, LoRA included); vLLM 0.32.0 and 0.33.0
    (model_executor/models/gemma4.py, `_gemma4_layer_weights_mapper`) loads that k_proj weight
    into both the K and the V slice of its fused qkv_proj, but an adapter's k_proj LoRA goes to
    the K slice only: V would be served without the trained update. The real gemma-4-E4B sets
    it false (transformers' convert_gemma4_weights.py variants); the 26B and 31B set it."""
    text = config.get("text_config") or config
    targets = target_modules if isinstance(target_modules, str) else " ".join(target_modules)
    if text.get("attention_k_eq_v") and "k_proj" in targets:
        return ["k_proj (as V of the attention_k_eq_v full-attention layers)"]
    return []
