"""`agon train`: one cell (model x method x seed) trained, resumable, its adapters published.

Resumable state (checkpoint, per-step metrics, snapshots) lives in the checkpoint folder,
outside the declared outputs; the adapters, metrics.jsonl and the snapshots are published
only at the end. `run` returns the process's exit status.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from .. import io
from .job import Job

EXIT_TERMINATED = 143  # 128 + SIGTERM: what the shell reports for a job SIGTERM killed
EXIT_STOPPED = 3       # --stop-after ended the run early (resume testing)


def resume_key(spec: dict, train_path: str) -> dict:
    """What a checkpoint must have been written under to be resumed: spec, train split, base files."""
    base = Path(spec["base_path"])
    files = sorted(base.rglob("*")) if base.is_dir() else []
    return {"spec": io.stable_hash(spec), "train": io.file_hash(train_path),
            "base": io.stable_hash([[str(f.relative_to(base)), f.stat().st_size, f.stat().st_mtime_ns]
                                    for f in files if f.is_file()]),
            "finished": False}


def check_resume_key(ckpt_dir: Path, key: dict, log) -> None:
    """Drop a checkpoint that this job must not resume from, saying why.

    Only an unfinished run of the same spec, train split and base resumes: a
    rerun after a config change, a rebuilt base, or --forcerun of a finished
    cell trains afresh instead of reloading the old final state.
    """
    key_path, ckpt = ckpt_dir / "resume_key.json", ckpt_dir / "checkpoint.pt"
    if ckpt.exists():
        old = io.read_json(key_path) if key_path.exists() else None
        if old != key:
            why = ("it has no resume_key.json" if old is None else
                   "its run had finished" if old.get("finished") else
                   "it was written for another " + ", ".join(k for k in ("spec", "train", "base")
                                                            if old.get(k) != key[k]))
            log(f"not resuming from {ckpt}: {why}; training from step 0")
            ckpt.unlink()
            (ckpt_dir / "metrics.jsonl").unlink(missing_ok=True)
    io.write_json(key_path, key)


def checkpoint_step(path: Path) -> int:
    """The step a checkpoint resumes at (0 without one): where a logger's resumed record starts."""
    if not path.exists():
        return 0
    from ..rl.checkpoints import read_checkpoint

    return int(read_checkpoint(path)["step"])


def publish_snapshots(src: Path, out: Path, every: int | None, total: int) -> None:
    """The run's adapter snapshots (Figure 7b) into the declared output, atomically.

    They are written under the checkpoint folder while training (a resumed job keeps
    the earlier ones); only this run's steps are published, with snapshots.json."""
    steps = list(range(every, total, every)) if every else []
    missing = [k for k in steps if not (src / f"step{k}").is_dir()]
    if missing:
        raise ValueError(f"train: adapter snapshots missing for steps {missing} in {src}")
    with io.atomic_dir(out) as tmp:
        for k in steps:
            shutil.copytree(src / f"step{k}", tmp / f"step{k}")
        io.write_json(tmp / "snapshots.json", {"every": every, "steps": steps, "total_steps": total})


def trainer_for(job: Job, base, tokenizer, fmt):
    """The cell's Trainer over `base`, sampling through the job's backend."""
    from ..rl.trainer import Trainer

    spec = job.spec
    return Trainer(base, tokenizer, fmt, spec["train"], spec["method"], spec["sampling"], spec["seed"],
                   precision_name=job.precision, backend_factory=lambda model: job.backend(model, tokenizer),
                   grader=job.grader(), reading_pattern=spec.get("reading_pattern"))


def run(spec: dict, train_path: str, out: str, metrics: str, checkpoint_dir: str,
        stop_after: int | None = None, snapshots: str | None = None, log=print) -> int:
    from ..device import limit_trainer_memory
    from ..evaluate.records import read_steps

    job = Job(spec, f"train job {out}", log)
    limit_trainer_memory(spec["train"].get("gpu_memory_fraction"), job.device)
    trainer = trainer_for(job, *job.load())
    problems = io.read_jsonl(train_path)
    ckpt_dir = Path(checkpoint_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    key = resume_key(spec, train_path)
    check_resume_key(ckpt_dir, key, log)
    t0 = time.time()
    loggers = None
    if spec.get("loggers"):
        from ..rl.loggers import Loggers

        loggers = Loggers(spec["loggers"], Path(spec["log_dir"]), spec["run_name"],
                          {"config_hash": io.stable_hash(spec), "seed": spec["seed"]},
                          resume_step=checkpoint_step(ckpt_dir / "checkpoint.pt"), warn=log)
    trainer.fit(problems, ckpt_dir / "metrics.jsonl", ckpt_dir / "checkpoint.pt", log=log,
                stop_after=stop_after, snapshot_dir=ckpt_dir / "snapshots", loggers=loggers)
    total = trainer.plan(problems)[1]
    if trainer.terminated and trainer.step < total:
        # Slurm's warning before SIGKILL (preemption, time limit): fail, so the retry resumes.
        log(f"terminated by SIGTERM at step {trainer.step}/{total}; rerun to resume from the checkpoint")
        return EXIT_TERMINATED
    if stop_after and trainer.step < total:
        log(f"stopped after {stop_after} steps (checkpoint kept for resume)")
        return EXIT_STOPPED
    out_dir = Path(out)
    for name in trainer.adapters:
        trainer.policies.save(name, out_dir / name)
    history = read_steps(ckpt_dir / "metrics.jsonl", trainer.step)  # every step once, no gap
    io.write_jsonl(metrics, history)
    record = job.record()
    io.write_json(out_dir / "train_summary.json", {
        "adapters": list(trainer.adapters), "steps": trainer.step, "seconds": round(time.time() - t0, 1),
        "grader": trainer.grader.counts, "precision": record["precision"], "sandbox": trainer.grader.mechanism,
        "loss_forward": spec["train"].get("loss_forward", "transformers"),
        "device": record["device"], "generation": record["generation"], "provenance": record["provenance"],
    })
    io.share_modes(out_dir)  # safetensors and peft write as they please
    if snapshots:
        publish_snapshots(ckpt_dir / "snapshots", Path(snapshots), spec["train"].get("snapshot_every"), total)
    io.write_json(ckpt_dir / "resume_key.json", {**key, "finished": True})
    return 0
