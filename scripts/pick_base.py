"""Rank candidate toy bases by their untrained Table 0 rows: the rule that picks the pin.

    python scripts/pick_base.py results/pin_carries_*/tables/table0_base.csv

The candidate meeting the most targets wins; a tie goes to the smallest total distance of its
values from the middle of their target ranges, each distance in units of its range's width (a
row's target text gives the range; the after-a-wrong-draft row's value is its ratio to the
independent sample, the protocol rows' their gain over zero-shot). Only rows with a target count.
Prints one line per candidate, best first (docs/toy-world.md, "Choosing the carries base").
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

RANGE = re.compile(r"([+-]?\d+\.\d+)x? (?:-|to) ([+-]?\d+\.\d+)")


def distance(row: dict, rows: list[dict]) -> float:
    """|value - middle| / width of the row's target range, the value as the target reads it."""
    found = RANGE.search(row["target"])
    if not found:  # ">= low, interval above independence": the floor counts as the range's middle
        low = float(re.search(r">= (\d+\.\d+)", row["target"]).group(1))
        return max(0.0, low - float(row["value"]))
    low, high = map(float, found.groups())
    value = float(row["value"])
    if "the independent sample" in row["target"]:
        alone = next(r for r in rows if r["quantity"] == "alone on the problems whose draft was wrong")
        value /= float(alone["value"])
    elif "gain" in row["target"]:
        value = float(re.search(r"gain ([+-]?\d+\.\d+)", row["target"]).group(1))
    return abs(value - (low + high) / 2) / (high - low)


def score(path: Path) -> tuple[int, float, int]:
    rows = list(csv.DictReader(path.open()))
    targeted = [r for r in rows if r["meets"] in ("yes", "no") and not r["section"].startswith("7")]
    return (sum(r["meets"] == "yes" for r in targeted), sum(distance(r, rows) for r in targeted), len(targeted))


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__)
        return 2
    ranked = sorted(((score(Path(p)), p) for p in paths), key=lambda x: (-x[0][0], x[0][1]))
    for (met, dist, n), p in ranked:
        print(f"{met} of {n} targets met, distance {dist:.3f}: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
