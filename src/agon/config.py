"""Loading and validating configs, with errors that name the offending key.

The JSON schema (config/schema.yaml) checks shapes and types; `check_references`
checks what a schema cannot: that every name a table or evaluation uses is
defined, and that each method has the knobs its kind needs.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import jsonschema
import yaml

from .model_sources import check_model

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"


class ConfigError(ValueError):
    pass


def load_yaml(path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    with open(path) as f:
        try:
            data = yaml.safe_load(f)
        except yaml.YAMLError as e:
            raise ConfigError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def _key_path(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _describe(error: jsonschema.ValidationError) -> str:
    where = _key_path(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        parts = []
        for key in extra:
            full = f"{where}.{key}" if error.absolute_path else key
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(allowed)})"
            parts.append(f"unknown config key {full!r}{hint}")
        if parts:
            return "; ".join(parts)
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in (error.instance or {})]
        prefix = f"{where}." if error.absolute_path else ""
        return "missing config key(s) " + ", ".join(repr(prefix + k) for k in missing)
    return f"config key {where!r}: {error.message}"


def validate(config: dict, source: str = "config") -> dict:
    """Raise ConfigError listing every problem in `config`; return it unchanged when valid."""
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = "\n  ".join(dict.fromkeys(_describe(e) for e in errors))
        raise ConfigError(f"{source}: invalid config:\n  {lines}")
    check_references(config, source)
    return config


PAIR_KNOBS = ("mode", "exchange", "roles")


def check_references(config: dict, source: str = "config") -> None:
    problems = []
    methods, evaluations = config["methods"], config["evaluations"]
    for name, m in methods.items():
        if m["kind"] == "pair":
            missing = [k for k in PAIR_KNOBS if k not in m]
            if missing:
                problems.append(f"methods.{name}: kind 'pair' needs {', '.join(missing)}")
    for name, ev in evaluations.items():
        if ev["method"] is not None and ev["method"] not in methods:
            problems.append(f"evaluations.{name}.method: unknown method {ev['method']!r} "
                            f"(defined: {', '.join(methods)})")
        need = {"single": 1, "cascade": 2, "moa": 1}[ev["protocol"]]
        if len(ev["policies"]) != need:
            problems.append(f"evaluations.{name}.policies: protocol {ev['protocol']!r} "
                            f"needs {need} policies, got {len(ev['policies'])}")
        if ev["method"] is None and any(p is not None for p in ev["policies"]):
            problems.append(f"evaluations.{name}: an untrained evaluation (method: null) has no adapters")
    datasets = config["datasets"]
    for name, model in config["models"].items():
        problems += check_model(name, model)  # kind, its keys, prompt style and thinking mode
        data = model["train_data"]
        if data not in datasets:
            problems.append(f"models.{name}.train_data: unknown dataset {data!r} (defined: {', '.join(datasets)})")
        elif datasets[data]["train"] == 0:
            problems.append(f"models.{name}.train_data: dataset {data!r} has train: 0")
    for name, bench in config["benchmarks"].items():
        data = bench["dataset"]
        if data not in datasets:
            problems.append(f"benchmarks.{name}.dataset: unknown dataset {data!r} (defined: {', '.join(datasets)})")
        elif datasets[data].get(bench["split"]) == 0:
            problems.append(f"benchmarks.{name}: dataset {data!r} has {bench['split']}: 0 (an empty split)")
    picks = config.get("picks", {})
    for name, candidates in picks.items():
        if name in evaluations:
            problems.append(f"picks.{name}: also an evaluation name; pick another name")
        for c in candidates:
            if c not in evaluations:
                problems.append(f"picks.{name}: unknown evaluation {c!r}")
    for name, table in config["tables"].items():
        problems += _table_problems(name, table, config)
    problems += _figure_problems(config)
    if problems:
        raise ConfigError(f"{source}: invalid config:\n  " + "\n  ".join(problems))


def _table_problems(name: str, table: dict, config: dict) -> list[str]:
    """A table's references. Its models need not be configured: a model absent from this run
    (e.g. the paper's Qwen3-4B at toy scale) renders as `absent at this scale`; so may its
    benchmarks when no model of the table is configured."""
    out = []
    where = f"tables.{name}"
    if table.get("kind", "results") == "design":
        extra = [k for k in ("benchmark", "benchmarks", "select_on", "baseline", "models", "rows", "paper")
                 if k in table]
        if extra:
            out.append(f"{where}: a design table (Table 1) is built from `methods`; drop {', '.join(extra)}")
        return out
    for key in ("models", "rows"):
        if key not in table:
            out.append(f"missing config key(s) '{where}.{key}'")
    if ("benchmark" in table) == ("benchmarks" in table):
        out.append(f"{where}: give exactly one of 'benchmark' (one) or 'benchmarks' (a list)")
    if out:
        return out
    picks, evaluations = config.get("picks", {}), config["evaluations"]
    configured = [m for m in table["models"] if m in config["models"]]
    benchmarks = table.get("benchmarks") or [table["benchmark"]]
    if configured:
        for bench in benchmarks + [table[k] for k in ("select_on",) if k in table]:
            if bench not in config["benchmarks"]:
                out.append(f"{where}: unknown benchmark {bench!r} (defined: {', '.join(config['benchmarks'])})")
    if len(set(benchmarks)) != len(benchmarks):
        out.append(f"{where}.benchmarks: a benchmark is listed twice")
    if configured and "select_on" not in table and any(r in picks for r in table["rows"]) \
            and "validation" not in config["benchmarks"]:
        out.append(f"{where}: picks need a 'validation' benchmark or select_on")
    for row in table["rows"]:
        if row not in evaluations and row not in picks:
            out.append(f"{where}.rows: unknown evaluation or pick {row!r}")
    if "baseline" in table and table["baseline"] not in table["rows"]:
        out.append(f"{where}.baseline: {table['baseline']!r} is not one of its rows")
    paper_bench = (table.get("paper") or {}).get("benchmark")
    if isinstance(paper_bench, dict):
        for ours in paper_bench:
            if ours not in benchmarks:
                out.append(f"{where}.paper.benchmark: {ours!r} is not one of the table's benchmarks")
    return out


def _figure_problems(config: dict) -> list[str]:
    figures = config.get("figures") or {}
    out = []
    fig7a = figures.get("fig7a") or {}
    if "table" in fig7a:
        t = config["tables"].get(fig7a["table"])
        if t is None or t.get("kind", "results") != "results":
            out.append(f"figures.fig7a.table: {fig7a['table']!r} is not a results table")
    f = figures.get("fig7b")
    if not f:
        return out
    evaluations, picks = config["evaluations"], config.get("picks", {})
    for key in ("benchmark", "select_on"):
        if key in f and f[key] not in config["benchmarks"]:
            out.append(f"figures.fig7b.{key}: unknown benchmark {f[key]!r}")
    for model in f["models"]:
        if model not in config["models"]:
            out.append(f"figures.fig7b.models: unknown model {model!r}")
    step0 = evaluations.get(f["step0"])
    if step0 is None or step0["method"] is not None or step0["protocol"] != "single":
        out.append(f"figures.fig7b.step0: {f['step0']!r} is not an untrained single-pass evaluation")
    for row in f["rows"]:
        if row not in evaluations and row not in picks:
            out.append(f"figures.fig7b.rows: unknown evaluation or pick {row!r}")
            continue
        methods = {evaluations[e]["method"] for e in picks.get(row, [row]) if e in evaluations}
        if len(methods) != 1 or None in methods:
            out.append(f"figures.fig7b.rows: {row!r} must evaluate one trained method "
                       f"(got {sorted(map(str, methods))})")
    if "select_on" not in f and any(r in picks for r in f["rows"]) and "validation" not in config["benchmarks"]:
        out.append("figures.fig7b: picks need a 'validation' benchmark or select_on")
    if not config["train"].get("snapshot_every"):
        out.append("figures.fig7b: needs train.snapshot_every (adapter snapshots during training)")
    return out


def merge(base: dict, overlay: dict) -> dict:
    """`overlay` on top of `base`: mappings merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve_extends(config: dict, config_dir) -> dict:
    """A config with `extends: other.yaml` is that file (in `config_dir`) with this one on top.

    Opt-in per config: config/test.yaml extends the embedded default, so the test
    runs the same matrix at small sizes; config/paper.yaml stands alone.
    """
    if "extends" not in config:
        return config
    parent_path = Path(config_dir) / config["extends"]
    parent = resolve_extends(load_yaml(parent_path), parent_path.parent)
    child = {k: v for k, v in config.items() if k != "extends"}
    return merge(parent, child)


def load(path) -> dict:
    path = Path(path)
    return validate(resolve_extends(load_yaml(path), path.parent), str(path))
