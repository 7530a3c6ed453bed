"""Seeded generator of toy programming tasks with stdin/stdout unit tests.

The code domain of the toy world (the paper's Table 6 at toy scale). A task is
a compact templated spec that a character-level model can map to a Python
program; difficulty is composition (how many parts the program combines),
so errors compound with level, as in toy_math:

  level  spec                   program (what the reference solution prints)
  1      n:3n+1                 n=int(input())
                                print(3*n+1)
  2      a,b:3a-2b              a,b=map(int,input().split())
                                print(3*a-2*b)
  3      xs:max 3x+1            print(max(3*x+1 for x in map(int,input().split())))
  4      xs:sum 3x+1 if x>4     print(sum(3*x+1 for x in map(int,input().split()) if x>4))
         (conditions: x>t, x<t, even, odd)

`n` / `a,b` / `xs` name the input: one integer, two on one line, a line of
integers. A solution's plan (`steps`) is the spec translated piece by piece
into Python fragments (implicit products written out, the aggregate, the
condition); the program assembles them into a fixed template per level. The
completion shape is the paper's:
    <think> plan, one fragment per step </think> summary <answer> program </answer>

Every problem has `tests` ([{input, output}], 3 per problem); a program is
correct iff it passes all of them (graded in the code sandbox,
agon.verify.grading). Expected outputs are computed here from the task's
semantics, independently of the reference program; tests/test_toy_code.py
runs every reference program against its tests in the sandbox.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from . import generated

LEVELS = (1, 2, 3, 4)
N_TESTS = 3
AGGREGATES = ("sum", "max", "min")
READ_LIST = "map(int,input().split())"


@dataclass(frozen=True)
class Task:
    """One generated task: its spec, plan fragments and the semantics behind them."""

    level: int
    k: int                 # coefficient of the (first) variable
    op: str = "+"          # "+" or "-"
    c: int = 0             # the constant term (levels 1, 3, 4) or the coefficient of b (level 2)
    agg: str = "sum"       # level 3
    cond: str = ""         # level 4: ">t", "<t", "even", "odd"

    # --- text -------------------------------------------------------------
    @property
    def spec(self) -> str:
        if self.level == 1:
            return f"n:{self.k}n{self.op}{self.c}"
        if self.level == 2:
            return f"a,b:{self.k}a{self.op}{self.c}b"
        if self.level == 3:
            return f"xs:{self.agg} {self.k}x{self.op}{self.c}"
        return f"xs:sum {self.k}x{self.op}{self.c} if {self._cond_spec}"

    @property
    def _cond_spec(self) -> str:
        return self.cond if self.cond in ("even", "odd") else f"x{self.cond}"

    @property
    def steps(self) -> tuple[str, ...]:
        """The plan: the spec's parts as Python fragments, in spec order (levels 3-4: condition first)."""
        if self.level == 1:
            return (f"{self.k}*n{self.op}{self.c}",)
        if self.level == 2:
            return (f"{self.k}*a{self.op}{self.c}*b",)
        if self.level == 3:
            return (f"{self.k}*x{self.op}{self.c}", self.agg)
        return (condition_code(self.cond), f"{self.k}*x{self.op}{self.c}")

    @property
    def program(self) -> str:
        return program_of(self.level, self.steps)

    # --- semantics (independent of the program text) -----------------------
    def value(self, x: int, y: int = 0) -> int:
        if self.level == 2:
            return self.k * x + (self.c * y if self.op == "+" else -self.c * y)
        return self.k * x + (self.c if self.op == "+" else -self.c)

    def keeps(self, x: int) -> bool:
        if self.cond == "even":
            return x % 2 == 0
        if self.cond == "odd":
            return x % 2 == 1
        t = int(self.cond[1:])
        return x > t if self.cond[0] == ">" else x < t

    def expected(self, values: list[int]) -> int:
        if self.level == 1:
            return self.value(values[0])
        if self.level == 2:
            return self.value(values[0], values[1])
        if self.level == 3:
            return {"sum": sum, "max": max, "min": min}[self.agg](self.value(x) for x in values)
        return sum(self.value(x) for x in values if self.keeps(x))


def condition_code(cond: str) -> str:
    return {"even": "x%2==0", "odd": "x%2==1"}.get(cond, f"x{cond}")


def program_of(level: int, steps) -> str:
    """The program a plan assembles into (also for a plan with a wrong step)."""
    if level == 1:
        return f"n=int(input())\nprint({steps[0]})"
    if level == 2:
        return f"a,b=map(int,input().split())\nprint({steps[0]})"
    if level == 3:
        expr, agg = steps
        return f"print({agg}({expr} for x in {READ_LIST}))"
    if level == 4:
        cond, expr = steps
        return f"print(sum({expr} for x in {READ_LIST} if {cond}))"
    raise ValueError(f"toy_code: unknown difficulty level {level!r}; levels are {LEVELS}")


_SPEC_RE = {
    1: re.compile(r"^n:(\d)n([+-])(\d)$"),
    2: re.compile(r"^a,b:(\d)a([+-])(\d)b$"),
    3: re.compile(r"^xs:(sum|max|min) (\d)x([+-])(\d)$"),
    4: re.compile(r"^xs:sum (\d)x([+-])(\d) if (x[<>]\d|even|odd)$"),
}


def parse(spec: str) -> Task:
    """The task a spec (a problem's prompt) describes; ValueError if it is not one."""
    for level, regex in _SPEC_RE.items():
        m = regex.match(spec)
        if not m:
            continue
        g = m.groups()
        if level == 1:
            return Task(1, int(g[0]), g[1], int(g[2]))
        if level == 2:
            return Task(2, int(g[0]), g[1], int(g[2]))
        if level == 3:
            return Task(3, int(g[1]), g[2], int(g[3]), agg=g[0])
        return Task(4, int(g[0]), g[1], int(g[2]), cond=g[3].removeprefix("x"))
    raise ValueError(f"toy_code: cannot parse spec {spec!r}")


def _task(level: int, rng: random.Random) -> Task:
    k = rng.randint(2, 9)
    if level not in LEVELS:
        raise ValueError(f"toy_code: unknown difficulty level {level!r}; levels are {LEVELS}")
    op = rng.choice("+-")
    c = rng.randint(2, 9) if level == 2 else rng.randint(1, 9)
    agg = rng.choice(AGGREGATES) if level == 3 else "sum"
    cond = ""
    if level == 4:
        kind = rng.choice([">", "<", ">", "<", "even", "odd"])
        cond = kind if kind in ("even", "odd") else f"{kind}{rng.randint(3, 8)}"
    return Task(level, k, op, c, agg=agg, cond=cond)


def _inputs(task: Task, rng: random.Random) -> list[list[int]]:
    """N_TESTS distinct inputs; for a condition, the first test holds its boundary value."""
    seen, cases = set(), []
    while len(cases) < N_TESTS:
        if task.level == 1:
            values = [rng.randint(0, 60)]
        elif task.level == 2:
            values = [rng.randint(0, 30), rng.randint(0, 30)]
        else:
            values = [rng.randint(0, 12) for _ in range(rng.randint(3, 6))]
            if task.level == 4 and not cases and task.cond[0] in "<>":
                values[rng.randrange(len(values))] = int(task.cond[1:])
        if tuple(values) not in seen:
            seen.add(tuple(values))
            cases.append(values)
    return cases


def tests_of(task: Task, rng: random.Random) -> list[dict]:
    return [{"input": " ".join(map(str, v)) + "\n", "output": f"{task.expected(v)}\n"}
            for v in _inputs(task, rng)]


def _problem(index: int, task: Task, rng: random.Random) -> dict:
    return {
        "id": f"toy_code-{index:06d}",
        "prompt": task.spec,
        "tests": tests_of(task, rng),
        "difficulty": task.level,
        "source": "toy_code",
    }


def stream(seed: int, levels=LEVELS, weights=None):
    """Endless problems with repeats allowed (for supervised pre-training data)."""
    return generated.stream(seed, levels, weights, lambda index, level, rng: _problem(index, _task(level, rng), rng))


def generate(n: int, seed: int, levels=LEVELS, weights=None) -> list[dict]:
    """`n` problems with distinct specs, deterministic in `seed`, spread over `levels`."""
    return generated.distinct(stream(seed, levels, weights), n, "toy_code", levels)


def load(cfg: dict, counts: dict | None = None) -> list[dict]:
    """The `toy_code` source over a dataset's `options` (pool_size, levels, weights) and seed."""
    return generated.load("toy_code", generate, LEVELS, cfg, counts)
