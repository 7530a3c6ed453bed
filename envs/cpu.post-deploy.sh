#!/usr/bin/env bash
# Snakemake runs this once, inside the freshly created conda environment (next to
# the env file of the same name), from the workflow's working directory.
# It installs this package (the `agon` command) editable and without dependencies,
# so the environment's pins stay the env file's and jobs run the checkout's code.
# Run snakemake from the repository root, or set AGON_ROOT to the checkout.
set -euo pipefail
root="${AGON_ROOT:-$PWD}"
if [ ! -f "$root/src/agon/cli.py" ]; then
  echo "post-deploy: $root is not the agon-repro checkout; run snakemake from the repository root or set AGON_ROOT" >&2
  exit 1
fi
python -m pip install --no-deps -e "$root"
