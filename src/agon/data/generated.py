"""What the generated toy sources (toy_math, toy_code) share.

Each makes one problem from (index, level, rng); `stream` turns that into an
endless seeded stream, `distinct` draws a pool of distinct prompts from it, and
`load` is the source loader over a dataset's `options`.
"""

from __future__ import annotations

import random
from typing import Callable, Iterable, Iterator

OPTIONS = ("pool_size", "levels", "weights")


def stream(seed: int, levels, weights, make: Callable[[int, int, random.Random], dict]) -> Iterator[dict]:
    """Endless problems with repeats allowed: per problem, a level drawn by `weights`, then `make`."""
    rng = random.Random(seed)
    levels = list(levels)
    weights = list(weights) if weights is not None else [1.0] * len(levels)
    index = 0
    while True:
        level = rng.choices(levels, weights=weights)[0]
        yield make(index, level, rng)
        index += 1


def distinct(stream: Iterable[dict], n: int, source: str, levels) -> list[dict]:
    """The first `n` problems of `stream` with distinct prompts, ids `<source>-000000`, ..."""
    seen: set[str] = set()
    problems: list[dict] = []
    for attempts, problem in enumerate(stream):
        if attempts > 50 * n + 1000:
            raise ValueError(f"{source}: could not draw {n} distinct problems from levels {list(levels)}")
        if problem["prompt"] in seen:
            continue
        seen.add(problem["prompt"])
        problem["id"] = f"{source}-{len(problems):06d}"
        problems.append(problem)
        if len(problems) == n:
            break
    return problems


def load(source: str, generate: Callable[..., list[dict]], all_levels, cfg: dict,
         counts: dict | None = None, extra: tuple[str, ...] = ()) -> list[dict]:
    """`pool_size` distinct problems drawn with `seed` from `levels` (default: all); the
    source's own `extra` options, where set, go to `generate` by name."""
    known = OPTIONS + tuple(extra)
    unknown = sorted(set(cfg) - set(known) - {"seed"})
    if unknown:
        raise ValueError(f"{source}: unknown option(s) {unknown} under datasets.<name>.options; "
                         f"known: {list(known)}")
    if "pool_size" not in cfg:
        raise ValueError(f"{source}: datasets.<name>.options.pool_size is required")
    pool = generate(cfg["pool_size"], cfg["seed"], levels=cfg.get("levels", all_levels),
                    weights=cfg.get("weights"), **{k: cfg[k] for k in extra if k in cfg})
    if counts is not None:
        counts["generated"] = len(pool)
    return pool
