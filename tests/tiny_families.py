"""Tiny random models of the paper's two other families, built from transformers' real
configuration and model classes as the hub ships them (the vision-language
`ForConditionalGeneration`): `qwen35` and `gemma4` save one in bf16 with the toy tokenizer (the
adapter-naming tests); scripts/make_standin_model.py fits `MODELS`' at the Qwen3 stand-in's
width into config/paper_cpu_vllm.yaml's stand-ins of these families.

The dims are the smallest vLLM 0.32's CPU kernels accept: its attention needs head_dim >= 32
(and one of its listed sizes), and Qwen3.5's Gated DeltaNet kernels need bf16 and a
linear-attention head dim of 128 (32 is rejected).
  * Qwen3.5: 3 Gated DeltaNet layers and 1 full-attention layer, a vision tower.
  * Gemma-4: sliding and full attention (head dims 32 and 64), per-layer inputs, the last two
    layers sharing the KV of earlier ones (`num_kv_shared_layers`, as gemma-4-E4B's 18 of 42),
    `attention_k_eq_v` off as in gemma-4-E4B (transformers' convert_gemma4_weights.py), vision
    and audio towers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "models" / "toy"

# every Linear of the language model, as config/paper.yaml trains qwen3.5-2b; Gemma-4 the seven
QWEN35_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
                  "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj"]
# Weights 10x transformers' default spread: a random model's logits are otherwise nearly flat,
# and a LoRA's effect on them small (scripts/make_standin_model.py fits these classes at the
# default spread instead).
INIT = 0.2
GEMMA4_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _save(model, path: Path) -> Path:
    import torch

    model.to(torch.bfloat16).save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (TOY / name).exists():
            shutil.copy(TOY / name, path / name)
    return path


def qwen35_model(vocab_size: int = 512, eos_token_id: int = 1, **text_dims):
    """A random Qwen3_5ForConditionalGeneration; the image and video marker ids are the last four;
    `text_dims` over the language model's dims."""
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    text = dict(vocab_size=vocab_size, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                num_attention_heads=4, num_key_value_heads=2, head_dim=32, linear_num_key_heads=1,
                linear_num_value_heads=1, linear_key_head_dim=128, linear_value_head_dim=128,
                linear_conv_kernel_dim=4, max_position_embeddings=512, eos_token_id=eos_token_id,
                initializer_range=INIT,
                rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.25,
                                     mrope_section=[2, 1, 1], mrope_interleaved=True))
    text.update(text_dims)
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=4, spatial_merge_size=2,
                  temporal_patch_size=2, out_hidden_size=text["hidden_size"], num_position_embeddings=16)
    config = Qwen3_5Config(text_config=text, vision_config=vision, image_token_id=vocab_size - 4,
                           video_token_id=vocab_size - 3, vision_start_token_id=vocab_size - 2,
                           vision_end_token_id=vocab_size - 1)
    assert config.text_config.layer_types == ["linear_attention"] * 3 + ["full_attention"]
    return Qwen3_5ForConditionalGeneration(config)


def gemma4_model(vocab_size: int = 512, eos_token_id: int = 1, **text_dims):
    """A random Gemma4ForConditionalGeneration; `text_dims` over the language model's dims."""
    from transformers import Gemma4Config, Gemma4ForConditionalGeneration

    text = {"vocab_size": vocab_size, "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32, "global_head_dim": 64,
            "hidden_size_per_layer_input": 16, "vocab_size_per_layer_input": vocab_size, "num_kv_shared_layers": 2,
            "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
            "sliding_window": 64, "max_position_embeddings": 512, "attention_k_eq_v": False,
            "final_logit_softcapping": 30.0, "eos_token_id": eos_token_id,
            "initializer_range": INIT,
            # untied (gemma-4-E4B ties them): a random tied Gemma greedily repeats its input token, which no
            # LoRA of this size moves, so an applied adapter could not be told from the bare base
            "tie_word_embeddings": False, **text_dims}
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "num_key_value_heads": 2, "head_dim": 16, "global_head_dim": 16}
    audio = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2}
    config = Gemma4Config(text_config=text, vision_config=vision, audio_config=audio, tie_word_embeddings=False)
    return Gemma4ForConditionalGeneration(config)


def qwen35(path: Path) -> Path:
    import torch

    torch.manual_seed(0)
    return _save(qwen35_model(), path)


def gemma4(path: Path) -> Path:
    import torch

    torch.manual_seed(0)
    return _save(gemma4_model(), path)


MODELS = {"qwen3.5": qwen35_model, "gemma-4": gemma4_model}
FAMILIES = {"qwen3.5": (qwen35, QWEN35_TARGETS), "gemma-4": (gemma4, GEMMA4_TARGETS)}
