# Helpers shared by the rules: the per-job specs handed to the `agon` command.
import json
import os
from pathlib import Path

from snakemake.exceptions import WorkflowError


wildcard_constraints:
    dataset="[A-Za-z0-9_]+",
    model="[A-Za-z0-9_.-]+",
    method="[A-Za-z0-9_]+",
    cell="[A-Za-z0-9_]+",
    seed="[0-9]+",
    row="[A-Za-z0-9_]+",
    table="[A-Za-z0-9_]+",


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


SANDBOX_CHECK = f"{R}/sandbox.json"


def sandbox_check_for(datasets):
    """The sandbox check's output, for a job that grades code: no program runs before it passed."""
    from agon.verify.grading import CODE_SOURCES  # graded by running programs in the code sandbox

    return {"sandbox": SANDBOX_CHECK} if any(config["datasets"][d]["source"] in CODE_SOURCES for d in datasets) else {}


def train_inputs(wc):
    train = config["models"][wc.model]["train_data"]
    return {"base": base_path(wc.model), "train": train_data_path(wc), **sandbox_check_for([train])}


# A toy base's generator cannot write the other toy domain's prompts: those splits are
# left out of its inputs (so adding the code domain leaves the math base's job as it was).
OTHER_TOY_SOURCE = {"math": "toy_code", "code": "toy_math"}


def unseen_splits(wc):
    """Every dataset's held-out and validation split (but the other toy domain's): a toy base never trains on them."""
    other = OTHER_TOY_SOURCE[config["models"][wc.model]["base"].get("domain", "math")]
    return [split_path(d, s) for d, spec in config["datasets"].items() if spec["source"] != other
            for s in ("heldout", "validation")]


def base_source(model):
    """Where toy model `model`'s base comes from: "train" (the default) or "pinned" (agon.toy.pinned)."""
    return config["models"][model]["base"].get("source", "train")


def pinned_dir(model):
    """A pinned toy base's directory: models.<m>.base.pinned_path, relative to the repository."""
    return str(ROOT / config["models"][model]["base"]["pinned_path"])


def base_inputs(wc):
    """The splits a toy base must never have seen, and a pinned base's manifest (a new pin reruns the job)."""
    from agon.toy.pinned import MANIFEST

    inputs = {"unseen": unseen_splits(wc)}
    if base_source(wc.model) == "pinned":
        inputs["manifest"] = f"{pinned_dir(wc.model)}/{MANIFEST}"
        if not os.path.exists(inputs["manifest"]):
            raise WorkflowError(f"models.{wc.model}.base.pinned_path: {inputs['manifest']} does not exist: no "
                                f"pinned base there. To train one from the config instead, set "
                                f"models.{wc.model}.base.source: train")
    return inputs


def base_spec(wc):
    m = config["models"][wc.model]
    return spec_json({**m["base"], "model": wc.model, "precision": config["precision"],
                      "attn_implementation": m.get("attn_implementation")})


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
    spec = {"base_path": base_path(model), "prompt_style": m["prompt_style"],
            "attn_implementation": m.get("attn_implementation")}
    # only when set, so a toy model's spec (and its jobs' params) stay as they were
    spec.update({k: m[k] for k in ("dtype", "thinking") if k in m})
    if "sandbox" in config:  # how code programs are isolated (absent: bwrap, src/agon/verify/sandbox.py)
        spec["sandbox"] = config["sandbox"]
    return spec


# Conda environments (used with --sdm conda; a plain run ignores them). Only vLLM
# generation needs the GPU stack (vLLM and its CUDA torch): every other job, the toy
# default and the CPU stand-in of the paper config included, runs in envs/cpu.yaml.
# (On Linux that env's PyPI torch is a CUDA build too: a transformers-backend job on a
# GPU node runs there.) tests/test_job_envs.py lists the env of every job.
CPU_ENV = "../../envs/cpu.yaml"
GPU_ENV = "../../envs/gpu.yaml"


def job_env(wc=None):
    """The conda env of a train, evaluate or curve job: the GPU stack only for vLLM generation."""
    return GPU_ENV if config.get("generation", {}).get("backend") == "vllm" else CPU_ENV


def compute_spec(family, model):
    """Where and how a job computes: the `generation` section as its family reads it and `device`,
    each when the config has it (absent: the transformers backend; device auto, src/agon/device.py),
    and the GPU memory the model's jobs need, when set (src/agon/resources.py)."""
    from agon.resources import for_job, job_generation

    spec = {"generation": job_generation(config, family)} if "generation" in config else {}
    if "device" in config:
        spec["device"] = config["device"]
    min_gib = for_job(config, family, model).get("min_gpu_gib")
    return {**spec, **({"min_gpu_gib": min_gib} if min_gib is not None else {})}


def rule_resources(family):
    from agon.resources import for_rule

    return for_rule(config, family)


def adapter_names(method):
    from agon.rl.methods import adapters_for

    return list(adapters_for(config["methods"][method]))


def model_train(model):
    """The `train` section of one model's cells: models.<model>.train merged over the top-level one."""
    from agon.config import merge

    return merge(config["train"], config["models"][model].get("train", {}))


def model_sampling(model, phase):
    """Sampling of one model's `phase` (train | eval): models.<model>.sampling.<phase> over the top-level one."""
    return {**config["sampling"][phase], **config["models"][model].get("sampling", {}).get(phase, {})}


def train_spec(wc):
    return spec_json({
        **model_spec(wc.model),
        "method": config["methods"][wc.method],
        "train": model_train(wc.model),
        "sampling": model_sampling(wc.model, "train"),
        "seed": int(wc.seed),
        "threads": config["threads"],
        "precision": config["precision"],
        **compute_spec("train", wc.model),
        # only when set, so that the jobs of a config without loggers keep their params
        # (files under results/<run>/loggers/: not declared outputs, like checkpoints)
        **({"loggers": config["loggers"], "run_name": f"{RUN}/{wc.model}/{wc.method}/seed{wc.seed}",
            "log_dir": f"{R}/loggers/{wc.model}/{wc.method}/seed{wc.seed}"} if config.get("loggers") else {}),
    })


UNTRAINED = "untrained"  # the evaluation cell of the bare base model (method: null)


def cell_of(evaluation):
    return config["evaluations"][evaluation]["method"] or UNTRAINED


def records_path(model, evaluation, seed, benchmark):
    return f"{R}/eval/{model}/{cell_of(evaluation)}/seed{seed}/{evaluation}.{benchmark}.jsonl"


def eval_needs(model, cell):
    """(evaluation, benchmark) pairs of one cell that some table or Figure 7b reads, in config order."""
    needs = []
    for table, t in config["tables"].items():
        if model in t.get("models", []):
            needs += [(e, b) for e, b in table_needs(table) if cell_of(e) == cell]
    if FIG7B and model in FIG7B["models"]:
        needs += [(e, b) for e, b in figure_needs() if cell_of(e) == cell]
    return list(dict.fromkeys(needs))


def eval_inputs(wc):
    inputs = {"base": base_path(wc.model)}
    benchmarks = dict.fromkeys(b for _, b in eval_needs(wc.model, wc.cell))
    inputs.update({f"benchmark_{b}": benchmark_path(b) for b in benchmarks})
    inputs.update(sandbox_check_for([config["benchmarks"][b]["dataset"] for b in benchmarks]))
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
        "sampling": model_sampling(wc.model, "eval"),
        "seed": int(wc.seed),
        "threads": config["threads"],
        "precision": config["precision"],
        **compute_spec("evaluate", wc.model),
    })


def table_kind(table):
    return config["tables"][table].get("kind", "results")


def is_design(table):
    return table_kind(table) == "design"


def table_benchmarks(t):
    """A table's benchmarks: `benchmarks`, or the one `benchmark` (one block of rows each); the claims
    table's, each claim's."""
    if t.get("kind") == "claims":
        from agon.report.claims import needs

        return list(dict.fromkeys(b for _, b in needs(t)))
    return list(t.get("benchmarks") or [t["benchmark"]])


def table_models(table):
    """The table's models this run configures; the others render `absent at this scale`."""
    return [m for m in config["tables"][table].get("models", []) if m in config["models"]]


def row_needs(rows, benchmarks, select_on):
    """(evaluation, benchmark) pairs of rows on benchmarks; a pick also needs its candidates on select_on."""
    picks = config.get("picks", {})
    needs = []
    for benchmark in benchmarks:
        for row in rows:
            for evaluation in picks.get(row, [row]):
                needs.append((evaluation, benchmark))
                if row in picks:
                    needs.append((evaluation, select_on))
    return list(dict.fromkeys(needs))


def table_needs(table):
    """(evaluation, benchmark) pairs a table reads (none for Table 1, the design, or without a configured model)."""
    t = config["tables"][table]
    if is_design(table) or not table_models(table):
        return []
    if table_kind(table) == "preconditions":  # Table 0: the evaluations it names, on its benchmark
        from agon.report.preconditions import evaluations

        return [(e, t["benchmark"]) for e in evaluations(t)]
    if table_kind(table) == "contrasts":  # each contrast's two rows (a pick: its candidates)
        from agon.report.contrasts import evaluations

        return row_needs(evaluations(t), [t["benchmark"]], t.get("select_on", "validation"))
    if table_kind(table) == "claims":  # each claim's two rows on its benchmark (a pick: its candidates)
        from agon.report.claims import needs

        select_on = t.get("select_on", "validation")
        return list(dict.fromkeys(n for row, bench in needs(t) for n in row_needs([row], [bench], select_on)))
    return row_needs(t["rows"], table_benchmarks(t), t.get("select_on", "validation"))


def table_metrics(wc):
    """Training metrics a table reads: Table 0's length in training and whether RL learned, of every
    trained cell of its models."""
    if table_kind(wc.table) != "preconditions":
        return []
    models = set(table_models(wc.table))
    return [m for m in all_metrics(wc) if Path(m).parts[-4] in models]


def records_of(table):
    return [records_path(model, evaluation, seed, benchmark)
            for model in table_models(table) for seed in config["seeds"]
            for evaluation, benchmark in table_needs(table)]


def table_records(wc):
    return records_of(wc.table)


def cells_of(table):
    """The evaluation directories a table reads (one per trained cell)."""
    return sorted({os.path.dirname(path) for path in records_of(table)})


def table_cells(wc):
    return cells_of(wc.table)


def fingerprint(paths):
    """Size and mtime of each file: a rule param that changes when any of them is rewritten, cut
    short or deleted, so what reads them reruns (and checks them). A file inside another job's
    directory() output cannot be an input of its own, and Snakemake dates such a directory by
    its .snakemake_timestamp, not by its files. Stat only: hashing every records file at
    every DAG build would cost minutes at paper scale."""
    from agon.io import stable_hash

    stats = []
    for path in paths:
        try:
            st = os.stat(path)
            stats.append([path, st.st_size, st.st_mtime_ns])
        except FileNotFoundError:
            stats.append([path, None])
    return stable_hash(stats)


def table_splits(wc):
    """{benchmark: split file} of every benchmark a table reads: its records are checked against them."""
    return {b: benchmark_path(b) for b in dict.fromkeys(b for _, b in table_needs(wc.table))}


def table_spec(wc):
    t = config["tables"][wc.table]
    if is_design(wc.table):
        # the spec's JSON sorts keys: the orders travel as lists
        return spec_json({**t, "methods": config["methods"], "evaluations": config["evaluations"],
                          "method_order": list(config["methods"]),
                          "evaluation_order": list(config["evaluations"])})
    picks = config.get("picks", {})
    unisolated = config.get("sandbox", {}).get("isolation") == "rlimits" and sandbox_check_for(
        [config["benchmarks"][b]["dataset"] for b in table_benchmarks(t)])
    return spec_json({
        **t,
        "seeds": config["seeds"],
        "picks": {row: picks[row] for row in t.get("rows", []) + [x for c in t.get("contrasts", []) for x in c]
                  + [c[k] for c in t.get("claims", []) for k in ("a", "b") if c.get(k)] if row in picks},
        "paper_models": {m: config["models"][m].get("paper_model") for m in table_models(wc.table)},
        "absent_models": [m for m in t["models"] if m not in config["models"]],
        "splits": table_splits(wc),
        **({"unisolated_code": True} if unisolated else {}),  # the note below says so
    })


def all_cells(wc):
    cells = {cell for table in config["tables"] for cell in cells_of(table)}
    return sorted(cells | {os.path.dirname(p) for p in figure_records()})


def all_metrics(wc):
    """Every trained cell's per-step metrics (the report checks each: every step once)."""
    cells = [Path(c) for c in all_cells(wc)]
    return sorted({f"{R}/train/{c.parts[-3]}/{c.parts[-2]}/{c.parts[-1]}/metrics.jsonl"
                   for c in cells if c.parts[-2] != UNTRAINED})


def trained_models(wc=None):
    """Models with at least one trained cell in this run (each gets a training-curves figure)."""
    return sorted({Path(m).parts[-4] for m in all_metrics(wc)})


def model_metrics(wc):
    return [m for m in all_metrics(wc) if Path(m).parts[-4] == wc.model]


def base_priority(wc):
    """Rule base's priority: above any set of training jobs (20 each), higher for more cells."""
    return 100 + sum(1 for cell_dir in all_cells(wc) if Path(cell_dir).parts[-3] == wc.model)


# --- Figure 7b: adapter snapshots evaluated during training ------------------------

FIG7B = (config.get("figures") or {}).get("fig7b")
# Figure 7a plots one results table's rows (figures.fig7a.table, else the first results table).
FIG7A_TABLE = (config.get("figures") or {}).get("fig7a", {}).get("table") or next(
    (t for t in config["tables"] if table_kind(t) == "results"), None)


def figure_rows():
    return FIG7B["rows"] if FIG7B else []


def figure_select_on():
    return FIG7B.get("select_on", "validation")


def figure_needs():
    """(evaluation, benchmark) pairs Figure 7b reads from the evaluation jobs: step 0 (the
    untrained base), each row's final records and, for a pick, its candidates on select_on."""
    if not FIG7B:
        return []
    return list(dict.fromkeys([(FIG7B["step0"], FIG7B["benchmark"])]
                              + row_needs(FIG7B["rows"], [FIG7B["benchmark"]], figure_select_on())))


def figure_records():
    if not FIG7B:
        return []
    return [records_path(model, evaluation, seed, benchmark)
            for model in FIG7B["models"] for seed in config["seeds"]
            for evaluation, benchmark in figure_needs()]


def curve_method(row):
    """The trained method a Figure 7b row evaluates (its candidates share it; config.py checks)."""
    return cell_of(config.get("picks", {}).get(row, [row])[0])


def curve_files():
    return [f"{R}/curves/{model}/{row}/seed{seed}.jsonl"
            for model in (FIG7B["models"] if FIG7B else []) for row in figure_rows() for seed in config["seeds"]]


def curve_inputs(wc):
    cell = f"{R}/train/{wc.model}/{curve_method(wc.row)}/seed{wc.seed}"
    return {"base": base_path(wc.model), "benchmark": benchmark_path(FIG7B["benchmark"]),
            "snapshots": f"{cell}/snapshots", "adapters": f"{cell}/adapters",
            "evals": f"{R}/eval/{wc.model}/{curve_method(wc.row)}/seed{wc.seed}",
            "untrained": f"{R}/eval/{wc.model}/{UNTRAINED}/seed{wc.seed}",
            **({"select_on": benchmark_path(figure_select_on())} if curve_candidates(wc.row) else {}),
            **sandbox_check_for([config["benchmarks"][FIG7B["benchmark"]]["dataset"]])}


def curve_candidates(row):
    return config.get("picks", {}).get(row)


def curve_records(wc):
    """The evaluation records a curve job reads: step 0, the final step, a pick's candidates."""
    candidates = curve_candidates(wc.row)
    bench, select_on = FIG7B["benchmark"], figure_select_on()
    files = [records_path(wc.model, FIG7B["step0"], wc.seed, bench)]
    files += [records_path(wc.model, e, wc.seed, b) for e in (candidates or [wc.row])
              for b in ([bench, select_on] if candidates else [bench])]
    return files


def curve_spec(wc, input, output):
    picks = config.get("picks", {})
    method = curve_method(wc.row)
    candidates = picks.get(wc.row)
    return spec_json({
        **model_spec(wc.model),
        "row": wc.row,
        "model": wc.model,
        "seed": int(wc.seed),
        "evaluation": None if candidates else wc.row,
        "candidates": candidates,
        "select_on": figure_select_on(),
        "evaluations": {e: config["evaluations"][e] for e in (candidates or [wc.row])},
        "adapters": adapter_names(method),
        "benchmark": FIG7B["benchmark"],
        "benchmark_path": input.benchmark,
        "select_on_path": input.get("select_on"),
        "problems": FIG7B["problems"],
        "snapshots": input.snapshots,
        "adapter_dir": input.adapters,
        "eval_dir": input.evals,
        "step0": {"evaluation": FIG7B["step0"], "eval_dir": input.untrained},
        "sampling": model_sampling(wc.model, "eval"),
        "threads": config["threads"],
        "precision": config["precision"],
        **compute_spec("curve", wc.model),
        "out": output[0],
    })
