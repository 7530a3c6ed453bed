"""Benchmark: milliseconds per sandboxed test run, measured side by side.

Prints, for each row, the median and mean wall-clock milliseconds of one
`run_tests` call with one test (goal: at most 40 ms for the toy program on the
2-core machine; the root-only util-linux sandbox this replaced took 30-36 ms):
  * toy program, bwrap      a toy_code reference program (the default's grading path);
  * bare interpreter        `python3 -I -c pass` started directly, no sandbox: the floor;
  * toy program, rlimits    the same program with rlimits alone (no isolation);
  * killed hostile programs, bwrap: a CPU spinner, a fork bomb, a memory hog of
    forked children and a process that sleeps past the wall clock, each stopped by
    its limit, at the toy limits (CPU 1 s, wall 3 s, memory 256 MB).
Rows alternate run by run, so machine load hits them alike: read the ratios.

    python benchmarks/sandbox_speed.py [--runs 40]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from agon.data import toy_code  # noqa: E402
from agon.verify import sandbox  # noqa: E402
from agon.verify.grading import TOY_LIMITS  # noqa: E402

HOSTILE = {
    "spinner (CPU limit)": "while True:\n    pass",
    "fork bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    "forked memory hog": ("import os, time\nfor _ in range(8):\n    if os.fork() == 0:\n"
                          "        b = bytearray(64 << 20)\n        time.sleep(9)\ntime.sleep(9)"),
    "sleeper (wall clock)": "import time\ntime.sleep(60)",
}


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs per fast row (hostile rows: a quarter)")
    args = parser.parse_args()
    problem = toy_code.generate(1, 7)[0]
    program, test = toy_code.parse(problem["prompt"]).program, problem["tests"][:1]
    bwrap, rlimits = sandbox.SandboxConfig(), sandbox.SandboxConfig(isolation="rlimits")
    python = sandbox._python("python3")
    print(f"mechanism: {sandbox.check(bwrap).describe()}")
    sandbox.check(rlimits)

    def toy(config):
        result = sandbox.run_tests(program, test, TOY_LIMITS, config=config)
        assert result.passed, result.details

    fast = {"toy program, bwrap": lambda: toy(bwrap),
            "bare interpreter (no sandbox)": lambda: subprocess.run([python, "-I", "-c", "pass"], check=True),
            "toy program, rlimits": lambda: toy(rlimits)}
    times = {name: [] for name in fast}
    for _ in range(args.runs):
        for name, fn in fast.items():
            times[name].append(timed(fn))
    for name, code in HOSTILE.items():
        times[name] = []
        for _ in range(max(2, args.runs // 4)):
            report = None

            def hostile():
                nonlocal report
                report = sandbox.run_tests(code, [{"input": "", "output": ""}], TOY_LIMITS, config=bwrap).details[0]

            times[name].append(timed(hostile))
        times[name + f" -> {report.outcome.value}"] = times.pop(name)
    floor = statistics.median(times["bare interpreter (no sandbox)"])
    print(f"{'row':44} {'median ms':>10} {'mean ms':>9} {'x bare':>7}")
    for name, ms in times.items():
        print(f"{name:44} {statistics.median(ms):10.1f} {statistics.mean(ms):9.1f} "
              f"{statistics.median(ms) / floor:7.2f}")


if __name__ == "__main__":
    main()
