"""RL learns: the real Trainer raises the reward it optimises on small stationary tasks.

Each task is a handful of the toy's level-5 searches (`a*?+b=c`, find the digit), the
same problems at every step, so the reward can only rise if the trainer is correct: the
answers are known and the pinned base already finds them some of the time. The runs
use the default's own `train` and `sampling` settings (config/config.yaml), on the
pinned base, with only the step count, the problems and the precision set here, so this
test guards the trainer as the default runs it.

Thresholds: within STEPS steps (PAIR_STEPS for a pair), the mean training pass rate of the
last LAST steps is at least FLOOR and has closed at least half of the first LAST steps'
distance to 1, in every stream graded against a known answer (a challenger reading right
drafts starts near the ceiling). Each run takes 15-50 s on one core. These tasks are stationary: a
trainer that cannot raise the reward on the same problems fails them, in every loss
pass and precision. What they cannot show is learning that carries over to new problems
(the default's own curves, Table 0's section 7, show that): docs/measurements.md,
"RL that learns (2026-12-05)".
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from agon import config, io
from agon import prompts as prompts_mod
from agon.data import toy_math
from agon.generate import make_backend
from agon.models import load_base
from agon.prompts import PromptFormat
from agon.rl import methods, rewards
from agon.rl.logprobs import sequence_logps
from agon.rl.trainer import Trainer

ROOT = Path(__file__).resolve().parents[1]

PINNED = ROOT / "models" / "toy"
DEFAULT = config.load(ROOT / "config" / "config.yaml")
# Four searches the pinned base solves 20-70% of the time at the default's sampling (so every
# group has reward variance from the start) and none of them in every sample.
PROBLEMS = toy_math.generate(4, 7, levels=[5])
STEPS, LAST = 24, 5
# A pair's adapters take turns drafting: in STEPS steps each drafts on half of them. 24 steps
# left the Agon drafter's last five at 0.79-0.84 (mean 0.81) in seven seeds, at the floor;
# 36 steps give each adapter 18 drafting steps: 0.83-0.91 in six seeds (docs/measurements.md,
# "Where the time goes").
PAIR_STEPS = 36
FLOOR, GAP_CLOSED = 0.8, 0.5


def _trainer(method: dict, loss_forward: str, precision: str, seed: int = 0, steps: int = STEPS) -> Trainer:
    torch.set_num_threads(1)
    base, tok = load_base(PINNED)
    train = {**DEFAULT["train"], "loss_forward": loss_forward, "problems_per_step": len(PROBLEMS),
             "epochs": steps, "max_steps": steps, "snapshot_every": None, "checkpoint_every": steps}
    spec = {"generation": {"backend": "compact"}}
    return Trainer(base, tok, PromptFormat("toy"), train, method, DEFAULT["sampling"]["train"], seed,
                   precision_name=precision, backend_factory=lambda m: make_backend(spec, m, tok, precision))


def _curves(history: list[dict]) -> dict[str, list[float]]:
    streams: dict[str, list[float]] = {}
    for record in history:
        for name, stats in record["streams"].items():
            streams.setdefault(name.split(":")[0], []).append(stats["pass_rate"])
    return streams


def _assert_learns(history: list[dict], roles: tuple[str, ...]) -> None:
    curves = _curves(history)
    for role in roles:
        values = curves[role]
        first, last = sum(values[:LAST]) / LAST, sum(values[-LAST:]) / LAST
        assert last >= FLOOR and last - first >= GAP_CLOSED * (1 - first), (
            f"{role}: training pass rate {first:.2f} over the first {LAST} steps, {last:.2f} over the last "
            f"(needs >= {FLOOR}, and half the way to 1): {[round(v, 2) for v in values]}")


def _fit(trainer: Trainer, tmp_path) -> list[dict]:
    return trainer.fit(PROBLEMS, tmp_path / "metrics.jsonl", tmp_path / "checkpoint.pt", log=lambda *_: None)


@pytest.mark.parametrize("loss_forward,precision", [("compact", "bf16"), ("compact", "fp32"),
                                                     ("transformers", "bf16"), ("transformers", "fp32")])
def test_grpo_learns_a_stationary_task(tmp_path, loss_forward, precision):
    trainer = _trainer(DEFAULT["methods"]["grpo"], loss_forward, precision)
    history = _fit(trainer, tmp_path)
    _assert_learns(history, ("policy",))
    kl = [r["streams"]["policy:A"]["update_kl"] for r in history if "update_kl" in r["streams"]["policy:A"]]
    assert kl and all(k >= 0 for k in kl) and max(kl) > 0  # every step's update is measured, and moves


def test_an_agon_pair_learns_a_stationary_task_in_both_roles(tmp_path):
    history = _fit(_trainer(DEFAULT["methods"]["agon"], "compact", "bf16", steps=PAIR_STEPS), tmp_path)
    _assert_learns(history, ("drafter", "challenger"))


def _known_drafts(ctx, problems):
    """A challenger stream whose rival drafts are of known quality: every draft claims the wrong
    digit (the true one plus one, or minus one at 9) with a well-formed summary, so each rollout
    reads a wrong rival and its adv reward pays the conversion bonus when it is right."""
    adapter = ctx.adapters[0]
    expanded, group_ids = methods.expand(problems, ctx.method["group_size"])
    drafts = []
    for p in expanded:
        a, rest = p["prompt"].split("*?+")
        b, c = rest.split("=")
        wrong = int(p["answer"]) + (1 if int(p["answer"]) < 9 else -1)
        drafts.append(f"<think></think>{a}*{wrong}+{b}={c}<answer>{wrong}</answer>")
    prompts = [ctx.attempt_prompt(p, ctx.summary(d)) for p, d in zip(expanded, drafts)]
    completions = ctx.sample(adapter, prompts, tag="challenger")
    grades = [ctx.grade(p, b) for p, b in zip(expanded, completions)]
    reward = [rewards.challenger("adv", c, 0, phi, ctx.lam) for c, phi in grades]
    return [methods.Stream(adapter, "challenger", completions, reward, group_ids, [c for c, _ in grades])]


KNOWN_DRAFTS = methods.MethodKind(step=_known_drafts, adapters=lambda m: ("A",), deploys="cascade",
                                  classify=lambda m: ("training control", None, None, []))


def test_a_challenger_reading_wrong_drafts_learns_to_convert_them(tmp_path, monkeypatch):
    monkeypatch.setitem(methods.KINDS, "known_drafts", KNOWN_DRAFTS)
    history = _fit(_trainer({"kind": "known_drafts", "group_size": 16}, "compact", "fp32"), tmp_path)
    _assert_learns(history, ("challenger",))


@pytest.mark.parametrize("loss_forward", ["compact", "transformers"])
def test_at_step_0_the_loss_pass_scores_what_the_sampler_sampled(loss_forward):
    """Before any update, the loss pass's log-probability of every sampled token equals the
    sampler's own (fp32: to float rounding), for a drafter's plain prompt and a challenger's
    prompt with a rival attempt, for each adapter."""
    trainer = _trainer(DEFAULT["methods"]["agon"], loss_forward, "fp32")
    fmt, sampling = trainer.fmt, trainer.sampling
    plain = [fmt.plain(p) for p in PROBLEMS for _ in range(4)]
    for adapter in trainer.adapters:
        drafts = trainer.backend.sample(adapter, plain, sampling, seed=1)
        attempts = [fmt.with_attempt(p, prompts_mod.summary(d.text))
                    for p, d in zip([p for p in PROBLEMS for _ in range(4)], drafts)]
        for prompts in (plain, attempts):
            completions = trainer.backend.sample(adapter, prompts, sampling, seed=2)
            with torch.no_grad(), trainer._loss_model(adapter, torch.device("cpu")) as model:
                logp, _ = sequence_logps(model, completions, sampling["temperature"], trainer.tokenizer.pad_token_id)
            for row, c in enumerate(completions):
                ours = logp[row, logp.shape[1] - c.length:]
                assert c.logprobs is not None and len(c.logprobs) == c.length
                assert torch.allclose(ours, torch.tensor(c.logprobs), atol=1e-4), (adapter, c.text)


def test_each_step_logs_the_sampler_gap_and_the_update_kl(tmp_path):
    trainer = _trainer(DEFAULT["methods"]["grpo"], "compact", "fp32")
    trainer.cfg = {**trainer.cfg, "max_steps": 2}
    history = _fit(trainer, tmp_path)
    for record in history:
        stats = record["streams"]["policy:A"]
        assert stats["sampler_logp_gap"] < 1e-4 and stats["update_kl"] > 0
    assert [r["step"] for r in io.read_jsonl(tmp_path / "metrics.jsonl")] == [0, 1]
