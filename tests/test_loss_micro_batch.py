"""The loss pass in micro-batches: the gradient equals one pass over the whole stream.

The reference is a plain one-pass loss (right-padded rows, full-vocabulary logits at
every position, one backward): the micro-batched pass (left-padded rows, logits at the
completion positions only, fp32 log-softmax recomputed in backward) must give the same
adapter gradients, in fp32, to a tolerance, for every loss type and for budgets from one
row per micro-batch to the whole stream in one.
"""

import pytest
import torch

from agon.generate import Completion
from agon.rl import logprobs
from agon.rl.loss import LOSS_TYPES, dropped_rollouts_scale, policy_loss
from reference_loss import one_pass_logps
from test_trainer import TRAIN, _trainer, tiny_base  # noqa: F401  (the fixture)


def stream(seed=0, rows=12):
    """Rollouts of uneven prompt and completion lengths, with advantages (a few zero)."""
    g = torch.Generator().manual_seed(seed)
    completions, advantages = [], []
    for i in range(rows):
        p, n = int(torch.randint(3, 30, (1,), generator=g)), int(torch.randint(1, 25, (1,), generator=g))
        prompt = torch.randint(4, 60, (p,), generator=g).tolist()
        comp = torch.randint(4, 60, (n,), generator=g).tolist()
        completions.append(Completion("", "", prompt, comp, False))
        advantages.append(0.0 if i % 5 == 0 else float(torch.randn(1, generator=g)))
    return completions, torch.tensor(advantages)


def grads(trainer, adapter):
    return {n: p.grad.detach().clone() for n, p in trainer.policies.model.named_parameters()
            if p.grad is not None and f".{adapter}." in n}


@pytest.mark.parametrize("loss_forward", ["transformers", "compact"])
@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_micro_batched_gradient_equals_the_one_pass_gradient(tiny_base, loss_type, loss_forward):  # noqa: F811
    """Also for train.loss_forward: compact, against transformers + peft's one pass: its forward
    (fused projections, the adapter merged into the weights) computes the same function, padding
    and positions included, and its gradient reaches the adapter's A and B as peft's does."""
    torch.manual_seed(0)
    trainer = _trainer(tiny_base, {"kind": "grpo", "group_size": 4}, {"loss_forward": loss_forward})
    assert (trainer.compact_config is not None) == (loss_forward == "compact")
    trainer.cfg = {**trainer.cfg, "loss_type": loss_type}
    completions, adv = stream()
    pad = trainer.tokenizer.pad_token_id
    temperature = trainer.sampling["temperature"]
    all_tokens = sum(len(c.completion_ids) for c in completions) + 17  # as if a dropped group's tokens counted
    all_seqs = len(completions) + 3

    with trainer.policies.use("A") as model:
        logp, mask = one_pass_logps(model, completions, temperature, pad)
        ref = policy_loss(logp, logp.detach(), adv, mask, loss_type,
                          max_completion_length=trainer.sampling["max_new_tokens"])
        ref = ref * dropped_rollouts_scale(loss_type, int(mask.sum()), all_tokens, len(completions), all_seqs)
        ref.backward()
    want = grads(trainer, "A")
    assert want and any(g.abs().sum() > 0 for g in want.values())

    for budget in (1, 60, 200, 10**6):  # one row each, a few rows, ..., the whole stream at once
        trainer.policies.model.zero_grad(set_to_none=True)
        total = 0.0
        with trainer.loss_pass("A") as micro_batch_loss:
            for group in logprobs.micro_batches(completions, budget):
                part, m, _ = micro_batch_loss([completions[i] for i in group], adv[group])
                part = part * dropped_rollouts_scale(loss_type, int(m.sum()), all_tokens, len(group), all_seqs)
                part.backward()
                total += part.item()
        assert total == pytest.approx(ref.item(), rel=1e-5, abs=1e-7), budget
        got = grads(trainer, "A")
        assert set(got) == set(want)
        for name in want:
            torch.testing.assert_close(got[name], want[name], rtol=1e-4, atol=1e-6, msg=f"{name} (budget {budget})")


def test_micro_batches_respect_the_token_budget():
    completions, _ = stream(rows=20)
    for budget in (1, 50, 120, 400):
        groups = logprobs.micro_batches(completions, budget)
        assert sorted(i for g in groups for i in g) == list(range(20))  # every row once
        widths = [[len(completions[i].prompt_ids) + len(completions[i].completion_ids) for i in g] for g in groups]
        assert [w for g in widths for w in g] == sorted(w for g in widths for w in g)  # grouped by length
        for w in widths:
            assert len(w) == 1 or max(w) * len(w) <= budget


@pytest.mark.parametrize("precision_name", ["fp32", "bf16"])
def test_the_compact_loss_pass_merges_once_with_a_per_micro_batch_merge_s_gradient(tiny_base, precision_name):  # noqa: F811
    """train.loss_forward: compact merges and fuses the adapter's weights once per stream and sums
    the micro-batches' gradients at the fused weights before running them through the merge:
    the gradient equals merging again for every micro-batch (the chain rule), in bf16 too, where
    the micro-batches' gradients still sum in fp32."""
    trainer = _trainer(tiny_base, {"kind": "grpo", "group_size": 4}, {"loss_forward": "compact"})
    trainer.precision = precision_name
    completions, adv = stream(rows=12)
    cpu = torch.device("cpu")
    for budget in (60, 400):
        groups = logprobs.micro_batches(completions, budget)
        assert len(groups) > 1
        trainer.policies.model.zero_grad(set_to_none=True)
        for group in groups:  # a merge per micro-batch, its gradient straight into the adapter
            part, _, _ = trainer._micro_batch_loss(lambda: trainer._loss_model("A", cpu), cpu,
                                                   [completions[i] for i in group], adv[group])
            part.backward()
        want = grads(trainer, "A")
        trainer.policies.model.zero_grad(set_to_none=True)
        merges = []
        merged_weights = trainer.policies.merged_weights
        trainer.policies.merged_weights = lambda *a: merges.append(a) or merged_weights(*a)
        try:
            with trainer.loss_pass("A") as micro_batch_loss:
                for group in groups:
                    part, _, _ = micro_batch_loss([completions[i] for i in group], adv[group])
                    part.backward()
                assert not grads(trainer, "A")  # held at the fused weights until the pass ends
        finally:
            del trainer.policies.merged_weights
        assert len(merges) == 1
        got = grads(trainer, "A")
        assert want and set(got) == set(want)
        for name in want:
            assert got[name].dtype == torch.float32
            torch.testing.assert_close(got[name], want[name], rtol=1e-4, atol=1e-6, msg=f"{name} ({precision_name})")
