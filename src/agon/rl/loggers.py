"""Optional per-step loggers of a training cell: TensorBoard and Weights & Biases.

Off by default; config `loggers:` turns them on (both may be on):

    loggers:
      tensorboard: true                  # event files under results/<run>/tensorboard/<model>/<method>/seed<s>/
      wandb: {project: agon, mode: offline}   # any wandb.init keyword; offline needs no network

Each cell logs under one run name, `<run>/<model>/<method>/seed<s>`, tagged with the
config hash and the seed. The scalars are exactly the cell's metrics.jsonl record of
the step (`scalars`): lr, seconds, grad_norm/<adapter>, <role>:<adapter>/<metric>.
A logger whose package is missing, or that fails to start or to write, prints one
line saying what to install or what failed and is switched off: it never stops a
training job. metrics.jsonl stays the record the pipeline reads; the loggers only show it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

KNOWN = ("tensorboard", "wandb")


def scalars(record: dict) -> dict[str, float]:
    """A metrics.jsonl step record as flat scalar tags (numbers only; the step is the x axis)."""
    out = {}
    for key in ("lr", "seconds"):
        if isinstance(record.get(key), (int, float)):
            out[key] = float(record[key])
    for adapter, norm in (record.get("grad_norm") or {}).items():
        out[f"grad_norm/{adapter}"] = float(norm)
    for stream, stats in (record.get("streams") or {}).items():
        for name, value in stats.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[f"{stream}/{name}"] = float(value)
    return out


class TensorBoard:
    """torch.utils.tensorboard's SummaryWriter (needs the `tensorboard` package)."""

    def __init__(self, log_dir: Path, run_name: str, tags: dict, resume_step: int):
        from torch.utils.tensorboard import SummaryWriter  # raises ImportError without tensorboard

        # purge_step: a resumed run drops what the killed one logged after its checkpoint
        self.writer = SummaryWriter(log_dir=str(log_dir), purge_step=resume_step or None)
        self.writer.add_text("run", f"{run_name} " + " ".join(f"{k}={v}" for k, v in sorted(tags.items())), 0)

    def log(self, step: int, values: dict[str, float]) -> None:
        for tag, value in values.items():
            self.writer.add_scalar(tag, value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class Wandb:
    """Weights & Biases (needs the `wandb` package; `mode: offline` writes locally)."""

    def __init__(self, options: dict, log_dir: Path, run_name: str, tags: dict):
        import wandb  # raises ImportError when absent

        kwargs = {"dir": str(log_dir), "name": run_name, "tags": [f"{k}={v}" for k, v in sorted(tags.items())],
                  "config": tags, **options}
        self.run = wandb.init(**kwargs)

    def log(self, step: int, values: dict[str, float]) -> None:
        self.run.log(values, step=step)

    def close(self) -> None:
        self.run.finish()


INSTALL = {"tensorboard": "pip install tensorboard", "wandb": "pip install wandb (and `wandb login`, or "
                                                           "loggers.wandb.mode: offline)"}


class Loggers:
    """The cell's enabled loggers behind one `log(step, record)`; each one that fails is dropped."""

    def __init__(self, config: dict | None, log_dir: Path, run_name: str, tags: dict, resume_step: int = 0,
                 warn: Callable[[str], None] = print):
        self.active: dict[str, object] = {}
        self.warn = warn
        for name, options in (config or {}).items():
            if name not in KNOWN:
                warn(f"loggers.{name}: unknown logger, ignored (known: {', '.join(KNOWN)})")
                continue
            if not options:
                continue
            try:
                if name == "tensorboard":
                    self.active[name] = TensorBoard(Path(log_dir) / "tensorboard", run_name, tags, resume_step)
                else:
                    self.active[name] = Wandb(options if isinstance(options, dict) else {}, Path(log_dir),
                                              run_name, tags)
            except ImportError as e:
                warn(f"loggers.{name}: off: {e.name or name} is not installed ({INSTALL[name]})")
            except Exception as e:  # a logger never stops training
                warn(f"loggers.{name}: off: could not start ({type(e).__name__}: {e})")

    def log(self, record: dict) -> None:
        values = scalars(record)
        for name, logger in list(self.active.items()):
            try:
                logger.log(int(record["step"]), values)
            except Exception as e:
                self.warn(f"loggers.{name}: off: logging step {record['step']} failed ({type(e).__name__}: {e})")
                self.active.pop(name)

    def close(self) -> None:
        for name, logger in self.active.items():
            try:
                logger.close()
            except Exception as e:
                self.warn(f"loggers.{name}: closing failed ({type(e).__name__}: {e})")
        self.active = {}
