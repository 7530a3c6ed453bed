"""Seeded generator of toy arithmetic problems with graded difficulty.

Difficulty is the number of elementary steps a careful solver writes; each
step is easy (a 1-digit product, or a sum of numbers below 100), so a tiny
model learns the steps and errors compound with length, which is what gives
RL and the cascade something to fix:

  1  a+b            2-digit plus 1-digit                  1 step
  2  a*b+c          1-digit operands                      2 steps
  3  a*b+c*d        1-digit operands                      3 steps
  4  a*b+c+d*e      1-digit operands                      4 steps
  5  a*?+b=c        find the digit ?, 2-9 (b is 2-29)     a search

Level 5 inverts the others: solving it is a search, checking a candidate is
two easy steps (a product, then a sum, compared with c). A solver tries candidates, retracting
each that fails (see `Search`), so a rival's candidate is cheap to verify and
expensive to find: the preconditions of the paper's mechanism (Table 0).

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

LEVELS = (1, 2, 3, 4, 5)
ARITHMETIC_LEVELS = (1, 2, 3, 4)
SEARCH_LEVEL = 5
CANDIDATES = tuple(range(2, 10))  # what `?` can be


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
    if level == SEARCH_LEVEL:
        a, x, b = one(), rng.choice(CANDIDATES), rng.randint(2, 29)
        return Search(a, b, a * x + b).prompt
    raise ValueError(f"toy_math: unknown difficulty level {level!r}; levels are {LEVELS}")


def relation(total: int, c: int) -> str:
    """How a check's sum compares with c, as the check writes it: `<`, `=` or `>`."""
    return "<" if total < c else ">" if total > c else "="


_SEARCH_RE = re.compile(r"(\d+)\*\?\+(\d+)=(\d+)")


@dataclass(frozen=True)
class Search:
    """A level-5 problem `a*?+b=c`: find the candidate x with a*x+b = c."""

    a: int
    b: int
    c: int

    @classmethod
    def parse(cls, prompt: str) -> "Search":
        found = _SEARCH_RE.fullmatch(prompt)
        if not found:
            raise ValueError(f"toy_math: {prompt!r} is not a level-5 problem a*?+b=c")
        return cls(*map(int, found.groups()))

    @property
    def prompt(self) -> str:
        return f"{self.a}*?+{self.b}={self.c}"

    @property
    def answer(self) -> int:
        solutions = [x for x in CANDIDATES if self.a * x + self.b == self.c]
        if len(solutions) != 1:
            raise ValueError(f"toy_math: {self.prompt!r} has {len(solutions)} solutions among {CANDIDATES}")
        return solutions[0]

    def check(self, x: int) -> str:
        """Trying x, as a solver writes it: `7*5=35,35+3=38<45`, the sum set beside c with
        their relation (`<`, `=` or `>`) so that comparing them is local; x passes on `=`.
        Every check writes the comparison a bisection needs, blind or not."""
        total = self.a * x + self.b
        return f"{self.a}*{x}={self.a * x},{self.a * x}+{self.b}={total}{relation(total, self.c)}{self.c}"

    def bisection(self) -> list[int]:
        """The candidates a bisection tries, ending at the answer: the middle of what is
        left (5 of 2-9 first), then the half the comparison points to; at most 4 tries."""
        answer, low, high, tries = self.answer, CANDIDATES[0], CANDIDATES[-1], []
        while True:
            tries.append((low + high) // 2)
            if tries[-1] == answer:
                return tries
            if self.direction(tries[-1]) == "+":
                low = tries[-1] + 1
            else:
                high = tries[-1] - 1

    def direction(self, x: int) -> str:
        """Where a bisection goes after x fails: `+` (its sum is below c) or `-`."""
        return "+" if relation(self.a * x + self.b, self.c) == "<" else "-"

    def claim(self, x: int) -> str:
        """A candidate as a summary states it: `7*6+3=45` (true or not)."""
        return f"{self.a}*{x}+{self.b}={self.c}"

    @staticmethod
    def claimed(summary: str) -> int | None:
        """The candidate a summary claims, or None when it states none."""
        found = re.search(r"\d+\*(\d+)\+\d+=\d+", summary)
        return int(found.group(1)) if found else None


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
    search = level == SEARCH_LEVEL
    return {
        "id": f"toy_math-{index:06d}",
        "prompt": expression if search else f"{expression}=?",
        "answer": str(Search.parse(expression).answer if search else answer(expression)),
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
