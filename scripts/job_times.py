"""Where a Snakemake run's time went: each job's wall seconds from the run's log, summed by rule.

    python scripts/job_times.py [.snakemake/log/<run>.snakemake.log]   (default: the newest log)

Prints, per rule: jobs, wall seconds (sum, min, max) and core-seconds (wall x the job's
threads), then the run's wall time and the core-seconds against what its cores could do in
that time (how well the jobs packed). A job's time runs from the line that starts it to its
"Finished job N." line, so it includes the process's imports and startup.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
THREADS = re.compile(r"^\s+threads: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)|^Finished job (\d+)\.")
CORES = re.compile(r"^Provided cores: (\d+)$")


def parse(lines):
    """(jobs {jobid: {rule, threads, start, end}}, cores, first stamp, last stamp) of one log."""
    jobs, stamp, current, cores, first = {}, None, None, None, None
    for line in lines:
        line = line.rstrip("\n")
        if m := STAMP.match(line):
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            first = first or stamp
        elif m := RULE.match(line):
            current = {"rule": m.group(1), "threads": 1, "start": stamp, "end": None}
        elif (m := JOBID.match(line)) and current is not None:
            jobs[int(m.group(1))] = current
        elif (m := THREADS.match(line)) and current is not None:
            current["threads"] = int(m.group(1))
        elif m := FINISHED.match(line):
            job = jobs.get(int(m.group(1) or m.group(2)))
            if job is not None:
                job["end"] = stamp
            current = None
        elif m := CORES.match(line):
            cores = int(m.group(1))
    return jobs, cores, first, stamp


def main(argv: list[str]) -> None:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    if argv:
        path = Path(argv[0])
        if not path.is_file():
            sys.exit(f"job_times: {path}: no such log file")
    else:
        logs = sorted(Path(".snakemake/log").glob("*.snakemake.log"))
        if not logs:
            sys.exit("job_times: no .snakemake/log/*.snakemake.log here; name a log")
        path = logs[-1]
    jobs, cores, first, last = parse(path.read_text().splitlines())
    done = [j for j in jobs.values() if j["end"] is not None and j["start"] is not None]
    if not done:
        sys.exit(f"job_times: {path}: no finished job")
    by_rule = defaultdict(list)
    for job in done:
        by_rule[job["rule"]].append(job)
    print(f"{path}: {len(done)} finished jobs of {len(jobs)}")
    print(f"{'rule':<18}{'jobs':>5}{'wall s':>9}{'min':>6}{'max':>6}{'core-s':>9}")
    stats = []  # (core-seconds, rule, wall seconds of each job)
    for rule, rows in by_rule.items():
        walls = [(j["end"] - j["start"]).total_seconds() for j in rows]
        stats.append((sum(w * j["threads"] for w, j in zip(walls, rows)), rule, walls))
    for core, rule, walls in sorted(stats, key=lambda s: -s[0]):
        print(f"{rule:<18}{len(walls):>5}{sum(walls):>9.0f}{min(walls):>6.0f}{max(walls):>6.0f}{core:>9.0f}")
    total = sum(core for core, _, _ in stats)
    wall = (last - first).total_seconds()
    packed = f", {total / (wall * cores):.0%} of {cores} cores x {wall:.0f} s" if cores and wall else ""
    print(f"run wall {wall:.0f} s; jobs {total:.0f} core-seconds{packed}")


if __name__ == "__main__":
    main(sys.argv[1:])
