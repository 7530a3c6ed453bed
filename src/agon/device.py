"""Where a train, evaluate or curve job computes: config `device: auto | cpu | cuda`.

  auto  CUDA when torch sees a GPU, else the CPU; except that the vLLM backend
        always means CUDA and the compact sampler (a CPU decode loop) always the CPU;
  cpu   the model, the loss and generation on CPU threads;
  cuda  the model, its inputs and autocast on the job's GPU (cuda:0, the first the
        job may see: Slurm sets CUDA_VISIBLE_DEVICES). The job checks the GPU, its
        driver and torch's CUDA build before any model loads (agon.gpu_check).

On one GPU, a vLLM engine and the trainer share the memory in an explicit split:
`generation.gpu_memory_utilization` is the engine's share (vLLM reserves it at start
for its weights and KV cache) and `train.gpu_memory_fraction` caps the trainer's
process (torch.cuda.set_per_process_memory_fraction): a loss that outgrows its share
fails in the trainer, with torch's out-of-memory error, instead of starving the
engine. `check_config` refuses a split that sums above MAX_GPU_SHARE, unless the
engine sleeps during the loss (`generation.sleep_during_loss`).
"""

from __future__ import annotations

CHOICES = ("auto", "cpu", "cuda")
GPU_ONLY_BACKENDS = ("vllm",)
CPU_ONLY_BACKENDS = ("compact",)
# What the two shares may sum to: the CUDA context, NCCL and allocator slack take the rest.
MAX_GPU_SHARE = 0.95


def backend_of(spec: dict) -> str:
    return (spec.get("generation") or {}).get("backend", "transformers")


def resolve(spec: dict) -> str:
    """'cpu' or 'cuda' for a job's spec (its `device`, default auto, and its backend)."""
    name = spec.get("device", "auto")
    if name not in CHOICES:
        raise ValueError(f"device: {name!r} is not one of {', '.join(CHOICES)}")
    backend = backend_of(spec)
    if name == "auto":
        if backend in GPU_ONLY_BACKENDS:
            return "cuda"
        if backend in CPU_ONLY_BACKENDS:
            return "cpu"
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def config_problems(config: dict) -> list[str]:
    """What a config's device, backend and memory split cannot do together."""
    name = config.get("device", "auto")
    generation = config.get("generation") or {}
    backend = generation.get("backend", "transformers")
    out = []
    if name == "cpu" and backend in GPU_ONLY_BACKENDS:
        out.append(f"device: cpu, but generation.backend {backend} runs on a GPU only (set device: cuda or auto, "
                   "or generation.backend: transformers)")
    if name == "cuda" and backend in CPU_ONLY_BACKENDS:
        out.append(f"device: cuda, but generation.backend {backend} samples on the CPU only "
                   "(use generation.backend: transformers on a GPU)")
    engine = generation.get("gpu_memory_utilization")
    trainer = (config.get("train") or {}).get("gpu_memory_fraction")
    if (backend == "vllm" and engine is not None and trainer is not None and not generation.get("sleep_during_loss")
            and engine + trainer > MAX_GPU_SHARE + 1e-9):
        out.append(f"generation.gpu_memory_utilization {engine} + train.gpu_memory_fraction {trainer} = "
                   f"{engine + trainer:g} of the GPU: more than {MAX_GPU_SHARE} (the engine and the trainer share "
                   "one GPU); lower one, or set generation.sleep_during_loss: true")
    return out


def limit_trainer_memory(fraction: float | None, device: str) -> None:
    """Cap this process's CUDA allocations at `fraction` of the GPU (None: no cap)."""
    if fraction is None or device != "cuda":
        return
    import torch

    torch.cuda.set_per_process_memory_fraction(float(fraction), torch.device("cuda", 0))
