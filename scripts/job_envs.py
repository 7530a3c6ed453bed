"""Print the conda environment of every job the workflow would run, one line each:
rule, its wildcards, the env file (relative to the repository).

    python scripts/job_envs.py [--configfile FILE (default: config/config.yaml)] [--workdir DIR]

Reads the DAG as `snakemake --sdm conda -n` would build it, through Snakemake's own
API (snakemake 9.27), without conda: `snakemake --list-conda-envs` needs a conda
install to print anything. Every job is listed, as if nothing had been built (forceall).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def job_envs(configfile: Path, workdir: Path) -> list[tuple[str, str, str]]:
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (ConfigSettings, DAGSettings, DeploymentMethod, DeploymentSettings,
                                          OutputSettings, ResourceSettings)

    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        workflow_api = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[configfile]),
            deployment_settings=DeploymentSettings(deployment_method={DeploymentMethod.CONDA}),
            snakefile=ROOT / "Snakefile", workdir=workdir)
        workflow_api.dag(dag_settings=DAGSettings(forceall=True))
        workflow = workflow_api._workflow  # the API has no public "list the jobs"
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
        workflow._build_dag()
        rows = []
        for job in workflow.dag.jobs:
            spec = job.conda_env_spec
            env = str(Path(str(spec.file.get_path_or_uri(secret_free=True))).resolve().relative_to(ROOT)) if spec else "-"
            wildcards = ",".join(f"{k}={v}" for k, v in sorted(job.wildcards_dict.items()))
            rows.append((job.rule.name, wildcards, env))
        return sorted(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--workdir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    for row in job_envs(args.configfile.resolve(), args.workdir.resolve()):
        print("\t".join(row))


if __name__ == "__main__":
    sys.exit(main())
