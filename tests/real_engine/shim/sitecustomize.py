"""TEST-ONLY import shim for the real-engine tests of Qwen3.5 and Gemma-4 (tests/real_engine/),
on sys.path only inside the session tests/test_vllm_cpu.py starts. Never part of a user's install.

Why: vLLM 0.32 imports these architectures' image processors when it inspects them, and two of
transformers 5.20.2's image-processor modules import torchvision at their top:
  transformers/models/qwen2_vl/image_processing_qwen2_vl.py  (vLLM's qwen3_vl.py takes
      `smart_resize` from it; Qwen3.5's module imports qwen3_vl.py),
  transformers/models/gemma4/image_processing_gemma4.py      (through Gemma4Processor).
The test venv has no torchvision: PyPI's Linux wheel for torch 2.13 (0.28.0+cu130) is a CUDA
build whose C++ ops need libtorch_cuda, and importing it beside the CPU torch fails
("operator torchvision::nms does not exist"); the CPU build is only on PyTorch's own index.
vLLM's text-only class exists for Gemma-4 (Gemma4ForCausalLM) but Qwen3.5's text-only class
lives in the same module that imports qwen3_vl.py.

What it does, and only when torchvision is not installed: those two modules are loaded from
their own source with the one line `from torchvision.transforms.v2 import functional as tvF`
replaced by a placeholder. Everything else in them is transformers' own code. The placeholder
refuses every use (and records it in $AGON_SHIM_LOG, which the tests check stays empty), but
for `tvF.InterpolationMode`, which image_processing_gemma4.py names in a function signature's
annotation when the module is executed. The engines run in vLLM's text-only mode
(`language_model_only`): no image is ever processed, so no torchvision function is called.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

IMPORT = "from torchvision.transforms.v2 import functional as tvF"
MODULES = ("transformers.models.qwen2_vl.image_processing_qwen2_vl",
           "transformers.models.gemma4.image_processing_gemma4")


class UnusedTorchvision:
    """Stands for torchvision.transforms.v2.functional: any use is recorded and refused."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, attr):
        if attr == "InterpolationMode":  # evaluated once, as an annotation, when the module runs
            return type("InterpolationMode", (), {"__doc__": "annotation-only stand-in"})
        use = f"{self._module}: torchvision.transforms.v2.functional.{attr}"
        log = os.environ.get("AGON_SHIM_LOG")
        if log:
            with open(log, "a") as f:
                f.write(use + "\n")
        raise RuntimeError(f"test-only torchvision shim: {use} was used (sitecustomize.py)")


class _Loader(importlib.machinery.SourceFileLoader):
    def get_data(self, path):
        data = super().get_data(path)
        if not path.endswith(".py"):
            return data
        text = data.decode()
        if IMPORT not in text:
            raise ImportError(f"test-only torchvision shim: {path} no longer has the line {IMPORT!r}; "
                              "update tests/real_engine/shim/sitecustomize.py")
        stand_in = f"tvF = __import__('sitecustomize').UnusedTorchvision({self.name!r})"
        return text.replace(IMPORT, stand_in).encode()

    def get_code(self, fullname):  # always from the edited source, never a cached .pyc
        return self.source_to_code(self.get_data(self.path), self.path)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name not in MODULES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = _Loader(name, spec.origin)
        return spec


if importlib.util.find_spec("torchvision") is None:
    sys.meta_path.insert(0, _Finder())
