"""Where a job starts: one module per job kind (prepare, base, train, evaluate, curve), each with
a `run` that `agon`'s subcommand calls, and `Job` (job.py), the one set-up every train,
evaluate and curve job shares: threads, device and GPU checks, precision, base and tokenizer,
generation backend, grader, and the record written beside the outputs."""

from .job import Job

__all__ = ["Job"]
