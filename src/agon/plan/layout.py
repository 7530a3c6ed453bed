"""Where everything of a run lives, written once: results/<run>/... paths from their parts.

Every path is built here from named parts, so nothing parses a path back by position.
With wildcard names as parts (`"{model}"`) the same methods give the rules' output patterns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

SPLITS = ["heldout", "validation", "train"]
UNTRAINED = "untrained"  # the evaluation cell of the bare base model (method: null)


class Cell(NamedTuple):
    """One evaluation job's cell: a model, its trained method (or UNTRAINED), a seed."""
    model: str
    cell: str
    seed: int

    @property
    def trained(self) -> bool:
        return self.cell != UNTRAINED


@dataclass(frozen=True)
class Layout:
    root: str  # results/<run>

    def split(self, dataset, split) -> str:
        return f"{self.root}/data/{dataset}/{split}.jsonl"

    def manifest(self, dataset) -> str:
        return f"{self.root}/data/{dataset}/manifest.json"

    @property
    def sandbox_check(self) -> str:
        return f"{self.root}/sandbox.json"

    def base(self, model) -> str:
        return f"{self.root}/models/{model}/base"

    def pinned(self, model) -> str:
        return f"{self.root}/pinned/{model}"

    def train_dir(self, model, method, seed) -> str:
        return f"{self.root}/train/{model}/{method}/seed{seed}"

    def adapters(self, model, method, seed) -> str:
        return f"{self.train_dir(model, method, seed)}/adapters"

    def metrics(self, model, method, seed) -> str:
        return f"{self.train_dir(model, method, seed)}/metrics.jsonl"

    def snapshots(self, model, method, seed) -> str:
        return f"{self.train_dir(model, method, seed)}/snapshots"

    def checkpoints(self, model, method, seed) -> str:
        return f"{self.root}/checkpoints/{model}/{method}/seed{seed}"

    def eval_dir(self, model, cell, seed) -> str:
        return f"{self.root}/eval/{model}/{cell}/seed{seed}"

    def eval_resume(self, model, cell, seed) -> str:
        return f"{self.root}/checkpoints/eval/{model}/{cell}/seed{seed}"

    def records(self, model, cell, evaluation, seed, benchmark) -> str:
        return f"{self.eval_dir(model, cell, seed)}/{evaluation}.{benchmark}.jsonl"

    def curve(self, model, row, seed) -> str:
        return f"{self.root}/curves/{model}/{row}/seed{seed}.jsonl"

    def curve_provenance(self, model, row, seed) -> str:
        """The curve job's record beside its points (agon.jobs.curve.provenance_path)."""
        return f"{self.root}/curves/{model}/{row}/seed{seed}.provenance.json"

    def table(self, table, ext) -> str:
        return f"{self.root}/tables/{table}.{ext}"

    def figure(self, name, ext) -> str:
        return f"{self.root}/figures/{name}.{ext}"

    @property
    def report(self) -> str:
        return f"{self.root}/report.md"

    def log(self, *parts) -> str:
        return "/".join([self.root, "logs", *map(str, parts)])
