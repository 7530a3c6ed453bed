"""The facts world: the carries world's chains, added in the head by a base that holds a wrong fact.

The problems, splits, transfer form and Table 0 markers are the carries world's (carries.py):
chains of two-digit terms such as `14+26+17=?`. What changes is the solver. It adds each step in
its head and writes only the sums: `<think>14+26=30;30+17=47</think>14+26=30,30+17=47<answer>47`.
It also holds a misconception, the same on every sample: a units column that sums to one of
`no_carry_sums` (for example 10: "4+6 makes 0, nothing to carry") carries nothing, so `14+26=30`.
A chain with such a column comes out wrong whoever samples it and however often. That hardness
belongs to the problem: a GRPO group of rollouts on it is all wrong and gives no advantage to
learn from, and two samples fail together. On top, a step's units digit is written one off with
`slip_prob`: a coin that RL can flip, on another token than the carry. (The carries world had
only a coin, on the carry. RL flipped it within a dozen steps, after which copying a right draft
paid and reading was never learned. A first facts base with its slip on the carry token learned
the misconception away with it, and a base trained too briefly held the misconception too
loosely for it to last: docs/toy-world.md, "The facts world".)

A wrong draft finishes, and its summary states the faulty step. The verifying read checks a
rival's steps column by column with the carry written out (`?14+26=30:4+6=10,1+2+1=4 no;`), and
on that route the base has every fact right, though with `check_slip_prob` it writes a units
column's sum one off, as careless in a check as a slip is in a solve: the check then fails a right
step or passes a wrong one. At the first step that fails, the read corrects it to the check's
value and solves on in the head, misconception and all. Copying a wrong draft, or solving afresh,
repeats the error; only checking fixes it. The reading habits and their shares (copy, verify,
ignore), the two-line prompts and the rivals' summaries follow carries.example, with this solver.
A right rival summary is the chain's true steps (a rival may know the fact); a wrong one is the
base's own, drawn until wrong.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from . import carries
from .carries import (CHECKABLE_PATTERN, SOURCE, VERIFY_PATTERN, Chain, columns, has_carry,  # noqa: F401
                      load, render, stream, supervised_form, written_value)

VERIFIER = carries.VERIFIER
UNITS_SUMS = range(10, 19)   # the units-column sums that carry: the ones a misconception can name


@dataclass(frozen=True)
class MentalSolver(carries.Solver):
    """Adds each step in the head: a carry from a units column summing to one of `no_carry_sums`
    is dropped every time (every other carry is kept), and a step's units digit is written one
    off with probability `slip_prob`. The slip is a coin on another token than the carry, so a
    policy that learns to stop slipping does not learn the dropped carry with it. Its `text` is
    carries.Solver's: the steps as `solve` writes them, then the summary and the answer."""
    no_carry_sums: frozenset[int]
    check_slip_prob: float = 0.0

    def check(self, left: int, right: int, rng: random.Random) -> tuple[str, int]:
        """A verifying read's column work: every fact right (the carry written out), but with
        `check_slip_prob` the units column's sum is written one off, and the tens column and the
        value follow from it as written. A careless check can pass a step whose units digit is
        as far off, or fail a right step and "correct" it. No random number is drawn at 0, so a
        recipe without careless checks makes the same data as before they existed."""
        units = left % 10 + right % 10
        if self.check_slip_prob and rng.random() < self.check_slip_prob:
            units += 1 if units == 0 or (units < 18 and rng.random() < 0.5) else -1
        carry = int(units >= 10)
        return columns(left, right, carry, units), written_value(left, right, carry, units)

    def step(self, left: int, right: int, rng: random.Random) -> int:
        units = left % 10 + right % 10
        value = written_value(left, right, int(has_carry(left, right) and units not in self.no_carry_sums))
        if rng.random() < self.slip_prob:   # the units digit one up or down, the carry as it was
            value += (1 if value % 10 < 9 else -1) if rng.random() < 0.5 else (-1 if value % 10 > 0 else 1)
        return value

    def solve(self, chain: Chain, rng: random.Random, start: int = 0,
              total: int | None = None) -> tuple[str, list[tuple[int, int, int]]]:
        """The steps from `start` on (from running total `total`): the reasoning text and the steps
        as written (left, right, value)."""
        total = chain.terms[0] if total is None else total
        written = []
        for term in chain.terms[start + 1:]:
            value = self.step(total, term, rng)
            written.append((total, term, value))
            total = value
        return render(written).replace(",", ";"), written

    def summary(self, chain: Chain, rng: random.Random, wrong: bool) -> str:
        """A rival's summary: the true steps, or the base's own wrong ones (a slip at least as
        likely as not), drawn until wrong."""
        if wrong:
            careless = replace(self, slip_prob=max(self.slip_prob, 0.5))
            for _ in range(100):
                _, written = careless.solve(chain, rng)
                if written[-1][2] != chain.answer:
                    return render(written)
            return render(replace(self, slip_prob=1.0).solve(chain, rng)[1])
        return render([(left, right, left + right) for left, right in chain.steps()])


def solver(recipe: dict) -> MentalSolver:
    sums = frozenset(recipe["no_carry_sums"])
    if not sums <= set(UNITS_SUMS):
        raise ValueError(f"models.<m>.base.no_carry_sums: {sorted(sums)} must be units-column sums that carry "
                         f"({UNITS_SUMS.start}-{UNITS_SUMS.stop - 1})")
    return MentalSolver(recipe["slip_prob"], sums, recipe.get("check_slip_prob", 0.0))


def example(problem: dict, rng: random.Random, recipe: dict) -> tuple[str, list[tuple[str, bool]]]:
    """One supervised example of this world's base (carries.example's mix, this world's solver)."""
    return carries.example(problem, rng, recipe, solver(recipe))
