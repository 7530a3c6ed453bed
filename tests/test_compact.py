"""The compact sampler is the same model as transformers' Qwen3 and samples as `generate` does."""

import pytest
import torch
from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper

from agon import compact
from agon.generate import CompactBackend, TransformersBackend, make_backend
from agon.models import LoraPolicies
from agon.toy import sft
from agon.toy.tokenizer import build_tokenizer

ARCH = {"hidden_size": 32, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2,
        "intermediate_size": 64, "max_positions": 16}   # max_positions < prompt + completion on purpose
LORA = {"rank": 4, "alpha": 8, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj",
                                                  "gate_proj", "up_proj", "down_proj"]}
PROMPTS = ["Q: 3*4+5*6\n", "Q: 12+7\n", "Q: 1\n", "Q: 98*76+54*32-10\n"]  # different lengths: left padding
GREEDY = {"temperature": 0, "max_new_tokens": 24}


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    torch.manual_seed(0)
    base = sft.build_model(ARCH, tok).eval()
    with torch.no_grad():  # peaked distributions: greedy choices without near-ties
        for p in base.parameters():
            if p.dim() > 1:
                p.normal_(0, 0.4)
    return base


def _prompt_ids(tok, prompts=PROMPTS):
    return tok(prompts, add_special_tokens=False)["input_ids"]


def test_prefill_logits_match_transformers(model, tok):
    enc = tok(PROMPTS, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        positions = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        expected = model(**enc, position_ids=positions).logits[:, -1]
    fused = compact.CompactQwen3.from_model(model)
    B, P = enc["input_ids"].shape
    fused._rope_table(P)
    cache = [(torch.zeros(B, 2, 8, P), torch.zeros(B, 2, P, 8)) for _ in range(2)]
    allowed = torch.ones(P, P, dtype=torch.bool).tril()[None] & enc["attention_mask"].bool()[:, None, :]
    bias = torch.zeros(B, 1, P, P).masked_fill(~allowed[:, None], torch.finfo(torch.float32).min)
    got = fused.forward(enc["input_ids"], positions, cache, 0, bias)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_greedy_decoding_matches_generate_token_for_token(model, tok):
    """fp32, left-padded prompts of different lengths, past max_position_embeddings."""
    reference = TransformersBackend(model, tok).sample(None, PROMPTS, GREEDY, seed=0)
    fast = CompactBackend.over_model(model, tok).sample(None, PROMPTS, GREEDY, seed=0)
    assert [c.completion_ids for c in fast] == [c.completion_ids for c in reference]
    assert [c.prompt_ids for c in fast] == [c.prompt_ids for c in reference]
    assert [c.text for c in fast] == [c.text for c in reference]


def test_stopped_rows_leave_the_batch_without_changing_the_others(model):
    """Rows that stop are dropped from the batch (and the KV cache); the rest continue exactly."""
    fused = compact.CompactQwen3.from_model(model)
    ids = [[5, 6, 7], [8, 9], [10, 11, 12, 13], [14]]
    free = compact.sample_ids(fused, ids, GREEDY, stop_ids=(-1,))  # never stops
    assert all(len(row) == GREEDY["max_new_tokens"] for row in free)
    stop = free[0][3]  # make a token row 0 emits its eos
    stopped = compact.sample_ids(fused, ids, GREEDY, stop_ids=(stop,))
    for full, cut in zip(free, stopped):
        expected = full[: full.index(stop) + 1] if stop in full else full
        assert cut == expected
    assert len(stopped[0]) <= 4


def test_top_p_filter_matches_transformers_warpers():
    torch.manual_seed(1)
    logits = torch.randn(64, 50) * 3
    sampling = {"temperature": 0.6, "top_p": 0.9}
    expected = TopPLogitsWarper(0.9)(None, TemperatureLogitsWarper(0.6)(None, logits.clone()))
    torch.manual_seed(2)
    drawn = compact._next_tokens(logits, sampling)
    assert torch.isfinite(expected.gather(1, drawn[:, None])).all()  # never a filtered token
    torch.testing.assert_close(compact._filtered_scores(logits, sampling), expected)


@pytest.mark.parametrize("top_p", [1.0, 0.9, 0.5])
def test_the_draw_has_the_filtered_distribution(top_p):
    """`_next_tokens`' frequencies are the probabilities of `_filtered_scores` within four standard
    errors over 40,000 draws, and a token outside the nucleus is never drawn."""
    torch.manual_seed(5)
    logits = torch.randn(1, 12) * 2
    sampling = {"temperature": 0.6, "top_p": top_p}
    want = compact._filtered_scores(logits, sampling).softmax(-1)[0]
    draws = 40_000
    drawn = compact._next_tokens(logits.expand(draws, -1), sampling)
    freq = torch.bincount(drawn, minlength=12).double() / draws
    assert (freq[want == 0] == 0).all()
    se = (want.double() * (1 - want.double()) / draws).sqrt()
    assert ((freq - want.double()).abs() <= 4 * se + 1e-12).all(), (freq, want)


def _sampled(model, prompt_ids, sampling, seed):
    torch.manual_seed(seed)
    logprobs: list = []
    return compact.sample_ids(model, prompt_ids, sampling, stop_ids=(3,), logprobs=logprobs), logprobs


def test_prefilling_a_repeated_prompt_once_keeps_every_token(model, monkeypatch):
    """A GRPO group's 16 rows share one prompt: it is prefilled once and its cache copied. In
    fp32 the sampled tokens are those of prefilling every row, and their log-probabilities equal
    to float rounding (a matrix product over 3 rows or 18 may sum in another order)."""
    fused = compact.CompactQwen3.from_model(model)
    ids = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
    rows = [p for p in ids for _ in range(6)]
    sampling = {"temperature": 1.0, "top_p": 0.95, "max_new_tokens": 12}
    prefills = []
    forward = fused.forward
    monkeypatch.setattr(fused, "forward", lambda ids_, *a: prefills.append(ids_.shape) or forward(ids_, *a))
    shared = _sampled(fused, rows, sampling, seed=7)
    assert prefills[0] == (3, 4)  # three distinct prompts, left-padded to 4
    monkeypatch.setattr(compact, "_distinct_rows", lambda p: (p, torch.arange(len(p))))  # every row its own
    tokens, logprobs = _sampled(fused, rows, sampling, seed=7)
    assert tokens == shared[0]
    flat = lambda rows_: torch.tensor([x for row in rows_ for x in row])  # noqa: E731
    torch.testing.assert_close(flat(logprobs), flat(shared[1]), rtol=0, atol=1e-5)


def test_compacting_the_batch_later_keeps_every_token(model, monkeypatch):
    """Stopped rows stay in the batch until they are COMPACT_WHEN_STOPPED of it; no row draws
    for them, so every row's tokens are those of dropping each row as it stops (fp32)."""
    fused = compact.CompactQwen3.from_model(model)
    rows = [[5 + i % 7, 6, 7 + i % 3] for i in range(24)]
    sampling = {"temperature": 1.5, "max_new_tokens": 16}
    lazy = _sampled(fused, rows, sampling, seed=11)
    assert 0 < sum(len(r) < 16 for r in lazy[0]) < 24  # some rows stop early, some run on
    monkeypatch.setattr(compact, "COMPACT_WHEN_STOPPED", 1e-9)  # compact at every stop
    assert _sampled(fused, rows, sampling, seed=11) == lazy


def test_sampling_is_seeded_and_respects_the_cap(model, tok):
    backend = CompactBackend.over_model(model, tok)
    sampling = {"temperature": 1.0, "top_p": 0.95, "max_new_tokens": 7}
    a = backend.sample(None, PROMPTS * 3, sampling, seed=3)
    b = backend.sample(None, PROMPTS * 3, sampling, seed=3)
    c = backend.sample(None, PROMPTS * 3, sampling, seed=4)
    assert [x.completion_ids for x in a] == [x.completion_ids for x in b]
    assert [x.completion_ids for x in a] != [x.completion_ids for x in c]
    assert all(x.length <= 7 and x.truncated == (tok.eos_token_id not in x.completion_ids) for x in a)


def test_adapters_are_merged_and_resynced(model, tok):
    pol = LoraPolicies(model, ("A", "B"), LORA, {"A": 0.0}, seed=0)
    with torch.no_grad():
        for name, p in pol.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.3)
    slow, fast = TransformersBackend(pol.model, tok), make_backend(
        {"generation": {"backend": "compact"}}, pol.model, tok, "fp32")
    assert isinstance(fast, CompactBackend)

    def same(adapter):
        return ([c.completion_ids for c in fast.sample(adapter, PROMPTS, GREEDY, seed=0)]
                == [c.completion_ids for c in slow.sample(adapter, PROMPTS, GREEDY, seed=0)])

    assert same("A") and same("B") and same(None)
    before = [c.completion_ids for c in fast.sample("A", PROMPTS, GREEDY, seed=0)]
    with torch.no_grad():
        for p in pol.parameters("A"):
            p.add_(0.3)
    fast.sync(pol)
    slow.sync(pol)
    assert same("A")
    assert [c.completion_ids for c in fast.sample("A", PROMPTS, GREEDY, seed=0)] != before
    pol.model.unload()


def test_other_architectures_are_refused_by_name(tok):
    from transformers import LlamaConfig, LlamaForCausalLM

    llama = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2))
    with pytest.raises(ValueError, match="generation.backend: compact cannot sample this model: model_type 'llama'"):
        make_backend({"generation": {"backend": "compact"}}, llama, tok, "fp32")


# ------------------------------------------------ evaluation: base and adapters read from their files


@pytest.fixture(scope="module")
def saved(model, tok, tmp_path_factory):
    """The model saved as a base directory, and two trained-looking adapters saved as `agon train` saves them."""
    root = tmp_path_factory.mktemp("saved")
    model.save_pretrained(root / "base")
    tok.save_pretrained(root / "base")
    pol = LoraPolicies(model, ("A", "B"), LORA, {"A": 0.0}, seed=0)
    with torch.no_grad():
        for name, p in pol.model.named_parameters():
            if "lora_" in name:
                p.normal_(0, 0.3)
    for name in ("A", "B"):
        pol.save(name, root / "adapters" / name)
    yield root, pol
    pol.model.unload()


def _weights_of(fused):
    return [fused.embed, fused.norm, fused.lm_head] + [t for layer in fused.layers for t in vars(layer).values()]


def _fused_weights(backend, adapter):
    backend.sample(adapter, PROMPTS[:1], GREEDY, seed=0)
    return _weights_of(backend._fused[adapter])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_saved_files_give_exactly_the_weights_of_the_peft_path(saved, tok, dtype):
    """Bit for bit: an evaluation job's samples must not depend on which path loaded the adapters."""
    root, pol = saved
    live = CompactBackend.over_model(pol.model, tok, dtype)
    dirs = {name: str(root / "adapters" / name) for name in ("A", "B")}
    from_files = CompactBackend.from_saved(str(root / "base"), dirs, tok, dtype)
    for adapter in ("A", "B", None):
        for a, b in zip(_fused_weights(live, adapter), _fused_weights(from_files, adapter), strict=True):
            assert a.dtype == b.dtype == dtype
            assert torch.equal(a, b)
    assert not torch.equal(from_files._fused["A"].layers[0].qkv, from_files._fused[None].layers[0].qkv)
    with pytest.raises(ValueError, match="unknown adapter 'C'"):
        from_files.sample("C", PROMPTS, GREEDY, seed=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_compact_loss_pass_computes_with_the_weights_the_sampler_samples(saved, tok, dtype):
    """train.loss_forward: compact: for each adapter (and the bare base) the loss's model is,
    weight for weight, the one the compact sampler fuses, and only an adapter's carry a gradient."""
    _, pol = saved
    live = CompactBackend.over_model(pol.model, tok, dtype)
    config = pol.model.get_base_model().config.to_dict()
    for adapter in ("A", "B", None):
        loss_model = compact.CompactQwen3(config, pol.merged_weights(adapter, dtype))
        for a, b in zip(_weights_of(loss_model), _fused_weights(live, adapter), strict=True):
            assert a.dtype == b.dtype == dtype
            assert torch.equal(a.detach(), b)
        assert loss_model.layers[0].qkv.requires_grad == (adapter is not None)
        assert not loss_model.embed.requires_grad
    with pytest.raises(ValueError, match="unknown adapter 'C'"):
        pol.merged_weights("C", dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_loss_pass_scores_the_tokens_the_sampler_chose(saved, tok, dtype):
    """Greedy completions of left-padded prompts of different lengths, then the loss pass over
    prompt + completion, one sequence at once: its argmax at every completion position is the
    token the sampler chose step by step from its KV cache (fp32: its logits too, to rounding)."""
    from agon.rl.logprobs import sequence_logps

    _, pol = saved
    backend = CompactBackend.over_model(pol.model, tok, dtype)
    completions = backend.sample("A", PROMPTS, GREEDY, seed=0)
    loss_model = compact.CompactQwen3(pol.model.get_base_model().config.to_dict(), pol.merged_weights("A", dtype))
    rows = [c.prompt_ids + c.completion_ids for c in completions]
    width, T = max(map(len, rows)), max(len(c.completion_ids) for c in completions)
    assert T >= 8 and len({len(c.completion_ids) for c in completions}) > 1, [c.completion_ids for c in completions]
    ids = torch.full((len(rows), width), tok.pad_token_id)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r):], attention[i, width - len(r):] = torch.tensor(r), 1
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    logits = loss_model.completion_logits(ids, attention, positions, last=T + 1)[:, :-1]
    for i, c in enumerate(completions):
        n = len(c.completion_ids)
        assert logits[i, T - n:].argmax(-1).tolist() == c.completion_ids
    logp, mask = sequence_logps(loss_model, completions, 1.0, tok.pad_token_id)
    assert logp.requires_grad and mask.sum() == sum(len(c.completion_ids) for c in completions)
    if dtype == torch.float32:  # the first completion token's logits are the sampler's prefill logits
        B, P = len(PROMPTS), max(len(c.prompt_ids) for c in completions)
        prompt_ids = torch.full((B, P), tok.pad_token_id)
        prompt_mask = torch.zeros((B, P), dtype=torch.long)
        for i, c in enumerate(completions):
            prompt_ids[i, P - len(c.prompt_ids):], prompt_mask[i, P - len(c.prompt_ids):] = torch.tensor(c.prompt_ids), 1
        prompt_positions = (prompt_mask.cumsum(-1) - 1).clamp(min=0)
        prefill = loss_model.completion_logits(prompt_ids, prompt_mask, prompt_positions, last=1)[:, 0]
        for i, c in enumerate(completions):
            torch.testing.assert_close(prefill[i].float(), logits[i, T - len(c.completion_ids)].float(),
                                       atol=1e-4, rtol=1e-4)


def test_lora_delta_is_peft_s_merge(saved):
    from agon.models import lora_layers
    from agon.models import lora_delta

    _, pol = saved
    for layer in lora_layers(pol.model).values():
        for name in ("A", "B"):
            got = lora_delta(layer.lora_A[name].weight, layer.lora_B[name].weight, layer.scaling[name])
            assert torch.equal(got, layer.get_delta_weight(name))


def test_saved_adapters_beyond_plain_lora_are_refused_by_name(saved, tmp_path):
    import json
    import shutil

    from safetensors.torch import load_file, save_file

    from agon.models import merge_saved_adapter, read_weights

    root, _ = saved
    base = read_weights(root / "base")
    adapter = tmp_path / "A"
    shutil.copytree(root / "adapters" / "A", adapter)
    config = json.loads((adapter / "adapter_config.json").read_text())
    (adapter / "adapter_config.json").write_text(json.dumps({**config, "use_dora": True}))
    with pytest.raises(ValueError, match="use_dora = True is not supported"):
        merge_saved_adapter(base, adapter)
    (adapter / "adapter_config.json").write_text(json.dumps(config))
    tensors = load_file(adapter / "adapter_model.safetensors")
    save_file({**tensors, "base_model.model.lm_head.modules_to_save.weight": base["model.embed_tokens.weight"]},
              adapter / "adapter_model.safetensors")
    with pytest.raises(ValueError, match="tensors other than Linear LoRA A/B pairs"):
        merge_saved_adapter(base, adapter)
    save_file({k: v for k, v in tensors.items() if not k.endswith("q_proj.lora_B.weight")},
              adapter / "adapter_model.safetensors")
    with pytest.raises(ValueError, match="do not pair up"):
        merge_saved_adapter(base, adapter)
    (adapter / "adapter_model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="no adapter_model.safetensors"):
        merge_saved_adapter(base, adapter)


def test_a_compact_evaluation_loads_neither_peft_nor_transformers_models(saved):
    """The saved-file path exists to skip those imports (~3 s per job): keep it that way."""
    import json
    import subprocess
    import sys

    root, _ = saved
    spec = {"base_path": str(root / "base"), "prompt_style": "toy", "precision": "fp32",
            "generation": {"backend": "compact"}, "sampling": {"temperature": 0, "max_new_tokens": 4}}
    code = f"""
import json, sys
from agon.evaluate import protocols
from agon.jobs.job import open_backend
backend, fmt = open_backend(json.loads({json.dumps(json.dumps(spec))}),
                            {{"A": {str(root / "adapters" / "A")!r}}}, "cpu", "fp32")
sample = protocols.make_sampler(backend, {{"temperature": 0, "max_new_tokens": 4}}, 0)
loaded = [m for m in ("peft", "transformers.modeling_utils", "transformers.models.auto.modeling_auto")
          if m in sys.modules]
print(json.dumps(loaded))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
