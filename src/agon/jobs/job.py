"""A train, evaluate or curve job's set-up, done once from its spec.

`Job(spec, what)` sets torch's threads, resolves the device (a CUDA job checks its GPU,
driver, torch build and memory before any model loads, and stops saying what to fix) and
the precision, once each. Everything a job builds goes through it: the base and tokenizer,
the generation backend, the grader, and the record every job writes beside its outputs
(precision, device, generation engine, provenance). Scripts and benchmarks that build a
job's pieces use it too, so a change to how a job loads a model is made here.
"""

from __future__ import annotations

from .. import io


class Job:
    def __init__(self, spec: dict, what: str, log=print):
        import torch

        from .. import precision

        self.spec, self.what, self.log = spec, what, log
        if spec.get("threads"):
            torch.set_num_threads(spec["threads"])
        self.device, self.device_record = _device(spec, what, log)
        self.precision = precision.resolve(spec.get("precision", "fp32"), self.device)
        precision.limit_cpu_kernel_cache(self.precision, self.device)

    def load(self, weights: bool = True):
        """(base, tokenizer, prompt format) on the job's device (base None without `weights`)."""
        from ..models import load_for_job

        return load_for_job(self.spec, weights=weights, device=self.device)

    def backend(self, model, tokenizer, adapter_dirs: dict[str, str] | None = None):
        """The generation backend the spec asks for, in the job's precision, on its device."""
        from ..generate import make_backend

        return make_backend(self.spec, model, tokenizer, self.precision, adapter_dirs=adapter_dirs,
                            device=self.device)

    def open_backend(self, adapter_dirs: dict[str, str]):
        """(backend, fmt) over the base with the saved `adapter_dirs` (see `open_backend`)."""
        return open_backend(self.spec, adapter_dirs, self.device, self.precision)

    def grader(self):
        from ..verify.grading import Grader

        return Grader.for_spec(self.spec)

    def provenance(self) -> dict:
        return io.provenance(self.spec, self.spec.get("seed"), self.device)

    def record(self) -> dict:
        """What every job writes beside its outputs: precision, device, generation engine, provenance."""
        from ..generate import generation_record

        return {"precision": self.precision, "device": self.device_record,
                "generation": generation_record(self.spec), "provenance": self.provenance()}


def open_backend(spec: dict, adapter_dirs: dict[str, str], device: str, resolved_precision: str):
    """(backend, fmt) over a job's base with the saved `adapter_dirs` loaded, on `device`, in
    `resolved_precision` and the spec's generation backend. `backend.load_saved(other_dirs)` then
    serves other saved adapters on the same base and engine (the curve job's snapshots)."""
    from ..generate import make_backend
    from ..models import load_adapters, load_for_job

    # vLLM's engine and the compact sampler read the base and the adapter directories
    # themselves: no transformers model in this process.
    from_files = (spec.get("generation") or {}).get("backend") in ("vllm", "compact")
    base, tokenizer, fmt = load_for_job(spec, weights=not from_files, device=device)
    model = load_adapters(base, adapter_dirs) if adapter_dirs and not from_files else base
    return make_backend(spec, model, tokenizer, resolved_precision, adapter_dirs=adapter_dirs, device=device), fmt


def _device(spec: dict, what: str, log) -> tuple[str, dict]:
    """(device, its record) of the job (agon.device: config `device`)."""
    from .. import device as devices

    device = devices.resolve(spec)
    if device == "cpu":
        return device, {"type": "cpu"}
    import torch

    from ..gpu_check import require_gpu
    from ..resources import gpu_memory_problem

    gpu = require_gpu(what + devices.why_cuda(spec))
    log(f"GPU: {gpu['name']} (driver {gpu['driver']}, torch {gpu['torch']} for CUDA {gpu['torch_cuda']})")
    total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    problem = gpu_memory_problem(spec.get("min_gpu_gib"), total, gpu["name"])
    if problem:
        raise SystemExit(f"agon {what}: {problem}")
    return device, {"type": "cuda", **gpu, "memory_gib": round(total / 2**30, 1)}
