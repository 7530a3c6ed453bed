"""Qwen3.5 and Gemma-4 on the real engine (vLLM 0.32's CPU platform): the paper CPU run's
stand-ins of both families (tests/data/paper_cpu/models/{qwen3.5,gemma-4}-tiny, built by
scripts/make_standin_model.py from each family's real transformers classes and fitted to the
paper's output format), saved as the hub's vision-language ForConditionalGeneration in bf16 and
served in vLLM's text-only mode of that architecture.

For each family: a GRPO cell trains one step with config/paper.yaml's LoRA targets for the
model, sampling through `VllmBackend`; the trained adapter's greedy tokens then equal
transformers + peft's on the same merged weights and differ from the bare base's; its
next-token log-probabilities agree with theirs as closely as the bare base's do. An adapter in
the module names of the trainer's own model, which vLLM's architecture does not have (Qwen3.5's
text-only names), is refused before its first request, naming the modules.

Precision. Gemma-4 is served and compared in fp32: token for token. Qwen3.5 runs in bf16 only
on vLLM's CPU platform ("CPU GDN attention requires BF16"), and there the two engines' kernels
round differently: on 16 prompts the bare base's greedy completions differed in 1 (and the
adapter's in 1 or 2), always at a near tie. So for Qwen3.5 every token vLLM chose is checked to
be transformers' greedy choice on vLLM's own prefix, but where transformers' top two logits lie
within a few bf16 steps of each other.

These architectures import image processors that need torchvision, which this venv lacks:
tests/real_engine/shim/sitecustomize.py (test-only) stands in for the one import line, and
$AGON_SHIM_LOG must stay empty (no torchvision function called). Engine starts: ~30 s each.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch
import yaml

from agon import vllm_backend as vb
from agon.config import load as load_config
from agon.config import merge
from agon.data import toy_math
from agon.generate import TransformersBackend
from agon.models import LoraPolicies, load_base
from agon.prompts import PromptFormat
from agon.resources import job_generation
from agon.rl.trainer import Trainer

ROOT = Path(__file__).resolve().parents[2]
PAPER = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
# The paper CPU run's stand-ins of both families, and the engine arguments its jobs use for them:
# Qwen3.5 in bf16 (its Gated DeltaNet CPU kernels take nothing else) without prefix caching
# (a hybrid's needs chunked prefill, which the backend turns off on the CPU platform), Gemma-4
# in the run's fp32 (config/paper_cpu_vllm.yaml's models.<m>.generation over its section).
STANDIN_RUN = load_config(ROOT / "config" / "paper_cpu_vllm.yaml")
FAMILIES = ("gemma-4-e4b", "qwen3.5-2b")
TRAIN = {"problems_per_step": 2, "epochs": 1, "max_steps": 1, "lr": 0.01, "warmup_ratio": 0.0,
         "weight_decay": 0.0, "max_grad_norm": 1.0, "loss_type": "dapo", "clip_low": 0.2,
         "clip_high": 0.2, "beta": 0.0, "lam": 0.5, "adapter_a_init_sigma": 0.001,
         "checkpoint_every": 1, "snapshot_every": 1}
# GRPO trains adapter A alone, from zero; the step's update is small, so A starts from the
# paper's noise init at a sigma whose update greedy decoding shows
INIT_SIGMA = 0.05
GRPO = {"kind": "grpo", "group_size": 4}
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 16}
GREEDY = {"temperature": 0, "top_p": 1.0, "max_new_tokens": 12}
PROBLEMS = toy_math.generate(8, 7, levels=[1, 2])


def paper_lora(model: str) -> dict:
    """The LoRA config/paper.yaml trains `model` with (its own targets where it sets them)."""
    return merge(PAPER["train"], PAPER["models"][model].get("train", {}))["lora"]


def engine_for(model: str) -> dict:
    return job_generation(STANDIN_RUN, "train", model)


def torch_dtype(model: str) -> torch.dtype:
    return getattr(torch, engine_for(model)["dtype"])


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory):
    """(model, base dir, tokenizer, prompt format, prompts, the engine serving the base)."""
    model = request.param
    base_dir = ROOT / STANDIN_RUN["models"][model]["path"]
    tok = load_base(str(base_dir))[1]
    fmt = PromptFormat("chat", tok, thinking=PAPER["models"][model]["thinking"])
    with vb.VllmBackend(base_dir, tok, paper_lora(model), engine_for(model),
                        adapter_root=tmp_path_factory.mktemp("adapters")) as backend:
        yield model, base_dir, tok, fmt, [fmt.plain(p) for p in PROBLEMS], backend


def _tokens(completions):
    return [c.completion_ids for c in completions]


def test_the_engine_serves_the_checkpoints_architecture_text_only(family):
    model, base_dir, _, _, _, backend = family
    config = backend.llm.llm_engine.vllm_config.model_config
    assert config.architectures == [{"qwen3.5-2b": "Qwen3_5ForConditionalGeneration",
                                     "gemma-4-e4b": "Gemma4ForConditionalGeneration"}[model]]
    assert config.multimodal_config.language_model_only


def test_a_trained_adapter_serves_the_tokens_of_transformers_and_peft(family, tmp_path):
    """One GRPO step with the paper's targets, sampled through vLLM; then greedy tokens through
    the trained adapter against transformers' on the same merged weights (in fp32 token for
    token; in bf16 choice by choice on vLLM's prefix, near ties aside: the module's docstring),
    and against the bare base's, which they must not equal."""
    model, base_dir, tok, fmt, prompts, backend = family
    torch.manual_seed(0)
    base, _ = load_base(str(base_dir))
    lora = paper_lora(model)
    trainer = Trainer(base, tok, fmt, {**TRAIN, "lora": lora}, GRPO, SAMPLING, seed=0,
                      backend_factory=lambda m: backend)
    with torch.no_grad():
        for name, p in trainer.policies.model.named_parameters():
            if "lora_B.A." in name:
                p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(1)) * INIT_SIGMA)
    backend.sync(trainer.policies)
    records = trainer.fit(PROBLEMS[:2], tmp_path / "metrics.jsonl", tmp_path / "ckpt.pt", log=lambda *_: None)
    assert [r["step"] for r in records] == [0] and records[0]["streams"]
    assert all(s["rollouts"] > 0 and s["generated_tokens"] > 0 for s in records[0]["streams"].values())
    policies = trainer.policies  # published to the engine after the step (Trainer -> backend.sync)
    assert len({k.split(".lora_")[0] for k in policies.state_dict("A")}) == {"qwen3.5-2b": 31, "gemma-4-e4b": 24}[model]

    reference = TransformersBackend(policies.model, tok, torch_dtype(model), max_model_len=engine_for(model)["max_model_len"])
    ours = backend.sample("A", prompts, GREEDY, seed=0)
    theirs = reference.sample("A", prompts, GREEDY, seed=0)
    bare = backend.sample(None, prompts, GREEDY, seed=0)
    assert [o.prompt_ids for o in ours] == [t.prompt_ids for t in theirs]
    print(f"{model}: greedy completions through the adapter, vLLM | transformers + peft | bare base (vLLM):")
    for o, t, b in zip(ours, theirs, bare):
        print(f"  {tok.decode(o.completion_ids)!r} | {tok.decode(t.completion_ids)!r} | {tok.decode(b.completion_ids)!r}")
    assert sum(o.completion_ids != b.completion_ids for o, b in zip(ours, bare)) >= len(prompts) // 2  # applied
    if torch_dtype(model) == torch.float32:
        assert _tokens(ours) == _tokens(theirs)
        assert _tokens(bare) == _tokens(reference.sample(None, prompts, GREEDY, seed=0))
        return
    # bf16: vLLM's every choice is transformers' greedy choice on vLLM's own prefix, but at near ties
    merged, ties = reference.model_for("A"), []
    for o in ours:
        with torch.no_grad():
            logits = merged(input_ids=torch.tensor([o.prompt_ids + o.completion_ids])).logits[0].float()
        for i, token in enumerate(o.completion_ids):
            row = logits[len(o.prompt_ids) - 1 + i]
            top = float(row.max())
            gap = top - float(row[token])
            if gap > 0:
                ulp = 2.0 ** (math.floor(math.log2(abs(top))) - 7)  # bf16's spacing at the top logit
                ties.append((round(gap / ulp, 1), tok.decode([token]), tok.decode([int(row.argmax())])))
    print(f"{model}: vLLM chose another token than transformers' greedy one {len(ties)} times "
          f"(gap in bf16 steps, vLLM's, transformers'): {ties}; whole completions equal: "
          f"{sum(a == b for a, b in zip(_tokens(ours), _tokens(theirs)))}/{len(prompts)}")
    assert all(steps <= 4 for steps, _, _ in ties), ties
    assert len(ties) <= 2


def test_the_first_tokens_distribution_is_transformers_and_peft_s(family):
    """The next-token log-probabilities after each prompt, vLLM's 20 most likely against
    transformers' on the same merged weights: the adapter's agree as closely as the bare base's
    do (the two engines' bf16 kernels differ by as much for the bare base), while the adapter
    moves them an order of magnitude more than that."""
    from vllm import SamplingParams

    model, base_dir, tok, _, prompts, backend = family
    policies = LoraPolicies(load_base(str(base_dir))[0], ("A",), paper_lora(model), {"A": INIT_SIGMA}, seed=3)
    backend.sync(policies)
    reference = TransformersBackend(policies.model, tok, torch_dtype(model))
    ids = tok(prompts, add_special_tokens=False)["input_ids"]
    params = SamplingParams(max_tokens=1, temperature=0, logprobs=20)
    worst, moved = {}, []
    for adapter in (None, "A"):
        request = None if adapter is None else backend.lora_request(adapter)
        outs = backend.llm.generate([{"prompt_token_ids": i} for i in ids], params, use_tqdm=False,
                                    lora_request=request)
        worst[adapter] = 0.0
        for prompt, out in zip(ids, outs):
            served = {t: lp.logprob for t, lp in out.outputs[0].logprobs[0].items()}
            with torch.no_grad():
                ref = torch.log_softmax(reference.model_for(adapter)(input_ids=torch.tensor([prompt])).logits[0, -1]
                                        .float(), -1)
                other = torch.log_softmax(reference.model_for("A" if adapter is None else None)(
                    input_ids=torch.tensor([prompt])).logits[0, -1].float(), -1)
            worst[adapter] = max(worst[adapter], max(abs(lp - float(ref[t])) for t, lp in served.items()))
            moved.append(max(abs(float(ref[t] - other[t])) for t in served))
    print(f"{model}: largest |vLLM - transformers| next-token logprob over the top 20: {worst}; "
          f"the adapter moves them by up to {max(moved):.3f}")
    assert worst["A"] <= 2 * worst[None] + 0.02 and worst["A"] < 0.5
    assert max(moved) > 10 * worst["A"]


def test_an_adapter_in_names_the_architecture_lacks_is_refused(family, tmp_path):
    """The adapter saved under the trainer model's own paths (what peft writes: for Qwen3.5 the
    text-only `model.layers.N`, which Qwen3_5ForConditionalGeneration does not have): the
    engine would skip every module; the first request stops and names them."""
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    model, base_dir, tok, _, prompts, backend = family
    base, _ = load_base(str(base_dir))
    policies = LoraPolicies(base, ("A",), paper_lora(model), {"A": 0.05}, seed=0)
    bad = tmp_path / "bad"
    policies.save("A", bad)
    state = get_peft_model_state_dict(policies.model, adapter_name="A")
    if model == "gemma-4-e4b":  # its trainer already has the checkpoint's names: misname one layer
        state = {k.replace(".layers.0.", ".layer.0."): v for k, v in state.items()}
    save_file({k: v.contiguous() for k, v in state.items()}, bad / "adapter_model.safetensors")
    backend.load_saved({"bad": bad})
    with pytest.raises(RuntimeError, match=r"would apply \d+ of the \d+ modules of adapter 'bad@v\d+'.*"
                                           r"ForConditionalGeneration") as refused:
        backend.sample("bad", prompts[:1], GREEDY, seed=0)
    # Qwen3.5 in the trainer's text-only names: none applied (what vLLM 0.32 served as the bare
    # base before adapters took the checkpoint's names); Gemma-4: all but the misnamed layer's 7
    expected = {"qwen3.5-2b": "would apply 0 of the 31 ", "gemma-4-e4b": "would apply 17 of the 24 "}[model]
    assert expected in str(refused.value), str(refused.value)


def test_the_torchvision_shim_stayed_unused(family):
    """Last for each family: no engine used the stand-in for torchvision's functions."""
    log = os.environ.get("AGON_SHIM_LOG")
    assert log, "tests/test_vllm_cpu.py sets AGON_SHIM_LOG for this session"
    assert not Path(log).exists() or not Path(log).read_text(), Path(log).read_text()
    try:
        import torchvision  # noqa: F401
    except ImportError:
        pass
    else:
        return  # a real torchvision: the shim stands aside
    import importlib

    import sitecustomize

    # imported as vLLM's qwen3_vl.py imports it (by module path, not transformers' lazy attribute)
    qwen_images = importlib.import_module("transformers.models.qwen2_vl.image_processing_qwen2_vl")

    assert isinstance(qwen_images.tvF, sitecustomize.UnusedTorchvision)
    height, width = qwen_images.smart_resize(64, 64)  # transformers' own code, no torchvision in it
    assert isinstance(height, int) and isinstance(width, int)
    with pytest.raises(RuntimeError, match="test-only torchvision shim"):
        qwen_images.tvF.resize
    Path(log).unlink()  # the deliberate use above is not an engine's
