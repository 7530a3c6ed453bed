#!/usr/bin/env bash
# The paper-scale training path on a GPU machine, in at most 5 minutes, with nothing fetched or
# installed: torch, transformers and peft are all it needs (no vLLM, no network). It runs GRPO and
# Agon steps and an evaluation on a random Qwen3-architecture model at Qwen3-0.6B's width, in bf16
# on CUDA, then the loss-memory benchmark, and prints peak GPU memory and tokens per second
# (scripts/device_check.py says what and why).
#   bash scripts/device_check.sh                        a GPU machine
#   bash scripts/device_check.sh --tiny --device cpu    the same code at toy size (tests/test_device_check.py)
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"
exec timeout "${DEVICE_CHECK_TIMEOUT:-300}" "$PYTHON" scripts/device_check.py "$@"
