"""Reading one file into rank tables, and the bookkeeping every engine shares.

``tv.load``'s in-process and process-pool engines (:mod:`.loader`) and its dask engine
(:mod:`.dask_engine`) read files with :func:`read_file` (through the cache), number the
ranks that readers could not number, and report what was skipped, with the functions here.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import TraceFormatError, TraceviewWarning, caller_stacklevel
from ..model.classify import Classifier
from ..model.rank_data import RankData, RankMeta, replaced
from ..model.trace import classified
from . import cache as _cache
from .cache_key import ReadOptions
from .readers import kineto
from .readers.common import ARGS_DROPPED, DROPPED, WARNINGS_KEY
from .readers.files import (
    TraceFile,
    inflate_chunks,
    inflate_whole,
    is_compressed,
    out_of_memory,
    read_bytes,
    trace_format,
)
from .readers.jax import parse_jax
from .readers.kineto import parse_kineto
from .readers.nsys import parse_nsys
from .readers.xplane import parse_xplane
from .storage import RemotePath

__all__ = [
    "ReadOptions",
    "SmallFiles",
    "number_unranked",
    "read_file",
    "report_failures",
    "warn_reader_messages",
    "warn_skipped_events",
    "with_rank",
]


def read_file(
    tf: TraceFile, options: ReadOptions, cache_dir: str | None, classifier: Classifier | None = None
) -> list[RankData]:
    """Parse one file, classified by ``classifier`` if given (:func:`~..model.trace.classified`),
    and store it in the cache (the classes with it). Runs in a worker process or inline."""
    got = _read(tf, options, cache_dir, classifier)
    assert not isinstance(got, kineto.Pending)  # (only with defer=True)
    return got


def _read(
    tf: TraceFile, options: ReadOptions, cache_dir: str | None, classifier: Classifier | None, *, defer: bool = False
) -> list[RankData] | kineto.Pending:
    """:func:`read_file`; ``defer``: a small one-rank Kineto file read by the C scanner gives its
    columns instead (:class:`.readers.kineto.Pending`: nothing classified or stored yet). A
    ``MemoryError`` while reading becomes a :class:`TraceFormatError` (:func:`.readers.files.out_of_memory`)."""
    try:
        return _read_within_memory(tf, options, cache_dir, classifier, defer=defer)
    except MemoryError:
        pass  # said below, once the handler's traceback (and the buffers it keeps) is gone
    raise out_of_memory(tf.path, file_bytes=tf.size)


def _read_within_memory(
    tf: TraceFile, options: ReadOptions, cache_dir: str | None, classifier: Classifier | None, *, defer: bool
) -> list[RankData] | kineto.Pending:
    fmt = trace_format(tf.path)
    if fmt == "nsys":
        if isinstance(tf.path, RemotePath):
            raise TraceFormatError(
                tf.path, "is an Nsight Systems export: SQLite reads local files only", "Copy it to a local disk first"
            )
        ranks = parse_nsys(tf.path, name_rank=tf.name_rank, bad_events=options.bad_events)
    elif fmt == "jax":
        ranks = parse_jax(tf.path, bad_events=options.bad_events, max_json_bytes=options.max_json_bytes)
    elif fmt == "xplane":
        ranks = parse_xplane(tf.path, bad_events=options.bad_events)
    else:
        got = _read_kineto(tf, options, defer=defer)
        if isinstance(got, kineto.Pending):
            return got
        ranks = got
    if classifier is not None:
        ranks = [classified(d, classifier) for d in ranks]
    _store(tf, options, cache_dir, ranks, classifier)
    return ranks


def _store(
    tf: TraceFile, options: ReadOptions, cache_dir: str | None, ranks: list[RankData], classifier: Classifier | None
) -> None:
    if cache_dir is not None:
        _cache.write(Path(cache_dir), _cache.entry_key(tf, options.cache_key_fields()), ranks, classifier=classifier)


class SmallFiles:
    """The files of a serial load (:func:`read_file` for each), where the tables of small
    one-rank Kineto files are built together (:mod:`.readers.batch`): :meth:`read` reads a
    file, and gives its ranks or (a small one-rank file) keeps its columns; :meth:`finish`
    builds the kept files' tables, classified and stored in the cache as :func:`read_file`
    does. Call :meth:`finish` once :meth:`full` says so, and at the end.
    """

    def __init__(self, options: ReadOptions, cache_dir: str | None, classifier: Classifier) -> None:
        self.options, self.cache_dir, self.classifier = options, cache_dir, classifier
        self._kept: list[tuple[int, TraceFile, kineto.Pending]] = []
        self._rows = 0

    def read(self, key: int, tf: TraceFile) -> list[RankData] | None:
        """``tf``'s ranks as :func:`read_file` gives them, or None: kept under ``key`` for :meth:`finish`."""
        got = _read(tf, self.options, self.cache_dir, self.classifier, defer=kineto.NATIVE_AVAILABLE)
        if isinstance(got, kineto.Pending):
            self._kept.append((key, tf, got))
            self._rows += len(got.ts_ns)
            return None
        return got

    def full(self) -> bool:
        """Whether one more kept file could take the batch past the events a batch holds."""
        return kineto.batch_full(self._rows)

    def finish(self) -> list[tuple[int, list[RankData] | TraceFormatError]]:
        """The kept files' ranks (or the error of one), by key; none kept after."""
        kept, self._kept, self._rows = self._kept, [], 0
        if not kept:
            return []
        try:
            built = kineto.batch_tables([p for _, _, p in kept], self.classifier)
        except Exception:  # noqa: BLE001 - whatever it was, each file is read alone, as before
            out: list[tuple[int, list[RankData] | TraceFormatError]] = []
            for key, tf, _ in kept:
                try:
                    out.append((key, read_file(tf, self.options, self.cache_dir, self.classifier)))
                except TraceFormatError as exc:
                    out.append((key, exc))
            return out
        done: list[tuple[int, list[RankData] | TraceFormatError]] = []
        for (key, tf, _), d in zip(kept, built, strict=True):
            _store(tf, self.options, self.cache_dir, [d], self.classifier)
            done.append((key, [d]))
        return done


#: Files bigger than this (as JSON) are read piece by piece (pieces of about this size):
#: only one piece's Python objects exist at a time, and a file is never held whole in
#: memory (a plain one is read in byte ranges, a compressed one inflated as it is read).
PIECE_BYTES = 4 * 2**20
#: A gzip file of at most this many bytes is first inflated in one call, as one buffer (most
#: such files inflate to at most PIECE_BYTES; one that inflates further is read as it is
#: inflated, after at most PIECE_BYTES inflated for nothing).
_SMALL_GZIP_BYTES = PIECE_BYTES // 16


def _read_kineto(tf: TraceFile, options: ReadOptions, *, defer: bool = False) -> list[RankData] | kineto.Pending:
    """The file's ranks; ``defer``: a small file of one rank read by the C scanner gives its
    columns instead (:class:`.readers.kineto.Pending`)."""
    pid_map = dict(options.pid_map) if options.pid_map else None
    kwargs: dict[str, Any] = {"name_rank": tf.name_rank, "bad_events": options.bad_events, "pid_map": pid_map}
    data = None
    small = False  # a file of at most one piece, read whole
    try:
        read_at, size, close = kineto.open_source(tf.path)
    except OSError:
        pass  # read_bytes below says why
    else:
        try:
            if size and is_compressed(tf.path, read_at(0, 2)):
                # A small file inflated in one buffer; else inflated as it is read, piece by
                # piece (or whole where it turns out small).
                if size <= _SMALL_GZIP_BYTES:
                    data = inflate_whole(
                        tf.path, read_at(0, size), max_json_bytes=options.max_json_bytes, most=PIECE_BYTES
                    )
                if data is not None:
                    small = True
                else:
                    chunks = functools.partial(inflate_chunks, tf.path, max_json_bytes=options.max_json_bytes)
                    read = kineto.parse_streamed(tf.path, chunks, PIECE_BYTES, **kwargs)
                    if not isinstance(read, bytes):
                        return read
                    data, small = read, True
            elif size > PIECE_BYTES:
                return kineto.parse_in_pieces(tf.path, read_at, kineto.plan(read_at, size, PIECE_BYTES), **kwargs)
            else:
                small = True
        except (kineto.SplitFailed, OSError):
            pass  # read whole below: the same tables, or the error that says what is wrong
        finally:
            close()
    if data is None:
        data = read_bytes(tf.path, max_json_bytes=options.max_json_bytes)
    if small and kineto.NATIVE_AVAILABLE:
        # A small file is one piece: the C scanner reads it where it is built (a few ms less
        # per file than msgspec's decode and the per-event Python of ``parse_kineto``).
        try:
            read_at = kineto.bytes_source(data)
            the_plan = kineto.plan(read_at, len(data), PIECE_BYTES)
            return kineto.parse_in_pieces(tf.path, read_at, the_plan, defer=defer, **kwargs)
        except kineto.SplitFailed:
            pass
    return parse_kineto(tf.path, data, **kwargs)


def number_unranked(metas_per_file: Sequence[Sequence[RankMeta]], claimed: set[int]) -> list[list[int]]:
    """Rank numbers for the ranks that readers could not number (``rank_source == "order"``).

    Nsight exports carry no rank: a file holding one rank takes the rank in its file name,
    the others take the lowest numbers not claimed by any other file of the load (nor by
    the files that ``ranks=`` left out, ``claimed``), in file order, then in (device, pid)
    order within a file. Returns every rank's number, file by file.
    """
    taken = set(claimed) | {m.rank for ms in metas_per_file for m in ms if m.rank_source != "order"}
    nxt = 0
    out = []
    for metas in metas_per_file:
        numbers = []
        for m in metas:
            if m.rank_source == "order":
                while nxt in taken:
                    nxt += 1
                numbers.append(nxt)
                nxt += 1
            else:
                numbers.append(m.rank)
        out.append(numbers)
    return out


def with_rank(data: RankData, rank: int) -> RankData:
    """``data`` under another rank number (the tables are shared, not copied)."""
    if data.meta.rank == rank:
        return data
    meta = dataclasses.replace(data.meta, rank=rank)
    return replaced(data, meta=meta)


def warn_reader_messages(metas: dict[int, RankMeta]) -> None:
    """Warnings that readers left in ``meta.extra["warnings"]`` (readers may run in worker processes)."""
    ranks_of: dict[str, list[int]] = {}
    for r, m in sorted(metas.items()):
        for message in m.extra.get(WARNINGS_KEY, ()):
            ranks_of.setdefault(str(message), []).append(r)
    for message, rs in ranks_of.items():
        listed = ", ".join(map(str, rs[:10])) + (", ..." if len(rs) > 10 else "")
        warnings.warn(
            f"{message} (rank{'s' if len(rs) > 1 else ''} {listed})", TraceviewWarning, stacklevel=caller_stacklevel()
        )


def report_failures(not_traces: list[TraceFile], failures: list[tuple[TraceFile, TraceFormatError]]) -> None:
    """Warn about skipped non-trace files and unreadable trace files."""
    if not_traces:
        listed = ", ".join(tf.path.name for tf in not_traces[:10])
        warnings.warn(
            f"skipped {len(not_traces)} file(s) that are not traces: {listed}",
            TraceviewWarning,
            stacklevel=caller_stacklevel(),
        )
    if failures:
        listed = "; ".join(f"{tf.path.name}: {exc.problem}" for tf, exc in failures[:10])
        warnings.warn(
            f"skipped {len(failures)} unreadable trace file(s): {listed}",
            TraceviewWarning,
            stacklevel=caller_stacklevel(),
        )


def warn_skipped_events(metas: dict[int, RankMeta]) -> None:
    """One warning for events dropped or kept without their arguments, per kind."""
    for key, what in (
        (DROPPED, "malformed events were dropped"),
        (ARGS_DROPPED, "events had unreadable args (kept without them)"),
    ):
        counts = {r: m.skipped.get(key, 0) for r, m in metas.items()}
        counts = {r: c for r, c in counts.items() if c}
        if counts:
            where = ", ".join(f"rank {r}: {c:,}" for r, c in sorted(counts.items())[:10])
            warnings.warn(
                f"{sum(counts.values()):,} {what} ({where})", TraceviewWarning, stacklevel=caller_stacklevel()
            )
