# Helpers shared by the rules: the per-job specs handed to the `agon` command.
import json
import os

from snakemake.exceptions import WorkflowError


wildcard_constraints:
    dataset="[A-Za-z0-9_]+",
    model="[A-Za-z0-9_.-]+",
    method="[A-Za-z0-9_]+",
    cell="[A-Za-z0-9_]+",
    seed="[0-9]+",


SPLITS = ["heldout", "validation", "train"]


def spec_json(obj):
    return json.dumps(obj, sort_keys=True)


def split_path(dataset, split):
    return f"{R}/data/{dataset}/{split}.jsonl"


def benchmark_path(benchmark):
    b = config["benchmarks"][benchmark]
    return split_path(b["dataset"], b["split"])


def train_data_path(wc):
    return split_path(config["models"][wc.model]["train_data"], "train")


def unseen_splits(wc):
    """Every dataset's held-out and validation split: a toy base never trains on them."""
    return [split_path(d, s) for d in config["datasets"] for s in ("heldout", "validation")]


def model_source(model):
    """Where a model's base comes from (agon.model_sources.locate): a missing file or
    package stops the DAG here, with a message naming the config key."""
    from agon.model_sources import ModelSourceError, locate

    try:
        return locate(model, config["models"][model])
    except ModelSourceError as e:
        raise WorkflowError(str(e)) from None


def base_path(model):
    """The base every job of `model` loads: results/<run>/models/<model>/base (built by the
    `base` rule for a toy model, by `fetch_model` for a hub id or a GGUF), or a local
    snapshot directory read in place."""
    source = model_source(model)
    if source["where"] == "dir":
        return source["dir"]
    return f"{R}/models/{model}/base"


def models_of_kind(*kinds):
    return [m for m, spec in config["models"].items() if spec["kind"] in kinds]


def name_regex(names):
    """A wildcard constraint matching exactly `names` (nothing at all when empty)."""
    import re

    return "|".join(re.escape(n) for n in names) or "(?!x)x"


def fetch_inputs(wc):
    source = model_source(wc.model)
    return {"gguf": source["file"]} if "file" in source else {}


def fetch_spec(wc):
    return spec_json({"key": wc.model, "source": model_source(wc.model),
                      "dtype": config["models"][wc.model].get("dtype", "float32")})


def model_spec(model):
    m = config["models"][model]
    spec = {"base_path": base_path(model), "prompt_style": m["prompt_style"]}
    # only when set, so a toy model's spec (and its jobs' params) stay as they were
    spec.update({k: m[k] for k in ("dtype", "thinking") if k in m})
    return spec


def generation_spec():
    """The `generation` section, when the config has one (absent: the transformers backend)."""
    return {"generation": config["generation"]} if "generation" in config else {}


def rule_resources(family):
    from agon.resources import for_rule

    return for_rule(config, family)


def adapter_names(method):
    from agon.rl.methods import adapters_for

    return list(adapters_for(config["methods"][method]))


def train_spec(wc):
    return spec_json({
        **model_spec(wc.model),
        "method": config["methods"][wc.method],
        "train": config["train"],
        "sampling": config["sampling"]["train"],
        "seed": int(wc.seed),
        "threads": config["threads"],
        **generation_spec(),
    })


UNTRAINED = "untrained"  # the evaluation cell of the bare base model (method: null)


def cell_of(evaluation):
    return config["evaluations"][evaluation]["method"] or UNTRAINED


def cell_evaluations(cell):
    return [e for e in config["evaluations"] if cell_of(e) == cell]


def records_path(model, evaluation, seed, benchmark):
    return f"{R}/eval/{model}/{cell_of(evaluation)}/seed{seed}/{evaluation}.{benchmark}.jsonl"


def eval_needs(model, cell):
    """(evaluation, benchmark) pairs of one cell that some table reads, in config order."""
    needs = []
    for table, t in config["tables"].items():
        if model in t["models"]:
            needs += [(e, b) for e, b in table_needs(table) if cell_of(e) == cell]
    return list(dict.fromkeys(needs))


def eval_inputs(wc):
    inputs = {"base": base_path(wc.model)}
    benchmarks = dict.fromkeys(b for _, b in eval_needs(wc.model, wc.cell))
    inputs.update({f"benchmark_{b}": benchmark_path(b) for b in benchmarks})
    if wc.cell != UNTRAINED:
        inputs["adapters"] = f"{R}/train/{wc.model}/{wc.cell}/seed{wc.seed}/adapters"
    return inputs


def eval_spec(wc, input, output):
    method = None if wc.cell == UNTRAINED else wc.cell
    needs = eval_needs(wc.model, wc.cell)
    return spec_json({
        **model_spec(wc.model),
        "model": wc.model,
        "cell": wc.cell,
        "adapters": adapter_names(method) if method else [],
        "adapter_dir": input.adapters if method else None,
        "evaluations": {e: config["evaluations"][e] for e, _ in needs},
        "needs": needs,
        "benchmarks": {b: input[f"benchmark_{b}"] for _, b in needs},
        "out_dir": output[0],
        "sampling": config["sampling"]["eval"],
        "seed": int(wc.seed),
        "threads": config["threads"],
        **generation_spec(),
    })


def table_needs(table):
    """(evaluation, benchmark) pairs a table reads; a pick needs its candidates on two benchmarks."""
    t = config["tables"][table]
    picks = config.get("picks", {})
    needs = []
    for row in t["rows"]:
        for evaluation in picks.get(row, [row]):
            needs.append((evaluation, t["benchmark"]))
            if row in picks:
                needs.append((evaluation, t.get("select_on", "validation")))
    return list(dict.fromkeys(needs))


def records_of(table):
    t = config["tables"][table]
    return [records_path(model, evaluation, seed, benchmark)
            for model in t["models"] for seed in config["seeds"]
            for evaluation, benchmark in table_needs(table)]


def table_records(wc):
    return records_of(wc.table)


def cells_of(table):
    """The evaluation directories a table reads (one per trained cell)."""
    return sorted({os.path.dirname(path) for path in records_of(table)})


def table_cells(wc):
    return cells_of(wc.table)


def table_spec(wc):
    t = config["tables"][wc.table]
    picks = config.get("picks", {})
    return spec_json({
        **t,
        "seeds": config["seeds"],
        "picks": {row: picks[row] for row in t["rows"] if row in picks},
        "paper_models": {m: config["models"][m].get("paper_model") for m in t["models"]},
    })


def all_cells(wc):
    return sorted({cell for table in config["tables"] for cell in cells_of(table)})
