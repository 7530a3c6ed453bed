"""Saved adapters name their modules as the base checkpoint does (agon.adapter_names), the
names vLLM's mappers read; the transformers path loads them back onto its own modules.

Qwen3.5's checkpoint is a ForConditionalGeneration (`model.language_model.layers.N`) and the
trainer's model the text-only ForCausalLM (`model.layers.N`): peft's own keys would name no
module of the checkpoint, and vLLM 0.32 served such an adapter as the bare base."""

from __future__ import annotations

import pytest
import torch
from safetensors import safe_open

from agon.models import LoraPolicies, load_adapters, load_base

from tiny_families import FAMILIES

PROBE = torch.tensor([[5, 6, 7, 8, 9, 10, 11]])


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request, tmp_path_factory):
    build, targets = FAMILIES[request.param]
    return request.param, build(tmp_path_factory.mktemp(request.param.replace(".", "_"))), targets


def _keys(path):
    with safe_open(str(path), "pt") as f:
        return set(f.keys())


def test_every_saved_module_is_a_module_of_the_checkpoint(family, tmp_path):
    name, base_dir, targets = family
    base, _ = load_base(str(base_dir))
    policies = LoraPolicies(base, ("A", "B"), {"rank": 4, "alpha": 8, "target_modules": targets}, {"A": 0.3}, seed=0)
    policies.save("A", tmp_path / "A")
    checkpoint = _keys(base_dir / "model.safetensors")
    saved = {k.removeprefix("base_model.model.").split(".lora_")[0] for k in _keys(tmp_path / "A" / "adapter_model.safetensors")}
    assert saved and not [m for m in saved if f"{m}.weight" not in checkpoint]
    assert all(".language_model.layers." in m for m in saved), name
    if name == "qwen3.5":
        assert type(base).__name__ == "Qwen3_5ForCausalLM" and len(saved) == 31  # 3 linear + 1 full layer


def test_the_transformers_path_loads_the_saved_adapter_onto_its_own_modules(family, tmp_path):
    _, base_dir, targets = family
    base, _ = load_base(str(base_dir))
    policies = LoraPolicies(base, ("A", "B"), {"rank": 4, "alpha": 8, "target_modules": targets}, {"A": 0.3}, seed=0)
    policies.save("A", tmp_path / "A")
    with torch.no_grad(), policies.use("A") as m:
        live = m(input_ids=PROBE).logits
    loaded = load_adapters(load_base(str(base_dir))[0], {"A": str(tmp_path / "A")})
    loaded.base_model.set_adapter("A")
    with torch.no_grad():
        again = loaded(input_ids=PROBE).logits
        with loaded.disable_adapter():
            bare = loaded(input_ids=PROBE).logits
    torch.testing.assert_close(again, live)
    assert not torch.allclose(bare, live)


def test_an_adapter_that_fits_no_module_is_refused_by_the_transformers_path(family, tmp_path):
    from safetensors.torch import load_file, save_file

    _, base_dir, targets = family
    base, _ = load_base(str(base_dir))
    policies = LoraPolicies(base, ("A",), {"rank": 4, "alpha": 8, "target_modules": targets}, {"A": 0.3}, seed=0)
    policies.save("A", tmp_path / "A")
    file = tmp_path / "A" / "adapter_model.safetensors"
    state = load_file(file)
    save_file({k.replace(".layers.0.", ".layers.9."): v for k, v in state.items()}, file)
    with pytest.raises(ValueError, match="layers.9"):
        load_adapters(load_base(str(base_dir))[0], {"A": str(tmp_path / "A")})
