# agon-repro: the Agon paper as a Snakemake pipeline.
#   snakemake --cores all                                  embedded default (toy world, CPU)
#   snakemake --cores all --configfile config/test.yaml    minutes-scale test matrix
# Outputs: results/<run>/ (see README.md for the target patterns).

import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))  # agon without an install, too
from agon.config import validate

if not config:
    configfile: "config/config.yaml"

validate(config, "workflow config")

RUN = config["run"]
R = f"results/{RUN}"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/base.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"


rule all:
    input:
        expand(f"{R}/tables/{{table}}.{{ext}}", table=config["tables"], ext=["csv", "md"]),
    default_target: True
