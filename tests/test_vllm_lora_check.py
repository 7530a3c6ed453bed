"""The adapter check's worker method on a stand-in of vLLM's LoRA manager: a module counts as
applied exactly when the manager's own resolver (`_get_lora_layer_weights`, what vLLM's
`activate_adapter` asks for each wrapped module) hands its weights to some wrapped module.
The real engine runs it in tests/real_engine/test_families_vllm.py."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import pytest

from agon.vllm_lora_check import LoraCheck

WRAPPED = ["language_model.model.layers.0.self_attn.qkv_proj", "language_model.model.layers.0.mlp.down_proj"]


def _packed(*parts):
    return SimpleNamespace(lora_a=list(parts))


def _worker(loras: dict, text_fallback: bool, monkeypatch) -> LoraCheck:
    """A worker whose manager resolves names as vLLM 0.32.0 does (full name only) or, with
    `text_fallback`, as 0.33.0 also does (a multimodal model's text-only name)."""
    monkeypatch.setitem(sys.modules, "vllm.lora.request",
                        types.SimpleNamespace(LoRARequest=lambda **kw: SimpleNamespace(**kw)))
    adapter = SimpleNamespace(loras=loras)

    def resolve(lora_model, module_name):
        if module_name in lora_model.loras:
            return lora_model.loras[module_name]
        text = module_name.removeprefix("language_model.")
        return lora_model.loras.get(text) if text_fallback else None

    manager = SimpleNamespace(get_adapter=lambda i: adapter, modules={m: object() for m in WRAPPED},
                              _get_lora_layer_weights=resolve)
    worker = LoraCheck()
    worker.model_runner = SimpleNamespace(add_lora=lambda request: None,
                                          lora_manager=SimpleNamespace(_adapter_manager=manager))
    return worker


@pytest.mark.parametrize("text_fallback", [False, True])
def test_modules_in_the_checkpoints_names_are_applied_in_either_version(monkeypatch, text_fallback):
    loras = {WRAPPED[0]: _packed("q", "k", "v"), WRAPPED[1]: _packed("down")}
    out = _worker(loras, text_fallback, monkeypatch).agon_unapplied_lora_modules("a", 1, "/x")
    assert out == {"unapplied": [], "applied": 4}


def test_text_only_names_are_skipped_by_0_32_and_applied_by_0_33(monkeypatch):
    text_only = {"model.layers.0.self_attn.qkv_proj": _packed("q", None, "v"),
                 "model.layers.0.mlp.down_proj": _packed("down")}
    old = _worker(dict(text_only), False, monkeypatch).agon_unapplied_lora_modules("a", 1, "/x")
    assert old == {"unapplied": sorted(text_only), "applied": 0}
    new = _worker(dict(text_only), True, monkeypatch).agon_unapplied_lora_modules("a", 1, "/x")
    assert new == {"unapplied": [], "applied": 3}  # a packed part the adapter lacks is not counted


def test_a_module_no_wrapped_layer_asks_for_is_reported(monkeypatch):
    loras = {WRAPPED[0]: _packed("q"), "language_model.model.layer.1.mlp.down_proj": _packed("down")}
    out = _worker(loras, True, monkeypatch).agon_unapplied_lora_modules("a", 1, "/x")
    assert out == {"unapplied": ["language_model.model.layer.1.mlp.down_proj"], "applied": 1}


def test_a_manager_laid_out_otherwise_raises(monkeypatch):
    worker = _worker({}, False, monkeypatch)
    del worker.model_runner.lora_manager._adapter_manager._get_lora_layer_weights
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(__version__="9.9"))
    with pytest.raises(RuntimeError, match="cannot read vLLM 9.9's LoRA manager"):
        worker.agon_unapplied_lora_modules("a", 1, "/x")
