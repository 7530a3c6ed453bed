"""How many held-out problems one seed needs to see a lift: the exact McNemar test's power,
from a run's own records.

    python scripts/lift_power.py results/seeds [--a grpo] [--b zero_shot] [--model toy]
                                 [--benchmark heldout] [--n 300 600 800]

Pairs evaluation a's and b's records by problem in every seed of the run, pools the seeds'
discordant problems (one right, the other wrong) and a's share of them, and prints the chance
that a single seed of n problems drawn like these finds a better at p < 0.05
(`agon.evaluate.stats.mcnemar_power`). docs/toy-world.md, "Why 800 held-out problems".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agon.evaluate.stats import mcnemar_exact, mcnemar_power, paired_by_id
from agon.report.tables import index_records


def records_index(run: Path, model: str, evaluations: tuple[str, ...], benchmark: str) -> dict[tuple, list[dict]]:
    """The tables' index, {(model, evaluation, seed, benchmark): records}, of these evaluations'
    files: results/<run>/eval/<model>/<cell>/seed<s>/<evaluation>.<benchmark>.jsonl."""
    files = [str(path) for evaluation in evaluations
             for path in sorted((run / "eval" / model).glob(f"*/seed*/{evaluation}.{benchmark}.jsonl"))]
    return index_records(files)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a run's results folder, e.g. results/seeds")
    parser.add_argument("--a", default="grpo", help="the evaluation expected to be better")
    parser.add_argument("--b", default="zero_shot")
    parser.add_argument("--model", default="toy")
    parser.add_argument("--benchmark", default="heldout")
    parser.add_argument("--n", type=int, nargs="+", default=[300, 600, 800], help="problems per seed")
    args = parser.parse_args(argv)
    index = records_index(args.run, args.model, (args.a, args.b), args.benchmark)
    seeds_of = {e: {s for (m, ev, s, b) in index if (m, ev, b) == (args.model, e, args.benchmark)}
                for e in (args.a, args.b)}
    seeds = sorted(seeds_of[args.a] & seeds_of[args.b])
    if not seeds:
        print(f"lift_power: no seed of {args.run} has records of both {args.a!r} and {args.b!r} on "
              f"{args.benchmark!r} for model {args.model!r}", file=sys.stderr)
        return 2
    problems = wins = losses = 0
    for seed in seeds:
        paired = paired_by_id(index[(args.model, args.a, seed, args.benchmark)],
                              index[(args.model, args.b, seed, args.benchmark)])
        test = mcnemar_exact(paired.a, paired.b)
        problems, wins, losses = problems + test["n"], wins + test["only_a"], losses + test["only_b"]
        print(f"seed {seed}: {test['n']} problems, {args.a} right alone on {test['only_a']}, "
              f"{args.b} alone on {test['only_b']}: {100 * test['diff']:+.1f} pp, p = {test['p_value']:.3g}")
    if wins + losses == 0:
        print("lift_power: no discordant problem in any seed: no lift to size", file=sys.stderr)
        return 2
    rate, share = (wins + losses) / problems, wins / (wins + losses)
    print(f"pooled: discordant {wins + losses}/{problems} ({rate:.3f}), {args.a}'s share {share:.3f}, "
          f"lift {100 * (wins - losses) / problems:+.1f} pp")
    for n in args.n:
        print(f"  n = {n}: a seed finds {args.a} better at p < 0.05 with probability "
              f"{mcnemar_power(n, rate, share):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
