"""`agon curve`: Figure 7b's points of one row's adapter snapshots (agon.evaluate.curves), and
their provenance beside them (`<curve>.provenance.json`), as every job writes its own."""

from __future__ import annotations

from pathlib import Path

from .. import io
from .job import Job


def provenance_path(curve: str | Path) -> Path:
    """The provenance file of a curve file: seed0.jsonl -> seed0.provenance.json."""
    curve = Path(curve)
    return curve.with_name(curve.name.removesuffix(".jsonl") + ".provenance.json")


def run(spec: dict, log=print) -> None:
    from ..evaluate import curves

    # a run started by hand over an older one: neither old file may outlive this run's start
    for stale in (Path(spec["out"]), provenance_path(spec["out"])):
        stale.unlink(missing_ok=True)
    job = Job(spec, f"curve job {spec['out']}", log)
    points = curves.run_curve(spec, log=log, backend_factory=lambda _spec, dirs, _device: job.open_backend(dirs),
                              device=job.device, write=False)
    io.write_json(provenance_path(spec["out"]), job.record())  # first: a curve file always has its record
    io.write_jsonl(spec["out"], points)
