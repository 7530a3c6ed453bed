"""Running the real pipeline from a test: one place for the command, the PATH its rules need
and the logs a failure shows. Used by the workflow tests of the paper's CPU stand-in and
SmolLM2, in the project's venv and in .venv-vllm (tests/real_engine/)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_pipeline(workdir: Path, config: Path, targets: list[str], timeout: int) -> None:
    """Run snakemake on `config` in `workdir` with this interpreter, on 2 cores; on failure,
    raise with snakemake's stderr and the end of every job's log."""
    # targets before --configfile, which takes every word after it
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
           "--cores", "2", *targets, "--configfile", str(config)]
    # the rules call `agon`: the one installed beside this interpreter
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        logs = "\n".join(f"== {p}\n{p.read_text()[-2000:]}" for p in (workdir / "results").rglob("*.log"))
        raise AssertionError(f"snakemake failed:\n{proc.stderr[-4000:]}\n{logs[-12000:]}")


def job_blocks(log: str) -> list[tuple[str, dict]]:
    """(rule, {field: text}) for every job a dry run (`snakemake -n -p`) prints; the shell command
    as field `shell` ("" without -p)."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", log):
        m = re.match(r"(?:local)?rule (\w+):\n", block)
        if m:
            fields = dict(re.findall(r"^\s+(\w+): (.*)$", block, re.M))
            shell = re.search(r"^Shell command: (.*)$", block, re.M)
            fields["shell"] = shell.group(1) if shell else ""
            jobs.append((m.group(1), fields))
    return jobs
