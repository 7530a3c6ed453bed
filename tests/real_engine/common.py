"""Shared by the real-engine tests (tests/real_engine/): the engine settings of vLLM's CPU platform."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "models" / "toy"  # the pinned math toy base: head_dim 32, as vLLM's CPU attention needs
# The KV cache in bytes (device: cpu needs it): the toy model's 256-token context takes ~32 KiB a
# sequence in fp32; 64 MiB holds every group of a step at once.
ENGINE = {"kv_cache_memory_bytes": 64 << 20, "max_model_len": 256, "dtype": "float32"}
ALL_PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def copy_base(dst: Path, eos_ids: list[int] | None = None) -> Path:
    """A copy of the toy base, its generation_config.json listing `eos_ids` when given."""
    shutil.copytree(TOY, dst)
    if eos_ids is not None:
        path = dst / "generation_config.json"
        config = json.loads(path.read_text())
        config["eos_token_id"] = eos_ids
        path.write_text(json.dumps(config))
    return dst


class EngineCount:
    """Counts `vllm.LLM` engines started while installed (monkeypatched over vllm.LLM)."""

    def __init__(self, monkeypatch):
        import vllm

        self.started = 0
        real = vllm.LLM
        count = self

        class Counted(real):
            def __init__(self, *args, **kwargs):
                count.started += 1
                super().__init__(*args, **kwargs)

        monkeypatch.setattr(vllm, "LLM", Counted)


def snakemake(workdir: Path, config: Path, targets: list[str], timeout: int) -> None:
    """Run the pipeline on `config` in `workdir` with this venv's snakemake and `agon` (the rules
    call the one on PATH), on 2 cores; on failure, raise with the end of every job's log."""
    import os
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
           "--configfile", str(config), "--cores", "2", *targets]  # --configfile takes every word after it
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        logs = "\n".join(f"== {p}\n{p.read_text()[-1500:]}" for p in (workdir / "results").rglob("*.log"))
        raise AssertionError(f"snakemake failed:\n{proc.stderr[-4000:]}\n{logs[-12000:]}")
