"""The training loop on a tiny real model: weights change, and a killed run resumes exactly."""

import json

import pytest
import torch

from agon import io
from agon.data import toy_math
from agon.prompts import PromptFormat
from agon.rl.trainer import Trainer
from agon.toy import sft
from agon.toy.tokenizer import build_tokenizer

ARCH = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1,
        "intermediate_size": 64, "max_positions": 128}
TRAIN = {"problems_per_step": 2, "epochs": 1, "max_steps": 4, "lr": 0.01, "warmup_ratio": 0.1,
         "weight_decay": 0.0, "max_grad_norm": 1.0, "loss_type": "dapo", "clip_low": 0.2,
         "clip_high": 0.2, "beta": 0.0, "lam": 0.5, "adapter_a_init_sigma": 0.001,
         "checkpoint_every": 2, "lora": {"rank": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]}}
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 40}
AGON = {"kind": "pair", "group_size": 4, "mode": "adv", "exchange": "visible", "roles": "rotate"}


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    """A base that has learned the format but not the arithmetic: mixed rewards, so RL has signal."""
    torch.set_num_threads(1)
    tok = build_tokenizer()
    # the arithmetic levels only (level 5's long searches would crowd out the format);
    # weight 0 draws the same stream as the levels 1-4 alone. 600 steps, not 150: on an AVX2
    # CPU (fp32, 2026-12) the 150-step base was still near unigram (loss 2.58) and closed the
    # format in 1 of 64 samples, so no GRPO group had reward variance; at 600 steps (loss 1.10)
    # it closes it in 49 of 64 and is right in none, the format term alone varies (~20 s)
    cfg = {"arch": ARCH, "lr": 0.02, "steps": 600, "batch_size": 16, "attempt_prob": 0.3,
           "attempt_wrong_prob": 0.5, "false_start_prob": 0.1, "level_weights": [1, 1, 1, 1, 0]}
    model, _ = sft.train_base(tok, cfg, set(), seed=0, log=lambda *_: None)
    path = tmp_path_factory.mktemp("base")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _trainer(path, method, train=None):
    from agon.models import load_base

    base, tok = load_base(path)
    return Trainer(base, tok, PromptFormat("toy"), {**TRAIN, **(train or {})}, method, SAMPLING, seed=3)


def _states(trainer):
    return {n: trainer.policies.state_dict(n) for n in trainer.adapters}


PROBLEMS = toy_math.generate(8, 99, levels=[1])


@pytest.mark.parametrize("method", [AGON, {"kind": "grpo", "group_size": 8}], ids=["agon", "grpo"])
def test_training_moves_both_adapters_and_logs(tiny_base, tmp_path, method):
    trainer = _trainer(tiny_base, method)
    before = _states(trainer)
    history = trainer.fit(PROBLEMS, tmp_path / "m.jsonl", tmp_path / "c.pt", log=lambda *_: None)
    after = _states(trainer)
    assert [r["step"] for r in history] == [0, 1, 2, 3]
    kept: dict[str, int] = {}
    for r in history:
        for k, s in r["streams"].items():
            kept[k] = kept.get(k, 0) + s["groups"] - s["dropped_groups"]
    for name in trainer.adapters:
        changed = any(not torch.equal(before[name][k], after[name][k]) for k in before[name])
        streams_of = [k for k in kept if k.endswith(f":{name}") and kept[k] > 0]
        # an adapter changes iff it had at least one group with reward variance
        assert changed == bool(streams_of), (name, kept)
    assert any(kept.values()), "no signal at all: the test base is too weak"
    if method["kind"] == "pair":
        roles = [sorted(r["streams"]) for r in history]
        assert roles[0] == ["challenger:B", "drafter:A"] and roles[1] == ["challenger:A", "drafter:B"]
        for r in history:
            for s in r["streams"].values():
                assert s["rollouts"] == 2 * 4 and s["generated_tokens"] > 0 and s["prefill_tokens"] > 0


def test_killed_run_resumes_to_identical_adapters(tiny_base, tmp_path):
    straight = _trainer(tiny_base, AGON)
    straight.fit(PROBLEMS, tmp_path / "a.jsonl", tmp_path / "a.pt", log=lambda *_: None)

    first = _trainer(tiny_base, AGON)
    first.fit(PROBLEMS, tmp_path / "b.jsonl", tmp_path / "b.pt", log=lambda *_: None, stop_after=3)
    assert first.step == 3
    # A step logged after the checkpoint (as if the process died mid-step) is discarded on resume.
    io.append_jsonl(tmp_path / "b.jsonl", {"step": 3, "streams": {}, "lr": 0, "seconds": 0})
    resumed = _trainer(tiny_base, AGON)  # a fresh process: nothing carried over but files
    resumed.fit(PROBLEMS, tmp_path / "b.jsonl", tmp_path / "b.pt", log=lambda *_: None)
    assert resumed.step == 4

    for name in straight.adapters:
        a, b = straight.policies.state_dict(name), resumed.policies.state_dict(name)
        assert all(torch.equal(a[k], b[k]) for k in a), f"adapter {name} differs after resume"
    log_a = [json.loads(l) for l in open(tmp_path / "a.jsonl")]
    log_b = [json.loads(l) for l in open(tmp_path / "b.jsonl")]
    strip = lambda rs: [{k: v for k, v in r.items() if k != "seconds"} for r in rs]  # noqa: E731
    assert strip(log_a) == strip(log_b)


class _Payload:
    """Any object that is not data: unpickling it could run code (its __reduce__)."""


def test_a_checkpoint_holding_a_pickled_object_is_refused_naming_the_file(tiny_base, tmp_path):
    trainer = _trainer(tiny_base, AGON)
    trainer.fit(PROBLEMS, tmp_path / "m.jsonl", tmp_path / "c.pt", log=lambda *_: None, stop_after=1)
    state = torch.load(tmp_path / "c.pt", weights_only=True)  # what the trainer writes is plain data
    torch.save({**state, "extra": _Payload()}, tmp_path / "c.pt")
    resumed = _trainer(tiny_base, AGON)
    with pytest.raises(ValueError, match=r"c\.pt: not a checkpoint this trainer wrote.*refused to load it"):
        resumed.fit(PROBLEMS, tmp_path / "m.jsonl", tmp_path / "c.pt", log=lambda *_: None)
    (tmp_path / "c.pt").write_bytes(b"\x80\x04truncated")
    with pytest.raises(ValueError, match=r"c\.pt: not a checkpoint"):
        resumed.fit(PROBLEMS, tmp_path / "m.jsonl", tmp_path / "c.pt", log=lambda *_: None)


def test_the_compact_loss_pass_is_refused_where_it_cannot_compute_the_loss(tiny_base):
    """train.loss_forward: compact needs a Qwen3 the compact sampler implements, and keeps every
    activation: each refusal names the key and the way out, before anything trains."""
    from transformers import LlamaConfig, LlamaForCausalLM

    with pytest.raises(ValueError, match="train.gradient_checkpointing needs train.loss_forward: transformers"):
        _trainer(tiny_base, {"kind": "grpo", "group_size": 4},
                 {"loss_forward": "compact", "gradient_checkpointing": True})
    tok = build_tokenizer()
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2))
    with pytest.raises(ValueError, match="train.loss_forward: compact cannot compute this model's loss: "
                                         "model_type 'llama'.*use loss_forward: transformers"):
        Trainer(llama, tok, PromptFormat("toy"), {**TRAIN, "loss_forward": "compact"}, {"kind": "grpo", "group_size": 4},
                SAMPLING, seed=3)


def test_adam_betas_reach_every_adapters_optimizer(tiny_base):
    """train.adam_beta1 / adam_beta2 (transformers' names) set AdamW's betas; absent, its defaults."""
    assert {o.defaults["betas"] for o in _trainer(tiny_base, AGON).optimizers.values()} == {(0.9, 0.999)}
    trainer = _trainer(tiny_base, AGON, {"adam_beta1": 0.98, "adam_beta2": 0.99})
    assert {n: o.defaults["betas"] for n, o in trainer.optimizers.items()} == {"A": (0.98, 0.99), "B": (0.98, 0.99)}


def test_the_learning_rate_schedules_warm_up_then_decay_or_hold():
    from agon.rl.schedule import lr_schedule

    linear = lr_schedule(10, 0.2)
    assert [linear(s) for s in range(10)] == pytest.approx([0.5, 1.0, 1.0, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8])
    held = lr_schedule(10, 0.2, "constant_with_warmup")
    assert [held(s) for s in range(10)] == [0.5] + [1.0] * 9
    with pytest.raises(ValueError, match="train.lr_scheduler_type: unknown 'cosine'"):
        lr_schedule(10, 0.2, "cosine")
