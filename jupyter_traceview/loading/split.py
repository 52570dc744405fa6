"""One big Kineto file read in byte ranges by a pool of worker processes.

The plan (:mod:`.plan`) picks this for one file of tens of MB where a pool starts
cheaply: the file's byte ranges are cut at event boundaries (:mod:`.readers.kineto.cutting`), each worker
parses one range into columns, and this process joins them into the file's ranks. Where
the ranges cannot be read apart (a time base that only the end of the file gives, a
document the cutter does not know), :func:`read_split` says so (None) and the file is read
whole.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from ..errors import TraceFormatError, TraceviewError
from ..model.classify import Classifier
from ..model.rank_data import RankData
from ..model.trace import classified
from . import cache, handoff, heap, pool
from .ingest import ReadOptions
from .readers import kineto
from .readers.files import TraceFile, inflate_chunks, is_compressed, open_file

__all__ = ["PIECE_BYTES", "read_split"]

#: Byte ranges of a split file are at most this big (each worker holds one at a time).
PIECE_BYTES = 4 * 2**20


def read_split(
    tf: TraceFile, options: ReadOptions, cache_dir: str | None, classifier: Classifier
) -> list[RankData] | None:
    """One Kineto file read in byte ranges by a pool of worker processes, classified by
    ``classifier``; None if it must be read whole.

    A plain file is read by the workers themselves (``pread``); a compressed one is inflated
    here as it is read, and each piece is handed to a worker as soon as it is cut
    (:func:`split_streamed`): the inflated JSON is never all in memory.
    """

    try:
        with open_file(tf.path) as fh:
            compressed = is_compressed(tf.path, fh.read(2))
        got = split_streamed(tf, options) if compressed else split_plain(tf, options)
        if got is None:
            return None
        the_plan, parts = got
        pid_map = dict(options.pid_map) if options.pid_map else None
        ranks = kineto.finish(
            tf.path, the_plan, parts, name_rank=tf.name_rank, bad_events=options.bad_events, pid_map=pid_map
        )
    except (kineto.SplitFailed, OSError):
        return None
    ranks = [classified(d, classifier) for d in ranks]
    if cache_dir is not None:
        cache.write(Path(cache_dir), cache.entry_key(tf, options.cache_key_fields()), ranks, classifier=classifier)
    return ranks


def split_plain(tf: TraceFile, options: ReadOptions) -> tuple[Any, list[Any]] | None:
    """The plan and the pieces' columns of a plain file, its byte ranges read by a pool (None: read it whole)."""

    workers = max(1, os.cpu_count() or 1)
    read_at, size, close = kineto.open_source(tf.path)
    try:
        n = workers * max(1, -(-size // (workers * PIECE_BYTES)))
        the_plan = kineto.plan(read_at, size, -(-size // n))
        header = kineto_header(tf, the_plan.doc, options)
    finally:
        close()
    if len(the_plan.ranges) < 2 or header is None:
        return None
    source = str(tf.path)
    pool_size = min(workers, len(the_plan.ranges))
    with piece_pool(tf, pool_size) as (executor, folder):
        futures = [
            executor.submit(read_piece_task, tf.path, source, lo, hi, header.base_time_ns, folder)
            for lo, hi in the_plan.ranges
        ]
        parts: list[Any] = [None] * len(futures)
        # This process reads pieces too, from the end, until a worker's first result.
        for k in reversed(range(len(futures))):
            if any(f.done() for f in futures) or not futures[k].cancel():
                break
            lo, hi = the_plan.ranges[k]
            parts[k] = read_piece(tf.path, source, lo, hi, header.base_time_ns)
        parts = [p if p is not None else handoff.load(f.result()) for p, f in zip(parts, futures, strict=True)]
    return the_plan, parts


def split_streamed(tf: TraceFile, options: ReadOptions) -> tuple[Any, list[Any]] | None:
    """The plan and the pieces' columns of a compressed file: inflated here as it is read,
    each piece handed to a worker as soon as it is cut, at most one more than there are
    workers in flight (None: read it whole)."""

    workers = max(1, os.cpu_count() or 1)
    source = inflate_chunks(tf.path, max_json_bytes=options.max_json_bytes)
    with contextlib.closing(source):
        cutter = kineto.Cutter(tf.path, source, PIECE_BYTES)
        if cutter.whole is not None:
            return None
        with piece_pool(tf, workers) as (executor, folder):
            futures: list[Future[Any]] = []
            ranges = []
            for lo, hi, piece in cutter.pieces():
                futures.append(
                    executor.submit(read_piece_bytes_task, tf.path, piece, lo, hi, cutter.base_time_ns, folder)
                )
                ranges.append((lo, hi))
                del piece
                while len(running := [f for f in futures if not f.done()]) > workers:
                    wait(running, return_when=FIRST_COMPLETED)
            parts = [handoff.load(f.result()) for f in futures]
    assert cutter.doc is not None
    header = kineto_header(tf, cutter.doc, options)
    if len(parts) < 2 or header is None:
        return None
    bound = max(p.state.ts_bound for p in parts)
    if not kineto.base_agrees(cutter.base_time_ns, header.base_time_ns, bound):
        return None  # (read in this process, which reads it again with the file's time base)
    return kineto.Plan(doc=cutter.doc, ranges=tuple(ranges)), parts


@contextlib.contextmanager
def piece_pool(tf: TraceFile, workers: int) -> Iterator[tuple[ProcessPoolExecutor, str | None]]:
    """A pool of ``workers`` processes reading pieces of ``tf``, and the folder their columns
    come back through. On SplitFailed (the file must be read whole) the pieces not started
    are cancelled before it propagates; a worker that died is a TraceviewError naming the file."""

    with (
        handoff.scratch_folder() as folder,
        ProcessPoolExecutor(max_workers=workers, mp_context=pool.pool_context()) as executor,
    ):
        try:
            yield executor, folder
        except kineto.SplitFailed:
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        except BrokenProcessPool:
            raise TraceviewError(
                f"a worker process died while reading {tf.path} (out of memory?); try tv.load(..., engine='serial')"
            ) from None


def kineto_header(tf: TraceFile, doc: Any, options: ReadOptions) -> Any:
    """The file's header as the reader reads it, or None where it would raise (the whole read says why)."""

    try:
        return kineto.read_header(tf.path, doc, tf.name_rank, options.bad_events)
    except (TraceFormatError, ValueError, RecursionError):  # (ValueError: a header field not UTF-8)
        return None


def read_piece_task(path: Path, source: str, lo: int, hi: int, base_time_ns: int, folder: str | None) -> Any:
    """A worker's task: :func:`read_piece` handed back through ``folder`` (its heap kept or given back first)."""
    heap.before_task(hi - lo)
    return handoff.dump(read_piece(path, source, lo, hi, base_time_ns), folder)


def read_piece_bytes_task(path: Path, piece: bytes, lo: int, hi: int, base_time_ns: int, folder: str | None) -> Any:
    """A worker's task: the columns of bytes ``[lo, hi)`` of a document, given as ``piece``
    (``b"[" + those bytes + b"]"``; see kineto.parse_piece), handed back through ``folder``
    (its heap kept or given back first)."""

    heap.before_task(len(piece))
    return handoff.dump(kineto.parse_piece(path, kineto.bytes_source(b""), lo, hi, base_time_ns, piece), folder)


def read_piece(path: Path, source: str, lo: int, hi: int, base_time_ns: int) -> Any:
    """A worker's task: the columns of one byte range of a file (see kineto.parse_piece)."""

    read_at, _, close = kineto.open_source(Path(source))
    try:
        return kineto.parse_piece(path, read_at, lo, hi, base_time_ns)
    finally:
        close()
