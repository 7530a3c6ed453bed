# One evaluation job per model x evaluation x seed x benchmark: per-problem records.


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


rule evaluate:
    input:
        unpack(eval_inputs),
    output:
        records=f"{R}/eval/{{model}}/{{evaluation}}/seed{{seed}}/{{benchmark}}.jsonl",
        meta=f"{R}/eval/{{model}}/{{evaluation}}/seed{{seed}}/{{benchmark}}.jsonl.meta.json",
    params:
        spec=eval_spec,
        adapters=lambda wc, input: f"--adapters {input.adapters}" if "adapters" in input.keys() else "",
    threads: config["threads"]
    resources:
        runtime=60,
    log:
        f"{R}/logs/eval/{{model}}/{{evaluation}}/seed{{seed}}/{{benchmark}}.log",
    conda:
        "../../envs/gpu.yaml"
    shell:
        "agon evaluate --spec {params.spec:q} --problems {input.problems} {params.adapters} "
        "--out {output.records} > {log} 2>&1"
