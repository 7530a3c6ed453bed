"""Exact verification for toy arithmetic: integers compared as integers."""

from __future__ import annotations

import re

_INT_RE = re.compile(r"^[+-]?\d+$")


def parse_int(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip().replace(" ", "")
    return int(text) if _INT_RE.match(text) else None


def is_correct(predicted: str | None, gold: str) -> bool:
    value = parse_int(predicted)
    gold_value = parse_int(gold)
    if gold_value is None:
        raise ValueError(f"exact verifier: gold answer {gold!r} is not an integer")
    return value is not None and value == gold_value
