"""Toy worlds: each is one module holding its problems, its completion shapes, its
supervised mix and its grader's name, selected by `models.<m>.base.world` (the base's
supervised data) and by a dataset's `source` (its problems).

A world module provides:
  SOURCE           the problem source its datasets name (agon.data.sources)
  VERIFIER         the grader's verifier for its problems (agon.verify.grading)
  stream(seed, weights=...)      endless problems for the base's supervised stream
  load(cfg, counts)              the source loader over a dataset's options
  example(problem, rng, recipe)  one supervised example: (prompt, [(text, trained)])
  supervised_form(problem)       whether a problem's form is one the supervised stream holds

A new world is a new module here and one entry in WORLDS. Two worlds may share a SOURCE.
"""

from __future__ import annotations

import importlib

WORLDS = {"search": "agon.worlds.search", "carries": "agon.worlds.carries", "facts": "agon.worlds.facts",
          "code": "agon.worlds.code"}
DEFAULT = "search"  # a recipe without `world` (the first pinned math base's)


def get(name: str | None):
    """The world module called `name` (None: DEFAULT)."""
    name = name or DEFAULT
    if name not in WORLDS:
        raise ValueError(f"models.<m>.base.world: unknown world {name!r}; known: {sorted(WORLDS)}")
    return importlib.import_module(WORLDS[name])


def by_source() -> dict:
    """{problem source: the first world in WORLDS that names it}: worlds may share problems
    (the facts world solves the carries world's chains another way)."""
    out = {}
    for module in map(get, WORLDS):
        out.setdefault(module.SOURCE, module)
    return out
