# Tables from per-problem records only; run locally, never as cluster jobs.


localrules:
    table,


rule table:
    input:
        cells=table_cells,
        reported=ROOT / "config" / "reported.yaml",
    output:
        csv=f"{R}/tables/{{table}}.csv",
        md=f"{R}/tables/{{table}}.md",
    params:
        spec=table_spec,
        records=table_records,
        prefix=lambda wc, output: output.csv.removesuffix(".csv"),
    log:
        f"{R}/logs/tables/{{table}}.log",
    conda:
        "../../envs/cpu.yaml"
    shell:
        "agon table --spec {params.spec:q} --records {params.records} --reported {input.reported} "
        "--out-prefix {params.prefix} > {log} 2>&1"
