#!/usr/bin/env bash
# Install into a virtual environment and run the embedded default (the toy world).
# The README's first command runs this script. Extra arguments go to snakemake.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${AGON_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -e .
PATH="$PWD/$VENV/bin:$PATH" snakemake --cores all "$@"
