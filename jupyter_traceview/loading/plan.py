"""A load's plan, made before a trace is parsed: the files, the cache's hits, how the rest is read.

``tv.load`` (:mod:`.loader`) runs in three steps: this plan, the reading it decides (in this
process, in a pool of worker processes (:mod:`.pool`), or one big file in byte ranges
(:mod:`.split`)), and the assembly of the ranks into a Trace. The plan finds the files
(:func:`find`), reads what the cache holds, and picks how the files left are read from the
JSON they hold (:func:`make_plan`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from ..errors import TraceFormatError, TraceviewWarning, caller_stacklevel
from ..model.classify import Classifier
from ..model.frames import paused_gc
from ..model.rank_data import RankData
from . import cache, pool
from . import prepare as preparing
from .ingest import ReadOptions
from .readers.files import NSYS_SUFFIXES, TraceFile, discover, open_file, trace_format
from .storage import RemotePath, is_url

__all__ = ["ENGINES", "Engine", "Found", "OnError", "Plan", "estimated_json_bytes", "find", "make_plan"]

OnError = Literal["raise", "skip"]
Engine = Literal["auto", "serial", "process", "dask"]
ENGINES = ("auto", "serial", "process", "dask")
#: How a plan reads the files the cache did not hold.
Reading = Literal["serial", "pool", "split"]
#: engine="auto" reads in worker processes above this much (estimated) uncompressed JSON.
PARALLEL_BYTES = 48 * 2**20
#: engine="auto" reads one file alone in byte ranges in worker processes above this much
#: (estimated) uncompressed JSON, on a machine with several cores.
SPLIT_BYTES = 24 * 2**20
#: gzip-compressed Kineto JSON is typically 8-15x smaller than the JSON.
GZIP_RATIO = 10
#: An Nsight SQLite export reads about 4x slower per byte than Kineto JSON (measured).
SQLITE_RATIO = 4


def estimated_json_bytes(files: Sequence[TraceFile]) -> int:
    """The uncompressed JSON ``files`` hold, estimated from their sizes (an Nsight export
    counted as the JSON it takes as long to read)."""
    total = 0
    for f in files:
        name = f.path.name.lower()
        ratio = GZIP_RATIO if name.endswith(".gz") else SQLITE_RATIO if name.endswith(NSYS_SUFFIXES) else 1
        total += f.size * ratio
    return total


@dataclasses.dataclass(frozen=True)
class Found:
    """The trace files a load names, and the ranks it wants."""

    #: The files to read, in the order found (``ranks=`` has left out those of other ranks).
    files: list[TraceFile]
    #: The path as given, or "<n> paths": what errors name.
    source: str
    #: A folder or several paths: a file there that is not a trace is skipped, not an error.
    folder_mode: bool
    #: ``ranks=`` as a set; None for every rank.
    wanted: set[int] | None
    #: The ranks read from the files' heads or names (those ``ranks=`` left out included):
    #: the numbers that ranks without one may not take.
    claimed: set[int]


def find(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    ranks: Iterable[int] | None,
    storage_options: dict[str, Any] | None = None,
) -> Found:
    """The trace files under ``path`` (a file, a folder, a list of them), those of other ranks
    than ``ranks`` left out where a file's rank can be read cheaply; warns of the files
    skipped as not traces."""
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise TraceFormatError(None, "no path given", "Pass a trace file or a folder of rank traces")
    files: list[TraceFile] = []
    skipped_names: list[Path] = []
    for p in paths:
        found, skipped = discover(p, storage_options)
        files += found
        skipped_names += skipped
    if skipped_names:
        listed = ", ".join(s.name for s in skipped_names[:10])
        more = f" and {len(skipped_names) - 10} more" if len(skipped_names) > 10 else ""
        warnings.warn(
            f"skipped {len(skipped_names)} file(s) that are not traces: {listed}{more}",
            TraceviewWarning,
            stacklevel=caller_stacklevel(),
        )
    wanted = None if ranks is None else {int(r) for r in ranks}
    claimed: set[int] = set()
    if wanted is not None:
        # Avoid parsing files of other ranks when the rank can be read cheaply.
        kept = []
        for tf in files:
            r = peek_rank(tf)
            r = tf.name_rank if r is None else r
            if r is not None:
                claimed.add(r)
            if r is None or r in wanted:
                kept.append(tf)
        files = kept
    source = str(paths[0]) if len(paths) == 1 else f"{len(paths)} paths"
    folder_mode = len(paths) > 1 or (
        len(files) > 1 or bool(skipped_names) or str(paths[0]).endswith("/")
        if is_url(paths[0])
        else Path(paths[0]).is_dir()
    )
    return Found(files=files, source=source, folder_mode=folder_mode, wanted=wanted, claimed=claimed)


def peek_rank(tf: TraceFile) -> int | None:
    """The rank in a file's distributedInfo, read from its first MiB only."""
    if trace_format(tf.path) == "nsys":
        return None  # Nsight exports carry no distributedInfo
    try:
        head = _head(tf.path, 2**20)
    except OSError:
        return None
    m = re.search(rb'"distributedInfo"\s*:\s*\{', head)
    if not m:
        return None
    r = re.search(rb'"rank"\s*:\s*(\d+)', head[m.end() :])
    return int(r.group(1)) if r else None


def _head(path: Path, size: int) -> bytes:
    try:
        with open_file(path) as fh:
            start = fh.read(2)
            if start != b"\x1f\x8b":
                return start + fh.read(size - 2)
    except TraceFormatError as exc:
        raise OSError(str(exc)) from None
    import gzip
    import zlib

    with open_file(path) as raw, gzip.open(raw, "rb") as gz:
        try:
            return gz.read(size)
        except (EOFError, OSError, zlib.error):
            return b""


@dataclasses.dataclass
class Plan:
    """What a load reads, and how (:func:`make_plan`)."""

    found: Found
    options: ReadOptions
    classifier: Classifier
    on_error: OnError
    #: The cache's folder; None with ``cache=False``.
    cache_dir: Path | None
    #: File index -> its ranks, read from the cache.
    hits: dict[int, list[RankData]]
    #: File index -> its cache entry (every file, with a cache).
    keys: dict[int, str]
    #: The files left to read, as indices into ``found.files``: in file order, or for a
    #: pool, biggest first (the pool does not end on one big file with the other workers
    #: idle, and the loading process, reading from the end while the pool starts, takes the
    #: smallest).
    todo: list[int]
    reading: Reading
    #: The functions that prepare per-rank results (:mod:`.prepare`) where each file is read.
    preparers: tuple[preparing.PrepareFunction, ...]

    @property
    def files(self) -> list[TraceFile]:
        return self.found.files

    @property
    def cache_arg(self) -> str | None:
        """The cache's folder as the readers (and worker processes) take it."""
        return str(self.cache_dir) if self.cache_dir is not None else None


def make_plan(
    found: Found,
    *,
    options: ReadOptions,
    classifier: Classifier,
    on_error: OnError,
    cache_dir: Path | None,
    engine: Engine,
    prepare: bool | None,
) -> Plan:
    """The cache's hits among ``found.files``, and how the others are read.

    ``engine="auto"`` reads one Kineto file of more than :data:`SPLIT_BYTES` of JSON in
    byte ranges where a pool starts cheaply, several files holding more than
    :data:`PARALLEL_BYTES` in a pool, anything less in this process.
    """
    hits, keys, todo = _cache_hits(found.files, options, cache_dir, classifier)
    json_bytes = estimated_json_bytes([found.files[i] for i in todo])  # what is left to read
    reading: Reading = "serial"
    if len(todo) == 1 and engine in ("auto", "process") and (os.cpu_count() or 1) > 1:
        big = json_bytes > SPLIT_BYTES and pool.starts_cheaply()
        local = not isinstance(found.files[todo[0]].path, RemotePath)  # (an object: read as it streams)
        if local and trace_format(found.files[todo[0]].path) == "kineto" and (engine == "process" or big):
            reading = "split"
    many = engine == "auto" and len(todo) > 1 and json_bytes > PARALLEL_BYTES
    if reading == "serial" and todo and (engine == "process" or many):
        reading = "pool"
        todo = sorted(todo, key=lambda i: -estimated_json_bytes([found.files[i]]))
    preparers: tuple[preparing.PrepareFunction, ...] = ()
    if (
        cache_dir is not None
        and todo
        and prepare is not False
        and (prepare or (reading == "pool" and json_bytes >= preparing.MIN_BYTES))
    ):
        preparers = preparing.prepare_functions()
    return Plan(
        found=found,
        options=options,
        classifier=classifier,
        on_error=on_error,
        cache_dir=cache_dir,
        hits=hits,
        keys=keys,
        todo=todo,
        reading=reading,
        preparers=preparers,
    )


def _cache_hits(
    files: list[TraceFile], options: ReadOptions, cache_dir: Path | None, classifier: Classifier
) -> tuple[dict[int, list[RankData]], dict[int, str], list[int]]:
    """The files the cache holds (index -> ranks), every file's cache entry, the files left to read."""
    hits: dict[int, list[RankData]] = {}
    keys: dict[int, str] = {}
    todo: list[int] = []
    real_dirs: dict[str, str] = {}  # each folder's real path, resolved once for its files
    with paused_gc():  # thousands of small frames kept: see frames.paused_gc
        for i, tf in enumerate(files):
            hit = None
            if cache_dir is not None:
                key = keys[i] = cache.entry_key(tf, options.cache_key_fields(), real_dirs)
                hit = cache.read(cache_dir, key, classifier=classifier)
            if hit is not None:
                hits[i] = hit
            else:
                todo.append(i)
    return hits, keys, todo
