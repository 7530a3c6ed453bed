"""The carries world: sums of two-digit numbers, hard where they carry.

A problem is a chain `12+19+28=?` of two-digit terms whose running total stays below 100,
solved left to right one addition at a time, each worked column by column with its carry
written out (`2+9=11,1+1+1=3,12+19=31`). Every step is easy; what makes a problem hard is
a property of the problem itself, its carries: the base's supervised solver forgets a carry
(writes `+0` where the units column made 10 or more) with probability `slip_prob`, so a
chain with k carries comes out right with probability about (1 - slip_prob)^k, whoever
samples it. That is the problem-owned hardness the paper's DeepMath split has and a search
order does not. A forgotten carry leaves a draft that finishes, wrong by 10 in one step
that every later step inherits, and its summary (`12+19=21,21+28=49`) shows the faulty step:
a wrong draft worth checking.

Reading a rival's summary (`R:` lines) is three habits in the supervised data, in shares
the recipe sets (`copy_prob`, `verify_prob`; the rest ignore):
  copy     take the rival's summary and answer as they are: `<think></think>` + its summary;
  ignore   solve the problem afresh, the rival unread (a plain solution, slips and all);
  verify   check the rival's steps in order, each redone carefully (no slip):
           `?12+19=21:2+9=11,1+1+1=3 no;` then solve on from the corrected value; a step that
           checks out reads ` ok;`. The habit that pays, and the one RL can sharpen. A read's
           first token names its habit (`</think>`, `?` or a digit), so the base learns the
           shares as the data has them (with digits for both checking and solving, a first base
           put too little weight on checking: docs/toy-world.md, "Choosing its base").
Prompts with two `R:` lines (the mixture's final pass) are rare (`two_attempts_prob`).

Levels are carry counts (0-3); `terms` is how many numbers a chain adds. The transfer set
is a form no other split and no supervised example holds: chains with a repeated-digit term
(11, 22 or 33, `REPDIGITS`), which every other chain leaves out (`form: transfer` draws them).
The base has seen each of those digits in each column, never these terms in a problem: a
shift it can partly bridge. Longer chains and larger terms it cannot (0 of 200 each on a
first base: docs/toy-world.md). `supervised_form` says which problems the supervised stream
may hold, and tests/test_worlds.py checks that no transfer problem is among them.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from .. import prompts
from ..data import generated

SOURCE = "toy_carries"
VERIFIER = "exact"
LEVELS = (0, 1, 2, 3)               # carries in a chain (a 4-term chain has 3 additions)
TERM_RANGE = (10, 39)               # every term is a two-digit number in this range
LIMIT = 100                         # every running total stays below: two columns
SUPERVISED_TERMS = (2, 3, 4)        # the chain lengths the base's supervised stream holds
REPDIGITS = (11, 22, 33)            # terms only the transfer form uses
FORMS = ("plain", "transfer")       # plain: no repdigit term (every split but transfer); transfer: one at least
# Table 0's markers for this world (config.yaml's table0_preconditions names the same):
VERIFY_PATTERN = r"^<think>\?\d+\+\d+=\d+:"        # a read that checks the rival's first step
CHECKABLE_PATTERN = r"^\d+\+\d+=\d+(,\d+\+\d+=\d+)*$"  # a summary of worked steps


@dataclass(frozen=True)
class Chain:
    terms: tuple[int, ...]

    @classmethod
    def parse(cls, prompt: str) -> "Chain":
        body = prompt.removesuffix("=?")
        if not re.fullmatch(r"\d+(\+\d+)+", body):
            raise ValueError(f"toy_carries: {prompt!r} is not a chain like 12+19+28=?")
        return cls(tuple(int(t) for t in body.split("+")))

    @property
    def prompt(self) -> str:
        return "+".join(map(str, self.terms)) + "=?"

    @property
    def answer(self) -> int:
        return sum(self.terms)

    def steps(self) -> list[tuple[int, int]]:
        """(running total, term) of each addition, with the true running totals."""
        out, total = [], self.terms[0]
        for term in self.terms[1:]:
            out.append((total, term))
            total += term
        return out

    @property
    def carries(self) -> int:
        return sum(has_carry(left, right) for left, right in self.steps())


def has_carry(left: int, right: int) -> bool:
    return left % 10 + right % 10 >= 10


def columns(left: int, right: int, carry: int, units: int | None = None) -> str:
    """The column work of `left+right` with the carry as written (`carry` may be a slip), and
    the units column's sum as written (`units`, by default the true one)."""
    units = left % 10 + right % 10 if units is None else units
    return f"{left % 10}+{right % 10}={units},{left // 10}+{right // 10}+{carry}={left // 10 + right // 10 + carry}"


def written_value(left: int, right: int, carry: int, units: int | None = None) -> int:
    """The sum a solver writes from its columns: units digit, tens from the written carry (and
    the units column's sum as written, `units`, by default the true one)."""
    units = left % 10 + right % 10 if units is None else units
    return (left // 10 + right // 10 + carry) * 10 + units % 10


def form(chain: Chain) -> str:
    return "transfer" if set(chain.terms) & set(REPDIGITS) else "plain"


def draw(rng: random.Random, n_terms: int, level: int, of_form: str = "plain") -> Chain | None:
    """A chain of `n_terms` terms of form `of_form` with exactly `level` carries, or None (after 400 draws)."""
    if level > n_terms - 1:
        return None
    for _ in range(400):
        terms = [rng.randint(*TERM_RANGE) for _ in range(n_terms)]
        if of_form == "transfer":
            terms[rng.randrange(n_terms)] = rng.choice(REPDIGITS)
        chain = Chain(tuple(terms))
        if chain.answer < LIMIT and chain.carries == level and form(chain) == of_form:
            return chain
    return None


def _problem(index: int, chain: Chain) -> dict:
    return {"id": f"{SOURCE}-{index:06d}", "prompt": chain.prompt, "answer": str(chain.answer),
            "difficulty": chain.carries, "terms": len(chain.terms), "source": SOURCE}


def stream(seed: int, levels=LEVELS, weights=None, terms=SUPERVISED_TERMS, of_form="plain"):
    """Endless chains with repeats allowed: a carry count by `weights`, a length from `terms`
    that can hold it, then terms drawn until the chain has exactly that many carries."""
    terms = tuple(terms)
    if of_form not in FORMS:
        raise ValueError(f"{SOURCE}: unknown form {of_form!r} under datasets.<name>.options; known: {list(FORMS)}")

    def make(index: int, level: int, rng: random.Random) -> dict:
        while True:
            fits = [n for n in terms if n - 1 >= level]
            if not fits:
                raise ValueError(f"toy_carries: no chain of {list(terms)} terms has {level} carries")
            chain = draw(rng, rng.choice(fits), level, of_form)
            if chain is not None:
                return _problem(index, chain)

    return generated.stream(seed, levels, weights, make)


def generate(n: int, seed: int, levels=LEVELS, weights=None, terms=SUPERVISED_TERMS, form: str = "plain") -> list[dict]:
    """`n` distinct chains, deterministic in `seed`: `levels` (carry counts), `weights` over them,
    `terms` (chain lengths), `form` (plain, or transfer)."""
    return generated.distinct(stream(seed, levels, weights, terms, form), n, SOURCE, levels)


def load(cfg: dict, counts: dict | None = None) -> list[dict]:
    """The source loader over a dataset's options: generated.load's, plus `terms` and `form`."""
    return generated.load(SOURCE, generate, LEVELS, cfg, counts, extra=("terms", "form"))


def supervised_form(problem: dict) -> bool:
    """Whether a problem has a form the base's supervised stream holds (the transfer set must not)."""
    chain = Chain.parse(problem["prompt"])
    return len(chain.terms) in SUPERVISED_TERMS and form(chain) == "plain"


# --- completions ---------------------------------------------------------------------------

def solve(chain: Chain, rng: random.Random, slip_prob: float, start: int = 0,
          total: int | None = None) -> tuple[str, list[tuple[int, int, int]]]:
    """A solver's work from step `start` on (from running total `total`): each carry forgotten
    with `slip_prob`, a slip carried into every later step. Returns the reasoning text and the
    steps as written: (left, right, value)."""
    total = chain.terms[0] if total is None else total
    parts, written = [], []
    for term in chain.terms[start + 1:]:
        carry = int(has_carry(total, term))
        if carry and rng.random() < slip_prob:
            carry = 0
        value = written_value(total, term, carry)
        parts.append(f"{columns(total, term, carry)},{total}+{term}={value}")
        written.append((total, term, value))
        total = value
    return ";".join(parts), written


def render(written: list[tuple[int, int, int]]) -> str:
    return ",".join(f"{a}+{b}={v}" for a, b, v in written)


def finish(think: str, written: list[tuple[int, int, int]]) -> str:
    return f"<think>{think}</think>{render(written)}<answer>{written[-1][2]}</answer>"


_STEP_RE = re.compile(r"(\d+)\+(\d+)=(\d+)")


def rival_steps(summary: str) -> list[tuple[int, int, int]]:
    """The steps a rival's summary states, in order: (left, right, value)."""
    return [tuple(map(int, m.groups())) for m in _STEP_RE.finditer(summary)]


def verify(chain: Chain, rng: random.Random, solver: "Solver", summary: str) -> str | None:
    """A verifying read of `summary`: its steps checked in order, column by column as
    `solver.check` works them; at the first whose check disagrees, ` no;` and the rest solved on
    by `solver` from the check's value. None when the summary states no step of this chain to check."""
    stated = rival_steps(summary)
    truth = chain.steps()
    if not stated or (stated[0][0], stated[0][1]) != truth[0]:
        return None
    parts, written = [], []
    for i, (left, right) in enumerate(truth):
        if i >= len(stated) or (stated[i][0], stated[i][1]) != (left, right):
            break
        work, value = solver.check(left, right, rng)
        ok = stated[i][2] == value
        parts.append(f"?{left}+{right}={stated[i][2]}:{work}{' ok' if ok else ' no'}")
        written.append((left, right, value))
        if not ok:
            break
    rest, more = solver.solve(chain, rng, start=len(written), total=written[-1][2])
    think = ";".join(parts + ([rest] if rest else []))
    return finish(think, written + more)


def draft_summary(chain: Chain, rng: random.Random, slip_prob: float, wrong: bool) -> str:
    """A rival's summary as the solver writes it, drawn until it is right (or wrong, where the
    chain has a carry to forget; a chain without one can only be right)."""
    for _ in range(100):
        _, written = solve(chain, rng, slip_prob if not wrong else max(slip_prob, 0.5))
        if (written[-1][2] != chain.answer) == (wrong and chain.carries > 0):
            return render(written)
    _, written = solve(chain, rng, 0.0)
    return render(written)


@dataclass(frozen=True)
class Solver:
    """This world's solver: column by column, each carry forgotten with `slip_prob`. A world
    over the same chains with another solver (agon.worlds.facts) passes its own to `example`."""
    slip_prob: float

    def solve(self, chain: Chain, rng: random.Random, start: int = 0, total: int | None = None):
        return solve(chain, rng, self.slip_prob, start, total)

    def text(self, chain: Chain, rng: random.Random) -> str:
        return finish(*self.solve(chain, rng))

    def summary(self, chain: Chain, rng: random.Random, wrong: bool) -> str:
        return draft_summary(chain, rng, self.slip_prob, wrong)

    def check(self, left: int, right: int, rng: random.Random) -> tuple[str, int]:
        """A verifying read's column work on `left+right` and the value it finds: every carry
        right, no slip (and no random number drawn)."""
        return columns(left, right, int(has_carry(left, right))), left + right


def example(problem: dict, rng: random.Random, recipe: dict,
            solver: Solver | None = None) -> tuple[str, list[tuple[str, bool]]]:
    """One supervised example (prompt, [(text, trained)]) of this world's base: a plain solve, or
    a read of one or two rival summaries with the recipe's habit shares. `solver` (default: this
    world's, with the recipe's `slip_prob`) writes the solves and the rivals' summaries."""
    chain = Chain.parse(problem["prompt"])
    solver = solver or Solver(recipe["slip_prob"])
    if rng.random() >= recipe["attempt_prob"]:
        return prompts.toy_plain(problem["prompt"]), [(solver.text(chain, rng), True)]
    count = 2 if rng.random() < recipe.get("two_attempts_prob", 0.0) else 1
    summaries = [solver.summary(chain, rng, rng.random() < recipe["attempt_wrong_prob"]) for _ in range(count)]
    prompt = prompts.toy_with_attempts(problem["prompt"], summaries)
    habit = rng.random()
    read = rng.choice(summaries)
    if habit < recipe["copy_prob"]:
        steps = rival_steps(read)
        return prompt, [(f"<think></think>{read}<answer>{steps[-1][2]}</answer>", True)]
    if habit < recipe["copy_prob"] + recipe["verify_prob"]:
        checked = verify(chain, rng, solver, summaries[0])
        if checked is not None:
            return prompt, [(checked, True)]
    return prompt, [(solver.text(chain, rng), True)]
