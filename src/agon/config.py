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

from .device import config_problems as device_config_problems
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
            mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
            what = " ".join(str(x) for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x)
            raise ConfigError(f"{where}: not valid YAML: {what or e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


class Locator:
    """Where a config key was written: "file:line" in the first of `files` (the config, then
    the files it extends) that holds the longest part of the key's path."""

    def __init__(self, files):
        self.files = [Path(f) for f in files]
        self.trees = []
        for f in self.files:
            try:
                self.trees.append((f, yaml.compose(f.read_text())))
            except (OSError, yaml.YAMLError):
                continue

    @staticmethod
    def _walk(node, keys) -> tuple[int, int | None]:
        depth, line = 0, None
        for key in keys:
            if isinstance(node, yaml.MappingNode):
                match = next(((k, v) for k, v in node.value if str(k.value) == str(key)), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
                match = (node.value[key], node.value[key])
            else:
                match = None
            if match is None:
                break
            depth, line, node = depth + 1, match[0].start_mark.line + 1, match[1]
        return depth, line

    def where(self, keys) -> str:
        best = None
        for f, tree in self.trees:
            depth, line = self._walk(tree, list(keys))
            if depth and (best is None or depth > best[0]):
                best = (depth, f"{f}:{line}")
        if best:
            return best[1]
        return str(self.files[0]) if self.files else "config"


def _key_of(config, text: str) -> list:
    """The key path a message starts with ("models.qwen3.5-2b.path: ..."), matched against the
    config's own keys (names may hold dots)."""
    head = text.split(":", 1)[0].split(" ", 1)[0].strip("'")
    keys, node = [], config
    while head and isinstance(node, dict):
        key = max((k for k in map(str, node) if head == k or head.startswith(k + ".")), key=len, default=None)
        if key is None:
            break
        keys.append(key)
        node, head = node[key], head[len(key) + 1:]
    return keys


def _raise(problems: list[tuple[list, str]], source) -> None:
    """One ConfigError, one line per problem, each starting with the file and line it is about."""
    if isinstance(source, str):
        lines = [msg for _, msg in problems]
        raise ConfigError(f"{source}: invalid config:\n  " + "\n  ".join(dict.fromkeys(lines)))
    locator = Locator(source)
    lines = [f"{locator.where(keys)}: {msg}" for keys, msg in problems]
    names = ", ".join(str(f) for f in locator.files) or "config"
    raise ConfigError(f"invalid config ({names}):\n  " + "\n  ".join(dict.fromkeys(lines)))


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


def _error_keys(error: jsonschema.ValidationError) -> list:
    """The key path a schema error is about: an unknown key's own path, not its parent's."""
    keys = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        keys += extra[:1]
    return keys


def validate(config: dict, source="config") -> dict:
    """Raise ConfigError listing every problem in `config`; return it unchanged when valid.

    `source`: the config files it came from (the file, then those it extends), so that
    each problem is named by file and line; or a plain label.
    """
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    # format_checker: `format: regex` keys (Table 0's habit pattern) must compile
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        _raise([(_error_keys(e), _describe(e)) for e in errors], source)
    check_references(config, source)
    return config




def check_references(config: dict, source: str = "config") -> None:
    problems = []
    methods, evaluations = config["methods"], config["evaluations"]
    for name, m in methods.items():
        problems += _method_problems(name, m)
    for name, ev in evaluations.items():
        if ev["method"] is not None and ev["method"] not in methods:
            problems.append(f"evaluations.{name}.method: unknown method {ev['method']!r} "
                            f"(defined: {', '.join(methods)})")
        need = {"single": 1, "cascade": 2, "moa": 2}[ev["protocol"]]
        if len(ev["policies"]) != need:
            problems.append(f"evaluations.{name}.policies: protocol {ev['protocol']!r} "
                            f"needs {need} policies, got {len(ev['policies'])}")
        if ev["method"] is None and any(p is not None for p in ev["policies"]):
            problems.append(f"evaluations.{name}: an untrained evaluation (method: null) has no adapters")
    datasets = config["datasets"]
    for name, model in config["models"].items():
        problems += check_model(name, model)  # kind, its keys, prompt style and thinking mode
        backend = (config.get("generation") or {}).get("backend", "transformers")
        if "generation" in model and backend != "vllm":
            problems.append(f"models.{name}.generation: a model's own vLLM engine arguments, but "
                            f"generation.backend is {backend!r}")
        elif "backend" in model.get("generation", {}):
            problems.append(f"models.{name}.generation.backend: the backend is the top-level generation "
                            "section's; a model's section holds engine arguments only")
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
    problems += _deployment_problems(config)
    for name, table in config["tables"].items():
        problems += _table_problems(name, table, config)
    problems += _figure_problems(config)
    problems += _split_problems(config)
    problems += device_config_problems(config)  # device, backend and the GPU's memory split
    if problems:
        _raise([(_key_of(config, p), p) for p in problems], source)


def _deployment_problems(config: dict) -> list[str]:
    """A row named after a method (an evaluation or a pick of that name) is that method as it
    deploys: its kind's protocol (`MethodKind.deployment`; a pair with no visible exchange
    deploys single-pass, with no draft to read) and its own adapters. Controls such as a
    drafter alone or a self-cascade take other names."""
    from .rl.methods import kind_of

    methods, evaluations, picks = config["methods"], config["evaluations"], config.get("picks", {})
    out = []
    for name, method in methods.items():
        if _method_problems(name, method):
            continue  # an unknown kind or a missing knob is reported on its own
        protocol = kind_of(method["kind"]).deployment(method)
        candidates = [(f"evaluations.{name}", name)] if name in evaluations else \
            [(f"picks.{name}", c) for c in picks.get(name, []) if c in evaluations]
        for where, ev_name in candidates:
            ev = evaluations[ev_name]
            if ev["method"] != name or ev["protocol"] != protocol:
                out.append(f"{where}: {ev_name!r} is the {name!r} row, so it must evaluate method {name!r} "
                           f"with protocol {protocol!r} (the method's deployment), not method "
                           f"{ev['method']!r} with {ev['protocol']!r}")
    return out


def _method_problems(name: str, m: dict) -> list[str]:
    """A method's knobs, checked against its kind's registration (agon.rl.methods.MethodKind)."""
    from .rl.methods import knob_schema, kind_of

    try:
        kind = kind_of(m["kind"])
    except ValueError as e:
        return [f"methods.{name}.kind: {e}"]
    problems = []
    for error in jsonschema.Draft202012Validator(knob_schema(kind)).iter_errors(m):
        error.path.extendleft(reversed(["methods", name]))
        problems.append(_describe(error))
    return problems


def _split_problems(config: dict) -> list[str]:
    """Split sizes a generated pool cannot hold, found when the config loads (not in the job)."""
    from .data.splits import needed
    from .data.sources import SEEDED

    out = []
    for name, d in config["datasets"].items():
        pool = (d.get("options") or {}).get("pool_size")
        if d["source"] in SEEDED and isinstance(pool, int):
            try:
                need = needed(d["heldout"], d["validation"], d["train"], pool)
            except ValueError as e:
                out.append(f"datasets.{name}: {e}")
                continue
            if need > pool:
                out.append(f"datasets.{name}: options.pool_size {pool} cannot hold heldout {d['heldout']} + "
                           f"validation {d['validation']} + train {d['train']} (needs {need})")
    return out


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
    if table.get("kind") == "preconditions":
        return _preconditions_problems(where, table, config)
    if table.get("kind") == "contrasts":
        return _contrasts_problems(where, table, config)
    if table.get("kind") == "claims":
        return _claims_problems(where, table, config)
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


def _contrasts_problems(where: str, table: dict, config: dict) -> list[str]:
    """Table 9's contrasts name rows (evaluations or picks) on one benchmark."""
    out = [f"missing config key(s) '{where}.{k}'" for k in ("models", "benchmark", "contrasts") if k not in table]
    known = set(config["evaluations"]) | set(config.get("picks", {}))
    out += [f"{where}.contrasts: unknown evaluation or pick {x!r}" for pair in table.get("contrasts", [])
            for x in pair if x not in known]
    if "benchmark" in table and table["benchmark"] not in config["benchmarks"]:
        out.append(f"{where}.benchmark: unknown benchmark {table['benchmark']!r}")
    return out


def _claims_problems(where: str, table: dict, config: dict) -> list[str]:
    """The claims name rows (evaluations or picks) and benchmarks; a rival_length claim reads a cascade."""
    out = [f"missing config key(s) '{where}.{k}'" for k in ("models", "claims") if k not in table]
    picks, evaluations = config.get("picks", {}), config["evaluations"]

    def cascade(row):
        return all(evaluations.get(e, {}).get("protocol") == "cascade" for e in picks.get(row, [row]))

    for i, claim in enumerate(table.get("claims", [])):
        at = f"{where}.claims[{i}] ({claim.get('claim', '?')!r})"
        measure = claim.get("measure", "pass")
        if measure == "rival_length":
            if "b" in claim:
                out.append(f"{at}.b: a rival_length claim reads one cascade, `a`; drop b")
            elif (claim["a"] in evaluations or claim["a"] in picks) and not cascade(claim["a"]):
                out.append(f"{at}.a: rival_length needs a cascade (protocol: cascade), not {claim['a']!r}")
        elif "b" not in claim:
            out.append(f"missing config key '{at}.b'")
        for key in ("a", "b"):
            if key in claim and claim[key] not in evaluations and claim[key] not in picks:
                out.append(f"{at}.{key}: unknown evaluation or pick {claim[key]!r}")
        bench = claim.get("benchmark") or table.get("benchmark")
        if bench is None:
            out.append(f"{at}: no benchmark (give the claim's or the table's `benchmark`)")
        elif bench not in config["benchmarks"]:
            out.append(f"{at}.benchmark: unknown benchmark {bench!r}")
        paper = claim.get("paper") or {}
        if paper and "text" not in paper and not {"table", "benchmark"} <= set(paper):
            out.append(f"{at}.paper: give `table` and `benchmark` (a config/reported.yaml cell pair) or `text`")
        elif measure == "rival_length" and paper and "text" not in paper:
            out.append(f"{at}.paper: the paper publishes no number for rival_length; give its words as `text`")
    if "select_on" in table and table["select_on"] not in config["benchmarks"]:
        out.append(f"{where}.select_on: unknown benchmark {table['select_on']!r}")
    elif "select_on" not in table and "validation" not in config["benchmarks"] and any(
            c.get(k) in picks for c in table.get("claims", []) for k in ("a", "b")):
        out.append(f"{where}: picks need a 'validation' benchmark or select_on")
    return out


# Table 0's range targets (agon.report.preconditions): a table's `targets` may set any of them
TABLE0_TARGETS = ("solo", "after_right", "after_wrong_ratio", "mixture_gain", "cascade_gain", "failure_overlap",
                  "checkable_wrong", "verifying_reads", "transfer_solo")


def _preconditions_problems(where: str, table: dict, config: dict) -> list[str]:
    """Table 0 names evaluations by role; each must exist and be of its role's kind."""
    evaluations = config["evaluations"]
    out = [f"missing config key(s) '{where}.{k}'" for k in ("models", "benchmark", "solo", "cascade", "mixture")
           if k not in table]
    if out:
        return out
    for key in ("benchmark", "transfer"):
        if key in table and table[key] not in config["benchmarks"]:
            out.append(f"{where}.{key}: unknown benchmark {table[key]!r}")
    if "reading_gate" in table and table["reading_gate"] not in config["methods"]:
        out.append(f"{where}.reading_gate: unknown method {table['reading_gate']!r}")
    for name in table.get("reading_cascades") or []:
        ev = evaluations.get(name)
        if ev is None or ev["protocol"] != "cascade":
            out.append(f"{where}.reading_cascades: {name!r} must be a cascade evaluation")
    for key, bounds in (table.get("targets") or {}).items():
        if key not in TABLE0_TARGETS:
            out.append(f"{where}.targets.{key}: unknown target (known: {', '.join(TABLE0_TARGETS)})")
        elif bounds[0] > bounds[1]:
            out.append(f"{where}.targets.{key}: its low end {bounds[0]} is above its high end {bounds[1]}")
    targets = table.get("targets") or {}
    if any(k in targets for k in ("checkable_wrong", "verifying_reads")) and "reading" not in table:
        out.append(f"{where}.targets: checkable_wrong and verifying_reads need '{where}.reading' (their patterns)")
    if "transfer_solo" in targets and "transfer" not in table:
        out.append(f"{where}.targets.transfer_solo needs '{where}.transfer' (the transfer benchmark)")
    want = {"solo": ("single", [None]), "cascade": ("cascade", [None, None]), "mixture": ("moa", [None, None])}
    for key, (protocol, policies) in want.items():
        ev = evaluations.get(table[key])
        if ev is None:
            out.append(f"{where}.{key}: unknown evaluation {table[key]!r}")
        elif ev["method"] is not None or ev["protocol"] != protocol or ev["policies"] != policies:
            out.append(f"{where}.{key}: {table[key]!r} must be an untrained {protocol} evaluation "
                       f"(method: null, policies: {policies})")
    for pair, names in (table.get("pairs") or {}).items():
        methods = set()
        for name in names:
            ev = evaluations.get(name)
            if ev is None or ev["method"] is None or ev["protocol"] != "single":
                out.append(f"{where}.pairs.{pair}: {name!r} must be a trained single-pass evaluation")
            else:
                methods.add(ev["method"])
        if len(methods) > 1:
            out.append(f"{where}.pairs.{pair}: both evaluations must come from one method (got {sorted(methods)})")
    ref = table.get("reference")
    if ref is not None and (ref not in evaluations or evaluations[ref]["method"] is None
                            or evaluations[ref]["protocol"] != "single"):
        out.append(f"{where}.reference: {ref!r} must be a trained single-pass evaluation")
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


REPLACE = "replace"  # in an overlay's mapping: `replace: true` takes it whole, not merged (merge)


def merge(base: dict, overlay: dict) -> dict:
    """`overlay` on top of `base`: mappings merge key by key, anything else is replaced. A mapping
    of the overlay that sets `replace: true` replaces base's whole (e.g. a model entry of another
    kind, whose keys would not mix with the parent's); the marker itself is dropped."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and value.get(REPLACE) is True:
            out[key] = {k: v for k, v in value.items() if k != REPLACE}
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve_extends(config: dict, config_dir, files: list | None = None) -> dict:
    """A config with `extends: other.yaml` is that file (in `config_dir`) with this one on top.

    Opt-in per config: config/test.yaml extends the embedded default, so the test
    runs the same matrix at small sizes; config/paper.yaml stands alone.
    `files`, when given, is the chain so far (the config's own file first); each file
    extended is appended to it, and one met twice is a cycle, named as such.
    """
    files = [] if files is None else files
    if "extends" not in config:
        return config
    parent_path = Path(config_dir) / str(config["extends"])
    seen = [Path(f).resolve() for f in files]
    if parent_path.resolve() in seen:
        chain = " -> ".join(str(f) for f in [*files, parent_path])
        raise ConfigError(f"{files[-1] if files else 'config'}: `extends:` cycle: {chain}")
    files.append(parent_path)
    parent = resolve_extends(load_yaml(parent_path), parent_path.parent, files)
    child = {k: v for k, v in config.items() if k != "extends"}
    return merge(parent, child)


def load(path, config_dir=None) -> dict:
    """Load, resolve `extends:` (relative to `config_dir`, default the file's folder) and validate."""
    path = Path(path)
    files = [path]
    return validate(resolve_extends(load_yaml(path), config_dir or path.parent, files), files)


def main(argv=None) -> int:
    """`python -m agon.config FILE...`: check config files, naming each problem's file and line.
    (snakemake's own --configfile loader says only "not valid JSON or YAML"; scripts/run.sh
    checks every --configfile with this first.)"""
    import sys

    bad = 0
    for f in (argv if argv is not None else sys.argv[1:]):
        try:
            load(f, SCHEMA_PATH.parent)  # as the Snakefile reads it: `extends:` names a file in config/
        except ConfigError as e:
            print(e, file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
