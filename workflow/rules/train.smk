# One training job per cell: model x method x seed. Resumable state lives in
# results/<run>/checkpoints/ (not a declared output), so a killed job resumes.


# Before the first job that grades code: one program through the code sandbox.
# Its log goes to the console too (tee), so that the message saying what to
# install or enable is where the user looks, not one file away.
localrules:
    sandbox_check,


rule sandbox_check:
    output:
        SANDBOX_CHECK,
    params:
        spec=lambda wc: spec_json({"sandbox": config.get("sandbox", {})}),
    log:
        f"{R}/logs/sandbox_check.log",
    conda:
        CPU_ENV
    shell:
        "agon sandbox-check --spec {params.spec:q} --out {output} 2>&1 | tee {log}"


rule train:
    input:
        unpack(train_inputs),
    output:
        adapters=directory(LAYOUT.adapters("{model}", "{method}", "{seed}")),
        metrics=LAYOUT.metrics("{model}", "{method}", "{seed}"),
        # every train.snapshot_every steps, for Figure 7b (snapshots.json lists the steps)
        snapshots=directory(LAYOUT.snapshots("{model}", "{method}", "{seed}")),
    params:
        spec=train_spec,
        checkpoints=LAYOUT.checkpoints("{model}", "{method}", "{seed}"),
    threads: config["threads"]
    priority: 20  # longest-first, see rule base
    resources:
        **rule_resources("train"),
    log:
        f"{R}/logs/train/{{model}}/{{method}}/seed{{seed}}.log",
    conda:
        job_env
    shell:
        "agon train --spec {params.spec:q} --train {input.train} --out {output.adapters} "
        "--metrics {output.metrics} --snapshots {output.snapshots} --checkpoint-dir {params.checkpoints} "
        "> {log} 2>&1"
