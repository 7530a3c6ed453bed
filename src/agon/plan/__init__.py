"""The workflow's planner, without snakemake: the results layout (layout.py), what each table and
figure reads (needs.py), and every job's inputs and spec (planner.py)."""

from .layout import SPLITS, UNTRAINED, Cell, Layout
from .planner import Plan, PlanError, fingerprint, spec_json

__all__ = ["SPLITS", "UNTRAINED", "Cell", "Layout", "Plan", "PlanError", "fingerprint", "spec_json"]
