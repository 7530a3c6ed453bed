"""Removing the resumable state of finished cells (results/<run>/checkpoints/).

    checkpoints/<model>/<method>/seed<s>/       training: checkpoint.pt, metrics.jsonl, resume_key.json
    checkpoints/eval/<model>/<cell>/seed<s>/    evaluation: per-problem records finished so far

None of it is a declared output, so removing it never makes snakemake rerun
anything. Only a finished cell's state goes: a cell is finished when its job
wrote its last file (training: adapters/train_summary.json and metrics.jsonl;
evaluation: provenance.json in its output folder). The state of a cell that
was killed, or is running now, is kept, so it still resumes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from . import io


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _finished_output(results: Path, state: Path) -> Path | None:
    """The file whose existence says the cell of `state` finished; None for an unknown layout."""
    rel = state.relative_to(results / "checkpoints").parts
    if len(rel) == 4 and rel[0] == "eval":
        _, model, cell, seed = rel
        return results / "eval" / model / cell / seed / "provenance.json"
    if len(rel) == 3:
        model, method, seed = rel
        cell = results / "train" / model / method / seed
        if not (cell / "metrics.jsonl").exists():
            return cell / "metrics.jsonl"
        return cell / "adapters" / "train_summary.json"
    return None


def clean_checkpoints(results, log_path=None) -> dict:
    """Remove the state of every finished cell under `results`/checkpoints; return what was done."""
    results = Path(results)
    root = results / "checkpoints"
    removed, kept, freed = [], [], 0
    lines = []
    states = sorted(p for p in root.glob("**/seed*") if p.is_dir()) if root.is_dir() else []
    for state in states:
        marker = _finished_output(results, state)
        if marker is None:
            kept.append(str(state))
            lines.append(f"kept {state}: not a cell's state (unknown layout)")
        elif marker.exists():
            size = _size(state)
            shutil.rmtree(state)
            freed += size
            removed.append(str(state))
            lines.append(f"removed {state} ({size / 1e6:.1f} MB): the cell finished ({marker} exists)")
        else:
            kept.append(str(state))
            lines.append(f"kept {state}: the cell has not finished ({marker} is missing), it can still resume")
    # Folders left empty (model, method, eval/, checkpoints/ itself) go too, deepest first.
    folders = sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [root]
    for folder in folders if root.is_dir() else []:
        if not any(folder.iterdir()):
            folder.rmdir()
    lines.append(f"removed the state of {len(removed)} finished cells ({freed / 1e6:.1f} MB), kept {len(kept)}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if log_path is not None:
        io.write_text(log_path, text)
    return {"removed": removed, "kept": kept, "freed_bytes": freed}
