"""Shared loading logic for the real (Hugging Face hub) problem sources.

Every real source (deepmath, gsm8k, math500, codecontests) is read through
`open_rows` (or `load_rows`, its materialised list), which takes the source's
`SourceSpec` and the source's config section (`data.<source>` in the pipeline
config):

    hub_id      hub dataset id (default: the real one, e.g. "openai/gsm8k")
    hub_config  hub config name (default: the source's, e.g. "main"; usually none)
    split       split to read (default: the source's, e.g. "test")
    revision    optional hub revision (commit sha or tag) to pin the data
    cache_dir   optional `datasets` cache directory; with HF_DATASETS_OFFLINE=1
                a cache pre-downloaded on another machine is used without network
    local_path  optional local copy, used INSTEAD of the hub:
                  * a .parquet / .jsonl / .json file: the file is the split
                    (`split` is not consulted);
                  * a directory saved with `Dataset(Dict).save_to_disk`;
                  * any other directory, e.g. a `huggingface-cli download
                    --repo-type dataset` snapshot: read like the hub repo, so
                    files are matched to splits by name (`test-*.parquet`,
                    `data/train-*`); `hub_config` is used when the directory
                    has the hub's README.md (which lists the configs), or as a
                    sub-directory name (gsm8k's `main/`) when it has none.

Every failure -- hub unreachable, local file unreadable, a column missing, no
problems left after a filter -- raises `DataSourceError` (a ValueError) whose
message names the dataset, what went wrong and what to do about it.

`open_rows` keeps the split in Arrow: `Rows.where` filters on a few named
(cheap) columns without reading the others, and iterating yields one row dict
at a time, so a loader whose filters are on such columns (CodeContests:
difficulty, cf_rating, input_file/output_file) turns only the surviving rows'
heavy cells (its tests: GBs in the train split) into Python objects.

`Tally` records how many problems survive each stage (returned to the caller
through the loaders' `counts` argument and logged on the "agon.data" logger).
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, Sized

from . import check_problem
from ..io import stable_hash

log = logging.getLogger("agon.data")

CONFIG_PREFIX = "datasets"  # a source's keys live under datasets.<name>.options
COMMON_KEYS = ("hub_id", "hub_config", "split", "revision", "cache_dir", "local_path")
LOCAL_BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json"}


class DataSourceError(ValueError):
    """A problem source could not be loaded; the message says why and what to do."""


@dataclass(frozen=True)
class SourceSpec:
    """What a loader expects of its dataset."""

    name: str                       # source name and id prefix, e.g. "deepmath"
    hub_id: str                     # the real hub id
    split: str                      # default split
    required: tuple[str, ...]       # columns the loader cannot do without
    optional: tuple[str, ...] = ()  # columns kept when present
    hub_config: str | None = None   # default hub config name
    keys: tuple[str, ...] = ()      # source-specific config keys

    def key(self, key: str = "") -> str:
        """How messages name a config key: "datasets.<source>.options.<key>"."""
        return ".".join(k for k in (CONFIG_PREFIX, self.name, "options" if key else "", key) if k)

    def advice(self) -> str:
        return (f"set {self.key('local_path')} to a local parquet/jsonl copy of "
                f"{self.hub_id!r}, or {self.key('cache_dir')} to a pre-downloaded "
                f"`datasets` cache (with HF_DATASETS_OFFLINE=1)")


def label(spec: SourceSpec, cfg: dict) -> str:
    """How error messages name the dataset, e.g. "gsm8k (openai/gsm8k)"."""
    where = cfg.get("local_path")
    hub_id = cfg.get("hub_id") or spec.hub_id
    return f"{spec.name} ({hub_id}" + (f", local copy {where})" if where else ")")


def check_keys(spec: SourceSpec, cfg: dict) -> None:
    """Warn about config keys the loader does not read (usually typos)."""
    unknown = sorted(set(cfg) - set(COMMON_KEYS) - set(spec.keys))
    if unknown:
        log.warning("%s: ignoring unknown config key(s) %s; known keys: %s",
                    spec.name, unknown, sorted(COMMON_KEYS + spec.keys))


class Rows:
    """The rows of a split, kept in Arrow (a `datasets.Dataset`) until iterated.

    `len()` is the number of rows; `where` narrows them on a few columns without
    reading any other; iterating yields one row dict at a time with the `keep`
    columns only (the spec's required + optional ones present in the data).
    """

    def __init__(self, ds, keep: list[str]):
        self.dataset, self.keep = ds, keep

    def __len__(self) -> int:
        return self.dataset.num_rows

    def where(self, columns: Sequence[str], test: Callable[..., Any]) -> "Rows":
        """The rows for which `test(*cells)` is true, `cells` being the row's values
        of `columns` in that order (None for a column the data lacks, as `row.get`
        gives). Only `columns` are read into Python; the row order is kept."""
        present = [c for c in columns if c in self.dataset.column_names]
        cells = self.dataset.select_columns(present).to_dict() if present else {}
        n = len(self)
        values = [cells.get(c) or [None] * n for c in columns]
        keep = [i for i, v in enumerate(zip(*values) if values else [()] * n) if test(*v)]
        if len(keep) == n:
            return self
        return Rows(self.dataset.select(keep), self.keep)

    def __iter__(self) -> Iterator[dict]:
        yield from self.dataset.select_columns(self.keep)

    def to_list(self) -> list[dict]:
        return self.dataset.select_columns(self.keep).to_list()


def open_rows(spec: SourceSpec, cfg: dict, required: Iterable[str] = ()) -> Rows:
    """The split named by `cfg` (hub or local copy), still in Arrow: see `Rows`.

    Only the spec's required + optional columns are materialised when the rows
    are iterated. `required` adds columns needed by this particular config
    (e.g. a filter's column); a missing required column is an error.
    """
    check_keys(spec, cfg)
    need = list(dict.fromkeys([*spec.required, *required]))
    name = label(spec, cfg)
    ds = _open(spec, cfg, name)
    columns = list(ds.column_names)
    missing = [c for c in need if c not in columns]
    if missing:
        raise DataSourceError(
            f"{name}: missing column(s) {missing} (found {columns}). The data is not in the "
            f"schema of {spec.hub_id!r}; point {spec.key('local_path')} at a copy with "
            f"columns {need}, or drop it to read the hub."
        )
    keep = [c for c in columns if c in need or c in spec.optional]
    log.info("%s: read %d rows", name, ds.num_rows)
    return Rows(ds, keep)


def load_rows(spec: SourceSpec, cfg: dict, required: Iterable[str] = ()) -> list[dict]:
    """`open_rows` as a list of row dicts (every row materialised at once)."""
    return open_rows(spec, cfg, required).to_list()


def _open(spec: SourceSpec, cfg: dict, name: str):
    import datasets

    split = cfg.get("split") or spec.split
    cache_dir = str(cfg["cache_dir"]) if cfg.get("cache_dir") else None
    local = cfg.get("local_path")
    if local:
        return _open_local(spec, cfg, Path(os.path.expanduser(str(local))), split, cache_dir, name)
    hub_id = cfg.get("hub_id") or spec.hub_id
    hub_config = cfg.get("hub_config", spec.hub_config)
    try:
        return datasets.load_dataset(hub_id, hub_config, split=split, cache_dir=cache_dir,
                                     revision=cfg.get("revision"))
    except Exception as e:  # hub/network/cache errors come in many types; all end here
        offline = " (offline mode is on: HF_HUB_OFFLINE/HF_DATASETS_OFFLINE)" \
            if datasets.config.HF_HUB_OFFLINE else ""
        raise DataSourceError(
            f"{name}: could not load split {split!r}"
            + (f" of config {hub_config!r}" if hub_config else "")
            + f" from the Hugging Face hub{offline}: {type(e).__name__}: {e}. "
            f"To fix: {spec.advice()}."
        ) from e


def _open_local(spec: SourceSpec, cfg: dict, path: Path, split: str, cache_dir: str | None, name: str):
    import datasets

    if not path.exists():
        raise DataSourceError(f"{name}: local_path {str(path)!r} does not exist. "
                              f"To fix: {spec.advice()}, or remove local_path to read the hub.")
    try:
        if path.is_file():
            builder = LOCAL_BUILDERS.get(path.suffix.lower())
            if builder is None:
                raise DataSourceError(
                    f"{name}: local_path {str(path)!r} has an unsupported extension; "
                    f"use one of {sorted(LOCAL_BUILDERS)} or a directory.")
            return datasets.load_dataset(builder, data_files={split: str(path)}, split=split,
                                         cache_dir=cache_dir)
        if (path / "dataset_dict.json").exists() or (path / "state.json").exists():
            ds = datasets.load_from_disk(str(path))
            if isinstance(ds, datasets.DatasetDict):
                if split not in ds:
                    raise DataSourceError(f"{name}: {str(path)!r} has no split {split!r} "
                                          f"(splits: {sorted(ds)}); set {spec.key('split')}.")
                ds = ds[split]
            return ds
        hub_config = cfg.get("hub_config", spec.hub_config)
        kwargs: dict[str, Any] = {}
        if hub_config and (path / "README.md").exists():
            kwargs["name"] = hub_config
        elif hub_config and (path / hub_config).is_dir():
            kwargs["data_dir"] = hub_config
        return datasets.load_dataset(str(path), split=split, cache_dir=cache_dir, **kwargs)
    except DataSourceError:
        raise
    except Exception as e:
        raise DataSourceError(
            f"{name}: could not read split {split!r} from local_path {str(path)!r}: "
            f"{type(e).__name__}: {e}. To fix: point {spec.key('local_path')} at a "
            f"parquet/jsonl file (or a hub snapshot directory) of {spec.hub_id!r}."
        ) from e


def value(row: dict, column: str, index: int, name: str, kind: str = "text") -> Any:
    """A required cell: "text" (non-empty string) or "number" (int/float, not NaN).

    A bad cell is an error naming the row, not a silent drop.
    """
    v = row.get(column)
    if kind == "text":
        ok = isinstance(v, str) and v.strip() != ""
    else:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v)
    if not ok:
        raise DataSourceError(
            f"{name}: row {index} has {column}={v!r}, expected a non-empty {kind}; the data "
            f"is not in the source's schema -- fix or drop that row of the local copy.")
    return v


def content_id(prefix: str, text: str) -> str:
    """Stable id from content: `<prefix>-<16 hex of sha256>`, independent of row order."""
    return f"{prefix}-{stable_hash(text)}"


class Tally:
    """Counts problems surviving each stage; a stage that leaves none is an error."""

    def __init__(self, spec: SourceSpec, cfg: dict):
        self.spec, self.cfg = spec, cfg
        self.counts: dict[str, int] = {}

    def stage(self, key: str, items: Sized, what: str) -> Any:
        """Record `len(items)` (a list or `Rows`) under `key`; return `items`."""
        self.counts[key] = len(items)
        if not items:
            raise DataSourceError(
                f"{label(self.spec, self.cfg)}: no problems left after {what} "
                f"(counts so far: {self.counts}). Check the {self.spec.key()} filter "
                f"settings, and that the data is the full split of {self.spec.hub_id!r}.")
        return items

    def finish(self, problems: list[dict], counts: dict | None) -> list[dict]:
        """Dedupe, schema-check, record the final count and log the stages."""
        problems = self.stage("after_dedupe", dedupe(problems, self.spec.name), "removing duplicates")
        for p in problems:
            check_problem(p, self.spec.name)
        self.counts["kept"] = len(problems)
        log.info("%s: %s", self.spec.name, " -> ".join(f"{k}={v}" for k, v in self.counts.items()))
        if counts is not None:
            counts.update(self.counts)
        return problems


def _gold(p: dict) -> str:
    return stable_hash(p.get("answer", p.get("tests")))


def dedupe(problems: list[dict], name: str) -> list[dict]:
    """Collapse problems sharing an id (same prompt), independently of row order.

    Copies with the same gold answer/tests collapse to one (the copy with the
    smallest content hash); copies that disagree on the gold are all dropped,
    since we cannot tell which is right.
    """
    groups: dict[str, list[dict]] = {}
    for p in problems:
        groups.setdefault(p["id"], []).append(p)
    out, conflicts = [], 0
    for pid, group in groups.items():
        if len({_gold(p) for p in group}) > 1:
            conflicts += 1
            continue
        out.append(min(group, key=stable_hash))
    if conflicts:
        log.warning("%s: dropped %d prompt(s) that appear with different gold answers",
                    name, conflicts)
    return out
