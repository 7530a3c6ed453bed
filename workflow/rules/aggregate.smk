# Tables from per-problem records only; run locally, never as cluster jobs.


localrules:
    table,


def table_records(wc):
    t = config["tables"][wc.table]
    return expand(f"{R}/eval/{{model}}/{{evaluation}}/seed{{seed}}/{t['benchmark']}.jsonl",
                  model=t["models"], evaluation=t["rows"], seed=config["seeds"])


rule table:
    input:
        table_records,
    output:
        csv=f"{R}/tables/{{table}}.csv",
        md=f"{R}/tables/{{table}}.md",
    params:
        spec=lambda wc: spec_json(config["tables"][wc.table]),
        prefix=lambda wc: f"{R}/tables/{wc.table}",
    log:
        f"{R}/logs/tables/{{table}}.log",
    conda:
        "../../envs/cpu.yaml"
    shell:
        "agon table --spec {params.spec:q} --records {input} --out-prefix {params.prefix} > {log} 2>&1"
