"""Seeded held-out / validation / train splits with content hashes.

The held-out and validation sets are drawn first, with a fixed seed, from the
filtered pool, before any training; the rest (optionally capped) is train.
The same pool and seed give byte-identical splits on any machine.
"""

from __future__ import annotations

import random

from ..io import stable_hash

SPLIT_ORDER = ("heldout", "validation", "train")


def needed(heldout: int | None, validation: int, train: int | None, pool: int) -> int:
    """How many problems a pool must hold for these split sizes (`None`: all the rest)."""
    if heldout is None:
        if train is None:
            raise ValueError("splits: heldout and train cannot both be null (all the rest)")
        return max(pool, validation + train + 1)
    return heldout + validation + (train if train is not None else 1)


def split_problems(problems: list[dict], heldout: int | None, validation: int, seed: int,
                   train: int | None = None) -> dict[str, list[dict]]:
    """Held-out, then validation, then train, from one seeded shuffle of the pool.

    `train=None` takes every remaining problem; `heldout=None` makes the
    held-out set every problem not in validation or train (a pure benchmark
    such as GSM8K's test split: `heldout: null, validation: 0, train: 0`).
    """
    ids = [p["id"] for p in problems]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"splits: duplicate problem id {dup!r} in the pool")
    need = needed(heldout, validation, train, len(problems))
    heldout = len(problems) - validation - train if heldout is None else heldout
    if heldout < 1 or need > len(problems):
        raise ValueError(
            f"splits: pool has {len(problems)} problems, but heldout={heldout}, "
            f"validation={validation}, train={train} need {need}"
            + (" (train: null needs at least one train problem)" if train is None else "")
        )
    # Shuffle a canonical order (sorted by id) so the input order cannot leak in.
    pool = sorted(problems, key=lambda p: p["id"])
    random.Random(seed).shuffle(pool)
    out = {
        "heldout": pool[:heldout],
        "validation": pool[heldout:heldout + validation],
        "train": pool[heldout + validation:],
    }
    if train is not None:
        out["train"] = out["train"][:train]
    return out


def split_hash(problems: list[dict]) -> str:
    """Content hash of a split: ids and full content, order-sensitive."""
    return stable_hash(problems)
