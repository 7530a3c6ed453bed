# Helpers shared by the rules: the per-job specs handed to the `agon` command.
import json


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
