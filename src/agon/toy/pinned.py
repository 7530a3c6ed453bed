"""Pinned toy bases: a base trained once, kept in the repository like a published checkpoint.

Training a toy base from scratch takes minutes, and its weights depend on the CPU that
trains it (bf16 kernels round differently, and 600 steps from scratch amplify that). So
the default config does what a paper-scale run does with Qwen3: every user starts from
one published checkpoint. `models.<m>.base.source` picks where a toy base comes from:

  train   the `base` rule trains it from the recipe in `models.<m>.base`;
  pinned  the `base` rule installs the snapshot at `models.<m>.base.pinned_path` (a
          directory of the repository, e.g. models/toy) after checking it:
            * every file's sha256 against the snapshot's manifest (agon_pinned.json);
            * the recipe it was trained with against the running config's recipe;
            * the content hash of every held-out and validation split the running config
              keeps away from the base against the hashes of the splits it was kept away
              from. A base that trained on a problem now held out would leak it.
          Any mismatch stops the job before anything is copied, naming the key or split.

A pinned snapshot is made by `agon pin-base` from a base the `base` rule trained
(config/pin.yaml; docs/toy-world.md, "Making a pinned base").
"""

from __future__ import annotations

import platform
import shutil
from pathlib import Path

from .. import io

MANIFEST = "agon_pinned.json"
BASE_RECORD = "agon_base.json"  # what the `base` rule writes beside a base's files
# Keys of models.<m>.base that say where the base comes from, not how it is trained.
SOURCE_KEYS = ("source", "pinned_path")
SOURCES = ("train", "pinned")


class PinnedBaseError(ValueError):
    """A pinned base that does not fit the running config; the message names what differs."""


sha256 = io.sha256_file


def recipe(spec: dict) -> dict:
    """What a toy base's weights depend on, from a `base` job's spec: the model's `base`
    section without its source keys, plus the attention implementation it trains with.

    The config's `precision` is left out on purpose: it is resolved per machine (auto), and
    a pinned base's manifest records the precision it was actually trained in."""
    return {k: v for k, v in spec.items() if k not in SOURCE_KEYS + ("precision", "model")}


def split_name(path) -> str:
    """`dataset/split` of a split file results/<run>/data/<dataset>/<split>.jsonl."""
    path = Path(path)
    return f"{path.parent.name}/{path.stem}"


def split_hashes(paths) -> dict[str, str]:
    """{dataset/split: content hash} (agon.data.splits.split_hash, as data manifests record it)."""
    from ..data.splits import split_hash

    return {split_name(p): split_hash(io.read_jsonl(p)) for p in paths}


def machine() -> dict:
    """Where a base was trained: what its weights depend on besides the recipe."""
    import torch

    return {"commit": io.git_commit(), "cpu": io.cpu_model(), "machine": platform.machine(),
            "platform": platform.platform(), "torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def weights_sha256(base_dir) -> str:
    return sha256(Path(base_dir) / "model.safetensors")


def identity(base_dir) -> dict | None:
    """{source, sha256[, pinned_path]} of a toy base the `base` rule wrote; None for other bases
    (a hub or GGUF base's record, written by fetch_model, names its own source)."""
    record = Path(base_dir) / BASE_RECORD
    if not record.exists():
        return None
    data = io.read_json(record)
    if data.get("source") not in SOURCES or "sha256" not in data:
        return None
    out = {"source": data["source"], "sha256": data["sha256"]}
    if data.get("pinned_path"):
        out["pinned_path"] = data["pinned_path"]
    return out


def problems(manifest: dict, spec: dict, unseen: dict[str, str], model: str) -> list[str]:
    """Why a pinned base (its manifest) cannot stand for the base `spec` describes, kept
    away from the splits `unseen` ({dataset/split: hash}); empty when it can."""
    out = []
    want, have = recipe(spec), manifest.get("recipe", {})
    for key in sorted(set(want) | set(have)):
        if want.get(key) != have.get(key):
            where = f"models.{model}.attn_implementation" if key == "attn_implementation" \
                else f"models.{model}.base.{key}"
            out.append(f"{where}: the pinned base was trained with {have.get(key, '(not set)')!r}, "
                       f"this config has {want.get(key, '(not set)')!r}")
    kept_away = manifest.get("unseen_splits", {})
    for name, digest in sorted(unseen.items()):
        dataset = name.split("/")[0]
        if name not in kept_away:
            out.append(f"split {name} (datasets.{dataset}): the pinned base was never kept away from it "
                       f"(it was kept away from {', '.join(sorted(kept_away)) or 'nothing'})")
        elif kept_away[name] != digest:
            out.append(f"split {name} (datasets.{dataset}): its content hash is {digest}, the pinned base "
                       f"was kept away from a split with hash {kept_away[name]}: a changed seed, size or "
                       "pool draws other problems, and the base may have trained on some of them")
    return out


def _advice(model: str) -> str:
    return (f"to train a fresh base from this config instead, set models.{model}.base.source: train "
            "(docs/toy-world.md, \"Making a pinned base\")")


def install(pinned_dir, out, spec: dict, unseen_paths, log=print) -> dict:
    """Check the pinned snapshot at `pinned_dir` against the base `spec` describes and the
    splits at `unseen_paths`, then copy its files to `out` (atomically). Returns the base's
    record (written to out/agon_base.json). Nothing is written when a check fails."""
    model = spec["model"]
    pinned_dir = Path(pinned_dir)
    manifest_path = pinned_dir / MANIFEST
    where = f"models.{model}.base.pinned_path ({spec.get('pinned_path', pinned_dir)})"
    if not manifest_path.exists():
        raise PinnedBaseError(f"{where}: no pinned base there ({manifest_path} is missing); {_advice(model)}")
    try:
        manifest = io.read_json(manifest_path)
        files = dict(manifest["files"])
    except (ValueError, KeyError, TypeError) as e:
        raise PinnedBaseError(f"{manifest_path}: not a pinned base's manifest ({e}); {_advice(model)}") from None
    found = problems(manifest, spec, split_hashes(unseen_paths), model)
    for name, digest in sorted(files.items()):
        path = pinned_dir / name
        if Path(name).name != name or name in (MANIFEST, BASE_RECORD):
            found.append(f"{manifest_path}: file name {name!r} is not a plain file of the snapshot")
        elif not path.is_file():
            found.append(f"{path}: listed in {MANIFEST} but missing")
        elif (actual := sha256(path)) != digest:
            found.append(f"{path}: sha256 {actual} differs from the manifest's {digest} "
                         "(a changed or damaged file)")
    if found:
        raise PinnedBaseError(f"the pinned base at {pinned_dir} does not fit this config:\n  - "
                              + "\n  - ".join(found) + f"\n{_advice(model)}")
    record = {"source": "pinned", "pinned_path": spec.get("pinned_path", str(pinned_dir)),
              "sha256": files["model.safetensors"], "files": files,
              "recipe": manifest["recipe"], "unseen_splits": manifest["unseen_splits"],
              "precision": manifest["trained"]["precision"], "trained": manifest["trained"],
              "history": manifest.get("history", []), "provenance": io.provenance(spec, spec.get("seed"))}
    with io.atomic_dir(out) as tmp:
        for name in files:
            shutil.copyfile(pinned_dir / name, tmp / name)
        io.write_json(tmp / BASE_RECORD, record)
    log(f"pinned base {pinned_dir} installed in {out} (model.safetensors sha256 {record['sha256']})")
    return record


def pin(base_dir, out) -> dict:
    """Write a pinned snapshot of the trained toy base at `base_dir` (its files and a
    manifest) to `out`, atomically. The base must have been trained by the `base` rule
    (source: train): its record holds the recipe and the splits it was kept away from."""
    base_dir, out = Path(base_dir), Path(out)
    record_path = base_dir / BASE_RECORD
    if not record_path.exists():
        raise PinnedBaseError(f"{base_dir}: no {BASE_RECORD}: not a base the `base` rule wrote")
    record = io.read_json(record_path)
    if record.get("source", "train") != "train" or "recipe" not in record:
        raise PinnedBaseError(f"{record_path}: a base to pin must be trained by this version of the `base` "
                              "rule (source: train), whose record names its recipe and held-out splits; "
                              f"this one says source {record.get('source', 'train')!r}")
    # the model's files: not the record, nor Snakemake's marker (.snakemake_timestamp) or other dotfiles
    names = sorted(p.name for p in base_dir.iterdir()
                   if p.is_file() and p.name != BASE_RECORD and not p.name.startswith("."))
    with io.atomic_dir(out) as tmp:
        for name in names:
            shutil.copyfile(base_dir / name, tmp / name)
        manifest = {"files": {name: sha256(tmp / name) for name in names},
                    "recipe": record["recipe"], "unseen_splits": record["unseen_splits"],
                    "trained": record["trained"], "history": record.get("history", [])}
        io.write_json(tmp / MANIFEST, manifest)
    return manifest
