"""`agon prepare`: one dataset loaded from its source, every problem checked, the seeded splits
drawn and hashed (manifest.json)."""

from __future__ import annotations

from pathlib import Path

from .. import io


def run(spec: dict, out: str, log=print) -> None:
    from ..data import check_problem, splits
    from ..data.hub import DataSourceError
    from ..data.sources import SEEDED, load_source

    name = spec["name"]
    counts: dict = {}
    try:
        pool = load_source(spec["source"], {"seed": spec["seed"], **spec.get("options", {})}
                           if spec["source"] in SEEDED else spec.get("options", {}), counts)
    except (DataSourceError, ValueError) as e:
        raise SystemExit(f"agon prepare: dataset {name!r}: {e}") from None
    for p in pool:
        check_problem(p, f"dataset {name!r} (source {spec['source']})")
    try:
        parts = splits.split_problems(pool, spec["heldout"], spec["validation"], spec["seed"], spec["train"])
    except ValueError as e:
        raise SystemExit(f"agon prepare: dataset {name!r} (datasets.{name}): {e}") from None
    out_dir = Path(out)
    manifest = {"dataset": name, "source": spec["source"], "seed": spec["seed"], "filter_counts": counts,
                "splits": {}, "provenance": io.provenance(spec, spec["seed"])}
    for split, problems in parts.items():
        io.write_jsonl(out_dir / f"{split}.jsonl", problems)
        levels: dict[str, int] = {}
        for p in problems:
            levels[str(p["difficulty"])] = levels.get(str(p["difficulty"]), 0) + 1
        manifest["splits"][split] = {"count": len(problems), "hash": splits.split_hash(problems),
                                     "by_difficulty": dict(sorted(levels.items()))}
        log(f"{name} {split}: {len(problems)} problems, hash {manifest['splits'][split]['hash']}")
    io.write_json(out_dir / "manifest.json", manifest)
