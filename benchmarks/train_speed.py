"""Benchmark: a training step of GRPO and of Agon, this working tree beside an older commit.

Prints seconds per training problem and peak memory of each method in each precision, for the
working tree and for `--baseline` (a commit, checked out into a temporary git worktree), and
their ratios: working tree / baseline per method and precision (a cheaper step is below 1),
Agon / GRPO per tree (goal: at most 1.2x) and the pair's peak memory over the single
adapter's (goal: at most 1.05x). Each measurement is its own fresh process (peak RSS is its
own), 1 thread, on the same base, the same problems and the same rollouts per problem (GRPO
G = 16; Agon N = 8 drafts + 8 challenges); the trees alternate within each round and each
figure is the best of `--rounds`, so machine load drifts over both alike. A step's time is
the trainer's own `seconds` of each step after the first (which warms caches up).

    python benchmarks/train_speed.py --baseline 77c8f99 [--precision fp32 bf16] [--rounds 3] [--steps 6]

Without --baseline only the working tree is measured. `--variants` adds the default's
speed-up over fp32 + SDPA + transformers' generate, and the compact loss pass's over
transformers + peft under autocast (working tree only). It runs the search world's step
(config/search.yaml: its problems and its pinned base, models/toy, by default), which older
commits can run too. Numbers vary with machine load: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

METHODS = {
    "grpo": {"kind": "grpo", "group_size": 16},
    "agon": {"kind": "pair", "group_size": 8, "mode": "adv", "exchange": "visible", "roles": "rotate"},
}


def run_one(base: str, method: str, steps: int, problems_per_step: int, precision_name: str,
            attn: str, sampler: str, loss_forward: str) -> dict:
    """Train `steps` steps of one method in this process (the `agon` on sys.path); report time and peak RSS."""
    import torch

    from agon.config import load
    from agon.data import toy_math
    from agon.jobs import Job
    from agon.jobs.train import trainer_for

    torch.set_num_threads(1)
    # the search world's step (its problems, cap and base, models/toy): the workload these ratios
    # were first measured on, which every commit since 77c8f99 can run; the default's world is newer
    cfg = load(ROOT / "config" / "search.yaml")
    train = {**cfg["train"], "problems_per_step": problems_per_step, "max_steps": steps,
             "checkpoint_every": 10**6, "loss_forward": loss_forward}
    job = Job({"base_path": base, "prompt_style": "toy", "attn_implementation": attn, "device": "cpu",
               "generation": {"backend": sampler}, "precision": precision_name, "train": train,
               "method": METHODS[method], "sampling": cfg["sampling"]["train"], "seed": 0}, "benchmark")
    resolved = job.precision
    trainer = trainer_for(job, *job.load())
    problems = toy_math.generate(steps * problems_per_step, 123, levels=cfg["datasets"]["toy_math"]["options"]["levels"])
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryDirectory() as tmp:
        history = trainer.fit(problems, Path(tmp) / "m.jsonl", Path(tmp) / "c.pt", log=lambda *_: None)
    timed = history[1:] or history
    return {"method": method, "precision": resolved, "attn": attn,
            "sampler": sampler, "loss_forward": loss_forward,
            "seconds_per_problem": sum(r["seconds"] for r in timed) / (len(timed) * problems_per_step),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_before_training_mb": rss_before / 1024, "adapters": list(trainer.adapters)}


def measure(src: Path, base: str, method: str, steps: int, problems_per_step: int, precision_name: str,
            attn: str = "eager", sampler: str = "compact", loss_forward: str = "compact") -> dict:
    """`run_one` in a fresh process that imports the `agon` package under `src`."""
    out = subprocess.run([sys.executable, __file__, "--one", method, "--src", str(src), "--base", base,
                          "--steps", str(steps), "--problems-per-step", str(problems_per_step),
                          "--precision", precision_name, "--attn", attn, "--sampler", sampler,
                          "--loss-forward", loss_forward],
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{method} ({precision_name}) under {src} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def worktree(commit: str, into: Path) -> Path:
    """`commit` checked out at `into` (a detached git worktree; removed by `drop_worktree`)."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(into), commit], check=True)
    return into


def drop_worktree(path: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=str(ROOT / "models" / "toy"), help="a toy base (default: the pinned one)")
    ap.add_argument("--baseline", help="a commit to measure beside the working tree (git worktree)")
    ap.add_argument("--precision", nargs="+", default=["auto"], help="auto | bf16 | fp32, one or more")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; each figure is the best")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--problems-per-step", type=int, default=8)
    ap.add_argument("--variants", action="store_true",
                    help="also: fp32 + SDPA + transformers' generate, and the transformers + peft loss pass")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one method, print JSON
    ap.add_argument("--src", default=str(ROOT / "src"), help=argparse.SUPPRESS)
    ap.add_argument("--attn", default="eager", help=argparse.SUPPRESS)
    ap.add_argument("--sampler", default="compact", help=argparse.SUPPRESS)
    ap.add_argument("--loss-forward", default="compact", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        sys.path.insert(0, args.src)
        print(json.dumps(run_one(args.base, args.one, args.steps, args.problems_per_step, args.precision[0],
                                 args.attn, args.sampler, args.loss_forward)))
        return
    if not (Path(args.base) / "config.json").exists():
        raise SystemExit(f"no toy base at {args.base}: pass --base (e.g. results/toy/models/toy/base)")
    tmp = Path(tempfile.mkdtemp(prefix="train_speed_"))
    trees = {"working tree": ROOT / "src"}
    if args.baseline:
        trees = {args.baseline: worktree(args.baseline, tmp / "baseline") / "src", **trees}
    best: dict[tuple, dict] = {}
    try:
        for _ in range(args.rounds):
            for precision_name in args.precision:
                for method in METHODS:
                    for tree, src in trees.items():
                        r = measure(src, args.base, method, args.steps, args.problems_per_step, precision_name)
                        key = (tree, method, precision_name)
                        if key not in best or r["seconds_per_problem"] < best[key]["seconds_per_problem"]:
                            best[key] = {**r, "peak_rss_mb": min(r["peak_rss_mb"], best.get(key, r)["peak_rss_mb"])}
        variants = []
        if args.variants:
            precision_name = args.precision[0]
            variants = [measure(ROOT / "src", args.base, "grpo", args.steps, args.problems_per_step, "fp32",
                                "sdpa", "transformers", "transformers"),
                        measure(ROOT / "src", args.base, "grpo", args.steps, args.problems_per_step,
                                precision_name, loss_forward="transformers")]
    finally:
        if args.baseline:
            drop_worktree(tmp / "baseline")
    print(f"{'tree':14} {'method':6} {'precision':9} {'s/problem':>10} {'peak RSS MB':>12}   (best of {args.rounds})")
    for (tree, method, precision_name), r in best.items():
        print(f"{tree:14} {method:6} {r['precision']:9} {r['seconds_per_problem']:10.3f} {r['peak_rss_mb']:12.1f}")
    for precision_name in args.precision:
        for tree in trees:
            g, a = best[(tree, "grpo", precision_name)], best[(tree, "agon", precision_name)]
            time_ratio = a["seconds_per_problem"] / g["seconds_per_problem"]
            print(f"{tree:14} {g['precision']:5} Agon / GRPO = {time_ratio:.2f}x (goal <= 1.20x)   "
                  f"memory pair / single = {a['peak_rss_mb'] / g['peak_rss_mb']:.3f}x (goal <= 1.05x)")
        if args.baseline:
            for method in METHODS:
                new, old = best[("working tree", method, precision_name)], best[(args.baseline, method, precision_name)]
                print(f"{method:6} {new['precision']:5} working tree / {args.baseline} = "
                      f"{new['seconds_per_problem'] / old['seconds_per_problem']:.2f}x time, "
                      f"{new['peak_rss_mb'] / old['peak_rss_mb']:.3f}x memory")
    if variants:
        g = best[("working tree", "grpo", args.precision[0])]
        slow, peft_loss = variants
        print(f"speed-up of {g['precision']}+eager+compact over fp32+sdpa+transformers (GRPO) = "
              f"{slow['seconds_per_problem'] / g['seconds_per_problem']:.2f}x")
        print(f"speed-up of the compact loss pass over transformers + peft (GRPO step, same sampler) = "
              f"{peft_loss['seconds_per_problem'] / g['seconds_per_problem']:.2f}x")


if __name__ == "__main__":
    main()
