"""Generation backends behind one interface.

`generate(model, tokenizer, prompts, sampling, seed)` returns one Completion
per prompt (repeat a prompt to sample it several times). The transformers
backend runs on CPU and GPU; a vLLM backend with the same signature serves
paper-scale runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Completion:
    prompt: str
    text: str
    prompt_ids: list[int]
    completion_ids: list[int]  # includes the eos token when the model stopped on its own
    truncated: bool  # hit the completion cap without stopping

    @property
    def length(self) -> int:
        return len(self.completion_ids)


@torch.no_grad()
def generate(model, tokenizer, prompts: list[str], sampling: dict, seed: int,
             batch_size: int = 256) -> list[Completion]:
    """Sample one completion per prompt with temperature / top-p from `sampling`."""
    torch.manual_seed(seed)
    eos = tokenizer.eos_token_id
    out: list[Completion] = []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start:start + batch_size]
        enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
        greedy = sampling["temperature"] == 0
        gen = model.generate(
            **enc,
            max_new_tokens=sampling["max_new_tokens"],
            do_sample=not greedy,
            temperature=None if greedy else sampling["temperature"],
            top_p=None if greedy else sampling.get("top_p", 1.0),
            top_k=None if greedy else 0,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=eos,
        )
        width = enc["input_ids"].shape[1]
        for i, prompt in enumerate(chunk):
            prompt_ids = enc["input_ids"][i][enc["attention_mask"][i].bool()].tolist()
            ids = gen[i, width:].tolist()
            stopped = eos in ids
            ids = ids[: ids.index(eos) + 1] if stopped else ids
            text = tokenizer.decode([t for t in ids if t != eos], skip_special_tokens=False)
            out.append(Completion(prompt, text, prompt_ids, ids, truncated=not stopped))
    return out
