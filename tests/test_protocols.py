"""Evaluation protocols over a scripted backend: stage seeds, and repeated stages answered from memory."""

from agon.evaluate import protocols
from agon.generate import Completion
from agon.prompts import PromptFormat
from agon.verify.grading import Grader

SAMPLING = {"temperature": 0.6, "top_p": 0.95, "max_new_tokens": 8}
PROBLEMS = [{"id": f"p{i}", "prompt": f"{i}+1", "answer": str(i + 1), "difficulty": 1, "source": "toy_math"}
            for i in range(3)]


class ScriptedBackend:
    """Answers depend on (adapter, seed, prompt), like a seeded sampler; every call is logged."""

    def __init__(self):
        self.calls = []

    def sample(self, adapter, prompts, sampling, seed):
        self.calls.append((adapter, seed, len(prompts)))
        return [Completion(p, f"<think>{adapter}</think>{adapter}<answer>{seed % 7}</answer>", [1], [2, 3], False)
                for p in prompts]

    def sync(self, policies=None):
        pass


def test_a_repeated_stage_is_sampled_once_and_returns_the_same_completions():
    backend = ScriptedBackend()
    sample = protocols.make_sampler(backend, SAMPLING, seed=3)
    fmt, grader = PromptFormat("toy"), Grader()
    cascade = protocols.run("cascade", ["A", "B"], PROBLEMS, sample, fmt, grader)
    drafter = protocols.run("single", ["A"], PROBLEMS, sample, fmt, grader)
    assert len(backend.calls) == 2                       # the drafter alone is the cascade's first stage
    assert [r["stages"][0] for r in cascade] == [r["stages"][0] for r in drafter]

    fresh = ScriptedBackend()
    alone = protocols.run("single", ["A"], PROBLEMS, protocols.make_sampler(fresh, SAMPLING, seed=3), fmt, grader)
    assert alone == drafter                              # memory answers what sampling would have

    protocols.run("single", ["B"], PROBLEMS, sample, fmt, grader)          # another policy: sampled
    protocols.run("single", ["A"], PROBLEMS[:2], sample, fmt, grader)      # other prompts: sampled
    protocols.run("moa", ["A", "A"], PROBLEMS, sample, fmt, grader)        # stage 0 remembered, 1-2 sampled
    assert [c[0] for c in backend.calls[2:]] == ["B", "A", "A", "A"]
    stage_seeds = {seed for _, seed, _ in backend.calls}
    assert len(stage_seeds) == 3                         # one seed per stage index, shared by protocols


def test_the_mixture_scores_the_first_agent_refining_its_own_attempt_after_reading_the_others():
    seen = []

    def sample(policy, texts, stage):
        seen.append((policy, stage, list(texts)))
        return [Completion(t, f"<think>x</think>{policy}{stage}<answer>{stage}</answer>", [1], [2], False)
                for t in texts]

    (record,) = protocols.run("moa", ["P", "Q"], PROBLEMS[:1], sample, PromptFormat("toy"), Grader())
    question = PROBLEMS[0]["prompt"]
    # two first passes on the plain prompt, one per agent; then P's second pass, which reads its
    # own summary first and the other agent's second (answers withheld)
    assert [(p, s) for p, s, _ in seen] == [("P", 0), ("Q", 1), ("P", 2)]
    assert seen[0][2] == seen[1][2] == [f"Q: {question}\n"]
    assert seen[2][2] == [f"Q: {question}\nR: P0\nR: Q1\n"]
    assert [s["policy"] for s in record["stages"]] == ["P", "Q", "P"]
    assert record["answer"] == "2" and record["final_length"] == 1 and record["total_tokens"] == 3


def test_the_mixture_needs_two_agents():
    import pytest

    with pytest.raises(ValueError):
        protocols.run("moa", [None], PROBLEMS[:1], lambda *a: [], PromptFormat("toy"), Grader())
