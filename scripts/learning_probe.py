"""Does RL learn? One training cell of the default, read on its training curve and on validation.

    python scripts/learning_probe.py [--config config/config.yaml] [--run results/toy] [--method grpo] [--seed 0]
        [--set train.KEY=VALUE | sampling.KEY=VALUE | method.KEY=VALUE ...] [--precision P]
        [--metrics FILE] [--gradient-agreement]

A development tool, not a pipeline step, behind the default's `train` settings
(docs/measurements.md, "RL that learns (2026-12-05)"). It reads the run's base and splits (run the
default, or at least its `base` and `prepare` jobs, first) and uses the default's `train`
and `sampling.train` settings with each `--set` applied on top (YAML values: `--set
train.epochs=4`; `sampling.KEY` sets training's sampling: the base's rates and validation
always sample with `sampling.eval`; `method.KEY` sets the method's own, e.g. `--set
method.group_size=8`). On one thread:

1. the base's pass rate on every training problem (32 samples each, kept in
   <run>/probe/base_pass_rates_<precision>.json), so that each step's training pass rate can be read
   against the same problems untrained: a step's *lift* is its pass rate minus the base's on
   its problems, which takes the problems' difficulty out of the curve;
2. the cell trained (agon's own Trainer, one process), its lift per sixth of the run for each
   stream that answers the plain prompt (GRPO's policy, a pair's drafters), and every stream's
   training pass rate, reward and (a challenger's) conversion rate per sixth; `--metrics`
   keeps the run's per-step metrics.jsonl there;
3. the validation split, 8 samples a problem, by the base and by the trained adapter A, with
   the paired difference and its standard error (problems as units).

With `--gradient-agreement` it trains nothing: it computes the adapter's gradient on each of
the first 12 steps' batches at the untrained adapter and prints the mean cosine between
different batches' gradients (with its standard error). Near 0, the batches agree on no
direction: each step's update is the batch's noise; above 0, they share one to follow.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))  # grpo_probe.toy_trainer

BASE_SAMPLES, VALIDATION_SAMPLES, AGREEMENT_STEPS = 32, 8, 12


def lift_by_part(records: list[dict], order: list[dict], per_step: int, base: dict, stream: str,
                 parts: int = 6) -> list[float | None]:
    """The mean lift (pass rate minus the base's on the same problems) of `stream` per part of the run."""
    lifts = []
    for record in records:
        stats = record["streams"].get(stream)
        if stats is None:
            continue
        problems = order[record["step"] * per_step:(record["step"] + 1) * per_step]
        untrained = sum(base[p["id"]] for p in problems) / len(problems)
        lifts.append((record["step"], stats["pass_rate"] - untrained))
    total = len(records)
    out = []
    for k in range(parts):
        values = [v for step, v in lifts if k * total // parts <= step < (k + 1) * total // parts]
        out.append(sum(values) / len(values) if values else None)
    return out


def apply_settings(items: list[str], sections: dict[str, dict]) -> None:
    """Each `SECTION.KEY=VALUE` of `items` into sections[SECTION] (VALUE read as YAML)."""
    import yaml

    for item in items:
        key, equals, value = item.partition("=")
        section, _dot, name = key.partition(".")
        if section not in sections or not name or not equals:
            raise SystemExit(f"--set {item!r}: expected train.KEY=VALUE, sampling.KEY=VALUE (training's sampling) "
                             "or method.KEY=VALUE")
        sections[section][name] = yaml.safe_load(value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "config" / "config.yaml"), help="the run's config (its toy model's)")
    ap.add_argument("--run", default=str(ROOT / "results" / "toy"))
    ap.add_argument("--method", default="grpo")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], metavar="train.KEY=VALUE | sampling.KEY=VALUE | method.KEY=VALUE")
    ap.add_argument("--precision", choices=("auto", "bf16", "fp32"), default=None,
                    help="the job's precision (default: the config's); the base's rates are kept per precision")
    ap.add_argument("--metrics", help="keep the run's per-step metrics here (a jsonl file)")
    ap.add_argument("--gradient-agreement", action="store_true")
    args = ap.parse_args()

    import numpy as np
    import torch
    from grpo_probe import toy_trainer

    from agon import io
    from agon.config import load
    from agon.rl.trainer import StepContext

    cfg = load(args.config)
    run = Path(args.run)
    data = run / "data" / cfg["models"]["toy"]["train_data"]
    train, sampling = dict(cfg["train"]), dict(cfg["sampling"]["train"])
    evaluation = dict(cfg["sampling"]["eval"])  # the base's rates and validation: never changed by --set
    if args.precision:
        cfg["precision"] = args.precision
    if args.method not in cfg["methods"]:
        raise SystemExit(f"--method {args.method!r}: not a method of {args.config}; known: {sorted(cfg['methods'])}")
    method = cfg["methods"][args.method] = dict(cfg["methods"][args.method])
    apply_settings(args.set, {"train": train, "sampling": sampling, "method": method})
    trainer, fmt = toy_trainer(cfg, run, train, sampling, args.method, args.seed)
    problems = io.read_jsonl(data / "train.jsonl")
    per_step = train["problems_per_step"]

    if args.gradient_agreement:
        params = trainer.policies.parameters(trainer.adapters[0])
        grads = []
        for step in range(AGREEMENT_STEPS):
            trainer.step = step
            ctx = StepContext(trainer.policies, trainer.backend, fmt, trainer.grader, trainer.method, sampling,
                              train["lam"], step, args.seed, trainer.adapters)
            for stream in trainer.method_fn(ctx, problems[step * per_step:(step + 1) * per_step]):
                if stream.adapter == trainer.adapters[0]:
                    trainer._stream_loss(stream)
            trainer._update_probes = []
            grads.append(torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in params]))
            for p in params:
                p.grad = None
        unit = torch.nn.functional.normalize(torch.stack(grads), dim=1)
        cosines = (unit @ unit.T)[~torch.eye(len(grads), dtype=torch.bool)]
        print(f"{args.set or 'the default'}: mean cosine between {AGREEMENT_STEPS} batches' gradients "
              f"{float(cosines.mean()):+.4f} (standard error {float(cosines.std() / len(cosines) ** 0.5):.4f})")
        return

    rates_path = run / "probe" / f"base_pass_rates_{trainer.precision}.json"
    if not rates_path.exists():
        rates = {}
        for start in range(0, len(problems), 16):
            chunk = problems[start:start + 16]
            done = trainer.backend.sample(None, [fmt.plain(p) for p in chunk for _ in range(BASE_SAMPLES)],
                                          evaluation, 777 + start)
            for j, p in enumerate(chunk):
                own = done[j * BASE_SAMPLES:(j + 1) * BASE_SAMPLES]
                rates[p["id"]] = sum(trainer.grader(p, c)[0] for c in own) / BASE_SAMPLES
        io.write_json(rates_path, rates)
    rates = io.read_json(rates_path)

    with tempfile.TemporaryDirectory() as scratch:
        metrics = Path(args.metrics) if args.metrics else Path(scratch) / "metrics.jsonl"
        metrics.unlink(missing_ok=True)
        records = trainer.fit(problems, metrics, Path(scratch) / "checkpoint.pt", log=lambda _: None)
    order, _ = trainer.plan(problems)
    print(f"{args.method}, seed {args.seed}, {args.set or 'the default'}: {len(records)} steps")
    for stream in dict.fromkeys(k for r in records for k in r["streams"]):
        if stream.split(":")[0] in ("policy", "drafter"):
            parts = lift_by_part(records, order, per_step, rates, stream)
            print(f"  {stream} training pass rate minus the base's, per sixth: "
                  + " ".join("   n/a" if v is None else f"{v:+.3f}" for v in parts))
        for key in ("pass_rate", "reward", "conversion_rate"):
            parts = [[r["streams"][stream][key] for r in records[k * len(records) // 6:(k + 1) * len(records) // 6]
                      if r["streams"].get(stream, {}).get(key) is not None] for k in range(6)]
            if any(parts):
                print(f"  {stream} {key} per sixth: "
                      + " ".join(f"{sum(v) / len(v):.3f}" if v else "  n/a" for v in parts))

    validation = io.read_jsonl(data / "validation.jsonl")
    repeated = [p for p in validation for _ in range(VALIDATION_SAMPLES)]

    def right(adapter):
        done = trainer.backend.sample(adapter, [fmt.plain(p) for p in repeated], evaluation, 4242)
        return np.array([trainer.grader(p, c)[0] for p, c in zip(repeated, done)])

    untrained, trained = right(None), right(trainer.adapters[0])
    per_problem = (trained - untrained).reshape(len(validation), VALIDATION_SAMPLES).mean(1)
    print(f"  validation, {VALIDATION_SAMPLES} samples a problem: base {untrained.sum()}/{len(repeated)}, "
          f"adapter {trainer.adapters[0]} {trained.sum()}/{len(repeated)}, difference {per_problem.mean():+.4f} "
          f"(standard error {per_problem.std(ddof=1) / len(validation) ** 0.5:.4f})")


if __name__ == "__main__":
    main()
