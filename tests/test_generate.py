"""The transformers backend samples from merged per-adapter copies that match the live adapters."""

import os

import pytest
import torch

from agon import precision
from agon.generate import TransformersBackend
from agon.models import LoraPolicies
from agon.toy import sft
from agon.toy.tokenizer import build_tokenizer

ARCH = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1,
        "intermediate_size": 64, "max_positions": 128}
LORA = {"rank": 4, "alpha": 8, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj",
                                                  "gate_proj", "up_proj", "down_proj"]}
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 12}


@pytest.fixture
def policies():
    torch.manual_seed(0)
    tok = build_tokenizer()
    base = sft.build_model(ARCH, tok).eval()
    pol = LoraPolicies(base, ("A", "B"), LORA, {"A": 0.0}, seed=0)
    # Both adapters far from zero, and different, so every comparison below can fail.
    with torch.no_grad():
        for name, p in pol.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.3)
    return pol, tok


def _ids(tok):
    return tok(["Q: 3*4+5*6\n"], return_tensors="pt", add_special_tokens=False)["input_ids"]


def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_merged_copies_match_live_adapters_and_bare_base(policies):
    pol, tok = policies
    backend = TransformersBackend(pol.model, tok)
    ids = _ids(tok)
    for name in ("A", "B"):
        with pol.use(name) as live:
            expected = _logits(live, ids)
        torch.testing.assert_close(_logits(backend.model_for(name), ids), expected, atol=1e-5, rtol=1e-5)
    with pol.use(None) as bare:
        torch.testing.assert_close(_logits(backend.model_for(None), ids), _logits(bare, ids))
    assert not torch.allclose(_logits(backend.model_for("A"), ids), _logits(backend.model_for("B"), ids))


def test_sync_picks_up_new_weights_and_never_touches_the_trained_model(policies):
    pol, tok = policies
    backend = TransformersBackend(pol.model, tok)
    ids = _ids(tok)
    base_before = {n: p.clone() for n, p in pol.model.named_parameters() if "lora_" not in n}
    old = _logits(backend.model_for("A"), ids)
    with torch.no_grad():
        for p in pol.parameters("A"):
            p.add_(0.5)
    assert torch.equal(_logits(backend.model_for("A"), ids), old)  # stale until synced: the contract
    backend.sync(pol)
    with pol.use("A") as live:
        torch.testing.assert_close(_logits(backend.model_for("A"), ids), _logits(live, ids),
                                   atol=1e-5, rtol=1e-5)
    for n, p in pol.model.named_parameters():
        if "lora_" not in n:
            assert torch.equal(p, base_before[n]), n


def test_sampling_is_seeded_and_adapter_specific(policies):
    pol, tok = policies
    backend = TransformersBackend(pol.model, tok)
    prompts = ["Q: 2*3+4\n"] * 4
    a1 = [c.text for c in backend.sample("A", prompts, SAMPLING, seed=5)]
    a2 = [c.text for c in backend.sample("A", prompts, SAMPLING, seed=5)]
    b = [c.text for c in backend.sample("B", prompts, SAMPLING, seed=5)]
    assert a1 == a2 and a1 != b
    with pytest.raises(ValueError, match="unknown adapter 'C'"):
        backend.sample("C", prompts, SAMPLING, seed=5)


def test_bf16_copies_stay_close_to_fp32(policies):
    pol, tok = policies
    ids = _ids(tok)
    fp32 = _logits(TransformersBackend(pol.model, tok).model_for("A"), ids)
    bf16 = _logits(TransformersBackend(pol.model, tok, torch.bfloat16).model_for("A"), ids).float()
    assert bf16.dtype == torch.float32 and (bf16 - fp32).abs().max() < 0.1 * fp32.abs().max()


@pytest.mark.parametrize("bf16, amx, expected", [(False, False, "fp32"), (True, False, "bf16"),
                                                  (False, True, "bf16"), (True, True, "bf16")])
def test_auto_reads_the_x86_cpu_flags_not_onednn(monkeypatch, bf16, amx, expected):
    # oneDNN's own probe says yes on any AVX512 CPU, where it only emulates bf16
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert precision.resolve("auto") == expected


def test_precision_names():
    assert precision.resolve("fp32") == "fp32" and precision.resolve("bf16") == "bf16"
    assert precision.resolve("auto") == ("bf16" if precision.hardware_bf16() else "fp32")
    with pytest.raises(ValueError, match="precision: 'half'"):
        precision.resolve("half")
    with precision.autocast("fp32"):
        assert not torch.is_autocast_enabled("cpu")
    with precision.autocast("bf16"):
        assert torch.is_autocast_enabled("cpu")


def test_a_bf16_cpu_job_keeps_few_onednn_kernels_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", raising=False)
    for resolved, device in (("fp32", "cpu"), ("bf16", "cuda")):
        precision.limit_cpu_kernel_cache(resolved, device)
        assert "ONEDNN_PRIMITIVE_CACHE_CAPACITY" not in os.environ
    precision.limit_cpu_kernel_cache("bf16", "cpu")
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == precision.ONEDNN_KERNELS_KEPT
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "512")  # the user's own value stays
    precision.limit_cpu_kernel_cache("bf16", "cpu")
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "512"


def test_backend_factory_follows_the_generation_section(policies):
    from agon.generate import make_backend

    pol, tok = policies
    assert isinstance(make_backend({}, pol.model, tok, "fp32"), TransformersBackend)
    assert make_backend({"generation": {"backend": "transformers"}}, pol.model, tok, "bf16").dtype == torch.bfloat16
    with pytest.raises(ValueError, match="generation.backend: unknown backend 'tgi'"):
        make_backend({"generation": {"backend": "tgi"}}, pol.model, tok, "fp32")
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="generation.backend: vllm"):
            make_backend({"generation": {"backend": "vllm"}, "base_path": "x", "train": {"lora": {"rank": 4}}},
                         pol.model, tok, "fp32")
