"""Before a GPU job loads a model: can this torch use an NVIDIA GPU here?

`require_gpu(what)` probes the machine (`probe_system()`), judges what it found
(`diagnose(facts)`, pure, so the tests run on a CPU machine with made-up facts)
and either returns a small description of the device for provenance or raises
`GpuUnavailable`, whose message says what was found, what is needed and what to
do. The usual failure on clusters is a driver older than the torch build:
PyPI's torch 2.14.0 (the version vllm==0.33.0 pins; requirements/gpu.txt,
envs/gpu.yaml) is a CUDA 13.0 build, which needs an NVIDIA driver of the R580
branch or newer; torch itself only reports "no GPU" (torch.cuda.is_available()
is False, with a warning) and the job would die later, at model load.

Driver minimums (Linux x86_64): CUDA minor-version compatibility lets a build of
CUDA X.y run on any driver of the family's minimum branch, >= 580 for CUDA 13.x,
>= 525 for CUDA 12.x, >= 450 for CUDA 11.x (NVIDIA, "CUDA Compatibility: Minor
Version Compatibility", docs.nvidia.com/deploy/cuda-compatibility); the CUDA
13.0 GA toolkit's own driver is 580.65.06 and CUDA 12.0 GA's is 525.60.13
(CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver Versions").

The driver's CUDA version comes from libcuda's cuDriverGetVersion (via ctypes;
it needs no cuInit and works whether torch is a CUDA build or not), else from
NVML (pynvml, the nvidia-ml-py package vLLM installs); the driver version string
from NVML, else `nvidia-smi --query-gpu=driver_version --format=csv,noheader`.
torch has no Python binding for the driver version: torch 2.13.0's own stubs
(torch/_C/__init__.pyi, read in the installed 2.13.0+cpu wheel) list
`_cuda_getCompiledVersion` but no `_cuda_getDriverVersion`, and
torch/csrc/cuda/Module.cpp's method table registers none (its Module.h still
declares THCPModule_getDriverVersion, unregistered); so it is not used here.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import warnings
from dataclasses import dataclass, field
from typing import Callable

# CUDA major version of the torch build -> (the driver branch its family needs
# under minor-version compatibility, that major's x.0 GA toolkit driver).
MIN_DRIVER = {
    13: (580, "580.65.06"),
    12: (525, "525.60.13"),
    11: (450, "450.80.02"),
}
VLLM_NOTE = ("vLLM 0.33.0 (requirements/gpu.txt) is built against PyPI's torch 2.14.0, a CUDA 13.0 "
             "build, so a torch for an older CUDA also needs a vLLM built for that CUDA")
INSTALL = "pip install -r requirements/gpu.txt && pip install --no-deps -e ."


class GpuUnavailable(RuntimeError):
    """No usable CUDA GPU for a GPU job. `reason` is one of REASONS; `facts` is what was probed."""

    REASONS = ("not_cuda_build", "driver_too_old", "no_driver", "no_gpu")

    def __init__(self, message: str, reason: str, facts: "GpuFacts"):
        super().__init__(message)
        self.reason = reason
        self.facts = facts


@dataclass
class GpuFacts:
    """What a probe found. Versions as reported: driver_cuda as CUDA's integer (13000 = 13.0)."""

    torch_version: str
    torch_cuda: str | None                 # torch.version.cuda, e.g. "13.0"; None on CPU/ROCm builds
    torch_hip: str | None = None           # torch.version.hip (a ROCm build)
    cuda_available: bool = False           # torch.cuda.is_available()
    device_count: int = 0
    devices: list[dict] = field(default_factory=list)  # [{"name": ..., "capability": "9.0"}]
    driver_version: str | None = None      # e.g. "580.95.05"
    driver_cuda: int | None = None         # e.g. 13000
    cuda_visible_devices: str | None = None  # the environment variable; None when unset
    torch_warning: str | None = None       # what torch warned while checking availability


def cuda_str(version: int | None) -> str | None:
    """CUDA's integer version (12080) as "12.8"."""
    if not version:
        return None
    return f"{version // 1000}.{(version % 1000) // 10}"


def _major_minor(text: str) -> tuple[int, int]:
    parts = (text.split(".") + ["0"])[:2]
    return int(parts[0]), int(parts[1])


def _driver_branch(driver_version: str | None) -> int | None:
    try:
        return int(driver_version.split(".")[0]) if driver_version else None
    except ValueError:
        return None


# ---- probes (each returns None when it cannot tell) ------------------------------------

def libcuda_driver_cuda() -> int | None:
    """cuDriverGetVersion from the driver's libcuda.so.1 (the newest CUDA the driver supports)."""
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        try:
            rc = lib.cuDriverGetVersion(ctypes.byref(version))
        except AttributeError:
            return None
        return version.value if rc == 0 and version.value > 0 else None
    return None


def nvml_driver() -> tuple[str | None, int | None]:
    """(driver version, driver CUDA version) from NVML, where pynvml is importable."""
    try:
        import pynvml  # nvidia-ml-py
    except Exception:
        return None, None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None, None
    try:
        version = pynvml.nvmlSystemGetDriverVersion()
        version = version.decode() if isinstance(version, bytes) else str(version)
        getter = getattr(pynvml, "nvmlSystemGetCudaDriverVersion_v2", None) or pynvml.nvmlSystemGetCudaDriverVersion
        try:
            cuda = int(getter())
        except Exception:
            cuda = None
        return version or None, cuda
    except Exception:
        return None, None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def nvidia_smi_driver() -> str | None:
    """The driver version nvidia-smi reports for the first GPU, where nvidia-smi is on PATH."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    return lines[0] if out.returncode == 0 and lines and lines[0][0].isdigit() else None


def probe_system() -> GpuFacts:
    """Probe this process's torch and this machine's NVIDIA driver."""
    import torch

    facts = GpuFacts(torch_version=torch.__version__, torch_cuda=torch.version.cuda,
                     torch_hip=getattr(torch.version, "hip", None),
                     cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        facts.cuda_available = bool(torch.cuda.is_available())
    messages = [str(w.message) for w in caught if "cuda" in str(w.message).lower()]
    facts.torch_warning = messages[0].strip() if messages else None
    if facts.cuda_available:
        facts.device_count = torch.cuda.device_count()
        for index in range(facts.device_count):
            major, minor = torch.cuda.get_device_capability(index)
            facts.devices.append({"name": torch.cuda.get_device_name(index), "capability": f"{major}.{minor}"})
    facts.driver_cuda = libcuda_driver_cuda()
    nvml_version, nvml_cuda = nvml_driver()
    facts.driver_cuda = facts.driver_cuda or nvml_cuda
    facts.driver_version = nvml_version or nvidia_smi_driver()
    return facts


# ---- the judgement ----------------------------------------------------------------------

def _found(facts: GpuFacts) -> str:
    driver = facts.driver_version or "version unknown"
    driver_cuda = cuda_str(facts.driver_cuda)
    build = f"CUDA {facts.torch_cuda} build" if facts.torch_cuda else "CPU-only build"
    if facts.torch_hip:
        build = f"ROCm {facts.torch_hip} build"
    if facts.driver_version or facts.driver_cuda:
        drv = f"NVIDIA driver {driver}" + (f" (supports CUDA up to {driver_cuda})" if driver_cuda else "")
    else:
        drv = "no NVIDIA driver (libcuda.so.1 not loadable, no NVML, no nvidia-smi)"
    visible = ("unset" if facts.cuda_visible_devices is None else repr(facts.cuda_visible_devices))
    return f"found torch {facts.torch_version} ({build}), {drv}, CUDA_VISIBLE_DEVICES {visible}"


def _torch_for_driver(driver_cuda: int | None) -> str:
    if driver_cuda and driver_cuda >= 12000:
        return ("install a torch build for the driver's CUDA from PyTorch's index instead, e.g. "
                "`pip install torch==2.14.0 --index-url https://download.pytorch.org/whl/cu126` where "
                "PyTorch publishes that build (a CUDA 12.6 build runs on any driver >= 525)")
    return "no current torch build supports a driver older than CUDA 12; update the driver"


def diagnose(facts: GpuFacts) -> tuple[str | None, str]:
    """(reason, explanation) for facts: reason None when the GPU is usable."""
    found = _found(facts)
    if facts.torch_cuda is None:
        return "not_cuda_build", (
            f"{found}. GPU jobs need a CUDA build of torch (PyPI's torch 2.14.0 for Linux, which "
            f"vllm==0.33.0 pins, is a CUDA 13.0 build and needs an NVIDIA driver >= 580). To do: run "
            f"the job in the GPU environment: `{INSTALL}` in a fresh virtual environment, or "
            f"`snakemake --sdm conda` with envs/gpu.yaml.")
    build_major, _ = _major_minor(facts.torch_cuda)
    branch, ga_driver = MIN_DRIVER.get(build_major, (None, None))
    need = (f"a CUDA {facts.torch_cuda} build of torch needs an NVIDIA driver >= {branch} "
            f"(CUDA {build_major}.0 GA ships {ga_driver}), i.e. one that supports CUDA {build_major}.x"
            if branch else f"a CUDA {facts.torch_cuda} build of torch needs a driver that supports CUDA {build_major}.x")
    if facts.cuda_available and (facts.device_count or facts.devices):
        # the CUDA runtime initialised: the driver is sufficient (with the forward-compatibility
        # package, NVML and nvidia-smi still report the older kernel driver), whatever the probes say
        return None, found
    old = False
    if facts.driver_cuda:
        old = facts.driver_cuda < build_major * 1000
    elif branch and _driver_branch(facts.driver_version) is not None:
        old = _driver_branch(facts.driver_version) < branch
    if old:
        return "driver_too_old", (
            f"{found}: the driver is too old for this torch; {need}. To do: update the NVIDIA "
            f"driver to {branch or 'a newer branch'} or newer (on a cluster: ask its admins, or send "
            f"the job to nodes that have one), or {_torch_for_driver(facts.driver_cuda)}; {VLLM_NOTE}.")
    # torch sees no GPU, and the driver is not known to be too old
    if facts.cuda_visible_devices is not None and facts.cuda_visible_devices.strip().lower() in ("", "-1", "none", "nodevfiles"):
        hint = ("CUDA_VISIBLE_DEVICES hides every GPU (Slurm sets NoDevFiles where a job got no GPU: "
                "give the rule `gpu: 1` in the config's resources); unset it or name a GPU")
    elif not (facts.driver_version or facts.driver_cuda):
        return "no_driver", (
            f"{found}: no GPU is visible; {need}. To do: run the job on a GPU node (on Slurm, "
            f"give the rule `gpu: 1` in the config's resources) with an NVIDIA driver >= "
            f"{branch or 'a matching branch'}, or check that the driver is loaded (`nvidia-smi`).")
    else:
        hint = ("the driver is present but torch sees no GPU: check `nvidia-smi`, the job's GPU "
                "allocation (Slurm: `gpu: 1`) and CUDA_VISIBLE_DEVICES")
    said = f" torch said: {facts.torch_warning}." if facts.torch_warning else ""
    return "no_gpu", f"{found}: no GPU is visible to torch.{said} To do: {hint}; {need}."


def describe(facts: GpuFacts) -> dict:
    """The device description require_gpu returns (JSON-friendly, for provenance)."""
    first = facts.devices[0] if facts.devices else {}
    out = {
        "name": first.get("name"),
        "capability": first.get("capability"),
        "device_count": facts.device_count or len(facts.devices),
        "torch": facts.torch_version,
        "torch_cuda": facts.torch_cuda,
        "driver": facts.driver_version,
        "driver_cuda": cuda_str(facts.driver_cuda),
        "cuda_visible_devices": facts.cuda_visible_devices,
    }
    if facts.driver_cuda and facts.torch_cuda:
        # a build newer than the driver's CUDA runs under minor-version compatibility (same major;
        # no PTX JIT for the newer minor) or the forward-compatibility package: recorded, not refused
        out["driver_cuda_older_than_build"] = facts.driver_cuda < _cuda_int(facts.torch_cuda)
    return out


def _cuda_int(text: str) -> int:
    major, minor = _major_minor(text)
    return major * 1000 + minor * 10


def require_gpu(what: str, probe: Callable[[], GpuFacts] | None = None) -> dict:
    """Raise GpuUnavailable unless this torch can use an NVIDIA GPU here; else describe it.

    `what` names the job in the message (e.g. "train job of qwen3-0.6b/agon/seed0").
    Returns {"name", "capability", "device_count", "torch", "torch_cuda", "driver",
    "driver_cuda", "cuda_visible_devices"[, "driver_cuda_older_than_build"]} for GPU 0.
    `probe` (default probe_system) returns the GpuFacts to judge; tests pass their own.
    """
    facts = (probe or probe_system)()
    reason, text = diagnose(facts)
    if reason is not None:
        raise GpuUnavailable(f"{what} needs a CUDA GPU and cannot use one here: {text}", reason, facts)
    return describe(facts)
