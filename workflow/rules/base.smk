# Base models: results/<run>/models/<model>/base, which every train and evaluate job
# of the model loads.
#   kind toy: trained from scratch by `base`. Held-out and validation prompts of
#             every dataset are excluded from its supervised data.
#   kind hub (a hub id) or gguf: `fetch_model` snapshots the hub model / dequantizes
#             the GGUF once. A local rule: it reads the hub, which compute nodes
#             often cannot reach. A hub model given as a local snapshot directory
#             needs neither rule: jobs read that directory in place.
# Keys per kind: src/agon/model_sources.py.


localrules:
    fetch_model,


rule fetch_model:
    input:
        unpack(fetch_inputs),
    output:
        directory(LAYOUT.base("{model}")),
    wildcard_constraints:
        model=name_regex(PLAN.models_of_kind("hub", "gguf")),
    params:
        spec=fetch_spec,
    log:
        f"{R}/logs/base/{{model}}.log",
    conda:
        CPU_ENV
    shell:
        "agon fetch-model --spec {params.spec:q} --out {output} > {log} 2>&1"


rule base:
    input:
        unpack(base_inputs),
    output:
        directory(LAYOUT.base("{model}")),
    wildcard_constraints:
        model=name_regex(PLAN.models_of_kind("toy")),
    params:
        spec=base_spec,
        pinned=lambda wc: f"--pinned {PLAN.pinned_dir(wc.model)}" if PLAN.base_source(wc.model) == "pinned" else "",
    threads: lambda wc: PLAN.base_threads(wc.model)
    # Ready jobs start longest-first (prepare, base, train, evaluate, curve), so the short
    # evaluation and curve jobs fill the cores at the end instead of idling them; of
    # two bases, the one with more cells downstream (the critical path) goes first.
    # Snakemake's scheduler maximises the SUM of the priorities it starts, so a base
    # (100 + its cells) outranks any set of training jobs (20 each) that could run in
    # its place and is not starved by them. Priorities only order jobs; no result
    # depends on them.
    priority: base_priority
    resources:
        **rule_resources("base"),
    log:
        f"{R}/logs/base/{{model}}.log",
    conda:
        CPU_ENV
    shell:
        "agon base --spec {params.spec:q} --exclude {input.unseen} {params.pinned} "
        "--out {output} > {log} 2>&1"


# A pinned snapshot of a trained toy base (agon.toy.pinned), to copy into the repository
# (docs/toy-world.md, "Making a pinned base"):
#   snakemake pin_bases results/pin/tables/table0_base.md --cores all --configfile config/pin.yaml
#   cp results/pin/pinned/toy/* models/toy/ && cp results/pin/pinned/toy_code/* models/toy_code/
localrules:
    pin_base,
    pin_bases,


rule pin_base:
    input:
        base=LAYOUT.base("{model}"),
    output:
        directory(LAYOUT.pinned("{model}")),
    wildcard_constraints:
        model=name_regex(PLAN.models_of_kind("toy")),
    log:
        f"{R}/logs/pin/{{model}}.log",
    conda:
        CPU_ENV
    shell:
        "agon pin-base --base {input.base} --out {output} > {log} 2>&1"


rule pin_bases:
    input:
        expand(LAYOUT.pinned("{model}"), model=PLAN.models_of_kind("toy")),
