#!/usr/bin/env bash
# Install into a virtual environment and run the embedded default (the toy world).
# The README's first command runs this script. Extra arguments go to snakemake.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/install.sh
venv_install -e .
PATH="$PWD/$VENV/bin:$PATH" snakemake --cores all "$@"
