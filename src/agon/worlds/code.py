"""The code world (Table 6 at toy scale): agon.data.toy_code's generated programming tasks
with the supervised data of agon.toy.sft_code, graded in the sandbox."""

from __future__ import annotations

from ..data import toy_code
from ..toy import sft_code

SOURCE = "toy_code"
VERIFIER = "sandbox"
stream = toy_code.stream
load = toy_code.load


def example(problem: dict, rng, recipe: dict):
    return sft_code.example(problem, rng, recipe["attempt_prob"], recipe["attempt_wrong_prob"],
                            recipe["false_start_prob"], bug_prob=recipe.get("bug_prob", 0.0))


def supervised_form(problem: dict) -> bool:
    return True
