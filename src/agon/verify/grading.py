"""Grade a completion: correctness c and format phi, both in {0, 1}."""

from __future__ import annotations

from .. import prompts
from . import exact


class Grader:
    """Chooses the verifier by problem source; counts what could not be parsed."""

    def __init__(self):
        self.counts = {"graded": 0, "no_answer": 0, "truncated": 0}

    def correct(self, problem: dict, completion_text: str) -> int:
        self.counts["graded"] += 1
        answer = prompts.extract_answer(completion_text)
        if answer is None:
            self.counts["no_answer"] += 1
            return 0
        source = problem["source"]
        if source == "toy_math":
            return int(exact.is_correct(answer, problem["answer"]))
        raise ValueError(f"no verifier for source {source!r} (problem {problem['id']!r})")

    def __call__(self, problem: dict, completion) -> tuple[int, int]:
        self.counts["truncated"] += int(completion.truncated)
        return self.correct(problem, completion.text), int(prompts.format_ok(completion.text))
