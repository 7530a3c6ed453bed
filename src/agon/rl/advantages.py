"""Group-relative advantages (paper Eq. 1), grouped by explicit group ids.

A_i = (R_i - mean_g R) / (std_g R + eps) within each group g. The std is the
unbiased one and eps = 1e-4, as in TRL's GRPOTrainer, so our numbers match the
reference. A group whose rewards are all equal carries no signal and is dropped
(its rollouts get no loss), and the drop is counted.

`scale` is TRL's `scale_rewards` (1.16, GRPOConfig): "group" divides by each group's
std (Eq. 1), "none" leaves A_i = R_i - mean_g R (Dr. GRPO). Dividing by the std gives a
group whose rewards differ only by the format term (every rollout wrong, some of them
unfinished) advantages as large as a group that differs in correctness: the gradient is
then no longer the expected reward's, but a sum weighted toward such groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = 1e-4


@dataclass
class GroupAdvantages:
    advantages: np.ndarray  # one per rollout (0 where dropped)
    keep: np.ndarray  # bool per rollout: belongs to a group with reward variance
    groups: int
    dropped_groups: int


SCALES = ("group", "none")


def group_advantages(rewards, group_ids, eps: float = EPS, scale: str = "group") -> GroupAdvantages:
    if scale not in SCALES:
        raise ValueError(f"unknown scale_rewards {scale!r}; known: {', '.join(SCALES)}")
    rewards = np.asarray(rewards, dtype=np.float64)
    group_ids = np.asarray(group_ids)
    if rewards.shape != group_ids.shape:
        raise ValueError(f"advantages: {rewards.shape[0]} rewards but {group_ids.shape[0]} group ids")
    advantages = np.zeros_like(rewards)
    keep = np.zeros(rewards.shape, dtype=bool)
    unique = list(dict.fromkeys(group_ids.tolist()))
    dropped = 0
    for g in unique:
        idx = np.flatnonzero(group_ids == g)
        r = rewards[idx]
        if len(r) < 2 or np.allclose(r, r[0]):
            dropped += 1
            continue
        advantages[idx] = (r - r.mean()) / (r.std(ddof=1) + eps) if scale == "group" else r - r.mean()
        keep[idx] = True
    return GroupAdvantages(advantages, keep, len(unique), dropped)
