# One evaluation job per model x evaluation x seed x benchmark: per-problem records.


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
