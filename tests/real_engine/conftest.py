"""The real-engine tests: collected only in the session tests/test_vllm_cpu.py starts, inside
.venv-vllm (scripts/install_vllm_cpu.sh), with AGON_VLLM_TESTS=1. The main session (whose
venv has no vLLM) leaves this folder alone."""

import os

collect_ignore_glob = [] if os.environ.get("AGON_VLLM_TESTS") == "1" else ["test_*.py"]
