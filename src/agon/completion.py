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

    @property
    def length(self) -> int:
        return len(self.completion_ids)
