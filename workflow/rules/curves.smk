# Figure 7b: held-out pass@1 during training. The training job saves adapter
# snapshots every train.snapshot_every steps (train/<model>/<method>/seed<s>/snapshots/);
# one curve job per (model, figure row, seed) evaluates them on the first
# figures.fig7b.problems problems of the benchmark with the row's protocol, and
# takes step 0 (the untrained base) and the final step from the evaluation jobs'
# records (src/agon/evaluate/curves.py). A GPU job at paper scale, like evaluate.


rule curve:
    input:
        unpack(curve_inputs),
    output:
        points=LAYOUT.curve("{model}", "{row}", "{seed}"),
        provenance=LAYOUT.curve_provenance("{model}", "{row}", "{seed}"),
    params:
        spec=curve_spec,
        records_stat=lambda wc: fingerprint(curve_records(wc)),  # a damaged records file reruns the curve
    threads: config["threads"]
    resources:
        **rule_resources("curve"),
    log:
        f"{R}/logs/curves/{{model}}/{{row}}/seed{{seed}}.log",
    conda:
        job_env
    shell:
        "agon curve --spec {params.spec:q} > {log} 2>&1"
