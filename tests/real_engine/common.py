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

