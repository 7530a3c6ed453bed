"""scripts/job_times.py: a run's time by rule, read from Snakemake's log."""

import importlib.util
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("job_times", Path(__file__).resolve().parents[1] / "scripts" / "job_times.py")
job_times = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(job_times)

LOG = """Provided cores: 2
[Wed Dec  2 03:53:31 2026]
localrule prepare:
    jobid: 2
    resources: tmpdir=/tmp
[Wed Dec  2 03:53:31 2026]
rule base:
    jobid: 0
    threads: 2
[Wed Dec  2 03:53:33 2026]
Finished jobid: 2 (Rule: prepare)
[Wed Dec  2 03:53:33 2026]
rule train:
    jobid: 5
    threads: 1
[Wed Dec  2 04:03:31 2026]
Finished jobid: 0 (Rule: base)
[Wed Dec  2 04:03:40 2026]
Finished job 5.
[Wed Dec  2 04:03:41 2026]
rule evaluate:
    jobid: 7
"""


def test_each_job_runs_from_its_start_to_its_finished_line(tmp_path, capsys):
    jobs, cores, first, last = job_times.parse(LOG.splitlines())
    assert cores == 2 and (last - first).total_seconds() == 610
    seconds = {job["rule"]: (job["end"] - job["start"]).total_seconds() for job in jobs.values() if job["end"]}
    assert seconds == {"prepare": 2, "base": 600, "train": 607}
    assert jobs[0]["threads"] == 2 and jobs[2]["threads"] == 1 and jobs[7]["end"] is None  # evaluate unfinished
    (tmp_path / "run.log").write_text(LOG)
    job_times.main([str(tmp_path / "run.log")])
    out = capsys.readouterr().out
    assert "3 finished jobs of 4" in out
    assert out.index("base") < out.index("train") < out.index("prepare")  # most core-seconds first
    assert "jobs 1809 core-seconds" in out  # 2 x 600 + 607 + 2


def test_a_log_without_a_finished_job_says_so(tmp_path):
    (tmp_path / "run.log").write_text("Provided cores: 2\n")
    with pytest.raises(SystemExit, match="no finished job"):
        job_times.main([str(tmp_path / "run.log")])


def test_a_missing_log_is_named_and_help_prints_the_usage(tmp_path, capsys):
    with pytest.raises(SystemExit, match="no-such.log: no such log file"):
        job_times.main([str(tmp_path / "no-such.log")])
    job_times.main(["--help"])
    assert "python scripts/job_times.py" in capsys.readouterr().out
