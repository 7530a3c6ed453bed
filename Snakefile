# agon-repro: the Agon paper as a Snakemake pipeline.
#   snakemake --cores all                                  embedded default (toy world, CPU)
#   snakemake --cores all --configfile config/test.yaml    minutes-scale test matrix
#   snakemake --cores 1 clean_checkpoints                  drop finished cells' resumable state
#   snakemake --report results/<run>/report.html           Snakemake's HTML report of a finished run
# Outputs: results/<run>/ (see README.md for the target patterns).

import sys
from pathlib import Path

ROOT = Path(workflow.basedir)
sys.path.insert(0, str(ROOT / "src"))  # agon without an install, too
from agon.config import resolve_extends, validate

if not config:
    configfile: "config/config.yaml"

# `extends:` (config/test.yaml) layers a config on another file in config/. Problems are
# named by file and line: the --configfile files (the last one's keys win), then the
# files they extend.
CONFIG_FILES = [Path(f) for f in reversed(workflow.configfiles)]
resolved = resolve_extends(dict(config), ROOT / "config", CONFIG_FILES)
config.clear()
config.update(resolved)
validate(config, CONFIG_FILES)

RUN = config["run"]
R = f"results/{RUN}"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/base.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/curves.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/clean.smk"


rule all:
    input:
        [LAYOUT.table(t, ext) for t in config["tables"] for ext in ("csv", "md", "tex")],
        LAYOUT.report,
        # targets of their own, so that a deleted one is rebuilt (Snakemake does not rebuild a
        # missing file that only an up-to-date job reads)
        lambda wc: [LAYOUT.figure(f"training_{m}", ext) for m in trained_models(wc) for ext in ("png", "pdf")],
    default_target: True
