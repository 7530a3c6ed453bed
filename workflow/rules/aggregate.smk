# Tables from per-problem records only; run locally, never as cluster jobs.


localrules:
    table,
    report,


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


rule report:
    input:
        tables=expand(f"{R}/tables/{{table}}.md", table=config["tables"]),
        figure_table=f"{R}/tables/{FIGURE_7A_TABLE}.csv",
        cells=all_cells,
        reported=ROOT / "config" / "reported.yaml",
    output:
        report=f"{R}/report.md",
        fig7a=multiext(f"{R}/figures/fig7a", ".png", ".pdf"),
    params:
        spec=lambda wc: spec_json(config),
        prefix=lambda wc, output: output.fig7a[0].removesuffix(".png"),
        provenance=lambda wc, input: [f"{c}/provenance.json" for c in input.cells],
    log:
        f"{R}/logs/report.log",
    conda:
        "../../envs/cpu.yaml"
    shell:
        "agon report --spec {params.spec:q} --tables {input.tables} --figure-table {input.figure_table} "
        "--figure-prefix {params.prefix} --reported {input.reported} --provenance {params.provenance} "
        "--out {output.report} > {log} 2>&1"
