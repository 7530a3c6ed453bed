# Tables, figures and the run report from result files only (per-problem records,
# curve points, provenance): local rules, never cluster jobs, and no training or
# evaluation job is ever downstream of them, so deleting results/<run>/tables
# reruns just these.
#
# Snakemake's HTML report is a separate invocation over a finished run:
#   snakemake --report results/<run>/report.html      (add --configfile ... for another run)
# It gathers the outputs flagged report() below, with the captions in workflow/report/.


report: "../report/workflow.rst"


localrules:
    table,
    figure_7b,
    training_curves,
    report,


rule table:
    input:
        cells=table_cells,
        splits=lambda wc: list(table_splits(wc).values()),
        metrics=table_metrics,
        reported=ROOT / "config" / "reported.yaml",
    output:
        csv=report(LAYOUT.table("{table}", "csv"), caption="../report/table.rst", category="Tables",
                   labels={"table": "{table}", "format": "csv"}),
        md=report(LAYOUT.table("{table}", "md"), caption="../report/table.rst", category="Tables",
                  labels={"table": "{table}", "format": "md"}),
        tex=report(LAYOUT.table("{table}", "tex"), caption="../report/table.rst", category="Tables",
                   labels={"table": "{table}", "format": "tex"}),
    params:
        spec=table_spec,
        records=table_records,
        records_stat=lambda wc: fingerprint(table_records(wc)),  # a damaged records file reruns the table
        prefix=lambda wc, output: output.csv.removesuffix(".csv"),
    log:
        f"{R}/logs/tables/{{table}}.log",
    conda:
        CPU_ENV
    shell:
        "agon table --spec {params.spec:q} --records {params.records} --metrics {input.metrics} "
        "--reported {input.reported} --out-prefix {params.prefix} > {log} 2>&1"


rule figure_7b:
    input:
        curves=PLAN.curve_files(),
        snapshots=sorted(set(PLAN.curve_snapshots().values())),
    output:
        png=report(LAYOUT.figure("fig7b", "png"), caption="../report/fig7b.rst", category="Figures",
                   labels={"figure": "7b", "format": "png"}),
        pdf=report(LAYOUT.figure("fig7b", "pdf"), caption="../report/fig7b.rst", category="Figures",
                   labels={"figure": "7b", "format": "pdf"}),
        csv=report(LAYOUT.figure("fig7b", "csv"), caption="../report/fig7b.rst", category="Figures",
                   labels={"figure": "7b", "format": "csv"}),
    params:
        prefix=lambda wc, output: output.png.removesuffix(".png"),
        snapshots=spec_json(PLAN.curve_snapshots()),  # each curve must hold every snapshot step of its cell
    log:
        f"{R}/logs/figures/fig7b.log",
    conda:
        CPU_ENV
    shell:
        "agon figure7b --points {input.curves} --snapshots {params.snapshots:q} --out-prefix {params.prefix} "
        "> {log} 2>&1"


rule training_curves:
    input:
        metrics=model_metrics,
    output:
        png=report(LAYOUT.figure("training_{model}", "png"), caption="../report/training.rst", category="Figures",
                   labels={"figure": "training curves {model}", "format": "png"}),
        pdf=report(LAYOUT.figure("training_{model}", "pdf"), caption="../report/training.rst", category="Figures",
                   labels={"figure": "training curves {model}", "format": "pdf"}),
    params:
        prefix=lambda wc, output: output.png.removesuffix(".png"),
        blind=" ".join(blind_challengers()),
    log:
        f"{R}/logs/figures/training_{{model}}.log",
    conda:
        CPU_ENV
    shell:
        "agon training-curves --model {wildcards.model} --metrics {input.metrics} "
        "--blind-challengers {params.blind} --out-prefix {params.prefix} > {log} 2>&1"


rule report:
    input:
        tables=[LAYOUT.table(t, "md") for t in config["tables"]],
        figure_table=LAYOUT.table(FIG7A_TABLE, "csv"),
        fig7b=LAYOUT.figure("fig7b", "png"),
        cells=all_cells,
        metrics=all_metrics,
        training=lambda wc: [LAYOUT.figure(f"training_{m}", "png") for m in trained_models(wc)],
        reported=ROOT / "config" / "reported.yaml",
    output:
        report=LAYOUT.report,
        fig7a=report(LAYOUT.figure("fig7a", "png"), caption="../report/fig7a.rst", category="Figures",
                     labels={"figure": "7a", "format": "png"}),
        fig7a_pdf=report(LAYOUT.figure("fig7a", "pdf"), caption="../report/fig7a.rst", category="Figures",
                         labels={"figure": "7a", "format": "pdf"}),
    params:
        spec=lambda wc: spec_json(config),
        prefix=lambda wc, output: output.fig7a.removesuffix(".png"),
        provenance=lambda wc, input: [f"{c}/provenance.json" for c in input.cells],
        provenance_stat=lambda wc: fingerprint([f"{c}/provenance.json" for c in all_cells(wc)]),
    log:
        f"{R}/logs/report.log",
    conda:
        CPU_ENV
    shell:
        "agon report --spec {params.spec:q} --tables {input.tables} --figure-table {input.figure_table} "
        "--figure-prefix {params.prefix} --fig7b {input.fig7b} --reported {input.reported} "
        "--provenance {params.provenance} --metrics {input.metrics} --training {input.training} "
        "--out {output.report} > {log} 2>&1"
