"""`agon base`: a toy base trained from its recipe (source: train), or a pinned snapshot checked
against the config and installed (source: pinned; agon.toy.pinned)."""

from __future__ import annotations

import time

from .. import io


def run(spec: dict, out: str, exclude_splits: list[str], pinned_dir: str | None = None, log=print) -> None:
    from ..toy import pinned

    if spec.get("source", "train") == "pinned":
        pinned.install(pinned_dir, out, spec, exclude_splits, log=log)
        return
    import torch

    from .. import precision
    from ..toy import sft
    from ..toy.tokenizer import build_tokenizer

    torch.set_num_threads(spec.get("threads", 1))
    exclude = set()
    for path in exclude_splits:
        exclude |= {p["prompt"] for p in io.read_jsonl(path)}
    tokenizer = build_tokenizer()
    # resolved once: the base trains in it (bf16 autocast or fp32), and its record says which
    resolved = precision.resolve(spec.get("precision", "fp32"))
    start = time.time()
    model, history = sft.train_base(tokenizer, {**spec, "precision": resolved}, exclude, spec["seed"], log=log)
    seconds = round(time.time() - start, 1)
    with io.atomic_dir(out) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        # the record `agon pin-base` turns into a pinned base's manifest
        io.write_json(tmp / pinned.BASE_RECORD, {
            "source": "train", "sha256": pinned.weights_sha256(tmp), "history": history, "precision": resolved,
            "recipe": pinned.recipe(spec), "unseen_splits": pinned.split_hashes(exclude_splits),
            "trained": {**pinned.machine(), "precision": resolved,
                        "threads": spec.get("threads", 1), "seconds": seconds},
            "provenance": io.provenance(spec, spec["seed"])})
