"""The paper's published numbers (config/reported.yaml), for side-by-side columns.

The file holds only what the paper prints. `lookup` returns None for a cell the
paper does not publish, so a table can leave the "paper" column blank instead of
inventing a value; a key outside the file's declared vocabulary is an error,
because a typo would otherwise look exactly like "not published".
"""

from __future__ import annotations

from pathlib import Path

import yaml


def load_reported(path: str | Path) -> dict:
    """Read and validate the reported-numbers file.

    Validation is strict (known keys, numeric values, pass@1 in [0, 100],
    ci_low <= ci_high) so that a transcription slip fails loudly here rather
    than surfacing as a wrong comparison in a table.
    """
    with open(path) as f:
        data = yaml.safe_load(f)
    vocab = _vocab(data)
    for table, spec in data["tables"].items():
        for model, benches in spec["results"].items():
            _check(vocab, "model", model, table)
            for bench, methods in benches.items():
                _check(vocab, "benchmark", bench, table)
                for method, cell in methods.items():
                    _check(vocab, "method", method, table)
                    where = f"{table}/{model}/{bench}/{method}"
                    for field, value in cell.items():
                        _check(vocab, "field", field, where)
                        if isinstance(value, bool) or not isinstance(value, (int, float)):
                            raise ValueError(f"reported: {where}.{field} is not a number: {value!r}")
                    if "pass_at_1" in cell and not 0 <= cell["pass_at_1"] <= 100:
                        raise ValueError(f"reported: {where}.pass_at_1 outside [0, 100]")
                    if "ci_low" in cell and not cell["ci_low"] <= cell["ci_high"]:
                        raise ValueError(f"reported: {where} has ci_low > ci_high")
    return data


def _vocab(data: dict) -> dict[str, set]:
    keys = data["keys"]
    return {"model": set(keys["models"]), "benchmark": set(keys["benchmarks"]),
            "method": set(keys["methods"]), "field": set(keys["fields"])}


def _check(vocab: dict, kind: str, key: str, where: str) -> None:
    if key not in vocab[kind]:
        raise ValueError(f"reported: unknown {kind} {key!r} in {where}; known: {sorted(vocab[kind])}")


def lookup(reported: dict, table: str, model: str, benchmark: str, method: str,
           field: str = "pass_at_1") -> float | None:
    """The published value of one cell, or None when the paper has no such cell.

    Unknown table names and keys outside the declared vocabulary raise
    ValueError (a typo is not "unpublished").
    """
    if table not in reported["tables"]:
        raise ValueError(f"reported: unknown table {table!r}; known: {sorted(reported['tables'])}")
    vocab = _vocab(reported)
    for kind, key in (("model", model), ("benchmark", benchmark), ("method", method),
                      ("field", field)):
        _check(vocab, kind, key, "lookup")
    cell = reported["tables"][table]["results"].get(model, {}).get(benchmark, {}).get(method, {})
    value = cell.get(field)
    return None if value is None else float(value)


def inside_interval(value_percent: float | None, ci_low: float | None,
                    ci_high: float | None) -> bool | None:
    """Whether a value (percent) lies in a closed interval (percent); None if any is unknown.

    Used to say whether our pass@1 falls inside the paper's published interval
    (or the paper's point value inside ours); None keeps "cannot tell" distinct
    from "outside".
    """
    if value_percent is None or ci_low is None or ci_high is None:
        return None
    return ci_low <= value_percent <= ci_high
