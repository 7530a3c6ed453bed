# One prepare job per dataset: its source (generated, hub, or a local copy),
# filtered, then seeded splits (held-out and validation drawn before training)
# with content hashes in manifest.json. Local on a cluster: cheap, and at paper
# scale it reads the hub, which compute nodes often cannot reach.


localrules:
    prepare,


rule prepare:
    output:
        splits=[LAYOUT.split("{dataset}", split) for split in SPLITS],
        manifest=LAYOUT.manifest("{dataset}"),
    params:
        spec=lambda wc: spec_json({"name": wc.dataset, **config["datasets"][wc.dataset]}),
        out=lambda wc, output: os.path.dirname(output.manifest),
    priority: 200  # seconds each, and everything waits on them (see rule base)
    log:
        f"{R}/logs/prepare/{{dataset}}.log",
    conda:
        CPU_ENV
    shell:
        "agon prepare --spec {params.spec:q} --out {params.out} > {log} 2>&1"
