"""The paper-scale path's GPU defects (issue 14), each fixed and tested where a CPU can run it:
device selection, gradient checkpointing, Gemma-4's LoRA targets, stop tokens, over-long
prompts, one engine per curve job, and the vLLM engine's sleep beside the trainer.
The CUDA branch runs in scripts/device_check.sh."""

import json
import sys
from pathlib import Path

import pytest
import torch

from agon import device as devices
from agon.generate import Completion, TransformersBackend, make_backend, skipped_completion
from agon.rl.trainer import Trainer
from test_loss_micro_batch import grads, stream
from test_trainer import AGON, SAMPLING, TRAIN, tiny_base  # noqa: F401  (the fixture)
from test_vllm_backend import LORA, _policies, base_dir, fake_vllm, tok  # noqa: F401  (fixtures)

from agon import vllm_backend as vb
from agon.prompts import PromptFormat


# --- device selection ---------------------------------------------------------------------

@pytest.mark.parametrize("spec, want", [
    ({}, "cuda" if torch.cuda.is_available() else "cpu"),          # auto, transformers
    ({"device": "auto", "generation": {"backend": "compact"}}, "cpu"),
    ({"device": "auto", "generation": {"backend": "vllm"}}, "cuda"),
    ({"device": "cpu"}, "cpu"),
    ({"device": "cuda"}, "cuda"),
])
def test_the_device_comes_from_the_config(spec, want):
    assert devices.resolve(spec) == want


def test_device_conflicts_and_an_oversized_memory_split_are_config_errors():
    base = {"train": {}, "generation": {"backend": "vllm", "gpu_memory_utilization": 0.35}}
    assert devices.config_problems(base) == []
    assert devices.config_problems({**base, "train": {"gpu_memory_fraction": 0.6}}) == []
    (problem,) = devices.config_problems({**base, "train": {"gpu_memory_fraction": 0.7}})
    assert "generation.gpu_memory_utilization 0.35 + train.gpu_memory_fraction 0.7" in problem
    asleep = {**base, "train": {"gpu_memory_fraction": 0.7},
              "generation": {**base["generation"], "sleep_during_loss": True}}
    assert devices.config_problems(asleep) == []
    # vLLM on a CPU: chosen explicitly, its KV cache sized in bytes, no sleep mode
    (problem,) = devices.config_problems({**base, "device": "cpu"})
    assert "needs generation.kv_cache_memory_bytes" in problem and "host's RAM" in problem
    on_cpu = {**base, "device": "cpu", "train": {"gpu_memory_fraction": 0.9},  # no GPU split on a CPU
              "generation": {**base["generation"], "kv_cache_memory_bytes": 1 << 26}}
    assert devices.config_problems(on_cpu) == []
    (problem,) = devices.config_problems({**on_cpu, "generation": {**on_cpu["generation"], "sleep_during_loss": True}})
    assert problem.startswith("generation.sleep_during_loss: true, but device: cpu") and "no sleep mode" in problem
    for bad in (0, -1, True, 1.5):
        (problem,) = devices.config_problems({**on_cpu, "generation": {**on_cpu["generation"],
                                                                        "kv_cache_memory_bytes": bad}})
        assert problem.startswith("generation.kv_cache_memory_bytes: ")
    assert "samples on the CPU only" in devices.config_problems(
        {"device": "cuda", "generation": {"backend": "compact"}})[0]
    # a model's own engine arguments are checked as its jobs get them, merged over the section
    overlaid = {**on_cpu, "models": {"toy": {"kind": "toy"},
                                     "qwen": {"generation": {"sleep_during_loss": True, "dtype": "bfloat16"}}}}
    (problem,) = devices.config_problems(overlaid)
    assert problem.startswith("models.qwen.generation (over generation): generation.sleep_during_loss: true")
    assert devices.config_problems({**on_cpu, "models": {"qwen": {"generation": {"dtype": "bfloat16"}}}}) == []
    with pytest.raises(ValueError, match="device: 'tpu'"):
        devices.resolve({"device": "tpu"})


def test_a_config_file_with_a_device_conflict_names_the_key(tmp_path):
    from agon import config as cfg

    text = Path("config/paper_cpu.yaml").read_text().replace("extends: paper.yaml", "extends: "
                                                             + str(Path("config/paper.yaml").resolve()))
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("  backend: transformers", "  backend: vllm"))
    with pytest.raises(cfg.ConfigError, match=r"bad.yaml:\d+: device: cpu with generation.backend vllm needs "
                                              r"generation.kv_cache_memory_bytes"):
        cfg.load(bad)
    bad.write_text(text.replace("  backend: transformers", "  backend: vllm\n  kv_cache_memory_bytes: 1048576\n"
                                "  sleep_during_loss: true"))
    with pytest.raises(cfg.ConfigError, match=r"bad.yaml:\d+: generation.sleep_during_loss: true, but device: cpu"):
        cfg.load(bad)
    bad.write_text(text.replace("  backend: transformers", "  backend: vllm\n  kv_cache_memory_bytes: 0"))
    with pytest.raises(cfg.ConfigError, match=r"kv_cache_memory_bytes"):
        cfg.load(bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU branch: this machine must have no GPU")
def test_a_cuda_job_without_a_gpu_stops_before_any_model_loads(tmp_path, capsys, monkeypatch):
    import transformers

    from agon import cli

    def refuse(*a, **k):
        raise AssertionError("a model was loaded before the GPU check")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)
    spec = {"device": "cuda", "threads": 1, "train": TRAIN, "base_path": str(tmp_path)}
    with pytest.raises(SystemExit) as stop:
        cli.main(["train", "--spec", json.dumps(spec), "--train", "x", "--out", str(tmp_path / "a"),
                  "--metrics", str(tmp_path / "m"), "--checkpoint-dir", str(tmp_path / "c")])
    assert stop.value.code == 2
    assert "train job" in capsys.readouterr().err

    # auto with the vLLM backend never falls back to vLLM on the CPU: it stops, and says how
    spec = {**spec, "device": "auto", "generation": {"backend": "vllm"}}
    with pytest.raises(SystemExit) as stop:
        cli.main(["train", "--spec", json.dumps(spec), "--train", "x", "--out", str(tmp_path / "a"),
                  "--metrics", str(tmp_path / "m"), "--checkpoint-dir", str(tmp_path / "c")])
    assert stop.value.code == 2
    assert "set device: cpu and generation.kv_cache_memory_bytes" in capsys.readouterr().err


def test_the_model_and_the_loss_live_on_the_configured_device(tiny_base):  # noqa: F811
    from agon.models import load_for_job

    spec = {"base_path": str(tiny_base), "prompt_style": "toy"}
    base, tok_, fmt = load_for_job(spec, device="cpu")
    trainer = Trainer(base, tok_, fmt, TRAIN, {"kind": "grpo", "group_size": 4}, SAMPLING, seed=3)
    completions, adv = stream(rows=4)
    with trainer.loss_pass("A") as micro_batch_loss:
        loss, mask, _ = micro_batch_loss(completions, adv)
    assert loss.device.type == mask.device.type == next(trainer.policies.model.parameters()).device.type == "cpu"


# --- gradient checkpointing -------------------------------------------------------------

def test_gradient_checkpointing_gives_the_same_gradient(tiny_base):  # noqa: F811
    from agon.models import load_base

    completions, adv = stream(rows=6)
    got = {}
    for checkpointing in (False, True):
        torch.manual_seed(0)
        base, tok_ = load_base(tiny_base)
        trainer = Trainer(base, tok_, PromptFormat("toy"), {**TRAIN, "gradient_checkpointing": checkpointing},
                          {"kind": "grpo", "group_size": 4}, SAMPLING, seed=3)
        calls = []
        for layer in trainer.checkpointed:  # count the checkpointed layer calls
            inner = layer._gradient_checkpointing_func
            layer._gradient_checkpointing_func = lambda *a, inner=inner, **k: calls.append(1) or inner(*a, **k)
        with trainer.loss_pass("A") as micro_batch_loss:
            loss, _, _ = micro_batch_loss(completions, adv)
            assert len(calls) == (len(trainer.checkpointed) if checkpointing else 0)
            loss.backward()
        got[checkpointing] = grads(trainer, "A")
        assert not any(m.training for m in trainer.policies.model.modules())  # eval mode throughout
    layers = [m for m in base.modules() if hasattr(m, "gradient_checkpointing")]
    assert layers and all(m.gradient_checkpointing for m in layers)  # the last base: checkpointed
    assert got[False] and set(got[False]) == set(got[True])
    for name in got[False]:
        torch.testing.assert_close(got[True][name], got[False][name], rtol=1e-5, atol=1e-7)


# --- Gemma-4: LoRA on the language model only ------------------------------------------

def tiny_gemma4():
    """A Gemma4ForConditionalGeneration (what AutoModelForCausalLM builds for gemma4) with
    vision and audio towers, at a few kilobytes."""
    from transformers import AutoModelForCausalLM, Gemma4Config

    text = {"vocab_size": 128, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "global_head_dim": 16,
            "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 128, "num_kv_shared_layers": 0,
            "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 16,
            "max_position_embeddings": 256}
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "num_key_value_heads": 2, "head_dim": 16, "global_head_dim": 16}
    audio = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2}
    config = Gemma4Config(text_config=text, vision_config=vision, audio_config=audio)
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config)


def test_gemma4_lora_stays_in_the_language_model():
    from agon.models import LoraPolicies, lora_targets

    model = tiny_gemma4()
    assert type(model).__name__ == "Gemma4ForConditionalGeneration"
    towers = [n for n, m in model.named_modules() if n.endswith("q_proj") and "language_model" not in n]
    assert towers, "the test model must have towers with q_proj of their own"
    lora = {"rank": 4, "alpha": 8, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                      "up_proj", "down_proj"]}
    assert isinstance(lora_targets(model, lora["target_modules"]), str)
    for p in model.parameters():
        p.requires_grad_(False)
    policies = LoraPolicies(model, ("A", "B"), lora, {"A": 0.01, "B": 0.0}, seed=0)
    adapted = {n.rsplit(".lora_A", 1)[0] for n, _ in policies.model.named_parameters() if ".lora_A.A." in n}
    assert adapted and all(".language_model." in n for n in adapted)
    assert len(adapted) == 2 * 7  # every projection of both decoder layers, nothing in the towers
    # the RL loss runs through it (logits only at completion positions)
    from agon.rl.logprobs import sequence_logps

    completions = [Completion("", "", [2, 5, 6, 7], [8, 9, 10], False), Completion("", "", [2, 5], [8], False)]
    with policies.use("A") as m:
        logp, mask = sequence_logps(m, completions, 1.0, 0)
    assert logp.shape == mask.shape == (2, 3) and torch.isfinite(logp).all()
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]


def test_a_plain_causal_lm_gets_the_names_as_they_are(tiny_base):  # noqa: F811
    from agon.models import load_base, lora_targets

    base, _ = load_base(tiny_base)
    assert lora_targets(base, ["q_proj", "v_proj"]) == ["q_proj", "v_proj"]


# --- stop tokens ---------------------------------------------------------------------------

def two_eos_base(tok, tiny_base, tmp_path):  # noqa: F811
    """The toy base with a generation config naming a second eos id, as Qwen3's and Gemma-4's do."""
    import shutil

    path = tmp_path / "two_eos"
    shutil.copytree(tiny_base, path)
    config = json.loads((path / "generation_config.json").read_text())
    second = tok.convert_tokens_to_ids("</answer>")
    config["eos_token_id"] = [tok.eos_token_id, second]
    (path / "generation_config.json").write_text(json.dumps(config))
    return path, second


def test_every_eos_of_the_generation_config_stops_and_is_cut(tok, tiny_base, tmp_path):  # noqa: F811
    from agon.models import load_base, stop_token_ids

    path, second = two_eos_base(tok, tiny_base, tmp_path)
    base, tok_ = load_base(path)
    assert stop_token_ids(tok_, path) == stop_token_ids(tok_, model=base) == tuple(sorted({tok_.eos_token_id,
                                                                                         second}))
    backend = TransformersBackend(base, tok_)
    # the toy's own prompt ("Q: 3+4=?"): without "=?" the trained base ends at once ("<think>0<eos>")
    prompt = PromptFormat("toy").plain({"id": "x", "prompt": "3+4=?"})
    out = backend.sample(None, [prompt] * 16, {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 60}, seed=0)
    ended = [c for c in out if c.completion_ids and c.completion_ids[-1] == second]
    assert ended, "the toy base writes </answer>: some completion must stop on it"
    for c in ended:
        assert not c.truncated and not c.text.endswith("</answer>")
        assert second not in c.completion_ids[:-1] and tok_.eos_token_id not in c.completion_ids
    # the compact sampler stops on the same set
    from agon.generate import CompactBackend

    compact = CompactBackend.from_saved(str(path), {}, tok_)
    assert compact.stop_ids == backend.stop_ids


def test_vllm_requests_carry_every_stop_id_and_completions_cut_the_one_that_ended(fake_vllm, tok, tiny_base,  # noqa: F811
                                                                                  tmp_path):
    from test_vllm_backend import _request_output

    path, second = two_eos_base(tok, tiny_base, tmp_path)
    backend = vb.VllmBackend(path, tok, LORA, {}, adapter_root=tmp_path / "root")
    backend.sample(None, ["Q: 1\n"], SAMPLING, seed=0)
    assert fake_vllm.calls[-1][1][0].stop_token_ids == sorted({tok.eos_token_id, second})
    body = tok("12", add_special_tokens=False)["input_ids"]
    out = vb.to_completion("p", _request_output([5], body + [second], "stop"), backend.eos_ids, tok)
    assert out.text == "12" and out.completion_ids == body + [second] and not out.truncated
    # a stop id vLLM names (stop_reason) that the caller did not list is cut as well
    raw = _request_output([5], body + [7], "stop")
    raw.outputs[0].stop_reason = 7
    assert vb.to_completion("p", raw, [tok.eos_token_id], tok).text == "12"
    backend.close()


# --- over-long prompts ------------------------------------------------------------------

def test_an_over_long_prompt_is_skipped_by_the_transformers_backend(tiny_base):  # noqa: F811
    from agon.models import load_base

    base, tok_ = load_base(tiny_base)
    backend = TransformersBackend(base, tok_, max_model_len=12)
    prompts = ["Q: 1+2\n", "Q: 1+2+3+4+5+6+7\n", "Q: 3\n"]
    out = backend.sample(None, prompts, {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 8}, seed=0)
    assert [c.skipped is not None for c in out] == [False, True, False]
    assert out[1].text == "" and out[1].completion_ids == [] and "17 tokens" in out[1].skipped
    assert [c.prompt for c in out] == prompts


def test_an_over_long_prompt_never_reaches_the_vllm_engine(fake_vllm, base_dir, tok, tmp_path):  # noqa: F811
    backend = vb.VllmBackend(base_dir, tok, LORA, {"max_model_len": 10}, adapter_root=tmp_path / "root")
    prompts = ["Q: 1\n", "Q: 1+2+3+4+5+6\n", "Q: 22\n"]
    out = backend.sample(None, prompts, SAMPLING, seed=4)
    sent, params, _ = fake_vllm.calls[-1]
    assert len(sent) == 2 and [sp.seed for sp in params] == [vb.request_seeds(4, 3)[i] for i in (0, 2)]
    assert [c.skipped is not None for c in out] == [False, True, False]
    assert out[0].text == "Q: 1\n" and out[2].text == "Q: 22\n"  # the echo model, in order
    fake_vllm.calls.clear()
    assert all(c.skipped for c in backend.sample(None, [prompts[1]], SAMPLING, seed=0))
    assert fake_vllm.calls == []  # nothing to send: the engine is not called
    backend.close()


class SkippingBackend:
    """The transformers backend, with every challenger prompt (it carries an attempt) too long."""

    def __init__(self, inner):
        self.inner = inner

    def sample(self, adapter, prompts, sampling, seed):
        out = self.inner.sample(adapter, [p for p in prompts if "R:" not in p], sampling, seed)
        it = iter(out)
        return [skipped_completion(p, [1] * 99, 50) if "R:" in p else next(it) for p in prompts]

    def sync(self, policies):
        self.inner.sync(policies)


def test_a_training_step_with_over_long_prompts_counts_them_and_goes_on(tiny_base, tmp_path):  # noqa: F811
    from agon.data import toy_math
    from agon.models import load_base

    base, tok_ = load_base(tiny_base)
    trainer = Trainer(base, tok_, PromptFormat("toy"), TRAIN, AGON, SAMPLING, seed=3,
                      backend_factory=lambda m: SkippingBackend(TransformersBackend(m, tok_)))
    before = trainer.policies.state_dict("A")
    history = trainer.fit(toy_math.generate(4, 5, levels=[1]), tmp_path / "m.jsonl", tmp_path / "c.pt",
                          log=lambda *_: None)
    first = history[0]["streams"]
    assert first["challenger:B"]["skipped"] == first["challenger:B"]["rollouts"] == 8
    assert first["challenger:B"]["groups"] == 0 and "loss" not in first["challenger:B"]
    assert first["drafter:A"]["skipped"] == 0 and first["drafter:A"]["groups"] == 2
    changed = any(not torch.equal(before[k], v) for k, v in trainer.policies.state_dict("A").items())
    assert changed or first["drafter:A"]["dropped_groups"] == 2  # the drafter still learns when it can


def test_a_skipped_stage_is_graded_wrong_and_recorded(tmp_path):
    from agon.evaluate import protocols
    from agon.verify.grading import Grader

    problems = [{"id": "p1", "prompt": "1+1", "answer": "2", "difficulty": 1, "source": "toy_math"}]

    def sample(policy, texts, stage):
        return [skipped_completion(t, [1] * 30, 20) for t in texts]

    (record,) = protocols.run("single", [None], problems, sample, PromptFormat("toy"), Grader())
    assert record["correct"] == 0 and record["stages"][0]["skipped"].startswith("prompt of 30 tokens")


# --- one vLLM engine per curve job; the engine asleep through the loss --------------------

def test_one_engine_serves_every_snapshot(fake_vllm, base_dir, tok, tmp_path, monkeypatch):  # noqa: F811
    from agon.jobs.job import open_backend

    engines = []
    real = sys.modules["vllm"].LLM

    class Counted(real):
        def __init__(self, *a, **k):
            engines.append(self)
            super().__init__(*a, **k)

    monkeypatch.setattr(sys.modules["vllm"], "LLM", Counted)
    policies = _policies(base_dir)
    snaps = {}
    for step in (1, 2, 3):
        snaps[step] = {n: str(tmp_path / f"step{step}" / n) for n in policies.names}
        for n, d in snaps[step].items():
            policies.save(n, d)
    spec = {"base_path": str(base_dir), "prompt_style": "toy", "precision": "fp32", "sampling": SAMPLING,
            "generation": {"backend": "vllm", "adapter_root": str(tmp_path / "root")}, "train": {"lora": LORA}}
    backend, _ = open_backend(spec, snaps[1], "cuda", "fp32")
    for step in (2, 3):
        backend.load_saved(snaps[step])
        backend.sample("A", ["Q: 1\n"], SAMPLING, seed=0)
        assert fake_vllm.calls[-1][2].lora_path == str(Path(snaps[step]["A"]).resolve())
    assert len(engines) == 1
    assert fake_vllm.removed == [1, 2, 3, 4]  # each snapshot's versions retired from the engine
    backend.close()
    assert all(Path(d).exists() for s in snaps.values() for d in s.values())  # the snapshots stay


def test_the_engine_sleeps_through_the_loss_and_wakes_to_sample(fake_vllm, base_dir, tok, tmp_path):  # noqa: F811
    events = []
    llm_class = sys.modules["vllm"].LLM
    llm_class.sleep = lambda self, level: events.append(("sleep", level))
    llm_class.wake_up = lambda self, tags=None: events.append(("wake_up",))
    spec = {"base_path": str(base_dir), "generation": {"backend": "vllm", "sleep_during_loss": True,
                                                       "adapter_root": str(tmp_path / "root")},
            "train": {"lora": LORA}}
    policies = _policies(base_dir)
    backend = make_backend(spec, policies.model, tok, "fp32")
    assert fake_vllm.llm_kwargs["enable_sleep_mode"] is True and "sleep_during_loss" not in fake_vllm.llm_kwargs
    backend.sync(policies)
    backend.sample("A", ["Q: 1\n"], SAMPLING, seed=0)
    backend.release_memory()
    backend.release_memory()  # once asleep, it stays asleep
    assert events == [("sleep", 1)]
    backend.sample("B", ["Q: 1\n"], SAMPLING, seed=0)
    assert events == [("sleep", 1), ("wake_up",)]
    backend.close()
    plain = make_backend({**spec, "generation": {"backend": "vllm", "adapter_root": str(tmp_path / "root")}},
                         policies.model, tok, "fp32")
    plain.release_memory()
    assert events == [("sleep", 1), ("wake_up",)] and "enable_sleep_mode" not in fake_vllm.llm_kwargs
    plain.close()


def test_the_engine_computes_in_the_jobs_precision_unless_the_config_names_a_dtype(fake_vllm, base_dir, tok, tmp_path):  # noqa: F811
    """Left to dtype "auto", vLLM 0.32's CPU platform loaded SmolLM2's fp32 checkpoint in bf16
    ("Attempted to load weight ... float32 into parameter with dtype torch.bfloat16") while the
    trainer computed in fp32: the engine sampled from another model than the one trained."""
    policies = _policies(base_dir)
    generation = {"backend": "vllm", "adapter_root": str(tmp_path / "root")}
    spec = {"base_path": str(base_dir), "generation": generation, "train": {"lora": LORA}}
    for resolved, dtype in (("fp32", "float32"), ("bf16", "bfloat16")):
        make_backend(spec, policies.model, tok, resolved).close()
        assert fake_vllm.llm_kwargs["dtype"] == dtype
    make_backend({**spec, "generation": {**generation, "dtype": "float16"}}, policies.model, tok, "bf16").close()
    assert fake_vllm.llm_kwargs["dtype"] == "float16"  # the config's word wins
