"""Seeded generator of toy arithmetic problems with graded difficulty.

Difficulty is the number of elementary steps a careful solver writes; each
step is easy (a 1-digit product, or a sum of numbers below 100), so a tiny
model learns the steps and errors compound with length, which is what gives
RL and the cascade something to fix:

  1  a+b            2-digit plus 1-digit                  1 step
  2  a*b+c          1-digit operands                      2 steps
  3  a*b+c*d        1-digit operands                      3 steps
  4  a*b+c+d*e      1-digit operands                      4 steps

Every sum has operands below 100 and no result is negative, so a sum can be
worked column by column (see `column_work`).

`derive` turns an expression into its steps (products first, then sums
left to right), optionally with a slip: one step written with a wrong value
that later steps then use, as a real solver's mistake propagates.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from . import generated

LEVELS = (1, 2, 3, 4)


@dataclass(frozen=True)
class Step:
    """One elementary operation `left op right = value`."""

    left: int
    op: str
    right: int

    @property
    def value(self) -> int:
        return {"+": self.left + self.right, "-": self.left - self.right, "*": self.left * self.right}[self.op]

    def render(self, value: int | str | None = None) -> str:
        return f"{self.left}{self.op}{self.right}={self.value if value is None else value}"


def _expression(level: int, rng: random.Random) -> str:
    one = lambda: rng.randint(2, 9)  # noqa: E731
    if level == 1:
        return f"{rng.randint(10, 99)}+{one()}"
    if level == 2:
        return f"{one()}*{one()}+{one()}"
    if level == 3:
        return f"{one()}*{one()}+{one()}*{one()}"
    if level == 4:
        return f"{one()}*{one()}+{one()}+{one()}*{one()}"
    raise ValueError(f"toy_math: unknown difficulty level {level!r}; levels are {LEVELS}")


def derive(expression: str, slips: dict[int, int] | None = None) -> list[tuple[Step, int]]:
    """Steps of `expression` as (step, written value); `slips` maps step index -> wrong value."""
    tokens = re.findall(r"\d+|[+\-*]", expression)
    if not tokens or "".join(tokens) != expression or len(tokens) % 2 == 0:
        raise ValueError(f"toy_math: cannot parse expression {expression!r}")
    slips = slips or {}
    written: list[tuple[Step, int]] = []

    def apply(left: int, op: str, right: int) -> int:
        step = Step(left, op, right)
        value = slips.get(len(written), step.value)
        written.append((step, value))
        return value

    # Products first (left to right), then sums and differences left to right.
    terms, ops = [int(tokens[0])], []
    for op, num in zip(tokens[1::2], tokens[2::2]):
        if op == "*":
            terms[-1] = apply(terms[-1], "*", int(num))
        else:
            ops.append(op)
            terms.append(int(num))
    # A product written as one term has no step of its own unless it was multiplied.
    total = terms[0]
    for op, term in zip(ops, terms[1:]):
        total = apply(total, op, term)
    return written


def column_work(step: Step, value: int | None = None) -> str:
    """The column-by-column work of a sum, e.g. 56+54 -> "6+4=10,5+5+1=11,".

    Units first, then tens with the carry written out (always, as +0 or +1),
    so each column is a lookup a small model learns like a times table.
    Products and slipped sums (a written wrong `value`) get no column work.
    """
    if step.op != "+" or not (0 <= step.left < 100 and 0 <= step.right < 100):
        return ""
    if value is not None and value != step.value:
        return ""
    units = step.left % 10 + step.right % 10
    tens = step.left // 10 + step.right // 10 + units // 10
    return f"{step.left % 10}+{step.right % 10}={units},{step.left // 10}+{step.right // 10}+{units // 10}={tens},"


def derivation(expression: str) -> list[Step]:
    """The correct steps of an expression."""
    return [step for step, _ in derive(expression)]


def answer(expression: str) -> int:
    steps = derive(expression)
    return steps[-1][1] if steps else int(expression)


def _problem(index: int, expression: str, level: int) -> dict:
    return {
        "id": f"toy_math-{index:06d}",
        "prompt": f"{expression}=?",
        "answer": str(answer(expression)),
        "difficulty": level,
        "source": "toy_math",
    }


def stream(seed: int, levels=LEVELS, weights=None):
    """Endless problems with repeats allowed (for supervised pre-training data)."""
    return generated.stream(seed, levels, weights, lambda index, level, rng: _problem(index, _expression(level, rng), level))


def generate(n: int, seed: int, levels=LEVELS, weights=None) -> list[dict]:
    """`n` distinct problems, deterministic in `seed`, spread over `levels`."""
    return generated.distinct(stream(seed, levels, weights), n, "toy_math", levels)


def load(cfg: dict, counts: dict | None = None) -> list[dict]:
    """The `toy_math` source over a dataset's `options` (pool_size, levels, weights) and seed."""
    return generated.load("toy_math", generate, LEVELS, cfg, counts)
