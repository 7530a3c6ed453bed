"""Clipped policy-gradient loss on token log-probabilities (GRPO family).

Matches TRL's GRPOTrainer for loss_type in {"grpo", "bnpo", "dr_grpo", "dapo"}
with token-level importance sampling, optionally with the k3 KL estimator to
a reference policy (beta; the paper's Eq. 1 leaves the KL out "for brevity", so
whether it trained with one is unspecified: the configs set 0, TRL 1.16's GRPOConfig default).

  ratio_t = exp(logp_t - old_logp_t)
  l_t     = -min(ratio_t A, clip(ratio_t, 1 - eps_low, 1 + eps_high) A) + beta KL_t
Normalisers (how token losses become one number):
  grpo     mean over each sequence's tokens, then mean over sequences
  bnpo     sum over all tokens / number of tokens in this batch
  dapo     sum over all tokens / number of tokens in the whole generation batch
  dr_grpo  sum over all tokens / (sequences * max completion length)
"""

from __future__ import annotations

import torch

LOSS_TYPES = ("grpo", "bnpo", "dapo", "dr_grpo")


def selective_log_softmax(logits: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """log softmax(logits)[index] without materialising the full log-prob tensor twice."""
    return torch.gather(logits, -1, index.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)


def policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor,
                mask: torch.Tensor, loss_type: str, clip_low: float = 0.2, clip_high: float = 0.2,
                ref_logp: torch.Tensor | None = None, beta: float = 0.0,
                max_completion_length: int | None = None,
                num_items_in_batch: float | None = None) -> torch.Tensor:
    """logp, old_logp, ref_logp, mask: (B, T); advantages: (B,)."""
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"unknown loss_type {loss_type!r}; known: {LOSS_TYPES}")
    mask = mask.to(logp.dtype)
    adv = advantages.unsqueeze(1)
    ratio = torch.exp(logp - old_logp)
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    per_token = -torch.min(ratio * adv, clipped * adv)
    if beta != 0.0:
        if ref_logp is None:
            raise ValueError("policy_loss: beta != 0 needs ref_logp")
        diff = ref_logp - logp
        per_token = per_token + beta * (torch.exp(diff) - diff - 1)
    if loss_type == "grpo":
        return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if loss_type == "bnpo":
        return (per_token * mask).sum() / mask.sum().clamp(min=1.0)
    if loss_type == "dapo":
        total = mask.sum() if num_items_in_batch is None else torch.tensor(float(num_items_in_batch))
        return (per_token * mask).sum() / total.clamp(min=1.0)
    if max_completion_length is None:
        raise ValueError("policy_loss: dr_grpo needs max_completion_length")
    return (per_token * mask).sum() / (per_token.size(0) * max_completion_length)


def dropped_rollouts_scale(loss_type: str, kept_tokens: int, all_tokens: int,
                           kept_sequences: int, all_sequences: int) -> float:
    """Factor turning the loss over kept rollouts into the loss over the whole stream.

    Rollouts of dropped (zero-variance) groups have advantage 0: they add
    nothing to the numerator but count in TRL's normaliser. Computing the
    loss on kept rollouts only and rescaling saves their forward pass.
    """
    if loss_type in ("bnpo", "dapo"):
        return kept_tokens / max(1, all_tokens)
    if loss_type in ("grpo", "dr_grpo"):
        return kept_sequences / max(1, all_sequences)
    raise ValueError(f"unknown loss_type {loss_type!r}; known: {LOSS_TYPES}")
