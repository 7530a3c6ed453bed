"""Cluster resources of the job rules, from the config's `resources:` section.

The rules (base, train, evaluate, curve) read their snakemake `resources:` from
here, so a config says what its jobs need and the Slurm profile
(profiles/slurm) submits exactly that: `gpu` -> sbatch --gpus, `mem_mb` ->
--mem, `runtime` (minutes) -> -t, and any other key the Slurm executor plugin
reads (slurm_partition, gpu_model, cpus_per_task, ...). A config key replaces
the default of that key only. prepare, fetch_model, table and the figures are
localrules and take no resources.

A model may ask for more than the family's resources: `models.<m>.resources.<family>`
merges over `resources.<family>` for that model's jobs (e.g. the 4B trainer's GPU). Its
`min_gpu_gib` also travels in the job's spec, and a CUDA job on a smaller GPU stops at
its start, saying so (agon.cli), instead of running out of memory hours later. Slurm
itself knows no GPU memory request: name a GPU type or feature your cluster has
(`gpu_model`, `constraint`) beside it.

Locally (`snakemake --cores N` without `--resources`), these resources limit
nothing; `--resources gpu=1` would serialise the GPU jobs on a one-GPU machine.
"""

from __future__ import annotations

# The defaults: what profiles/slurm used to set per rule. One GPU per train,
# evaluate and curve job (the toy world needs none, but on a cluster the same
# config must reach a GPU node at paper scale).
DEFAULTS: dict[str, dict] = {
    "base": {"mem_mb": 8000, "runtime": 120},
    "train": {"gpu": 1, "mem_mb": 64000, "runtime": 1440},
    "evaluate": {"gpu": 1, "mem_mb": 32000, "runtime": 240},
    "curve": {"gpu": 1, "mem_mb": 32000, "runtime": 120},
}


def _checked(where: str, resources: dict) -> dict:
    if "gpus" in resources:
        raise ValueError(f"{where}.gpus: the Slurm plugin ignores `gpus` (no GPU is requested); write `gpu: N`")
    return resources


def for_job(config: dict, family: str, model: str | None = None) -> dict:
    """The snakemake resources of one job of rule family `family` (for `model`'s jobs: with
    `models.<model>.resources.<family>` over the family's)."""
    if family not in DEFAULTS:
        raise ValueError(f"no resource defaults for rule family {family!r} (known: {', '.join(DEFAULTS)})")
    own = _checked(f"resources.{family}", (config.get("resources") or {}).get(family) or {})
    model_resources = ((config.get("models") or {}).get(model) or {}).get("resources") or {}
    per_model = _checked(f"models.{model}.resources.{family}", model_resources.get(family) or {})
    return {**DEFAULTS[family], **own, **per_model}


def for_rule(config: dict, family: str) -> dict:
    """The snakemake resources of rule family `family`: a value where every model's jobs
    agree, else a function of the job's `model` wildcard (None: not requested for it)."""
    jobs = {m: for_job(config, family, m) for m in (config.get("models") or {})} or {None: for_job(config, family)}
    out = {}
    for key in dict.fromkeys(k for r in jobs.values() for k in r):
        values = {m: r.get(key) for m, r in jobs.items()}
        if len(set(map(repr, values.values()))) == 1:
            out[key] = next(iter(values.values()))
        else:
            out[key] = lambda wc, values=values: values[wc.model]
    return out


def job_generation(config: dict, family: str, model: str | None = None) -> dict | None:
    """The `generation` section as a job of `family` on `model` reads it: models.<model>.generation
    (a model's own engine arguments) over the top-level one. An evaluation or curve job's engine
    has its GPU alone (no trainer beside it): `eval_gpu_memory_utilization`, when set, is its
    share instead of `gpu_memory_utilization` (the train job's, beside the trainer)."""
    generation = config.get("generation")
    if generation is None:
        return None
    if model is not None:
        generation = {**generation, **config["models"][model].get("generation", {})}
    out = {k: v for k, v in generation.items() if k != "eval_gpu_memory_utilization"}
    if family in ("evaluate", "curve") and "eval_gpu_memory_utilization" in generation:
        out["gpu_memory_utilization"] = generation["eval_gpu_memory_utilization"]
    return out


def gpu_memory_problem(min_gib: float | None, total_bytes: int, gpu_name: str) -> str | None:
    """Why a GPU of `total_bytes` cannot run a job that needs `min_gib` GiB (None: it can)."""
    if min_gib is None or total_bytes >= min_gib * 2**30 * 0.97:  # an "80 GB" card reports ~79.2 GiB
        return None
    return (f"the job needs a GPU with {min_gib:g} GiB (resources min_gpu_gib, config models.<model>.resources), "
            f"but got {gpu_name} with {total_bytes / 2**30:.1f} GiB: ask Slurm for a larger GPU "
            "(gpu_model or constraint beside min_gpu_gib; docs/cluster.md)")
