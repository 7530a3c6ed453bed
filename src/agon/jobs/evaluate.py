"""`agon evaluate`: every evaluation of one cell on every benchmark, as per-problem records.

A records file finished by an interrupted job is kept in the resume folder and reused; the
declared output directory is filled only at the end, with provenance.json.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .. import io
from .job import Job


def run(spec: dict, resume_dir: str, log=print) -> None:
    from ..evaluate import protocols
    from ..evaluate.records import is_complete
    from ..toy import pinned

    job = Job(spec, f"evaluate job {spec['out_dir']}", log)
    adapter_dirs = {n: str(Path(spec["adapter_dir"]) / n) for n in spec["adapters"]}
    backend, fmt = job.open_backend(adapter_dirs)
    sample = protocols.make_sampler(backend, spec["sampling"], spec["seed"])
    resume = Path(resume_dir)
    resume.mkdir(parents=True, exist_ok=True)
    summary = {}
    problems_of = {b: io.read_jsonl(path) for b, path in spec["benchmarks"].items()}
    for name, bench in spec["needs"]:
        ev, problems = spec["evaluations"][name], problems_of[bench]
        done = resume / f"{name}.{bench}.jsonl"
        if is_complete(done, [p["id"] for p in problems]):  # every problem once, nothing cut short
            log(f"{name} on {bench}: reusing {done}")
            continue
        grader = job.grader()
        records = protocols.run(ev["protocol"], ev["policies"], problems, sample, fmt, grader)
        for r in records:
            r.update(evaluation=name, model=spec["model"], seed=spec["seed"], benchmark=bench)
        io.write_jsonl(done, records)
        k = sum(r["correct"] for r in records)
        skipped = sum("skipped" in s for r in records for s in r["stages"])
        summary[f"{name}.{bench}"] = {"k": k, "n": len(records), "grader": grader.counts,
                                      "sandbox": grader.mechanism, "skipped_stages": skipped}
        log(f"{name} on {bench}: {k}/{len(records)} correct; grader {grader.counts}"
            + (f"; {skipped} stage(s) skipped: prompt longer than the context" if skipped else ""))
    record = job.record()
    with io.atomic_dir(spec["out_dir"]) as tmp:
        shutil.copytree(resume, tmp, dirs_exist_ok=True)
        io.write_json(tmp / "provenance.json", {"summary": summary, "precision": record["precision"],
                                                "device": record["device"], "generation": record["generation"],
                                                "base": pinned.identity(spec["base_path"]),  # table notes name it
                                                "provenance": record["provenance"]})
    shutil.rmtree(resume)
