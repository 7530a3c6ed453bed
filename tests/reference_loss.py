"""The loss pass as it was before micro-batching: the reference the micro-batched pass must equal
(tests/test_loss_micro_batch.py) and the baseline of benchmarks/loss_memory.py. No pytest here:
the benchmark imports it on machines without the test tools (scripts/device_check.sh)."""

import torch

from agon.rl.loss import selective_log_softmax


def one_pass_logps(model, completions, temperature, pad_id):
    """The former sequence_logps: every position's logits, right-padded rows."""
    rows = [c.prompt_ids + c.completion_ids for c in completions]
    width, T = max(map(len, rows)), max(len(c.completion_ids) for c in completions)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
        attn[i, :len(r)] = 1
    device = next(model.parameters()).device
    ids, attn = ids.to(device), attn.to(device)
    logits = model(input_ids=ids, attention_mask=attn).logits.float() / temperature
    mask = torch.zeros((len(rows), T), device=device)
    out = []
    for i, c in enumerate(completions):
        p, n = len(c.prompt_ids), len(c.completion_ids)
        out.append(selective_log_softmax(logits[i, p - 1:p - 1 + n], ids[i, p:p + n]))
        mask[i, :n] = 1
    return torch.stack([torch.nn.functional.pad(r, (0, T - r.numel())) for r in out]), mask
