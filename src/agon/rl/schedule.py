"""What each optimizer step trains on, and at what learning rate: the seeded order of the
problems over the epochs, and the learning-rate factor per step."""

from __future__ import annotations

import random

from .. import io

SCHEDULES = ("linear", "constant_with_warmup")


def lr_schedule(total_steps: int, warmup_ratio: float, kind: str = "linear"):
    """The learning-rate factor per step, as transformers' schedulers of the same names (TRL's
    `lr_scheduler_type`): a linear warmup over `warmup_ratio` of the steps, then a linear decay
    to 0 at the last step (linear) or the peak rate to the end (constant_with_warmup)."""
    if kind not in SCHEDULES:
        raise ValueError(f"train.lr_scheduler_type: unknown {kind!r}; known: {', '.join(SCHEDULES)}")
    warmup = max(1, int(round(warmup_ratio * total_steps)))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        if kind == "constant_with_warmup":
            return 1.0
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return factor


def epoch_order(problems: list[dict], seed: int, epochs: int) -> list[dict]:
    """`epochs` passes over `problems` (sorted by id), each shuffled with a seed of (seed, epoch)."""
    order = []
    for e in range(epochs):
        shuffled = sorted(problems, key=lambda p: p["id"])
        random.Random(io.derived_seed(seed, e, "epoch")).shuffle(shuffled)
        order += shuffled
    return order
