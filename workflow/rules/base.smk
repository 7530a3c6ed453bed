# The toy base model, trained from scratch (kind: toy). Held-out and validation
# prompts of every dataset are excluded from its supervised data.


rule base:
    input:
        unseen=unseen_splits,
    output:
        directory(f"{R}/models/{{model}}/base"),
    params:
        spec=lambda wc: spec_json(config["models"][wc.model]["base"]),
    threads: lambda wc: config["models"][wc.model]["base"].get("threads", 1)
    resources:
        runtime=60,
    log:
        f"{R}/logs/base/{{model}}.log",
    conda:
        "../../envs/cpu.yaml"
    shell:
        "agon base --spec {params.spec:q} --exclude {input.unseen} "
        "--out {output} > {log} 2>&1"
