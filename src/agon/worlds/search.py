"""The search world (the first default): toy_math's arithmetic levels 1-4 and the level-5
search `a*?+b=c`, with the supervised data of agon.toy.sft.

What it can test and what it cannot: a right rival's candidate is one check away, so its
untrained base reads a right draft almost perfectly; most wrong drafts are searches the token
cap cut, with an empty summary, and failures are luck of the search order. Every two-pass
protocol there is best-of-n with a near-perfect checker: a control for search twice, not a
testbed for learning to read (docs/toy-world.md).
"""

from __future__ import annotations

from ..data import toy_math
from ..toy import sft

SOURCE = "toy_math"
VERIFIER = "exact"
stream = toy_math.stream
load = toy_math.load


def example(problem: dict, rng, recipe: dict):
    return sft.example(problem, rng, recipe["attempt_prob"], recipe["attempt_wrong_prob"],
                       recipe["false_start_prob"], two_attempts_prob=recipe.get("two_attempts_prob", 0.0),
                       bisect_prob=recipe.get("bisect_prob", 0.0))


def supervised_form(problem: dict) -> bool:
    return True  # every level can be in the stream (`level_weights`)
