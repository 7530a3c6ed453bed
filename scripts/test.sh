#!/usr/bin/env bash
# Install into a fresh virtual environment and run the whole test suite.
# The README's second command runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${AGON_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -e '.[test]'
PATH="$PWD/$VENV/bin:$PATH" "$VENV/bin/python" -m pytest -q "$@"
