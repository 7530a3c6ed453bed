"""agon.gpu_check: the GPU job's first check, judged on made-up probes (no GPU needed)."""

import ctypes

import pytest

from agon import gpu_check
from agon.gpu_check import GpuFacts, GpuUnavailable, require_gpu

WHAT = "train job of qwen3-0.6b/agon/seed0"


def facts(**kw) -> GpuFacts:
    """A good H100 node with PyPI's torch 2.14.0 (CUDA 13.0) unless told otherwise."""
    base = dict(torch_version="2.14.0", torch_cuda="13.0", cuda_available=True, device_count=1,
                devices=[{"name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}],
                driver_version="580.95.05", driver_cuda=13000, cuda_visible_devices="0")
    base.update(kw)
    return GpuFacts(**base)


def refused(f: GpuFacts) -> GpuUnavailable:
    with pytest.raises(GpuUnavailable) as info:
        require_gpu(WHAT, probe=lambda: f)
    err = info.value
    assert isinstance(err, RuntimeError)
    text = str(err)
    assert text.startswith(WHAT) and "\n" not in text, "one paragraph naming the job"
    assert f"torch {f.torch_version}" in text and "CUDA_VISIBLE_DEVICES" in text
    return err


def test_good_setup_returns_the_device():
    out = require_gpu(WHAT, probe=lambda: facts())
    assert out == {
        "name": "NVIDIA H100 80GB HBM3", "capability": "9.0", "device_count": 1,
        "torch": "2.14.0", "torch_cuda": "13.0", "driver": "580.95.05", "driver_cuda": "13.0",
        "cuda_visible_devices": "0", "driver_cuda_older_than_build": False,
    }


def test_newer_driver_and_newer_minor_build_pass():
    assert require_gpu(WHAT, probe=lambda: facts(driver_version="610.43.02", driver_cuda=13030))["driver_cuda"] == "13.3"
    # a 13.2 build on a 13.0 driver runs under minor-version compatibility: recorded, not refused
    out = require_gpu(WHAT, probe=lambda: facts(torch_cuda="13.2"))
    assert out["driver_cuda_older_than_build"] is True
    # a CUDA 12.6 build (PyTorch's cu126 index) on a 570 driver is fine
    assert require_gpu(WHAT, probe=lambda: facts(torch_cuda="12.6", driver_version="570.124.06",
                                                 driver_cuda=12080))["torch_cuda"] == "12.6"


def test_cpu_build_of_torch():
    err = refused(facts(torch_version="2.13.0+cpu", torch_cuda=None, cuda_available=False,
                        device_count=0, devices=[], driver_version=None, driver_cuda=None,
                        cuda_visible_devices=None))
    assert err.reason == "not_cuda_build"
    text = str(err)
    assert "CPU-only build" in text and "no NVIDIA driver" in text and "CUDA_VISIBLE_DEVICES unset" in text
    assert "pip install -r requirements/gpu.txt && pip install --no-deps -e ." in text
    assert ">= 580" in text


def test_driver_too_old_for_a_cuda13_build():
    # what torch does on such a node: no GPU, with a warning
    f = facts(cuda_available=False, device_count=0, devices=[], driver_version="570.124.06",
              driver_cuda=12080,
              torch_warning="CUDA initialization: The NVIDIA driver on your system is too old (found version 12080).")
    err = refused(f)
    assert err.reason == "driver_too_old" and err.facts is f
    text = str(err)
    assert "NVIDIA driver 570.124.06 (supports CUDA up to 12.8)" in text
    assert "CUDA 13.0 build" in text
    assert "driver >= 580" in text and "580.65.06" in text, "names the minimum driver"
    assert "update the NVIDIA driver to 580 or newer" in text
    assert "https://download.pytorch.org/whl/cu126" in text
    assert "vLLM 0.33.0" in text and "torch 2.14.0" in text


def test_driver_too_old_known_only_by_version_string():
    # no libcuda / NVML CUDA version, only nvidia-smi's driver version
    err = refused(facts(cuda_available=False, device_count=0, devices=[], driver_version="550.54.14",
                        driver_cuda=None))
    assert err.reason == "driver_too_old"
    assert "NVIDIA driver 550.54.14" in str(err)


def test_torch_seeing_the_gpu_wins_over_an_old_kernel_driver():
    # CUDA's forward-compatibility package: NVML / nvidia-smi report the kernel driver (535, CUDA
    # 12.2) while the CUDA 13 runtime initialised through the package's libcuda: not refused
    out = require_gpu(WHAT, probe=lambda: facts(driver_version="535.183.01", driver_cuda=12020))
    assert out["driver"] == "535.183.01" and out["driver_cuda_older_than_build"] is True


def test_no_gpu_visible_no_driver():
    err = refused(facts(cuda_available=False, device_count=0, devices=[], driver_version=None,
                        driver_cuda=None, cuda_visible_devices=None))
    assert err.reason == "no_driver"
    text = str(err)
    assert "no GPU is visible" in text and "gpu: 1" in text and ">= 580" in text


def test_no_gpu_visible_because_cuda_visible_devices_hides_them():
    err = refused(facts(cuda_available=False, device_count=0, devices=[], cuda_visible_devices=""))
    assert err.reason == "no_gpu"
    text = str(err)
    assert "CUDA_VISIBLE_DEVICES ''" in text and "hides every GPU" in text
    assert "NVIDIA driver 580.95.05" in text


def test_slurm_without_a_gpu_allocation():
    # Slurm sets CUDA_VISIBLE_DEVICES=NoDevFiles where a job got no GPU gres
    err = refused(facts(cuda_available=False, device_count=0, devices=[], cuda_visible_devices="NoDevFiles"))
    assert err.reason == "no_gpu" and "hides every GPU" in str(err)


def test_no_gpu_visible_with_a_good_driver():
    err = refused(facts(cuda_available=False, device_count=0, devices=[], cuda_visible_devices=None,
                        torch_warning="CUDA initialization: no CUDA-capable device is detected"))
    assert err.reason == "no_gpu"
    assert "no CUDA-capable device is detected" in str(err) and "nvidia-smi" in str(err)


def test_cuda_str():
    assert gpu_check.cuda_str(13000) == "13.0" and gpu_check.cuda_str(12080) == "12.8"
    assert gpu_check.cuda_str(None) is None


def test_libcuda_probe_reads_cu_driver_get_version(monkeypatch):
    class FakeLib:
        def cuDriverGetVersion(self, ref):
            ctypes.cast(ref, ctypes.POINTER(ctypes.c_int))[0] = 12080
            return 0

    monkeypatch.setattr(gpu_check.ctypes, "CDLL", lambda name: FakeLib())
    assert gpu_check.libcuda_driver_cuda() == 12080

    def missing(name):
        raise OSError(name)

    monkeypatch.setattr(gpu_check.ctypes, "CDLL", missing)
    assert gpu_check.libcuda_driver_cuda() is None


def test_probe_system_with_monkeypatched_driver_probes(monkeypatch):
    monkeypatch.setattr(gpu_check, "libcuda_driver_cuda", lambda: 12080)
    monkeypatch.setattr(gpu_check, "nvml_driver", lambda: (None, None))
    monkeypatch.setattr(gpu_check, "nvidia_smi_driver", lambda: "570.124.06")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    f = gpu_check.probe_system()
    assert f.driver_cuda == 12080 and f.driver_version == "570.124.06" and f.cuda_visible_devices == "0"


def test_the_real_probe_here():
    """On a CPU machine (this project's tests): refused, naming the fix. On a GPU machine: a device."""
    import torch

    if torch.version.cuda is not None and torch.cuda.is_available():
        out = require_gpu(WHAT)
        assert out["name"] and out["torch_cuda"] == torch.version.cuda
        return
    with pytest.raises(GpuUnavailable) as info:
        require_gpu(WHAT)
    text = str(info.value)
    assert text.startswith(WHAT) and f"torch {torch.__version__}" in text
    if torch.version.cuda is None:
        assert info.value.reason == "not_cuda_build"
        assert "pip install -r requirements/gpu.txt && pip install --no-deps -e ." in text
    assert ">= 580" in text or ">= 525" in text


def test_a_vllm_job_on_this_cpu_machine_stops_before_loading_a_model(tmp_path):
    """`agon evaluate` of a vLLM config checks the GPU first: one clear line, exit 2, no traceback,
    and nothing loaded (the base path does not even exist)."""
    import json
    import subprocess
    import sys

    spec = {"generation": {"backend": "vllm"}, "threads": 1, "out_dir": str(tmp_path / "out"),
            "base_path": str(tmp_path / "no-such-base"), "adapters": [], "adapter_dir": None}
    proc = subprocess.run([sys.executable, "-m", "agon.cli", "evaluate", "--spec", json.dumps(spec),
                           "--resume-dir", str(tmp_path / "resume")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("agon evaluate: error: ") and "Traceback" not in proc.stderr
    assert "GPU" in proc.stderr and "no-such-base" not in proc.stderr
    assert not (tmp_path / "out").exists()
