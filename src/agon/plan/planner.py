"""The workflow's planner: every job's inputs and spec, and what every table reads, from the config.

`workflow/rules/common.smk` builds one `Plan` and its input functions call it with the
wildcards' values; nothing here imports snakemake, so tests/test_plan.py runs it alone. A
spec is the JSON string a rule hands its `agon` command (keys sorted: the same config gives
the same string, and Snakemake reruns a job whose spec changed).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import worlds
from . import needs as N
from .layout import UNTRAINED, Cell, Layout


class PlanError(ValueError):
    """A config the workflow cannot plan, naming the config key."""


def spec_json(obj) -> str:
    return json.dumps(obj, sort_keys=True)


def fingerprint(paths) -> str:
    """Size and mtime of each file: a rule param that changes when any of them is rewritten, cut
    short or deleted, so what reads them reruns (and checks them). A file inside another job's
    directory() output cannot be an input of its own, and Snakemake dates such a directory by
    its .snakemake_timestamp, not by its files. Stat only: hashing every records file at
    every DAG build would cost minutes at paper scale."""
    from ..io import stable_hash

    stats = []
    for path in paths:
        try:
            st = os.stat(path)
            stats.append([path, st.st_size, st.st_mtime_ns])
        except FileNotFoundError:
            stats.append([path, None])
    return stable_hash(stats)


class Plan:
    def __init__(self, config: dict, repo_root: Path | str, results: str | None = None):
        self.config = config
        self.run = config["run"]
        self.repo = Path(repo_root)
        self.layout = Layout(results or f"results/{self.run}")

    # --- data and bases ----------------------------------------------------------
    def benchmark_path(self, benchmark: str) -> str:
        b = self.config["benchmarks"][benchmark]
        return self.layout.split(b["dataset"], b["split"])

    def sandbox_check_for(self, datasets) -> dict:
        """The sandbox check's output, for a job that grades code: no program runs before it passed."""
        from ..verify.grading import CODE_SOURCES  # graded by running programs in the code sandbox

        grades_code = any(self.config["datasets"][d]["source"] in CODE_SOURCES for d in datasets)
        return {"sandbox": self.layout.sandbox_check} if grades_code else {}

    def datasets_of(self, benchmarks) -> list[str]:
        return [self.config["benchmarks"][b]["dataset"] for b in benchmarks]

    def models_of_kind(self, *kinds) -> list[str]:
        return [m for m, spec in self.config["models"].items() if spec["kind"] in kinds]

    def model_source(self, model: str) -> dict:
        """Where a model's base comes from (agon.model_sources.locate): a missing file or
        package stops the plan here, with a message naming the config key."""
        from ..model_sources import ModelSourceError, locate

        try:
            return locate(model, self.config["models"][model])
        except ModelSourceError as e:
            raise PlanError(str(e)) from None

    def base_path(self, model: str) -> str:
        """The base every job of `model` loads: results/<run>/models/<model>/base (built by the
        `base` rule for a toy model, by `fetch_model` for a hub id or a GGUF), or a local
        snapshot directory read in place."""
        source = self.model_source(model)
        return source["dir"] if source["where"] == "dir" else self.layout.base(model)

    def base_source(self, model: str) -> str:
        """Where toy model `model`'s base comes from: "train" (the default) or "pinned" (agon.toy.pinned)."""
        return self.config["models"][model]["base"].get("source", "train")

    def pinned_dir(self, model: str) -> str:
        """A pinned toy base's directory: models.<m>.base.pinned_path, relative to the repository."""
        return str(self.repo / self.config["models"][model]["base"]["pinned_path"])

    def base_inputs(self, model: str) -> dict:
        """The splits a toy base must never have seen, and a pinned base's manifest (a new pin reruns the job)."""
        from ..toy.pinned import MANIFEST

        # the splits of the problems its world's generator writes (another world's cannot leak into it)
        source = worlds.get(self.config["models"][model]["base"].get("world")).SOURCE
        unseen = [self.layout.split(d, s) for d, spec in self.config["datasets"].items()
                  if spec["source"] == source for s in ("heldout", "validation")]
        inputs = {"unseen": unseen}
        if self.base_source(model) == "pinned":
            inputs["manifest"] = f"{self.pinned_dir(model)}/{MANIFEST}"
            if not os.path.exists(inputs["manifest"]):
                raise PlanError(f"models.{model}.base.pinned_path: {inputs['manifest']} does not exist: no "
                                f"pinned base there. To train one from the config instead, set "
                                f"models.{model}.base.source: train")
        return inputs

    def base_spec(self, model: str) -> str:
        m = self.config["models"][model]
        return spec_json({**m["base"], "model": model, "precision": self.config["precision"],
                          "attn_implementation": m.get("attn_implementation")})

    def base_threads(self, model: str) -> int:
        """A pinned base is copied (seconds, one thread); a trained one uses base.threads."""
        return 1 if self.base_source(model) == "pinned" else self.config["models"][model]["base"].get("threads", 1)

    def base_priority(self, model: str) -> int:
        """Rule base's priority: above any set of training jobs (20 each), higher for more cells."""
        return 100 + sum(1 for cell in self.all_cells() if cell.model == model)

    def fetch_inputs(self, model: str) -> dict:
        source = self.model_source(model)
        return {"gguf": source["file"]} if "file" in source else {}

    def fetch_spec(self, model: str) -> str:
        return spec_json({"key": model, "source": self.model_source(model),
                          "dtype": self.config["models"][model].get("dtype", "float32")})

    # --- per-model settings --------------------------------------------------------
    def model_spec(self, model: str) -> dict:
        m = self.config["models"][model]
        spec = {"base_path": self.base_path(model), "prompt_style": m["prompt_style"],
                "attn_implementation": m.get("attn_implementation")}
        spec.update({k: m[k] for k in ("dtype", "thinking") if k in m})  # only when set
        if "sandbox" in self.config:  # how code programs are isolated (absent: bwrap, docs/sandbox.md)
            spec["sandbox"] = self.config["sandbox"]
        return spec

    def reading_pattern(self, model: str) -> dict:
        """{"reading_pattern": regex} where the model's toy world says what a read that checks the
        rival's steps looks like (a challenger's training metric, `verifying_share`); else {}."""
        m = self.config["models"][model]
        if m["kind"] != "toy":
            return {}
        pattern = getattr(worlds.get(m["base"].get("world")), "VERIFY_PATTERN", None)
        return {"reading_pattern": pattern} if pattern else {}

    def compute_spec(self, family: str, model: str) -> dict:
        """Where and how a job computes: the `generation` section as its family and model read it and `device`,
        each when the config has it (absent: the transformers backend; device auto, src/agon/device.py),
        and the GPU memory the model's jobs need, when set (src/agon/resources.py)."""
        from ..resources import for_job, job_generation

        spec = {"generation": job_generation(self.config, family, model)} if "generation" in self.config else {}
        if "device" in self.config:
            spec["device"] = self.config["device"]
        min_gib = for_job(self.config, family, model).get("min_gpu_gib")
        return {**spec, **({"min_gpu_gib": min_gib} if min_gib is not None else {})}

    def model_train(self, model: str) -> dict:
        """The `train` section of one model's cells: models.<model>.train merged over the top-level one."""
        from ..config import merge

        return merge(self.config["train"], self.config["models"][model].get("train", {}))

    def model_sampling(self, model: str, phase: str) -> dict:
        """Sampling of one model's `phase` (train | eval): models.<model>.sampling.<phase> over the top-level one."""
        return {**self.config["sampling"][phase], **self.config["models"][model].get("sampling", {}).get(phase, {})}

    def adapter_names(self, method: str) -> list[str]:
        from ..rl.methods import adapters_for

        return list(adapters_for(self.config["methods"][method]))

    def _job(self, model: str, family: str, phase: str, seed: int) -> dict:
        return {"sampling": self.model_sampling(model, phase), "seed": int(seed), "threads": self.config["threads"],
                "precision": self.config["precision"], **self.compute_spec(family, model)}

    # --- training ----------------------------------------------------------------
    def train_inputs(self, model: str) -> dict:
        train = self.config["models"][model]["train_data"]
        return {"base": self.base_path(model), "train": self.layout.split(train, "train"),
                **self.sandbox_check_for([train])}

    def train_spec(self, model: str, method: str, seed: int) -> str:
        loggers = self.config.get("loggers")
        return spec_json({
            **self.model_spec(model),
            "method": self.config["methods"][method],
            "train": self.model_train(model),
            **self.reading_pattern(model),
            **self._job(model, "train", "train", seed),
            # only when set, so that the jobs of a config without loggers keep their params
            # (files under results/<run>/loggers/: not declared outputs, like checkpoints)
            **({"loggers": loggers, "run_name": f"{self.run}/{model}/{method}/seed{seed}",
                "log_dir": f"{self.layout.root}/loggers/{model}/{method}/seed{seed}"} if loggers else {}),
        })

    # --- evaluation ----------------------------------------------------------------
    def eval_benchmarks(self, model: str, cell: str) -> list[str]:
        return list(dict.fromkeys(b for _, b in N.eval_needs(self.config, model, cell)))

    def eval_inputs(self, model: str, cell: str, seed: int) -> dict:
        benchmarks = self.eval_benchmarks(model, cell)
        inputs = {"base": self.base_path(model), **{f"benchmark_{b}": self.benchmark_path(b) for b in benchmarks}}
        inputs.update(self.sandbox_check_for(self.datasets_of(benchmarks)))
        if cell != UNTRAINED:
            inputs["adapters"] = self.layout.adapters(model, cell, seed)
        return inputs

    def eval_spec(self, model: str, cell: str, seed: int) -> str:
        trained = cell != UNTRAINED
        needs = N.eval_needs(self.config, model, cell)
        return spec_json({
            **self.model_spec(model),
            "model": model,
            "cell": cell,
            "adapters": self.adapter_names(cell) if trained else [],
            "adapter_dir": self.layout.adapters(model, cell, seed) if trained else None,
            "evaluations": {e: self.config["evaluations"][e] for e, _ in needs},
            "needs": needs,
            "benchmarks": {b: self.benchmark_path(b) for _, b in needs},
            "out_dir": self.layout.eval_dir(model, cell, seed),
            **self._job(model, "evaluate", "eval", seed),
        })

    def records_path(self, model: str, evaluation: str, seed: int, benchmark: str) -> str:
        return self.layout.records(model, N.cell_of(self.config, evaluation), evaluation, seed, benchmark)

    # --- tables and the report -------------------------------------------------------
    def records_of(self, table: str) -> list[str]:
        return [self.records_path(model, evaluation, seed, benchmark)
                for model in N.table_models(self.config, table) for seed in self.config["seeds"]
                for evaluation, benchmark in N.table_needs(self.config, table)]

    def _cells(self, needs_by_model) -> set[Cell]:
        return {Cell(model, N.cell_of(self.config, e), seed) for model, needs in needs_by_model
                for seed in self.config["seeds"] for e, _ in needs}

    def table_cells(self, table: str) -> list[Cell]:
        """The evaluation cells a table reads (one per trained cell), in their directories' order."""
        needs = N.table_needs(self.config, table)
        return self._sorted(self._cells((m, needs) for m in N.table_models(self.config, table)))

    def _sorted(self, cells) -> list[Cell]:
        return sorted(cells, key=lambda c: self.layout.eval_dir(*c))

    def eval_dirs(self, cells) -> list[str]:
        return [self.layout.eval_dir(*c) for c in cells]

    def all_cells(self) -> list[Cell]:
        """Every evaluation cell some table or Figure 7b reads."""
        cells = {c for table in self.config["tables"] for c in self.table_cells(table)}
        fig = N.fig7b(self.config)
        if fig:
            cells |= self._cells((m, N.figure_needs(self.config)) for m in fig["models"])
        return self._sorted(cells)

    def all_metrics(self, model: str | None = None) -> list[str]:
        """Every trained cell's per-step metrics (of `model`'s cells only, when given)."""
        return sorted({self.layout.metrics(*c) for c in self.all_cells()
                       if c.trained and model in (None, c.model)})

    def trained_models(self) -> list[str]:
        """Models with at least one trained cell in this run (each gets a training-curves figure)."""
        return sorted({c.model for c in self.all_cells() if c.trained})

    def table_metrics(self, table: str) -> list[str]:
        """Training metrics a table reads: Table 0's length in training and whether RL learned, of every
        trained cell of the run, the models its other sections leave out (the code model) too."""
        if N.table_kind(self.config, table) != "preconditions":
            return []
        return self.all_metrics()

    def table_splits(self, table: str) -> dict[str, str]:
        """{benchmark: split file} of every benchmark a table reads: its records are checked against them."""
        return {b: self.benchmark_path(b) for b in dict.fromkeys(b for _, b in N.table_needs(self.config, table))}

    def table_spec(self, table: str) -> str:
        config, t = self.config, self.config["tables"][table]
        if N.table_kind(config, table) == "design":
            # the spec's JSON sorts keys: the orders travel as lists
            return spec_json({**t, "methods": config["methods"], "evaluations": config["evaluations"],
                              "method_order": list(config["methods"]),
                              "evaluation_order": list(config["evaluations"])})
        unisolated = config.get("sandbox", {}).get("isolation") == "rlimits" and self.sandbox_check_for(
            self.datasets_of(N.table_benchmarks(t)))
        return spec_json({
            **t,
            "seeds": config["seeds"],
            "picks": N.table_picks(config, t),
            "paper_models": {m: config["models"][m].get("paper_model") for m in N.table_models(config, table)},
            "absent_models": [m for m in t["models"] if m not in config["models"]],
            "splits": self.table_splits(table),
            **({"blind_challengers": N.blind_challengers(config)} if N.table_kind(config, table) == "preconditions"
               else {}),
            **({"unisolated_code": True} if unisolated else {}),  # the note below says so
        })

    # --- Figure 7b -------------------------------------------------------------------
    def curve_files(self) -> list[str]:
        fig = N.fig7b(self.config)
        return [self.layout.curve(model, row, seed) for model in (fig["models"] if fig else [])
                for row in (fig["rows"] if fig else []) for seed in self.config["seeds"]]

    def curve_snapshots(self) -> dict[str, str]:
        """{curve file: its cell's snapshots directory}: the figure checks each curve holds every snapshot."""
        fig = N.fig7b(self.config)
        return {self.layout.curve(model, row, seed): self.layout.snapshots(model, N.curve_method(self.config, row), seed)
                for model in (fig["models"] if fig else []) for row in (fig["rows"] if fig else [])
                for seed in self.config["seeds"]}

    def curve_inputs(self, model: str, row: str, seed: int) -> dict:
        fig, method = N.fig7b(self.config), N.curve_method(self.config, row)
        return {"base": self.base_path(model), "benchmark": self.benchmark_path(fig["benchmark"]),
                "snapshots": self.layout.snapshots(model, method, seed),
                "adapters": self.layout.adapters(model, method, seed),
                "evals": self.layout.eval_dir(model, method, seed),
                "untrained": self.layout.eval_dir(model, UNTRAINED, seed),
                **({"select_on": self.benchmark_path(N.figure_select_on(self.config))}
                   if N.curve_candidates(self.config, row) else {}),
                **self.sandbox_check_for(self.datasets_of([fig["benchmark"]]))}

    def curve_records(self, model: str, row: str, seed: int) -> list[str]:
        """The evaluation records a curve job reads: step 0, the final step, a pick's candidates."""
        fig, candidates = N.fig7b(self.config), N.curve_candidates(self.config, row)
        bench, select_on = fig["benchmark"], N.figure_select_on(self.config)
        files = [self.records_path(model, fig["step0"], seed, bench)]
        files += [self.records_path(model, e, seed, b) for e in (candidates or [row])
                  for b in ([bench, select_on] if candidates else [bench])]
        return files

    def curve_spec(self, model: str, row: str, seed: int) -> str:
        fig, method = N.fig7b(self.config), N.curve_method(self.config, row)
        candidates = N.curve_candidates(self.config, row)
        inputs = self.curve_inputs(model, row, seed)
        return spec_json({
            **self.model_spec(model),
            "row": row,
            "model": model,
            "evaluation": None if candidates else row,
            "candidates": candidates,
            "select_on": N.figure_select_on(self.config),
            "evaluations": {e: self.config["evaluations"][e] for e in (candidates or [row])},
            "adapters": self.adapter_names(method),
            "benchmark": fig["benchmark"],
            "benchmark_path": inputs["benchmark"],
            "select_on_path": inputs.get("select_on"),
            "problems": fig["problems"],
            "snapshots": inputs["snapshots"],
            "adapter_dir": inputs["adapters"],
            "eval_dir": inputs["evals"],
            "step0": {"evaluation": fig["step0"], "eval_dir": inputs["untrained"]},
            **self._job(model, "curve", "eval", seed),
            "out": self.layout.curve(model, row, seed),
        })
