"""What a generation backend returns: one module of its own, so that the backends
(generate.py, vllm_backend.py) and the graders share it without importing each other
or torch."""

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

    @property
    def length(self) -> int:
        return len(self.completion_ids)
