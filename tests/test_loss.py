"""Our clipped policy loss against TRL's real GRPOTrainer._compute_loss on the same batch.

The TRL side is TRL's own code (trl==1.16.0, trl/trainer/grpo_trainer.py, GRPOTrainer._compute_loss):
a bare object made with GRPOTrainer.__new__ carries exactly the attributes that method reads, and
_get_per_token_logps_and_entropies is replaced by a function returning our per-token log-probs, so
TRL's loss is a function of the very tensor we differentiate.
"""

from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from agon.rl.loss import LOSS_TYPES, policy_loss, selective_log_softmax

GRPOTrainer = pytest.importorskip("trl.trainer.grpo_trainer").GRPOTrainer

B, T = 6, 7


class _Accelerator:
    """Single process: gather / reduce are the identity."""

    num_processes = 1
    sync_gradients = True

    def gather(self, x):
        return x

    def gather_for_metrics(self, x):
        return x

    def reduce(self, x, reduction="sum"):
        return x


def _trl_trainer(loss_type, eps_low, eps_high, beta, max_completion_length, logp):
    t = GRPOTrainer.__new__(GRPOTrainer)
    # every attribute GRPOTrainer._compute_loss reads on this path
    t.loss_type = loss_type
    t.epsilon_low, t.epsilon_high = eps_low, eps_high
    t.beta = beta
    t.importance_sampling_level = "token"
    t.top_entropy_quantile = 1.0
    t.off_policy_mask_threshold = None
    t.aux_loss_enabled = False
    t.use_vllm = False
    t.vllm_importance_sampling_correction = False
    t._entropy_bonus_enabled = False
    t.max_completion_length = max_completion_length
    t.current_gradient_accumulation_steps = 1
    t.args = SimpleNamespace(use_bias_correction_kl=False, delta=None, steps_per_generation=1)
    t.model = SimpleNamespace(training=True)
    t.accelerator = _Accelerator()
    t._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    t._get_per_token_logps_and_entropies = lambda *a, **k: (logp, torch.zeros_like(logp), None)
    return t


def trl_loss(logp, old_logp, advantages, mask, loss_type, eps_low=0.2, eps_high=0.2, ref_logp=None,
             beta=0.0, max_completion_length=None, num_items_in_batch=None):
    trainer = _trl_trainer(loss_type, eps_low, eps_high, beta, max_completion_length, logp)
    inputs = {
        "prompt_ids": torch.zeros((logp.size(0), 1), dtype=torch.long),
        "prompt_mask": torch.ones((logp.size(0), 1), dtype=torch.long),
        "completion_ids": torch.zeros(logp.shape, dtype=torch.long),
        "completion_mask": mask.long(),
        "advantages": advantages,
        "num_items_in_batch": torch.tensor(float(mask.sum() if num_items_in_batch is None else num_items_in_batch)),
    }
    if old_logp is not None:
        inputs["old_per_token_logps"] = old_logp
    if beta:
        inputs["ref_per_token_logps"] = ref_logp
    loss = trainer._compute_loss(None, inputs)
    assert trainer._metrics["train"]  # TRL really ran (it logs clip ratios)
    return loss, trainer


def _batch(seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([T, 1, 4, T - 2, 3, 5])
    mask = (torch.arange(T)[None, :] < lengths[:, None]).to(dtype)
    logp = -3 * torch.rand((B, T), generator=g, dtype=dtype)
    old_logp = logp + 0.5 * torch.randn((B, T), generator=g, dtype=dtype)  # ratios well outside [0.8, 1.2]
    ref_logp = logp + 0.3 * torch.randn((B, T), generator=g, dtype=dtype)
    adv = torch.randn(B, generator=g, dtype=dtype)
    adv[0], adv[1] = abs(adv[0]) + 0.1, -abs(adv[1]) - 0.1  # both signs present
    return logp, old_logp, ref_logp, adv, mask


def _loss_and_grad(fn, logp, *args, **kwargs):
    x = logp.clone().requires_grad_(True)
    out = fn(x, *args, **kwargs)
    loss = out[0] if isinstance(out, tuple) else out
    (grad,) = torch.autograd.grad(loss, x)
    return loss.detach(), grad


CASES = [(lt, beta) for lt in ("grpo", "bnpo", "dr_grpo", "dapo") for beta in (0.0, 0.04)]


@pytest.mark.parametrize("loss_type,beta", CASES)
@pytest.mark.parametrize("eps_low,eps_high", [(0.2, 0.2), (0.2, 0.28)])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_trl_loss_and_gradient(loss_type, beta, eps_low, eps_high, seed):
    logp, old_logp, ref_logp, adv, mask = _batch(seed)
    # clipping really binds somewhere in the batch
    ratio = torch.exp(logp - old_logp)
    a = adv[:, None]
    binds = (((ratio > 1 + eps_high) & (a > 0)) | ((ratio < 1 - eps_low) & (a < 0))) & (mask > 0)
    assert binds.any() and (~binds & (mask > 0)).any()

    kw = dict(ref_logp=ref_logp if beta else None, beta=beta, max_completion_length=T + 3)
    ours, g_ours = _loss_and_grad(policy_loss, logp, old_logp, adv, mask, loss_type, eps_low, eps_high, **kw)
    theirs, g_theirs = _loss_and_grad(
        lambda x: trl_loss(x, old_logp, adv, mask, loss_type, eps_low, eps_high, **kw), logp)
    assert torch.isfinite(ours)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)
    torch.testing.assert_close(g_ours, g_theirs, rtol=0, atol=1e-6)
    assert g_ours.abs().sum() > 0
    # clipped tokens with the clipped branch chosen carry no policy gradient (only the KL term)
    if beta == 0.0:
        assert (g_ours[binds] == 0).all()


@pytest.mark.parametrize("num_items", [None, 60.0])
def test_dapo_num_items_in_batch_matches_trl(num_items):
    """dapo normalises by the token count of the whole generation batch when it is given."""
    logp, old_logp, _, adv, mask = _batch(3)
    ours, g_ours = _loss_and_grad(policy_loss, logp, old_logp, adv, mask, "dapo", num_items_in_batch=num_items)
    theirs, g_theirs = _loss_and_grad(
        lambda x: trl_loss(x, old_logp, adv, mask, "dapo", num_items_in_batch=num_items), logp)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)
    torch.testing.assert_close(g_ours, g_theirs, rtol=0, atol=1e-6)
    if num_items is None:
        bnpo = policy_loss(logp, old_logp, adv, mask, "bnpo")
        torch.testing.assert_close(ours, bnpo, rtol=0, atol=1e-12)


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_on_policy_step_matches_trl(loss_type, beta):
    """The trainer's use: old = logp.detach() (TRL's path when old_per_token_logps is absent)."""
    logp, _, ref_logp, adv, mask = _batch(4)
    kw = dict(ref_logp=ref_logp if beta else None, beta=beta, max_completion_length=T)
    ours, g_ours = _loss_and_grad(lambda x: policy_loss(x, x.detach(), adv, mask, loss_type, **kw), logp)
    theirs, g_theirs = _loss_and_grad(lambda x: trl_loss(x, None, adv, mask, loss_type, **kw), logp)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)
    torch.testing.assert_close(g_ours, g_theirs, rtol=0, atol=1e-6)
    if beta == 0.0:
        # ratio 1: the gradient is -A / normaliser on every real token
        assert torch.allclose(g_ours[mask == 0], torch.zeros(()).double())
        signs = torch.sign(g_ours[mask > 0])
        assert (signs == torch.sign(-adv[:, None].expand(B, T)[mask > 0])).all()


def test_float32_matches_trl():
    logp, old_logp, ref_logp, adv, mask = _batch(5, dtype=torch.float32)
    for lt in ("grpo", "bnpo", "dr_grpo", "dapo"):
        kw = dict(ref_logp=ref_logp, beta=0.1, max_completion_length=T)
        ours, g_ours = _loss_and_grad(policy_loss, logp, old_logp, adv, mask, lt, **kw)
        theirs, g_theirs = _loss_and_grad(lambda x: trl_loss(x, old_logp, adv, mask, lt, **kw), logp)
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)
        torch.testing.assert_close(g_ours, g_theirs, rtol=0, atol=1e-6)


# --- errors and masks ---------------------------------------------------------------------------

def test_unknown_loss_type_raises():
    logp, old_logp, _, adv, mask = _batch(0)
    with pytest.raises(ValueError, match="cispo_typo"):
        policy_loss(logp, old_logp, adv, mask, "cispo_typo")


def test_dr_grpo_needs_max_completion_length():
    logp, old_logp, _, adv, mask = _batch(0)
    with pytest.raises(ValueError, match="max_completion_length"):
        policy_loss(logp, old_logp, adv, mask, "dr_grpo")


def test_kl_needs_ref_logp():
    logp, old_logp, _, adv, mask = _batch(0)
    with pytest.raises(ValueError):
        policy_loss(logp, old_logp, adv, mask, "grpo", beta=0.1)


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_padded_positions_do_not_matter(loss_type, beta):
    logp, old_logp, ref_logp, adv, mask = _batch(6)
    g = torch.Generator().manual_seed(99)
    pad = mask == 0
    assert pad.any()

    def scramble(x):
        y = x.clone()
        y[pad] = (4 * torch.rand(x.shape, generator=g, dtype=x.dtype) - 2)[pad]
        return y

    kw = dict(beta=beta, max_completion_length=T)
    a, ga = _loss_and_grad(policy_loss, logp, old_logp, adv, mask, loss_type,
                           ref_logp=ref_logp if beta else None, **kw)
    b, gb = _loss_and_grad(policy_loss, scramble(logp), scramble(old_logp), adv, mask, loss_type,
                           ref_logp=scramble(ref_logp) if beta else None, **kw)
    torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    assert (ga[pad] == 0).all() and (gb[pad] == 0).all()
    torch.testing.assert_close(ga[~pad], gb[~pad], rtol=0, atol=1e-12)


def test_padding_width_does_not_matter_for_token_normalisers():
    """Extra all-pad columns leave grpo / bnpo / dapo unchanged (dr_grpo uses the fixed cap, not T)."""
    logp, old_logp, _, adv, mask = _batch(7)
    wide = lambda x, v: torch.cat([x, torch.full((B, 5), v, dtype=x.dtype)], dim=1)
    for lt in ("grpo", "bnpo", "dapo", "dr_grpo"):
        a = policy_loss(logp, old_logp, adv, mask, lt, max_completion_length=16)
        b = policy_loss(wide(logp, -1.0), wide(old_logp, -2.0), adv, wide(mask, 0.0), lt,
                        max_completion_length=16)
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_selective_log_softmax_matches_trl():
    from trl.trainer.utils import selective_log_softmax as trl_sls

    g = torch.Generator().manual_seed(0)
    logits = torch.randn((3, 5, 11), generator=g)
    index = torch.randint(0, 11, (3, 5), generator=g)
    expected = torch.log_softmax(logits, -1).gather(-1, index.unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(selective_log_softmax(logits, index), expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(selective_log_softmax(logits, index), trl_sls(logits, index), rtol=0, atol=1e-5)


def test_comparison_has_power():
    """The harness distinguishes normalisers and clip ranges (it is not comparing a thing with itself)."""
    logp, old_logp, _, adv, mask = _batch(0)
    trl_grpo, _ = trl_loss(logp, old_logp, adv, mask, "grpo")
    assert abs(policy_loss(logp, old_logp, adv, mask, "bnpo") - trl_grpo) > 1e-3
    assert abs(policy_loss(logp, old_logp, adv, mask, "grpo", 0.1, 0.1) - trl_grpo) > 1e-3
    torch.testing.assert_close(policy_loss(logp, old_logp, adv, mask, "grpo"), trl_grpo, rtol=0, atol=1e-6)


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dapo", "dr_grpo"])
def test_dropped_rollouts_scale_equals_whole_stream_loss(loss_type):
    """Loss on kept rollouts x scale == loss on all rollouts with A = 0 for dropped ones."""
    from agon.rl.loss import dropped_rollouts_scale

    torch.manual_seed(0)
    B, T = 6, 7
    logp = torch.randn(B, T, dtype=torch.float64, requires_grad=True)
    old = (logp + 0.1 * torch.randn(B, T, dtype=torch.float64)).detach()
    mask = (torch.rand(B, T) > 0.3).double()
    mask[:, 0] = 1
    adv = torch.randn(B, dtype=torch.float64)
    kept = torch.tensor([True, False, True, True, False, True])
    full = policy_loss(logp, old, adv * kept, mask, loss_type, max_completion_length=T)
    part = policy_loss(logp[kept], old[kept], adv[kept], mask[kept], loss_type, max_completion_length=T)
    scale = dropped_rollouts_scale(loss_type, int(mask[kept].sum()), int(mask.sum()), int(kept.sum()), B)
    assert torch.allclose(full, part * scale, atol=1e-12)
