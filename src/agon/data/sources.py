"""Registry of problem sources: name -> `load(cfg, counts=None) -> list[dict]`.

Every loader takes its dataset's `options` (`datasets.<name>.options`) and an optional `counts`
dict that it fills with the number of problems surviving each stage.
"""

from __future__ import annotations

from typing import Callable

from . import codecontests, deepmath, gsm8k, math500, toy_code, toy_math
from ..worlds import carries
from .hub import DataSourceError

Loader = Callable[..., list[dict]]

SOURCES: dict[str, Loader] = {
    "toy_math": toy_math.load,
    "toy_code": toy_code.load,
    carries.SOURCE: carries.load,
    "deepmath": deepmath.load,
    "gsm8k": gsm8k.load,
    "math500": math500.load,
    "codecontests": codecontests.load,
}


# Generated sources draw their pool with the dataset's `seed` (passed as options["seed"]).
SEEDED = frozenset({"toy_math", "toy_code", carries.SOURCE})


def load_source(name: str, cfg: dict | None = None, counts: dict | None = None) -> list[dict]:
    """Load the problems of source `name`; `counts` (if given) receives per-stage counts."""
    try:
        loader = SOURCES[name]
    except KeyError:
        raise DataSourceError(f"unknown problem source {name!r}; known sources: {sorted(SOURCES)}") from None
    return loader(cfg or {}, counts=counts)
