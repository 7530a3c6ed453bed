"""Preemption, for real: jobs killed mid-run resume from their saved state.

* A training cell whose whole snakemake run is SIGKILLed mid-training resumes
  from its checkpoint and ends with exactly the adapters of an uninterrupted run.
* An evaluation job killed after finishing some records files reuses them.
* `agon train` on SIGTERM (Slurm's warning before it kills a preempted or
  timed-out job) finishes the current step, writes its checkpoint, exits non-zero,
  and the rerun resumes there.

Matrix: tests/data/resume.yaml (config/test.yaml with a 12-step training run).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agon.config import load_yaml, resolve_extends, validate

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "tests" / "data" / "resume.yaml"
pytestmark = pytest.mark.workflow

# The Snakefile resolves `extends:` in config/, whichever file names it.
CFG = validate(resolve_extends(load_yaml(CONFIG), ROOT / "config"), str(CONFIG))
RUN = f"results/{CFG['run']}"
CELL = "toy/agon/seed0"
TOTAL_STEPS = 12  # 6 epochs x 8 train problems / 4 per step
assert CFG["train"]["checkpoint_every"] == 1, "the kill test needs a checkpoint after every step"

# The rules call `agon`: make this interpreter's environment the one they find.
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def snakemake_cmd(workdir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
            "--configfile", str(CONFIG), "--cores", "1", *args]


def snakemake(workdir: Path, *args: str) -> str:
    proc = subprocess.run(snakemake_cmd(workdir, *args), capture_output=True, text=True, timeout=600, env=ENV)
    if proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return proc.stdout + proc.stderr


def kill_when(workdir: Path, target: str, ready, what: str, timeout: float = 300) -> object:
    """Run snakemake on `target` in its own process group; SIGKILL the whole group once
    `ready()` returns something truthy (polled every 20 ms), and return that."""
    out = open(workdir / "killed_run.log", "w")
    proc = subprocess.Popen(snakemake_cmd(workdir, target), stdout=out, stderr=subprocess.STDOUT,
                            env=ENV, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            seen = ready()
            if seen:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
                return seen
            if proc.poll() is not None:
                log = (workdir / "killed_run.log").read_text()[-3000:]
                job_logs = sorted((workdir / RUN / "logs").rglob("*.log"), key=lambda p: p.stat().st_mtime)
                job_log = f"\n{job_logs[-1]}:\n{job_logs[-1].read_text()[-3000:]}" if job_logs else ""
                raise AssertionError(f"snakemake exited ({proc.returncode}) before {what}; "
                                     f"nothing was killed:\n{log}{job_log}")
            time.sleep(0.02)
        raise AssertionError(f"no {what} within {timeout}s")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        out.close()


def checkpoint_step(path: Path) -> int | None:
    import torch

    if not path.exists():
        return None
    return torch.load(path, weights_only=True)["step"]


def adapter_tensors(adapters: Path) -> dict:
    from safetensors.torch import load_file

    files = sorted(adapters.glob("*/adapter_model.safetensors"))
    assert files, f"no adapters under {adapters}"
    return {f.parent.name: load_file(f) for f in files}


def steps_of(metrics: Path) -> list[int]:
    return [json.loads(line)["step"] for line in metrics.read_text().splitlines()]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A work dir holding the splits and the toy base model, shared by the tests."""
    workdir = tmp_path_factory.mktemp("resume")
    snakemake(workdir, f"{RUN}/models/toy/base")
    return workdir


def test_killed_training_resumes_from_its_checkpoint(prepared, tmp_path):
    workdir = prepared
    target = f"{RUN}/train/{CELL}/metrics.jsonl"
    ckpt = workdir / RUN / "checkpoints" / CELL / "checkpoint.pt"

    def mid_run():
        step = checkpoint_step(ckpt)
        return step if step is not None and step >= 2 else None

    seen = kill_when(workdir, target, mid_run, "a checkpoint at step >= 2")
    assert not (workdir / target).exists(), "the training job finished before the kill"
    killed_at = checkpoint_step(ckpt)
    assert seen <= killed_at < TOTAL_STEPS

    # A SIGKILLed snakemake leaves its lock behind: unlock, then rerun what it left incomplete.
    snakemake(workdir, "--unlock")
    snakemake(workdir, target, "--rerun-incomplete")
    log = (workdir / RUN / "logs" / "train" / f"{CELL}.log").read_text()
    resumed = [line for line in log.splitlines() if "resumed from" in line]
    assert len(resumed) == 1 and f"at step {killed_at}/{TOTAL_STEPS}" in resumed[0], log[-3000:]
    metrics = workdir / target
    assert steps_of(metrics) == list(range(TOTAL_STEPS))
    resumed_adapters = adapter_tensors(workdir / RUN / "train" / CELL / "adapters")
    resumed_metrics = [{k: v for k, v in json.loads(line).items() if k != "seconds"}
                       for line in metrics.read_text().splitlines()]

    # The same cell again, uninterrupted. The finished run's checkpoint stays on disk,
    # but a forced rerun must train from step 0, not reload that final state.
    snakemake(workdir, target, "--forcerun", "train")
    log = (workdir / RUN / "logs" / "train" / f"{CELL}.log").read_text()
    assert "resumed from" not in log and "its run had finished; training from step 0" in log, log[-3000:]
    straight = adapter_tensors(workdir / RUN / "train" / CELL / "adapters")
    assert sorted(straight) == sorted(resumed_adapters) == ["A", "B"]
    import torch

    for name, tensors in straight.items():
        assert tensors.keys() == resumed_adapters[name].keys()
        differ = [k for k in tensors if not torch.equal(tensors[k], resumed_adapters[name][k])]
        assert not differ, f"adapter {name}: resumed run differs from an uninterrupted one in {differ[:3]}"
    straight_metrics = [{k: v for k, v in json.loads(line).items() if k != "seconds"}
                        for line in metrics.read_text().splitlines()]
    assert straight_metrics == resumed_metrics


def test_killed_evaluation_reuses_finished_records(prepared):
    workdir = prepared
    target = f"{RUN}/eval/toy/untrained/seed0"
    resume_dir = workdir / RUN / "checkpoints" / "eval" / "toy" / "untrained" / "seed0"

    def some_records():
        # finished records files only: io.write_jsonl renames them into place
        done = sorted(resume_dir.glob("*.jsonl")) if resume_dir.is_dir() else []
        return {p.name: p.read_bytes() for p in done} if done else None

    kill_when(workdir, target, some_records, "a finished records file")
    assert not (workdir / target).exists(), "the evaluation job finished before the kill"
    before = some_records()  # what the killed job left (it may have finished one more file)

    snakemake(workdir, "--unlock")
    snakemake(workdir, target, "--rerun-incomplete")
    log = (workdir / RUN / "logs" / "eval" / "toy" / "untrained" / "seed0.log").read_text()
    out = workdir / target
    for name, data in before.items():
        assert f"reusing {resume_dir.relative_to(workdir) / name}" in log, log[-3000:]
        assert (out / name).read_bytes() == data, f"{name} was recomputed, not reused"
    # complete: every records file has one record per problem of its benchmark, and
    # the job computed the ones the killed job had not finished
    files = sorted(out.glob("*.jsonl"))
    assert len(files) > len(before), "no records file was left to compute after the kill"
    for path in files:
        evaluation, bench = path.name.removesuffix(".jsonl").split(".")
        b = CFG["benchmarks"][bench]
        split = workdir / RUN / "data" / b.get("dataset", "") / f"{b['split']}.jsonl"
        n = len(split.read_text().splitlines())
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert len(records) == n and len({r["id"] for r in records}) == n, path.name
        assert all(r["evaluation"] == evaluation and r["benchmark"] == bench for r in records)
    assert json.loads((out / "provenance.json").read_text())["summary"]
    assert not resume_dir.exists(), "the finished job left its resume state behind"


def test_sigterm_checkpoints_the_current_step_and_fails(prepared, tmp_path):
    """`agon train` on SIGTERM: the step in progress finishes, the checkpoint is written,
    the exit status is non-zero (so Slurm/snakemake retry), and the retry resumes there."""
    workdir = prepared
    # checkpoint_every larger than the run: the only checkpoint is the one SIGTERM writes
    spec = {"base_path": str(workdir / RUN / "models" / "toy" / "base"),
            "prompt_style": CFG["models"]["toy"]["prompt_style"], "method": CFG["methods"]["agon"],
            "train": {**CFG["train"], "checkpoint_every": 1000}, "sampling": CFG["sampling"]["train"],
            "seed": 0, "threads": 1}
    train_data = CFG["models"]["toy"].get("train_data", "")
    train = workdir / RUN / "data" / train_data / "train.jsonl"
    ckpt_dir = tmp_path / "checkpoints"
    cmd = [sys.executable, "-m", "agon.cli", "train", "--spec", json.dumps(spec), "--train", str(train),
           "--out", str(tmp_path / "adapters"), "--metrics", str(tmp_path / "metrics.jsonl"),
           "--checkpoint-dir", str(ckpt_dir)]
    step_log = ckpt_dir / "metrics.jsonl"  # one line per finished step

    with open(tmp_path / "first.log", "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=ENV)
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if step_log.exists() and step_log.read_text().count("\n") >= 1:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "training ended before any step could be interrupted:\n" + \
            (tmp_path / "first.log").read_text()[-3000:]
        finished_before = step_log.read_text().count("\n")
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(120)
    log = (tmp_path / "first.log").read_text()
    assert rc == 143, f"exit status {rc} after SIGTERM:\n{log[-3000:]}"
    step = checkpoint_step(ckpt_dir / "checkpoint.pt")
    assert step is not None, "no checkpoint written on SIGTERM:\n" + log[-3000:]
    # nothing more than the step in progress when the signal came
    assert finished_before <= step <= finished_before + 1 and step < TOTAL_STEPS
    assert steps_of(step_log) == list(range(step))
    assert f"SIGTERM: stopped after step {step}/{TOTAL_STEPS}, checkpoint written" in log
    assert not (tmp_path / "metrics.jsonl").exists() and not (tmp_path / "adapters").exists()

    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=ENV)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert f"resumed from {ckpt_dir / 'checkpoint.pt'} at step {step}/{TOTAL_STEPS}" in log
    assert steps_of(tmp_path / "metrics.jsonl") == list(range(TOTAL_STEPS))
    assert sorted(adapter_tensors(tmp_path / "adapters")) == ["A", "B"]


def test_checkpoint_of_another_spec_is_not_resumed(tmp_path, capsys):
    """A killed run's checkpoint is only resumed by a job of the same spec, train split and base."""
    from agon.jobs.train import check_resume_key

    ckpt_dir = tmp_path / "ckpt"
    ckpt_dir.mkdir()
    key = {"spec": "s1", "train": "t1", "base": "b1", "finished": False}
    (ckpt_dir / "checkpoint.pt").write_bytes(b"state")
    (ckpt_dir / "metrics.jsonl").write_text('{"step": 0}\n')
    (ckpt_dir / "resume_key.json").write_text(json.dumps(key))
    check_resume_key(ckpt_dir, key, print)  # same key: kept
    assert (ckpt_dir / "checkpoint.pt").exists() and (ckpt_dir / "metrics.jsonl").exists()
    check_resume_key(ckpt_dir, {**key, "spec": "s2"}, print)  # e.g. the config's lr changed
    assert not (ckpt_dir / "checkpoint.pt").exists() and not (ckpt_dir / "metrics.jsonl").exists()
    assert "it was written for another spec; training from step 0" in capsys.readouterr().out
    assert json.loads((ckpt_dir / "resume_key.json").read_text())["spec"] == "s2"
    (ckpt_dir / "checkpoint.pt").write_bytes(b"state")
    (ckpt_dir / "resume_key.json").unlink()  # a checkpoint from before resume keys existed
    check_resume_key(ckpt_dir, key, print)
    assert not (ckpt_dir / "checkpoint.pt").exists()
    assert "it has no resume_key.json" in capsys.readouterr().out


def test_a_checkpoint_whose_metrics_have_a_gap_is_not_resumed(prepared, tmp_path):
    """Two steps checkpointed, then step 0's metrics line lost: the rerun refuses to resume
    (it would publish metrics without step 0), naming the file, the step and the fix."""
    workdir = prepared
    spec = {"base_path": str(workdir / RUN / "models" / "toy" / "base"),
            "prompt_style": CFG["models"]["toy"]["prompt_style"], "method": CFG["methods"]["grpo"],
            "train": CFG["train"], "sampling": CFG["sampling"]["train"], "seed": 0, "threads": 1}
    train = workdir / RUN / "data" / CFG["models"]["toy"]["train_data"] / "train.jsonl"
    ckpt_dir = tmp_path / "checkpoints"
    cmd = [sys.executable, "-m", "agon.cli", "train", "--spec", json.dumps(spec), "--train", str(train),
           "--out", str(tmp_path / "adapters"), "--metrics", str(tmp_path / "metrics.jsonl"),
           "--checkpoint-dir", str(ckpt_dir)]
    proc = subprocess.run(cmd + ["--stop-after", "2"], capture_output=True, text=True, timeout=600, env=ENV)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    metrics = ckpt_dir / "metrics.jsonl"
    assert steps_of(metrics) == [0, 1]
    metrics.write_text(metrics.read_text().splitlines(keepends=True)[1])  # step 0's line lost
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=ENV)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"cannot resume from {ckpt_dir / 'checkpoint.pt'}: {metrics}:1: step 0 missing" in proc.stderr
    assert f"Delete {ckpt_dir}" in proc.stderr and not (tmp_path / "adapters").exists()
