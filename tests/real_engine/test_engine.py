"""The vLLM backend on the real engine (vLLM's CPU platform), no stand-in module.

One engine, started once for the module, serves every test here but two (a base with two
eos ids, and the curve job's own engine): GRPO and Agon cells trained with vLLM sampling,
adapters republished after every step; the engine serving each new version (and the same
tokens after a zero update); an evaluation with every protocol; an over-long prompt;
greedy tokens against the transformers backend's in fp32. Engine starts take 15-50 s each.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from agon import io
from agon import vllm_backend as vb
from agon.data import toy_math
from agon.evaluate import curves, protocols
from agon.generate import TransformersBackend
from agon.models import LoraPolicies, load_base, stop_token_ids
from agon.prompts import PromptFormat
from agon.rl.trainer import Trainer
from agon.verify.grading import Grader

from common import ALL_PROJECTIONS, ENGINE, TOY, EngineCount, copy_base

LORA = {"rank": 4, "alpha": 8, "target_modules": ALL_PROJECTIONS}
TRAIN = {"problems_per_step": 4, "epochs": 1, "max_steps": 3, "lr": 0.01, "warmup_ratio": 0.0,
         "weight_decay": 0.0, "max_grad_norm": 1.0, "loss_type": "dapo", "clip_low": 0.2,
         "clip_high": 0.2, "beta": 0.0, "lam": 0.5, "adapter_a_init_sigma": 0.001,
         "checkpoint_every": 1, "snapshot_every": 1, "lora": LORA}
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 48}
GREEDY = {"temperature": 0, "top_p": 1.0, "max_new_tokens": 48}
AGON = {"kind": "pair", "group_size": 4, "mode": "adv", "exchange": "visible", "roles": "rotate"}
GRPO = {"kind": "grpo", "group_size": 8}
FMT = PromptFormat("toy")
PROBLEMS = toy_math.generate(16, 7, levels=[1, 2])


@pytest.fixture(scope="module")
def tok():
    return load_base(TOY)[1]


@pytest.fixture(scope="module")
def engine(tok, tmp_path_factory):
    with vb.VllmBackend(TOY, tok, LORA, ENGINE, adapter_root=tmp_path_factory.mktemp("adapters")) as backend:
        yield backend


class Recorder:
    """The engine, recording each sync's published versions and each id it dropped."""

    def __init__(self, backend):
        self.backend, self.syncs, self.removed = backend, [], []
        self.before = dict(backend.versions.live)  # what an earlier test left live

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def sync(self, policies):
        real_remove = self.backend.llm.llm_engine.remove_lora
        self.backend.llm.llm_engine.remove_lora = lambda i: (self.removed.append(i), real_remove(i))[1]
        try:
            self.backend.sync(policies)
        finally:
            del self.backend.llm.llm_engine.remove_lora
        self.syncs.append(dict(self.backend.versions.live))


def _trainer(engine, method, seed=3):
    torch.manual_seed(0)
    base, tok = load_base(TOY)
    recorder = Recorder(engine)
    trainer = Trainer(base, tok, FMT, TRAIN, method, SAMPLING, seed=seed, backend_factory=lambda model: recorder)
    return trainer, recorder


def _states(trainer):
    return {n: {k: v.clone() for k, v in trainer.policies.state_dict(n).items()} for n in trainer.adapters}


def _tokens(completions):
    return [c.completion_ids for c in completions]


PROBE = [FMT.plain(p) for p in PROBLEMS[:8]]


@pytest.mark.parametrize("method", [GRPO, AGON], ids=["grpo", "agon"])
def test_a_cell_trains_with_vllm_sampling_and_the_engine_serves_every_step(engine, tmp_path, method):
    trainer, recorder = _trainer(engine, method)
    adapters = trainer.adapters
    before = {a: _tokens(engine.sample(a, PROBE, SAMPLING, seed=11)) for a in adapters}
    states = [_states(trainer)]
    records = trainer.fit(PROBLEMS, tmp_path / "metrics.jsonl", tmp_path / "ckpt.pt", log=lambda *_: None)
    states.append(_states(trainer))
    assert [r["step"] for r in records] == [0, 1, 2]
    for r in records:  # every stream sampled through the engine
        for stats in r["streams"].values():
            assert stats["rollouts"] > 0 and stats["generated_tokens"] > 0 and stats["skipped"] == 0
    # republished after every step: the init sync plus one per step, each a fresh name and id,
    # the retired version dropped from the engine and its directory deleted
    assert len(recorder.syncs) == 1 + 3
    versions = [v[a] for v in recorder.syncs for a in adapters]
    assert len({v.lora_int_id for v in versions}) == len(versions) == len({v.lora_name for v in versions})
    earlier = [recorder.before[a].lora_int_id for a in adapters if a in recorder.before]
    assert sorted(recorder.removed) == sorted(earlier + [v.lora_int_id for v in versions[:-len(adapters)]])
    assert all(not v.path.exists() for v in versions[:-len(adapters)])
    moved = [a for a in adapters if any(not torch.equal(states[0][a][k], states[1][a][k]) for k in states[0][a])]
    assert moved, "no adapter moved: no step had a loss"
    # the same seeded prompts give other tokens from a moved adapter, the same from a still one
    for a in adapters:
        after = _tokens(engine.sample(a, PROBE, SAMPLING, seed=11))
        assert (after != before[a]) == (a in moved), a
    # a zero update: republished under a new name and id, the same weights, the same tokens
    ids = {a: engine.versions.live[a].lora_int_id for a in adapters}
    again = {a: _tokens(engine.sample(a, PROBE, SAMPLING, seed=11)) for a in adapters}
    engine.sync(trainer.policies)
    for a in adapters:
        assert engine.versions.live[a].lora_int_id != ids[a]
        assert _tokens(engine.sample(a, PROBE, SAMPLING, seed=11)) == again[a], a


def test_an_update_changes_the_served_tokens_and_a_zeroed_one_gives_the_base(engine, tok):
    base, _ = load_base(TOY)
    policies = LoraPolicies(base, ("A", "B"), LORA, {"A": 0.5, "B": 0.0}, seed=0)
    engine.sync(policies)
    bare = _tokens(engine.sample(None, PROBE, GREEDY, seed=0))
    a = _tokens(engine.sample("A", PROBE, GREEDY, seed=0))
    assert _tokens(engine.sample("B", PROBE, GREEDY, seed=0)) == bare  # B starts at zero
    assert a != bare
    with torch.no_grad():
        for name, p in policies.model.named_parameters():
            if "lora_B.A." in name:
                p.zero_()
    engine.sync(policies)  # a stale cached adapter (old id or old name) would keep A's tokens
    assert _tokens(engine.sample("A", PROBE, GREEDY, seed=0)) == bare


def test_an_evaluation_with_every_protocol(engine, tok, tmp_path):
    base, _ = load_base(TOY)
    policies = LoraPolicies(base, ("A", "B"), LORA, {"A": 0.05, "B": 0.0}, seed=1)
    dirs = {n: str(tmp_path / n) for n in policies.names}
    for n, d in dirs.items():
        policies.save(n, d)
    engine.load_saved(dirs)  # the evaluate job's saved adapters, read in place
    assert {n: str(v.path) for n, v in engine.versions.live.items()} == {n: str(Path(d).resolve())
                                                                        for n, d in dirs.items()}
    problems = PROBLEMS[:6]
    sample = protocols.make_sampler(engine, {"temperature": 0.6, "top_p": 0.95, "max_new_tokens": 48}, seed=0)
    stages = {"single": 1, "cascade": 2, "moa": 3}
    for protocol, policy in (("single", [None]), ("single", ["A"]), ("cascade", ["A", "B"]),
                             ("cascade", ["B", "A"]), ("moa", ["A", "B"])):
        grader = Grader()
        records = protocols.run(protocol, policy, problems, sample, FMT, grader)
        assert [r["id"] for r in records] == [p["id"] for p in problems]
        for r in records:
            assert len(r["stages"]) == stages[protocol] and r["correct"] in (0, 1)
            assert all(s["length"] > 0 and "skipped" not in s for s in r["stages"])
        assert grader.counts["graded"] + grader.counts["no_answer"] + grader.counts["truncated"] > 0
    # the toy base answers: some answers are graded, and some right
    records = protocols.run("single", [None], PROBLEMS, sample, FMT, Grader())
    assert sum(r["correct"] for r in records) > 0


def test_an_over_long_prompt_is_skipped_and_counted(engine, tok):
    long = FMT.plain({"prompt": "1+" * 150 + "1"})
    assert len(tok(long, add_special_tokens=False)["input_ids"]) > ENGINE["max_model_len"]
    prompts = [PROBE[0], long, PROBE[1]]
    out = engine.sample(None, prompts, SAMPLING, seed=5)
    assert out[1].skipped and "the context holds 256" in out[1].skipped and out[1].completion_ids == []
    assert out[0].skipped is None and out[2].skipped is None
    # the others drew the seeds of their positions, as without the long prompt between them
    alone = engine.sample(None, [PROBE[0], PROBE[0], PROBE[1]], SAMPLING, seed=5)
    assert (out[0].completion_ids, out[2].completion_ids) == (alone[0].completion_ids, alone[2].completion_ids)
    # a prompt that fits with fewer than max_new_tokens left: cut at the context's end, not refused
    near = FMT.plain({"prompt": "1+" * 118 + "1"})
    n = len(tok(near, add_special_tokens=False)["input_ids"])
    assert ENGINE["max_model_len"] - SAMPLING["max_new_tokens"] < n < ENGINE["max_model_len"]
    (c,) = engine.sample(None, [near], {**GREEDY, "max_new_tokens": 200}, seed=0)
    assert c.skipped is None and n + c.length <= ENGINE["max_model_len"]
    # in an evaluation: the stage says why, is graded wrong and stays counted
    problems = [PROBLEMS[0], {**PROBLEMS[1], "prompt": "1+" * 150 + "1"}]
    sample = protocols.make_sampler(engine, SAMPLING, seed=0)
    records = protocols.run("single", [None], problems, sample, FMT, Grader())
    assert "skipped" in records[1]["stages"][0] and records[1]["correct"] == 0 and len(records) == 2


def test_seeded_prompts_beyond_one_steps_token_budget(engine, tok):
    """More prompt tokens than one engine step takes: with chunked prefill a seeded prompt was
    split over two steps, and vLLM 0.32's CPU worker died ("CPU Generator does not use
    offset"). On the CPU platform the backend turns chunked prefill off."""
    scheduler = engine.llm.llm_engine.vllm_config.scheduler_config
    assert scheduler.enable_chunked_prefill is False
    prompt = FMT.plain({"prompt": "1+" * 95 + "1"})
    n = len(tok(prompt, add_special_tokens=False)["input_ids"])
    count = scheduler.max_num_batched_tokens // n + 3
    out = engine.sample(None, [prompt] * count, {**SAMPLING, "max_new_tokens": 8}, seed=1)
    assert len(out) == count and all(c.skipped is None and c.length > 0 for c in out)


def test_greedy_tokens_match_the_transformers_backend_in_fp32(engine, tok, tmp_path):
    """The same merged weights, fp32, greedy: vLLM's tokens against transformers' generate.

    Where they differ, the first differing token must be a near tie in transformers' own
    logits (different kernels sum in different orders): the report below says how many."""
    base, _ = load_base(TOY)
    policies = LoraPolicies(base, ("A", "B"), LORA, {"A": 0.3, "B": 0.0}, seed=2)
    engine.sync(policies)
    reference = TransformersBackend(policies.model, tok, torch.float32, max_model_len=ENGINE["max_model_len"])
    prompts = [FMT.plain(p) for p in PROBLEMS]
    report, gaps = {}, []
    for adapter in (None, "A"):
        ours = engine.sample(adapter, prompts, GREEDY, seed=0)
        theirs = reference.sample(adapter, prompts, GREEDY, seed=0)
        same = 0
        model = reference.model_for(adapter)
        for o, t in zip(ours, theirs):
            assert o.prompt_ids == t.prompt_ids
            if o.completion_ids == t.completion_ids:
                assert (o.text, o.truncated) == (t.text, t.truncated)
                same += 1
                continue
            k = next(i for i, (x, y) in enumerate(zip(o.completion_ids, t.completion_ids)) if x != y)
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([t.prompt_ids + t.completion_ids[:k]])).logits[0, -1]
            gaps.append(float(logits[t.completion_ids[k]] - logits[o.completion_ids[k]]))
        report[str(adapter)] = f"{same}/{len(prompts)}"
    print(f"greedy completions identical to transformers' (fp32): {report}; "
          f"logit gaps at the first differing token: {[round(g, 5) for g in gaps]}")
    assert all(0 <= g < 1e-3 for g in gaps), gaps  # only near ties may differ
    assert sum(int(v.split("/")[0]) for v in report.values()) >= len(prompts)  # most are identical


def test_stop_tokens_from_a_generation_config_with_two_eos_ids(tok, tmp_path):
    """generation_config.json lists eos 1 and `</think>`: the engine stops on either, keeps
    the stop token in the completion ids, out of the text, and cuts where transformers does."""
    think_end = tok.convert_tokens_to_ids("</think>")
    base_dir = copy_base(tmp_path / "base", [1, think_end])
    assert stop_token_ids(tok, base_dir) == (1, think_end)
    prompts = [FMT.plain(p) for p in PROBLEMS[:8]]
    with vb.VllmBackend(base_dir, tok, LORA, ENGINE, adapter_root=tmp_path / "adapters") as backend:
        assert backend.eos_ids == (1, think_end)
        greedy = backend.sample(None, prompts, GREEDY, seed=0)
        sampled = backend.sample(None, prompts * 2, SAMPLING, seed=3)
    ends = [c.completion_ids[-1] for c in greedy + sampled if not c.truncated]
    assert think_end in ends  # the second eos id ended completions
    for c in greedy + sampled:
        assert not set(c.completion_ids[:-1]) & {1, think_end}  # nothing after a stop token
        if not c.truncated:
            assert c.completion_ids[-1] in (1, think_end) and "</think>" not in c.text
    base, _ = load_base(base_dir)
    reference = TransformersBackend(base, tok, torch.float32)
    assert reference.stop_ids == (1, think_end)
    theirs = reference.sample(None, prompts, GREEDY, seed=0)
    assert sum(o.completion_ids == t.completion_ids for o, t in zip(greedy, theirs)) >= len(prompts) - 1


def test_a_figure_7b_curve_over_three_snapshots_on_one_engine(engine, tok, tmp_path, monkeypatch):
    """An Agon cell trained 4 steps (snapshots at 1, 2, 3), then the curve job as `agon curve` runs
    it (agon.jobs.job.open_backend, device cpu): one engine started, pointed at each snapshot."""
    trainer, _ = _trainer(engine, AGON)
    train = {**TRAIN, "max_steps": 4}
    trainer.cfg = train
    ckpt = tmp_path / "ckpt"
    trainer.fit(PROBLEMS, ckpt / "metrics.jsonl", ckpt / "checkpoint.pt", log=lambda *_: None,
                snapshot_dir=tmp_path / "snapshots")
    assert trainer.step == 4 and sorted(p.name for p in (tmp_path / "snapshots").iterdir()) == \
        ["step1", "step2", "step3"]
    io.write_json(tmp_path / "snapshots" / "snapshots.json", {"every": 1, "steps": [1, 2, 3], "total_steps": 4})
    io.write_json(tmp_path / "adapters" / "train_summary.json", {"steps": 4})
    heldout = PROBLEMS[:6]
    io.write_jsonl(tmp_path / "heldout.jsonl", heldout)

    def records(evaluation):
        return [{"id": p["id"], "evaluation": evaluation, "model": "toy", "seed": 0, "benchmark": "heldout",
                 "correct": 0, "final_length": 3, "total_tokens": 3, "stages": [{"length": 3, "correct": 0}]}
                for p in heldout]

    io.write_jsonl(tmp_path / "untrained" / "zero_shot.heldout.jsonl", records("zero_shot"))
    io.write_jsonl(tmp_path / "eval" / "agon_ab.heldout.jsonl", records("agon_ab"))
    spec = {"row": "agon", "model": "toy", "seed": 0, "evaluation": "agon_ab",
            "evaluations": {"agon_ab": {"method": "agon", "protocol": "cascade", "policies": ["A", "B"]}},
            "adapters": ["A", "B"], "benchmark": "heldout", "benchmark_path": str(tmp_path / "heldout.jsonl"),
            "problems": 6, "snapshots": str(tmp_path / "snapshots"), "adapter_dir": str(tmp_path / "adapters"),
            "eval_dir": str(tmp_path / "eval"), "step0": {"evaluation": "zero_shot",
                                                          "eval_dir": str(tmp_path / "untrained")},
            "sampling": SAMPLING, "out": str(tmp_path / "curve.jsonl"), "base_path": str(TOY),
            "prompt_style": "toy", "precision": "fp32", "device": "cpu",
            "generation": {"backend": "vllm", **ENGINE, "adapter_root": str(tmp_path / "root")}}
    count = EngineCount(monkeypatch)
    loads = []
    real_load = vb.VllmBackend.load_saved
    monkeypatch.setattr(vb.VllmBackend, "load_saved", lambda self, d: (loads.append(dict(d)), real_load(self, d))[1])
    from agon.jobs.job import open_backend

    points = curves.run_curve(spec, lambda s, dirs, device: open_backend(s, dirs, device, "fp32"),
                              log=lambda *_: None, device="cpu")
    assert count.started == 1
    assert [Path(d["A"]).parent.name for d in loads] == ["step1", "step2", "step3"]  # the first at start
    assert [p["step"] for p in points] == [0, 1, 2, 3, 4]
    assert [p["source"] for p in points[1:4]] == ["snapshot"] * 3 and all(p["n"] == 6 for p in points)
    assert json.loads((tmp_path / "curve.jsonl").read_text().splitlines()[2])["step"] == 2
