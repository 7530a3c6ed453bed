"""The loss pass's log-probabilities: rows packed into micro-batches, and each completion's
per-token log-probs given its prompt.

`micro_batches` groups a stream's rows by length under a token budget; `sequence_logps` runs
one group through the model and keeps only the completion positions' log-probs; `SamplerGap`
compares them with the sampler's own.
"""

from __future__ import annotations

import torch
import torch.utils.checkpoint

from ..compact import CompactQwen3
from .loss import selective_log_softmax

# A loss pass's micro-batch: padded rows x row length at most this many tokens (config
# train.loss_micro_batch_tokens). Peak memory follows the micro-batch, not the stream: the
# forward, its activations and the completion logits of one micro-batch at a time, each
# backward run at once (the gradient is the one-pass gradient: tests/test_loss_micro_batch.py).
# The CPU default; its timings against other groupings: docs/measurements.md, "Benchmarks"
# (benchmarks/loss_micro_batches.py). paper.yaml sets 16384 for a GPU.
LOSS_MICRO_BATCH_TOKENS = 1024
# Rows of completion logits turned into fp32 log-probabilities at a time, recomputed in the
# backward pass (torch.utils.checkpoint) instead of kept: no fp32 copy of the logits lives on.
LOGSOFTMAX_CHUNK_TOKENS = 4096


def micro_batches(completions, max_tokens: int) -> list[list[int]]:
    """Indices of `completions` in groups whose padded size (rows x the longest prompt +
    completion) stays within `max_tokens` (a single longer row is a group alone).

    Rows are grouped in order of length, so a group pads its rows to nearly their own
    length: under a cap that only some completions reach, rows in stream order pad to well
    beyond their real tokens (docs/measurements.md, "The compact loss pass (2026-12-05)").
    """
    lengths = [len(c.prompt_ids) + len(c.completion_ids) for c in completions]
    return group_rows(lengths, sorted(range(len(lengths)), key=lengths.__getitem__), max_tokens)


def group_rows(lengths: list[int], order, max_tokens: int) -> list[list[int]]:
    """Row indices, taken in `order`, cut into consecutive groups of at most `max_tokens`
    padded tokens (rows x the longest of `lengths` among them; a longer row is a group alone)."""
    groups, current, width = [], [], 0
    for i in order:
        n = lengths[i]
        if current and max(width, n) * (len(current) + 1) > max_tokens:
            groups.append(current)
            current, width = [], 0
        current.append(i)
        width = max(width, n)
    if current:
        groups.append(current)
    return groups


def _token_logps(logits: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    # TRL scales logits by the sampling temperature before the log-softmax.
    return selective_log_softmax(logits.float() / temperature, targets)


def sequence_logps(model, completions, temperature: float, pad_id: int):
    """Per-token log-probs of each completion given its prompt: (B, T) and mask (B, T).

    `model` is a transformers causal LM (a PeftModel routed to one adapter) or a
    `CompactQwen3` (train.loss_forward: compact). Rows are left-padded, so every completion
    ends at the last position and the model's head runs only over the last T + 1 positions
    (`logits_to_keep`; the prompt's logits are never made); position ids count from each
    row's first real token, as if unpadded. Row i's completion fills the last n_i columns of
    its row of the result (mask 1 there).
    """
    rows = [c.prompt_ids + c.completion_ids for c in completions]
    width = max(map(len, rows))
    T = max(len(c.completion_ids) for c in completions)
    compact = isinstance(model, CompactQwen3)
    device = model.embed.device if compact else next(model.parameters()).device
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), T))
    for i, (r, c) in enumerate(zip(rows, completions)):
        ids[i, width - len(r):] = torch.tensor(r)
        attn[i, width - len(r):] = 1
        mask[i, T - len(c.completion_ids):] = 1
    positions = (attn.cumsum(-1) - 1).clamp(min=0)
    ids, attn, positions = ids.to(device), attn.to(device), positions.to(device)
    if compact:
        logits = model.completion_logits(ids, attn, positions, last=T + 1)
    else:
        logits = model(input_ids=ids, attention_mask=attn, position_ids=positions, logits_to_keep=T + 1,
                       use_cache=False).logits  # no KV cache: nothing is generated from this pass
    logits, targets = logits[:, :-1], ids[:, width - T:]  # the logit at position t predicts token t + 1
    step = max(1, LOGSOFTMAX_CHUNK_TOKENS // T)
    parts = []
    for start in range(0, len(rows), step):
        chunk = (logits[start:start + step], targets[start:start + step], temperature)
        parts.append(torch.utils.checkpoint.checkpoint(_token_logps, *chunk, use_reentrant=False)
                     if logits.requires_grad else _token_logps(*chunk))
    return torch.cat(parts), mask.to(device)


class SamplerGap:
    """How far the loss pass's log-probabilities of the sampled tokens are from the sampler's own
    (`Completion.logprobs`, where the backend reports them): the same weights and tokens should
    give the same numbers up to float rounding, so a gap beyond it means the loss scores another
    policy than the one that sampled (a stale adapter, a shifted token, another prompt)."""

    def __init__(self):
        self.total, self.tokens, self.largest = 0.0, 0, 0.0

    def add(self, loss_logps: torch.Tensor, sampler_logps: list[float] | None) -> None:
        if sampler_logps is None:
            return
        if len(sampler_logps) != loss_logps.shape[0]:
            raise ValueError(f"the sampler scored {len(sampler_logps)} tokens of a completion of {loss_logps.shape[0]}")
        diff = (loss_logps.float().cpu() - torch.tensor(sampler_logps)).abs()
        self.total, self.tokens = self.total + float(diff.sum()), self.tokens + diff.numel()
        self.largest = max(self.largest, float(diff.max()))

    def stats(self) -> dict:
        if not self.tokens:
            return {}
        return {"sampler_logp_gap": self.total / self.tokens, "sampler_logp_gap_max": self.largest}
