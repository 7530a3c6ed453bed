"""Resuming a training run: a checkpoint read back as plain data, and SIGTERM handed to a
callback instead of ending the process (the trainer's: finish the step, checkpoint, stop)."""

from __future__ import annotations

import signal
import threading

import torch


def read_checkpoint(path) -> dict:
    """A training checkpoint as data: tensors, numbers, strings and containers only.

    torch's weights-only unpickler (torch >= 2.6, its `torch.load` default) refuses any other
    object instead of running its code: on a shared filesystem, whoever can write a results
    directory could otherwise run code in the next job that resumes from it. What
    `Trainer.save_checkpoint` writes (adapter tensors, AdamW's and LambdaLR's state dicts, the
    step) needs no allow-list."""
    try:
        return torch.load(path, weights_only=True, map_location="cpu")  # copied onto the model's device
    except Exception as e:  # a refused object (UnpicklingError) or a damaged file (anything the unpickler raises)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{path}: not a checkpoint this trainer wrote, or damaged: refused to load it "
                         f"({first}); delete it to train that cell from step 0") from None


def on_sigterm(callback):
    """Call `callback` on SIGTERM instead of dying; returns a function that restores the old handler.

    Only the main thread may set signal handlers; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: callback())
    return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
