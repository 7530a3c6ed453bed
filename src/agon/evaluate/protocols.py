"""Evaluation protocols, each producing one record per problem.

A record: {id, difficulty, stages: [{policy, completion, length, answer, correct, verifier,
prompt_tokens[, skipped]}], answer, correct, final_length, total_tokens}. A stage whose prompt
left the context no room says why in `skipped`; it is graded (wrong) and stays counted. The final stage is
the one scored (pass@1); `final_length` is the paper's reported length and
`total_tokens` adds every stage (the number the paper omits).

Protocols:
  single      one pass of one policy on the plain prompt
  cascade     first policy drafts, second answers after reading summary(draft)
              (also self-refine and the GRPO self-cascade: the same policy twice)
  moa         the paper's two-agent mixture layer ("each model reads the other's
              attempt and refines its own output, at the same two-pass budget";
              untrained in the paper: both agents are the base): agents P and Q
              answer the plain prompt (s1, s2), then P refines its own attempt
              after reading Q's: its second pass reads summary(s1) as its own
              earlier attempt and summary(s2) as the other agent's. That pass is
              scored; s1, s2 and it are recorded and counted (Q's own refinement
              is never scored, so it is not sampled). Ours: the paper does not
              say whether an agent rereads its own draft whole; like a rival's,
              its reasoning trace is left out (the summary), which bounds the prompt.
Policies are adapter names, or None for the bare base model.
"""

from __future__ import annotations

from .. import prompts
from ..io import derived_seed

PROTOCOLS = ("single", "cascade", "moa")


def _stage(policy, completion, problem, grader) -> dict:
    stage = {
        "policy": policy,
        "completion": completion.text,
        "length": completion.length,
        "prompt_tokens": len(completion.prompt_ids),
        "truncated": completion.truncated,
        "answer": prompts.extract_answer(completion.text),
        "correct": grader.correct(problem, completion.text),
        "verifier": grader.verifier_for(problem),
    }
    if completion.skipped is not None:  # nothing sampled: the prompt left the context no room
        stage["skipped"] = completion.skipped
    return stage


def _record(problem: dict, stages: list[dict]) -> dict:
    return {
        "id": problem["id"],
        "difficulty": problem["difficulty"],
        "stages": stages,
        "answer": stages[-1]["answer"],
        "correct": stages[-1]["correct"],
        "final_length": stages[-1]["length"],
        "total_tokens": sum(s["length"] for s in stages),
    }


def run(protocol: str, policies: list, problems: list[dict], sample, fmt, grader) -> list[dict]:
    """`sample(policy, prompt_texts, stage_index)` -> completions, one per prompt."""
    raw = sample

    def sample(policy, prompt_texts, stage):  # each text as the model's turn reads (fmt.prefill)
        return fmt.completed(raw(policy, prompt_texts, stage))

    if protocol == "single":
        (policy,) = policies
        comps = sample(policy, [fmt.plain(p) for p in problems], 0)
        return [_record(p, [_stage(policy, c, p, grader)]) for p, c in zip(problems, comps)]
    if protocol == "cascade":
        first, second = policies
        drafts = sample(first, [fmt.plain(p) for p in problems], 0)
        answers = sample(second, [fmt.with_attempt(p, prompts.summary(d.text))
                                  for p, d in zip(problems, drafts)], 1)
        return [_record(p, [_stage(first, d, p, grader), _stage(second, a, p, grader)])
                for p, d, a in zip(problems, drafts, answers)]
    if protocol == "moa":
        agent, other = policies
        plain = [fmt.plain(p) for p in problems]
        own = sample(agent, plain, 0)
        theirs = sample(other, plain, 1)
        refined = sample(agent, [fmt.refining(p, prompts.summary(a.text), prompts.summary(b.text))
                                 for p, a, b in zip(problems, own, theirs)], 2)
        return [_record(p, [_stage(agent, a, p, grader), _stage(other, b, p, grader), _stage(agent, c, p, grader)])
                for p, a, b, c in zip(problems, own, theirs, refined)]
    raise ValueError(f"unknown protocol {protocol!r}; known: {PROTOCOLS}")


def make_sampler(backend, sampling: dict, seed: int):
    """A `sample(policy, prompt_texts, stage)` callable over a generation backend.

    Each stage draws with its own seed, derived from (seed, stage): the same
    stage of two evaluations of one cell draws the same random numbers. So a
    call repeated with the same policy, prompts and stage returns the same
    completions, and is answered from memory instead of sampled again: the
    drafter alone is the first stage of its cascade, a single pass the first
    stage of the self-cascade and of MoA (a third of a pair cell's evaluation).
    """
    seen: dict[tuple, list] = {}

    def sample(policy, prompt_texts, stage):
        key = (policy, stage, tuple(prompt_texts))
        if key not in seen:
            seen[key] = backend.sample(policy, prompt_texts, sampling, derived_seed(seed, "eval", stage))
        return list(seen[key])

    return sample
