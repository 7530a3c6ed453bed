#!/usr/bin/env bash
# Install into a virtual environment and run the embedded default (the toy world).
# The README's first command runs this script. Extra arguments go to snakemake.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/install.sh
venv_install -e .
# Every --configfile is checked first: snakemake's own loader says only "not valid JSON
# or YAML" for a syntax error; this names the file, line and column (src/agon/config.py).
configs=() next=0
for arg in "$@"; do
    if [ "$next" = 1 ]; then configs+=("$arg"); next=0
    elif [ "$arg" = --configfile ] || [ "$arg" = --configfiles ]; then next=1
    elif [[ "$arg" == --configfile=* ]]; then configs+=("${arg#--configfile=}")
    fi
done
[ "${#configs[@]}" = 0 ] || "$VENV/bin/python" -m agon.config "${configs[@]}"
# A failed job prints the end of its log (profiles/default: show-failed-logs).
PATH="$PWD/$VENV/bin:$PATH" snakemake --cores all "$@"
