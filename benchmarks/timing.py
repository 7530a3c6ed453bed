"""What the benchmarks share: one timed loss pass through a Trainer's adapter.

Imported by the benchmark scripts beside it (a script's own folder is on sys.path).
"""

from __future__ import annotations

import time


def loss_pass_seconds(trainer, completions, advantages, groups, adapter: str = "A") -> float:
    """Seconds of one forward + backward over `completions` in micro-batches `groups` (lists of
    row indices), as the trainer runs each micro-batch; the gradients are dropped after."""
    start = time.perf_counter()
    with trainer.loss_pass(adapter) as micro_batch_loss:
        for group in groups:
            part, _, _ = micro_batch_loss([completions[i] for i in group], advantages[group])
            part.backward()
    trainer.policies.model.zero_grad(set_to_none=True)
    return time.perf_counter() - start
