# Problem pool and seeded splits (held-out and validation drawn before training).
# Local on a cluster: cheap, and at paper scale it reads the hub, which compute
# nodes often cannot reach.


localrules:
    prepare,


rule prepare:
    output:
        splits=expand(f"{R}/data/{{split}}.jsonl", split=["heldout", "validation", "train"]),
        manifest=f"{R}/data/manifest.json",
    params:
        spec=lambda wc: spec_json(config["data"]),
        out=lambda wc, output: os.path.dirname(output.manifest),
    log:
        f"{R}/logs/prepare.log",
    conda:
        "../../envs/cpu.yaml"
    shell:
        "agon prepare --spec {params.spec:q} --out {params.out} > {log} 2>&1"
