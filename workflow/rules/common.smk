# Helpers shared by the rules: the per-job specs handed to the `agon` command.
import json
import os


wildcard_constraints:
    model="[A-Za-z0-9_.-]+",
    method="[A-Za-z0-9_]+",
    evaluation="[A-Za-z0-9_]+",
    benchmark="[A-Za-z0-9_]+",
    seed="[0-9]+",


def spec_json(obj):
    return json.dumps(obj, sort_keys=True)


def base_path(model):
    m = config["models"][model]
    if m["kind"] == "toy":
        return f"{R}/models/{model}/base"
    raise ValueError(f"models.{model}: unsupported kind {m['kind']!r}")


def model_spec(model):
    return {"base_path": base_path(model), "prompt_style": config["models"][model]["prompt_style"]}


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
    })

def eval_method(wc):
    return config["evaluations"][wc.evaluation]["method"]


def eval_inputs(wc):
    bench = config["benchmarks"][wc.benchmark]
    inputs = {"base": base_path(wc.model), "problems": f"{R}/data/{bench['split']}.jsonl"}
    if eval_method(wc) is not None:
        inputs["adapters"] = f"{R}/train/{wc.model}/{eval_method(wc)}/seed{wc.seed}/adapters"
    return inputs


def eval_spec(wc):
    ev = config["evaluations"][wc.evaluation]
    return spec_json({
        **model_spec(wc.model),
        "evaluation": wc.evaluation,
        "model": wc.model,
        "benchmark": wc.benchmark,
        "protocol": ev["protocol"],
        "policies": ev["policies"],
        "adapters": adapter_names(ev["method"]) if ev["method"] else [],
        "sampling": config["sampling"]["eval"],
        "seed": int(wc.seed),
        "threads": config["threads"],
    })

def table_records(wc):
    t = config["tables"][wc.table]
    return expand(f"{R}/eval/{{model}}/{{evaluation}}/seed{{seed}}/{t['benchmark']}.jsonl",
                  model=t["models"], evaluation=t["rows"], seed=config["seeds"])
