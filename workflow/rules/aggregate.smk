# Tables from per-problem records only; run locally, never as cluster jobs.


localrules:
    table,


rule table:
    input:
        table_records,
    output:
        csv=f"{R}/tables/{{table}}.csv",
        md=f"{R}/tables/{{table}}.md",
    params:
        spec=lambda wc: spec_json(config["tables"][wc.table]),
        prefix=lambda wc, output: output.csv.removesuffix(".csv"),
    log:
        f"{R}/logs/tables/{{table}}.log",
    conda:
        "../../envs/cpu.yaml"
    shell:
        "agon table --spec {params.spec:q} --records {input} --out-prefix {params.prefix} > {log} 2>&1"
