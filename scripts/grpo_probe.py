"""Probe: does one epoch of GRPO lift a toy base's single pass, at a given cap and learning rate?

    python scripts/grpo_probe.py [--run results/search] [--cap 96] [--lr 5e-4] [--lam 0.5] [--seed 0] [--steps N]

A development tool for the search world (config/search.yaml), not a pipeline step: it trains
that config's GRPO cell in this process (agon's own Trainer, the default's `train` and `methods.grpo`, 1 thread) on the
run's base and train split (one epoch, or its first `--steps` steps), with `--cap` as both the training and the evaluation
`max_new_tokens`, `--lr` as the learning rate and `--lam` as the format weight. Then it
samples the held-out split once with the bare base and once with the trained adapter
(the same sampling seed) and prints both pass@1 counts, how many were cut by the cap,
the paired counts (right only with GRPO, right only with the base) and, for level-5
searches, how each searches (first try right, repeated tries, slips). docs/measurements-archive.md,
"The blind-search world (before bisection)", quotes it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def search_habits(problems: list[dict], texts: list[str], habit: str) -> str:
    """How the toy base searches level-5 problems: how often its first try is the answer
    (an uninformed order: 1 in 8), how many completions try a candidate twice, and the
    share of checks with an arithmetic slip (`a*x=P,P+b=S<c` with P, S or the relation wrong), and how
    many completions show the `habit` (a regex on the completion: Table 0's section 6, the
    config's bisection) and how many of those end with the right answer."""
    import re

    from agon import prompts
    from agon.data.toy_math import SEARCH_LEVEL, relation

    first = repeats = slips = checks = searches = habitual = habitual_right = 0
    for problem, text in zip(problems, texts):
        if problem["difficulty"] != SEARCH_LEVEL:
            continue
        searches += 1
        think = text.split("</think>")[0]
        found = re.findall(r"(\d+)\*(\d+)=(\d+),(\d+)\+(\d+)=(\d+)([<=>])(\d+)", think)
        tried = [int(m[1]) for m in found]
        first += bool(tried) and tried[0] == int(problem["answer"])
        repeats += len(set(tried)) < len(tried)
        if re.search(habit, text):
            habitual += 1
            habitual_right += prompts.extract_answer(text) == problem["answer"]
        for a, x, product, copied, b, total, written, c in found:
            a, x, product, copied, b, total, c = map(int, (a, x, product, copied, b, total, c))
            checks += 1
            slips += (a * x != product or copied != product or product + b != total
                      or written != relation(total, c))
    return (f"first try is the answer in {first}/{searches}, a candidate tried twice in {repeats}/{searches}, "
            f"a slip in {slips}/{checks} checks, shows the habit in {habitual}/{searches} (right in {habitual_right})")


def toy_trainer(cfg: dict, run: Path, train: dict, sampling: dict, method: str, seed: int):
    """agon's own Trainer for the default's `method` on the run's toy base, in this process on
    1 thread, with `train` and `sampling` as given: (trainer, prompt format). Shared by the
    development probes (this one and scripts/learning_probe.py)."""
    from agon.jobs import Job
    from agon.jobs.train import trainer_for

    spec = {"attn_implementation": cfg["models"]["toy"].get("attn_implementation"), "prompt_style": "toy",
            "base_path": str(run / "models" / "toy" / "base"), "generation": cfg["generation"],
            "precision": cfg["precision"], "sampling": sampling, "seed": seed, "threads": 1, "device": "cpu",
            "train": train, "method": cfg["methods"][method]}
    job = Job(spec, "probe")
    base, tokenizer, fmt = job.load()
    trainer = trainer_for(job, base, tokenizer, fmt)
    return trainer, fmt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default=str(ROOT / "results" / "search"), help="a search-world run's results folder")
    parser.add_argument("--cap", type=int, default=96, help="max_new_tokens, in training and evaluation")
    parser.add_argument("--lr", type=float, default=None, help="default: the config's train.lr")
    parser.add_argument("--lam", type=float, default=None, help="the format weight; default: the config's train.lam")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps (default: one epoch)")
    args = parser.parse_args()

    from agon import io
    from agon.config import load

    cfg = load(ROOT / "config" / "search.yaml")
    run = Path(args.run)
    sampling = {**cfg["sampling"]["train"], "max_new_tokens": args.cap}
    train = {**cfg["train"], "lr": args.lr if args.lr is not None else cfg["train"]["lr"], "max_steps": args.steps,
             "lam": args.lam if args.lam is not None else cfg["train"]["lam"]}
    trainer, fmt = toy_trainer(cfg, run, train, sampling, "grpo", args.seed)
    heldout = io.read_jsonl(run / "data" / "toy_math" / "heldout.jsonl")
    habit = cfg["tables"]["table0_preconditions"]["habit"]["pattern"]  # one definition: Table 0's

    def solo(adapter):
        completions = trainer.backend.sample(adapter, [fmt.plain(p) for p in heldout], sampling, 12345)
        right = [trainer.grader(p, c)[0] for p, c in zip(heldout, completions)]  # (correct, format)
        print(f"{adapter or 'base'}: {search_habits(heldout, [c.text for c in completions], habit)}")
        return right, sum(c.truncated for c in completions)

    before, cut_before = solo(None)
    start = time.time()
    with tempfile.TemporaryDirectory() as scratch:  # fit's metrics and checkpoint, not kept
        steps = len(trainer.fit(io.read_jsonl(run / "data" / "toy_math" / "train.jsonl"),
                                Path(scratch) / "metrics.jsonl", Path(scratch) / "checkpoint.pt", log=lambda _: None))
    after, cut_after = solo("A")
    n = len(heldout)
    print(f"cap {args.cap}, lr {train['lr']}, lam {train['lam']}, seed {args.seed}: "
          f"{steps} GRPO steps in {time.time() - start:.0f} s")
    print(f"base {sum(before)}/{n} right ({cut_before} cut by the cap); "
          f"GRPO {sum(after)}/{n} right ({cut_after} cut by the cap)")
    print(f"right only with GRPO {sum(a and not b for a, b in zip(after, before))}, "
          f"right only with the base {sum(b and not a for a, b in zip(after, before))}")


if __name__ == "__main__":
    main()
