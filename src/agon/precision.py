"""Numeric precision of a job: `precision: auto | bf16 | fp32` in the config.

bf16 roughly halves the cost of the toy model's matrix products on CPUs with
native bf16 (AVX512-BF16 / AMX) and is the usual choice on GPUs; elsewhere it
is emulated and slower, so `auto` picks bf16 only where the hardware has it.
What bf16 touches (fp32 everywhere else, master weights and optimizer included):
  * generation: each adapter's merged sampling copy is held in bf16;
  * the toy base's supervised steps and the RL loss forward run under autocast,
    with log-probabilities computed in fp32 from the logits; with
    `train.loss_forward: compact` the loss forward instead computes in bf16 with the
    sampler's own merged bf16 weights (RMSNorm and softmax in fp32, as the sampler).
The resolved precision is recorded in every training and evaluation summary.
"""

from __future__ import annotations

import contextlib

import torch

CHOICES = ("auto", "bf16", "fp32")


def hardware_bf16(device: str = "cpu") -> bool:
    """Native bf16 on the job's device: compute capability >= 8.0 on CUDA, AVX512-BF16 / AMX on an
    x86 CPU, what oneDNN reports elsewhere (an Arm CPU's BF16 extension)."""
    if device == "cuda":
        return torch.cuda.is_bf16_supported()
    import platform

    if platform.machine().lower() in ("x86_64", "amd64", "i386", "i686"):
        # Not oneDNN's `_is_mkldnn_bf16_supported`: on x86 it is true wherever AVX512 is (torch 2.13),
        # where oneDNN emulates bf16 with fp32 instructions. On a Xeon with AVX512 but neither
        # AVX512-BF16 nor AMX, the toy model's bf16 matrix products ran 2.4-3.3x slower than fp32 ones
        # and a GRPO step 1.8x slower (benchmarks/precision_speed.py; docs/measurements.md,
        # "bf16 without the hardware").
        return _cpu_flag("_is_avx512_bf16_supported") or _cpu_flag("_is_amx_tile_supported")
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def _cpu_flag(name: str) -> bool:
    """torch.cpu's CPUID probe `name` (torch >= 2.3); False where this torch lacks it."""
    probe = getattr(torch.cpu, name, None)
    return bool(probe()) if probe is not None else False


def resolve(name: str, device: str = "cpu") -> str:
    """'bf16' or 'fp32' for a configured `precision` on the job's device ('cpu' | 'cuda')."""
    if name not in CHOICES:
        raise ValueError(f"precision: {name!r} is not one of {CHOICES}")
    if name == "auto":
        return "bf16" if hardware_bf16(device) else "fp32"
    if name == "bf16" and device == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError(f"precision: bf16, but this GPU ({torch.cuda.get_device_name(0)}) has no bf16 "
                         "(compute capability below 8.0): use a newer GPU (resources.<rule>.gpu_model) "
                         "or precision: auto")
    return name


# oneDNN keeps a compiled kernel, with its scratch memory, for every shape of bf16 matrix
# product it meets: 1,024 of them by default. The sampler's batch shrinks row by row and the
# loss pass's micro-batches vary in length, so a bf16 CPU job filled it: a GRPO job peaked at
# 1.17 GB RSS, an Agon job (twice the shapes) at 1.33 GB. 64 kernels kept: 0.95 and 1.02 GB,
# and a step no slower (benchmarks/train_speed.py; docs/measurements.md, "Where the time goes").
ONEDNN_KERNELS_KEPT = "64"


def limit_cpu_kernel_cache(resolved: str, device: str) -> None:
    """For a bf16 job on a CPU: oneDNN's kernel cache at ONEDNN_KERNELS_KEPT entries, unless the
    environment already sets ONEDNN_PRIMITIVE_CACHE_CAPACITY. oneDNN reads it when it first
    builds a kernel, so this must run before the job's first bf16 matrix product."""
    import os

    if resolved == "bf16" and device == "cpu":
        os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", ONEDNN_KERNELS_KEPT)


def dtype(resolved: str) -> torch.dtype:
    return {"bf16": torch.bfloat16, "fp32": torch.float32}[resolved]


def autocast(resolved: str, device: str = "cpu"):
    """Mixed-precision context for forward passes (a no-op for fp32)."""
    if resolved == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device, dtype=torch.bfloat16)
