# One evaluation job per trained cell (model x method x seed, or the untrained
# base): every evaluation of that cell (single pass, cascades in both directions,
# drafter alone, ...) on every benchmark, as per-problem records files
#   results/<run>/eval/<model>/<cell>/seed<seed>/<evaluation>.<benchmark>.jsonl
# One job per cell, not per file: model loading dominates the cost at toy scale.
# A records file already complete from an interrupted job is reused.


rule evaluate:
    input:
        unpack(eval_inputs),
    output:
        directory(LAYOUT.eval_dir("{model}", "{cell}", "{seed}")),
    params:
        spec=eval_spec,
        resume=lambda wc: LAYOUT.eval_resume(wc.model, wc.cell, wc.seed),
    threads: config["threads"]
    priority: 10  # longest-first, see rule base
    resources:
        **rule_resources("evaluate"),
    log:
        f"{R}/logs/eval/{{model}}/{{cell}}/seed{{seed}}.log",
    conda:
        job_env
    shell:
        "agon evaluate --spec {params.spec:q} --resume-dir {params.resume} > {log} 2>&1"
