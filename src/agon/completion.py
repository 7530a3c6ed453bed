"""What a generation backend returns: one module of its own, so that the backends
(generate.py, vllm_backend.py) and the graders share it (and `skipped_completion`)
without importing each other or torch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Completion:
    prompt: str
    text: str
    prompt_ids: list[int]
    completion_ids: list[int]  # includes the eos token when the model stopped on its own
    truncated: bool  # hit the completion cap without stopping
    # Why nothing was sampled (the prompt leaves the context no room), or None. A skipped
    # completion is graded wrong, left out of the loss and its group's statistics, and counted.
    skipped: str | None = None
    # The sampler's log-probability of each completion token under the distribution the loss scores
    # (logits / temperature, before top-p), where the backend reports it (compact); else None.
    # The trainer logs its distance to the loss pass's own log-probabilities.
    logprobs: list[float] | None = None

    @property
    def length(self) -> int:
        return len(self.completion_ids)


def skipped_completion(prompt: str, prompt_ids: list[int], max_prompt_tokens: int) -> Completion:
    """What a backend returns for a prompt that leaves no room to generate: nothing sampled,
    graded wrong, left out of the loss, and counted (`Completion.skipped`)."""
    return Completion(prompt, "", list(prompt_ids), [], truncated=False,
                      skipped=f"prompt of {len(prompt_ids)} tokens, the context holds {max_prompt_tokens}")
