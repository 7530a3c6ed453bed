"""Seeded generator of toy arithmetic problems with graded difficulty.

Levels (difficulty):
  1  a+b          two 2-digit numbers
  2  a*b          1-digit times 2-digit
  3  a+b*c        2-digit plus 2-digit times 1-digit
  4  a*b-c*d      two products of 1-digit by 2-digit, subtracted

Each problem carries its derivation (the list of steps a careful solver
writes), which the supervised data for the toy base model is built from.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

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

    def render(self, value: int | None = None) -> str:
        return f"{self.left}{self.op}{self.right}={self.value if value is None else value}"


def _steps(level: int, rng: random.Random) -> tuple[str, list[Step]]:
    two = lambda: rng.randint(10, 99)  # noqa: E731
    one = lambda: rng.randint(2, 9)  # noqa: E731
    if level == 1:
        a, b = two(), two()
        return f"{a}+{b}", [Step(a, "+", b)]
    if level == 2:
        a, b = one(), two()
        return f"{a}*{b}", [Step(a, "*", b)]
    if level == 3:
        a, b, c = two(), two(), one()
        prod = Step(b, "*", c)
        return f"{a}+{b}*{c}", [prod, Step(a, "+", prod.value)]
    if level == 4:
        a, b, c, d = one(), two(), one(), two()
        p, q = Step(a, "*", b), Step(c, "*", d)
        return f"{a}*{b}-{c}*{d}", [p, q, Step(p.value, "-", q.value)]
    raise ValueError(f"toy_math: unknown difficulty level {level!r}; levels are {LEVELS}")


def derivation(expression: str) -> list[Step]:
    """Recover the canonical steps of a generated expression (used by SFT data)."""
    import re

    nums = [int(x) for x in re.findall(r"\d+", expression)]
    ops = re.findall(r"[+\-*]", expression)
    if ops == ["+"]:
        return [Step(nums[0], "+", nums[1])]
    if ops == ["*"]:
        return [Step(nums[0], "*", nums[1])]
    if ops == ["+", "*"]:
        prod = Step(nums[1], "*", nums[2])
        return [prod, Step(nums[0], "+", prod.value)]
    if ops == ["*", "-", "*"]:
        p, q = Step(nums[0], "*", nums[1]), Step(nums[2], "*", nums[3])
        return [p, q, Step(p.value, "-", q.value)]
    raise ValueError(f"toy_math: cannot parse expression {expression!r}")


def _problem(index: int, expression: str, steps: list[Step], level: int) -> dict:
    return {
        "id": f"toy_math-{index:06d}",
        "prompt": f"{expression}=?",
        "answer": str(steps[-1].value),
        "difficulty": level,
        "source": "toy_math",
    }


def stream(seed: int, levels=LEVELS, weights=None):
    """Endless problems with repeats allowed (for supervised pre-training data)."""
    rng = random.Random(seed)
    levels = list(levels)
    weights = list(weights) if weights is not None else [1.0] * len(levels)
    index = 0
    while True:
        level = rng.choices(levels, weights=weights)[0]
        expression, steps = _steps(level, rng)
        yield _problem(index, expression, steps, level)
        index += 1


def generate(n: int, seed: int, levels=LEVELS, weights=None) -> list[dict]:
    """`n` distinct problems, deterministic in `seed`, spread over `levels`."""
    seen: set[str] = set()
    problems = []
    for attempts, problem in enumerate(stream(seed, levels, weights)):
        if attempts > 50 * n + 1000:
            raise ValueError(f"toy_math: could not draw {n} distinct problems from levels {list(levels)}")
        if problem["prompt"] in seen:
            continue
        seen.add(problem["prompt"])
        problem["id"] = f"toy_math-{len(problems):06d}"
        problems.append(problem)
        if len(problems) == n:
            break
    return problems
