"""Supervised data for the toy base of the code domain (`base.world: code`, agon.worlds.code).

A completion translates the spec (agon.data.toy_code) piece by piece, then
writes the program:
    <think>x>4;3*x</think>x>4,3*x<answer>print(sum(3*x for x in ...))</answer>
The plan has one fragment per step (`;`-separated), the summary recaps the
plan (`,`-separated; the part a rival reads), the answer is the program.

As in the math SFT data (agon.toy.sft):
  * false starts: a step is sometimes first written wrong, retracted with
    " no", and redone;
  * reading an attempt: some prompts carry a rival summary after "R:"
    (correct, or with one wrong step); the plan retracts the attempt's wrong
    step, so the challenger prompt is in distribution and copying a wrong
    attempt is never the target.
Wrong fragments are never trained on (trained=False): only their retraction.

One deliberate exception, `bug_prob` (default 0): a share of the plain-prompt
level-4 examples is written WITH a habitual bug in the condition (`x<=4` for
`x<4`, `x>=4` for `x>4`, the parity flipped), trained on like the rest: a
base that has picked up a plausible bug from its data, which compiles, runs
and fails the boundary test. Without it the base's failures are copying
slips spread over every position, which a few RL steps hardly move; a habit
is a choice unit tests can teach the policy to drop, and a rival's summary
shows it (the `R:` examples retract it when a rival writes it).
"""

from __future__ import annotations

import random
import re

from .. import prompts
from ..data import toy_code


def bug(step: str) -> str:
    """The habitual bug of a condition fragment: the comparison made non-strict, or the parity flipped."""
    if step in ("x%2==0", "x%2==1"):
        return "x%2==1" if step == "x%2==0" else "x%2==0"
    if re.fullmatch(r"x[<>]\d", step):
        return f"{step[:2]}={step[2:]}"
    raise ValueError(f"toy_code: {step!r} is not a condition fragment")


def corrupt_step(step: str, rng: random.Random) -> str:
    """A plausible wrong version of a plan fragment: one digit, operator, comparison or aggregate changed."""
    if step in toy_code.AGGREGATES:
        return rng.choice([a for a in toy_code.AGGREGATES if a != step])
    if step in ("x%2==0", "x%2==1"):
        return bug(step)
    candidates = [bug(step)] if re.fullmatch(r"x[<>]\d", step) else []
    for m in re.finditer(r"\d", step):
        d = int(m.group())
        for e in (d - 1, d + 1):
            if 1 <= e <= 9:
                candidates.append(step[:m.start()] + str(e) + step[m.end():])
    flips = {"+": "-", "-": "+", "<": ">", ">": "<"}
    for i, ch in enumerate(step):
        if ch in flips:
            candidates.append(step[:i] + flips[ch] + step[i + 1:])
    return rng.choice(candidates)


def attempt_steps(task: toy_code.Task, wrong_index: int | None, rng: random.Random) -> list[str]:
    """A rival's plan: the task's steps, with step `wrong_index` (if any) written wrong."""
    steps = list(task.steps)
    if wrong_index is not None:
        steps[wrong_index] = corrupt_step(steps[wrong_index], rng)
    return steps


def render_summary(steps) -> str:
    return ",".join(steps)


def solution(task: toy_code.Task, rng: random.Random, false_start_prob: float,
             attempt: list[str] | None = None, buggy: bool = False) -> list[tuple[str, bool]]:
    """A completion as (text, trained) pieces (see the module docstring): correct, unless
    `buggy` (a level-4 task's condition written with its habitual bug, throughout)."""
    steps = list(task.steps)
    if buggy:
        steps[0] = bug(steps[0])
    pieces: list[tuple[str, bool]] = [("<think>", True)]
    for i, step in enumerate(steps):
        sep = ";" if i else ""
        wrong = None
        if attempt is not None and attempt[i] != step:
            wrong = attempt[i]
        elif attempt is None and rng.random() < false_start_prob:
            wrong = corrupt_step(step, rng)
        if wrong is not None:
            pieces += [(sep, True), (wrong, False), (" no", True)]
            sep = ";"
        pieces.append((f"{sep}{step}", True))
    program = toy_code.program_of(task.level, steps)
    pieces.append((f"</think>{render_summary(steps)}<answer>{program}</answer>", True))
    return [(text, trained) for text, trained in pieces if text]


def example(problem: dict, rng: random.Random, attempt_prob: float, attempt_wrong_prob: float,
            false_start_prob: float, bug_prob: float = 0.0) -> tuple[str, list[tuple[str, bool]]]:
    task = toy_code.parse(problem["prompt"])
    if rng.random() < attempt_prob:
        wrong = rng.randrange(len(task.steps)) if rng.random() < attempt_wrong_prob else None
        attempt = attempt_steps(task, wrong, rng)
        prompt = prompts.toy_with_attempt(problem["prompt"], render_summary(attempt))
        return prompt, solution(task, rng, false_start_prob, attempt)
    buggy = task.level == 4 and bug_prob > 0 and rng.random() < bug_prob
    return prompts.toy_plain(problem["prompt"]), solution(task, rng, false_start_prob, buggy=buggy)
