"""Cluster resources of the job rules, from the config's `resources:` section.

The rules (base, train, evaluate, curve) read their snakemake `resources:` from
here, so a config says what its jobs need and the Slurm profile
(profiles/slurm) submits exactly that: `gpu` -> sbatch --gpus, `mem_mb` ->
--mem, `runtime` (minutes) -> -t, and any other key the Slurm executor plugin
reads (slurm_partition, gpu_model, cpus_per_task, ...). A config key replaces
the default of that key only. prepare, fetch_model, table and the figures are
localrules and take no resources.

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


def for_rule(config: dict, family: str) -> dict:
    """The snakemake resources of rule family `family` under `config`."""
    if family not in DEFAULTS:
        raise ValueError(f"no resource defaults for rule family {family!r} (known: {', '.join(DEFAULTS)})")
    own = (config.get("resources") or {}).get(family) or {}
    if "gpus" in own:
        raise ValueError(f"resources.{family}.gpus: the Slurm plugin ignores `gpus` (no GPU is requested); "
                         "write `gpu: N`")
    return {**DEFAULTS[family], **own}
