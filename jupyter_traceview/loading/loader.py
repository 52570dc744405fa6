"""``tv.load``: find rank traces, read them (in parallel, through the cache), build a Trace."""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import OptionError, TraceFormatError, TraceviewError, TraceviewWarning
from ..model.classify import Classifier
from ..model.frames import paused_gc
from ..model.rank_data import RankData
from ..model.trace import Trace, classified
from ..progress import Progress
from . import cache as _cache
from . import handoff, heap
from . import prepare as _prepare
from .ingest import (
    ReadOptions,
    SmallFiles,
    number_unranked,
    read_file,
    report_failures,
    warn_reader_messages,
    warn_skipped_events,
    with_rank,
)
from .readers import kineto
from .readers.common import NotATraceError
from .readers.files import (
    DEFAULT_MAX_JSON_BYTES,
    NSYS_SUFFIXES,
    TraceFile,
    discover,
    inflate_chunks,
    is_compressed,
    prefetch,
    trace_format,
)

__all__ = ["load", "pool_context"]

OnError = Literal["raise", "skip"]
Engine = Literal["auto", "serial", "process", "dask"]
_ENGINES = ("auto", "serial", "process", "dask")
#: engine="auto" reads in worker processes above this much (estimated) uncompressed JSON.
_PARALLEL_BYTES = 48 * 2**20
#: engine="auto" reads one file alone in byte ranges in worker processes above this much
#: (estimated) uncompressed JSON, on a machine with several cores.
_SPLIT_BYTES = 24 * 2**20
#: Byte ranges of a split file are at most this big (each worker holds one at a time).
_SPLIT_PIECE_BYTES = 4 * 2**20
#: gzip-compressed Kineto JSON is typically 8-15x smaller than the JSON.
_GZIP_RATIO = 10
#: An Nsight SQLite export reads about 4x slower per byte than Kineto JSON (measured).
_SQLITE_RATIO = 4


def _estimated_json_bytes(files: Sequence[TraceFile]) -> int:
    total = 0
    for f in files:
        name = f.path.name.lower()
        ratio = _GZIP_RATIO if name.endswith(".gz") else _SQLITE_RATIO if name.endswith(NSYS_SUFFIXES) else 1
        total += f.size * ratio
    return total


def _peek_rank(tf: TraceFile) -> int | None:
    """The rank in a file's distributedInfo, read from its first MiB only."""
    import re

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
    with open(path, "rb") as fh:
        start = fh.read(2)
    if start == b"\x1f\x8b":
        import gzip
        import zlib

        with gzip.open(path, "rb") as gz:
            try:
                return gz.read(size)
            except (EOFError, OSError, zlib.error):
                return b""
    with open(path, "rb") as fh:
        return fh.read(size)


#: With ``progress=None`` the bar appears only once a load has taken this long (seconds).
BAR_DELAY_S = 1.0
_clock = time.monotonic  # (the bar's clock: a test's to replace)


def _progress(total: int, desc: str, initial: int = 0) -> Any:
    """A tqdm bar shown at once (None for a single file). tqdm.auto only where IPython runs:
    elsewhere (the CLI, a script) it would import IPython and asyncio to find out (~40 ms)."""
    if total <= 1:
        return None
    if "IPython" in sys.modules:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=desc, unit="file", leave=False)


def load(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    ranks: Iterable[int] | None = None,
    cache: bool | str | os.PathLike[str] = True,
    on_error: OnError = "raise",
    engine: Engine = "auto",
    classifier: Classifier | None = None,
    bad_events: Literal["raise", "drop"] = "raise",
    pid_map: Mapping[int | str, int] | None = None,
    max_json_bytes: int = DEFAULT_MAX_JSON_BYTES,
    progress: bool | Progress | None = None,
    client: Any | None = None,
    prepare: bool | None = None,
    on_progress: None = None,
    align: None = None,
) -> Trace:
    """Load PyTorch profiler traces: one file, or a folder with one file per rank.

    Nsight Systems SQLite exports (``nsys export --type sqlite``) load the same way, alone
    or in a folder; see ``docs/nsys.md`` for what is read from them.

    Parameters
    ----------
    path:
        A trace file (``.json``, ``.json.gz`` or an Nsight ``.sqlite`` export), a folder of
        rank traces (read non-recursively), or a list of files.
    ranks:
        Load only these ranks. Ranks come from ``distributedInfo.rank``, else from the
        file name (``rank-3``, ``worker3``), else 0. An Nsight export holds one rank per
        (process, GPU); those without a rank in their file name are numbered in file order.
    cache:
        True to use the on-disk cache in the user cache folder, a folder path to use that
        folder, False to always parse.
    on_error:
        ``"raise"`` stops at the first broken file with a :class:`TraceFormatError`;
        ``"skip"`` loads the readable ranks and warns with the list of skipped files.
    engine:
        ``"serial"`` parses in this process; ``"process"`` in a pool of worker processes
        (one file per task, or one file alone in byte ranges); ``"auto"`` picks the pool
        for several files holding more than about 48 MB of JSON, and for one file of more
        than about 24 MB where a pool starts cheaply (a single-threaded process, or a
        forkserver this process already started). Either way, files over 4 MB are read
        piece by piece, so that memory stays near the size of the tables. ``"dask"`` parses on dask.distributed workers and keeps the
        tables there: the result is a :class:`~jupyter_traceview.loading.dask_engine.DaskTrace`,
        on which every analysis runs on the workers (for hundreds of ranks or more).
    classifier:
        Kernel classification patterns (:class:`Classifier`); the default knows NCCL,
        RCCL, DeepEP and other communication kernels.
    bad_events:
        ``"raise"`` fails on malformed events (missing or negative ``dur``, NaN or
        infinite ``ts``); ``"drop"`` drops them and records how many in ``meta.skipped``.
    pid_map:
        For files that hold several ranks: process id -> rank, the process ids as written
        in the file (ints, or strings for string ``pid`` fields). Without it, ranks are
        read from process names such as ``"rank 3"``.
    max_json_bytes:
        The most JSON a compressed (``.gz``) file may inflate to, 4 GiB by default: a
        guard against gzip bombs. A larger file fails with a :class:`TraceFormatError`
        that says so; raise the limit to read it.
    progress:
        Show a progress bar: True always, False never, None (default) when loading takes
        more than a second. Or a :data:`~jupyter_traceview.progress.Progress`, called as
        ``progress(files_done, files_total, "loading traces")`` before the first file and
        after each (instead of the bar): the one progress protocol, shared with the
        dashboard and the report.
    client:
        With ``engine="dask"``: the ``distributed.Client`` to use; None starts a
        ``LocalCluster`` for the trace.
    prepare:
        Also compute, right after each file is read, the per-rank results that a first
        :func:`~jupyter_traceview.findings` call (the dashboard's first view) would compute,
        and keep them with the cache entries, so that the call reads them: on a big trace
        the worker processes do it while the rank's tables are in memory (see
        :mod:`~jupyter_traceview.loading.prepare`). True for every file read, False never,
        None (default) for a load that reads at least 512 MB of JSON in worker processes.
        Needs the cache (nothing is prepared with ``cache=False`` or ``engine="dask"``);
        files read from the cache keep what was prepared when they were read.
    on_progress, align:
        Removed (each raises :class:`OptionError`): ``on_progress=f`` is ``progress=``, a
        callable taking ``(done, total, label)``; ``align="collectives"`` is
        ``tv.align_clocks(tv.load(path))``, the one way to align ranks' clocks.

    Returns
    -------
    Trace

    Raises
    ------
    TraceFormatError
        A missing path, an empty folder, an unreadable, truncated or invalid file, a file
        that is not a trace, two files claiming one rank.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> len(trace.ranks)
    8
    """
    if align is not None:
        raise OptionError(
            "load: align= was removed; align the ranks' clocks with tv.align_clocks(tv.load(path)), "
            "the one way (it works on any trace, with estimated or given offsets)"
        )
    if on_progress is not None:
        raise OptionError(
            "load: on_progress= was removed; pass the callable as progress=, called as "
            "progress(files_done, files_total, label)"
        )
    if on_error not in ("raise", "skip"):
        raise OptionError.invalid("on_error", on_error, ("raise", "skip"))
    if engine not in _ENGINES:
        raise OptionError.invalid("engine", engine, _ENGINES)
    if bad_events not in ("raise", "drop"):
        raise OptionError.invalid("bad_events", bad_events, ("raise", "drop"))
    if prepare is not None and not isinstance(prepare, bool):
        raise OptionError(f"prepare must be True, False or None, got {prepare!r}")
    if classifier is not None and not isinstance(classifier, Classifier):
        raise TypeError(f"classifier must be a tv.Classifier, got {type(classifier).__name__}")
    report = progress if callable(progress) else None  # the caller's Progress, else a tqdm bar
    show_bar = False if callable(progress) else progress

    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise TraceFormatError(None, "no path given", "Pass a trace file or a folder of rank traces")
    files: list[TraceFile] = []
    skipped_names: list[Path] = []
    for p in paths:
        found, skipped = discover(p)
        files += found
        skipped_names += skipped
    folder_mode = len(paths) > 1 or Path(paths[0]).is_dir()
    if skipped_names:
        listed = ", ".join(s.name for s in skipped_names[:10])
        more = f" and {len(skipped_names) - 10} more" if len(skipped_names) > 10 else ""
        warnings.warn(
            f"skipped {len(skipped_names)} file(s) that are not traces: {listed}{more}",
            TraceviewWarning,
            stacklevel=2,
        )

    wanted = None if ranks is None else {int(r) for r in ranks}
    peeked: set[int] = set()
    if wanted is not None:
        # Avoid parsing files of other ranks when the rank can be read cheaply.
        kept = []
        for tf in files:
            r = _peek_rank(tf)
            r = tf.name_rank if r is None else r
            if r is not None:
                peeked.add(r)
            if r is None or r in wanted:
                kept.append(tf)
        files = kept

    if isinstance(max_json_bytes, bool) or not isinstance(max_json_bytes, int) or max_json_bytes <= 0:
        raise OptionError(f"max_json_bytes must be a positive int, got {max_json_bytes!r}")
    options = ReadOptions(
        bad_events=bad_events,
        pid_map=_pid_map_items(pid_map) if pid_map else None,
        max_json_bytes=max_json_bytes,
    )
    cache_dir = _cache.resolve_dir(cache)
    source = str(paths[0]) if len(paths) == 1 else f"{len(paths)} paths"
    classifier = classifier or Classifier()
    if engine == "dask":
        from .dask_engine import load_dask

        dask_trace = load_dask(
            files,
            options=options,
            cache_dir=cache_dir,
            classifier=classifier,
            client=client,
            wanted=wanted,
            folder_mode=folder_mode,
            on_error=on_error,
            source=source,
            claimed=peeked,
        )
        return dask_trace
    if client is not None:
        raise OptionError("client= is for engine='dask'")
    results: dict[int, list[RankData]] = {}
    todo: list[int] = []
    real_dirs: dict[str, str] = {}  # each folder's real path, resolved once for its files
    keys: dict[int, str] = {}  # file -> its cache entry
    with paused_gc():  # thousands of small frames kept: see frames.paused_gc
        for i, tf in enumerate(files):
            hit = None
            if cache_dir is not None:
                key = keys[i] = _cache.entry_key(tf, options.cache_key_fields(), real_dirs)
                hit = _cache.read(cache_dir, key, classifier=classifier)
            if hit is not None:
                results[i] = hit
            else:
                todo.append(i)

    failures: list[tuple[TraceFile, TraceFormatError]] = []
    not_traces: list[TraceFile] = []

    def handle_error(tf: TraceFile, exc: TraceFormatError) -> None:
        if isinstance(exc, NotATraceError) and folder_mode:
            not_traces.append(tf)
            return
        if on_error == "raise":
            raise exc
        failures.append((tf, exc))

    cache_arg = str(cache_dir) if cache_dir is not None else None
    json_bytes = _estimated_json_bytes([files[i] for i in todo])  # what is left to read
    split = None
    if len(todo) == 1 and engine in ("auto", "process") and (os.cpu_count() or 1) > 1:
        one = files[todo[0]]
        big = json_bytes > _SPLIT_BYTES and _pool_starts_cheaply()
        if trace_format(one.path) == "kineto" and (engine == "process" or big):
            split = todo[0]
    use_pool = engine == "process" or (engine == "auto" and len(todo) > 1 and json_bytes > _PARALLEL_BYTES)
    # The functions that prepare per-rank results (loading.prepare), if this load runs them.
    in_pool = split is None and use_pool and len(todo) > 0  # the files read by _load_parallel
    preparers: tuple[_prepare.PrepareFunction, ...] = ()
    if (
        cache_dir is not None
        and todo
        and prepare is not False
        and (prepare or (in_pool and json_bytes >= _prepare.MIN_BYTES))
    ):
        preparers = _prepare.prepare_functions()
    tqdm_bar: Any = None
    bar_due: float | None = None  # progress=None: when a bar is due, if the load is still going
    n_done = len(files) - len(todo)

    def start_progress() -> None:
        # tqdm starts a monitor thread with its first bar: the pool's workers are forked
        # before that (see pool_context), so the bar starts once they are.
        nonlocal tqdm_bar, bar_due
        if show_bar:
            tqdm_bar = _progress(len(todo), "loading traces")
        elif show_bar is None:
            # Only a load that takes a while gets a bar (and tqdm is imported only then).
            bar_due = _clock() + BAR_DELAY_S

    def advance() -> None:
        nonlocal n_done, tqdm_bar, bar_due
        n_done += 1
        if bar_due is not None and _clock() >= bar_due:
            bar_due = None
            done_here = n_done - (len(files) - len(todo))
            tqdm_bar = _progress(len(todo), "loading traces", initial=done_here - 1)
        if tqdm_bar is not None:
            tqdm_bar.update(1)
        if report is not None:
            report(n_done, len(files), "loading traces")

    if report is not None:
        report(n_done, len(files), "loading traces")
    try:
        if split is not None:
            # One big file: its byte ranges read by worker processes (None: it must be read whole).
            start_progress()
            try:
                read = _load_split(files[split], options, cache_arg, classifier)
                results[split] = read if read is not None else read_file(files[split], options, cache_arg, classifier)
            except TraceFormatError as exc:
                handle_error(files[split], exc)
            advance()
        elif in_pool:
            # The workers also add each rank's gpu_class column: that work is spread over the
            # pool and overlaps the reading.
            _load_parallel(
                files,
                todo,
                options,
                cache_arg,
                results,
                handle_error,
                advance,
                start_progress,
                classifier,
                preparers,
                source,
            )
        else:
            start_progress()
            # Small one-rank files' tables are built together (SmallFiles), in batches.
            small = SmallFiles(options, cache_arg, classifier)

            def settle(done: list[tuple[int, list[RankData] | TraceFormatError]]) -> None:
                for j, got in done:
                    if isinstance(got, TraceFormatError):
                        handle_error(files[j], got)
                    else:
                        results[j] = got

            with kineto.shared_scratch():  # one set of scanner buffers for all the files
                for i in todo:
                    try:
                        read = small.read(i, files[i])
                        if read is not None:
                            results[i] = read
                    except TraceFormatError as exc:
                        handle_error(files[i], exc)
                    if small.full():
                        settle(small.finish())
                    advance()
                settle(small.finish())
    finally:
        if tqdm_bar is not None:
            tqdm_bar.close()

    if preparers and not in_pool:
        # Read in this process (one file, or small ones): prepared here (prepare=True).
        for i in todo:
            if i in results:
                _prepare.run(
                    preparers, results[i], cache_dir=str(cache_dir), key=keys[i], classifier=classifier, source=source
                )
    if cache_dir is not None and todo:
        _cache.prune(cache_dir)
    report_failures(not_traces, failures)
    if cache_dir is not None:
        # Each rank read through the cache keeps derived per-rank results with its entry.
        for i, key in keys.items():
            _cache.attach_facts(cache_dir, key, results.get(i, ()))
    _renumber(results, number_unranked([[d.meta for d in results[i]] for i in sorted(results)], peeked))

    # Every rank comes classified by `classifier`: from the cache, read_file or the pool.
    by_rank: dict[int, RankData] = {}
    for i in sorted(results):
        for d in results[i]:
            r = d.meta.rank
            if wanted is not None and r not in wanted:
                continue
            if r in by_rank:
                raise TraceFormatError(
                    d.meta.path,
                    f"claims rank {r}, as does {by_rank[r].meta.path}",
                    "Two files claim one rank: remove one of them, or load them separately",
                )
            by_rank[r] = d
    warn_skipped_events({r: d.meta for r, d in by_rank.items()})
    warn_reader_messages({r: d.meta for r, d in by_rank.items()})
    if not by_rank:
        if wanted is not None and (results or not files):
            present = sorted(peeked | {d.meta.rank for rs in results.values() for d in rs})
            raise TraceFormatError(
                source,
                f"no rank among {sorted(wanted)} in these traces (they hold ranks {present})",
                "Check the ranks= argument",
            )
        problem = "no readable trace"
        if failures:
            problem += f" ({len(failures)} file(s) failed: see the warning above)"
        elif not_traces:
            problem += " (the files here are not traces)"
        raise TraceFormatError(
            source, problem, "Point tv.load() at PyTorch profiler traces or Nsight Systems SQLite exports"
        )
    trace = Trace(list(by_rank.values()), classifier=classifier, source=source, _classified=True)
    return trace


def _pid_map_items(pid_map: Mapping[int | str, int]) -> tuple[tuple[int | str, int], ...]:
    """``pid_map`` as sorted items: int keys stay ints, string keys (pids written as strings) stay strings."""
    items: list[tuple[int | str, int]] = []
    for k, v in pid_map.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < 2**31:
            raise OptionError(f"pid_map values must be ranks (ints from 0 to 2**31 - 1), got {v!r} for pid {k!r}")
        if isinstance(k, str):
            items.append((k, int(v)))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            items.append((int(k), int(v)))
        else:
            raise OptionError(f"pid_map keys must be process ids as written in the file (int or str), got {k!r}")
    return tuple(
        sorted(items, key=lambda kv: (isinstance(kv[0], str), str(kv[0]) if isinstance(kv[0], str) else kv[0]))
    )


def _renumber(results: dict[int, list[RankData]], numbers: list[list[int]]) -> None:
    for i, ranks in zip(sorted(results), numbers, strict=True):
        results[i] = [with_rank(d, r) for d, r in zip(results[i], ranks, strict=True)]


#: Set once this process has started a forkserver (it then serves every later pool).
_forkserver_started = False


def _pool_starts_cheaply() -> bool:
    """Whether a pool starts in milliseconds: forked from here, or from a forkserver already running.

    A threaded process's first pool waits for its forkserver to import the reader (~0.4 s
    on a quiet machine, seconds on a busy one): more than reading one file of a few tens
    of MB costs, so engine="auto" then reads one file alone in this process.
    """
    return _forkserver_started or pool_context(starting=False).get_start_method() == "fork"


def pool_context(*, starting: bool = True) -> multiprocessing.context.BaseContext:
    """How this package starts worker processes (the load's pool, findings' rank workers)."""
    methods = multiprocessing.get_all_start_methods()
    # A single-threaded process (a script, the CLI) forks its workers directly: instant,
    # and they inherit the imports. A threaded one (a Jupyter kernel) must not fork (a
    # lock held by another thread would stay locked in the child): its workers fork from a
    # clean server process instead.
    if "fork" in methods and sys.platform == "linux" and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods and sys.platform != "darwin":
        global _forkserver_started
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["jupyter_traceview.loading.loader"])
        _forkserver_started = _forkserver_started or starting  # by the pool about to use it
        return ctx
    return multiprocessing.get_context("spawn")


def _load_parallel(
    files: list[TraceFile],
    todo: list[int],
    options: ReadOptions,
    cache_arg: str | None,
    results: dict[int, list[RankData]],
    handle_error: Any,
    advance: Callable[[], None],
    started: Callable[[], None],
    classifier: Classifier,
    preparers: tuple[_prepare.PrepareFunction, ...] = (),
    source: str | None = None,
) -> None:
    """Read ``files[i]`` for ``i`` in ``todo`` into ``results``, classified (:func:`~..model.trace.classified`);
    ``preparers``: the functions that prepare per-rank results (:mod:`.prepare`), run where each file is read."""
    workers = max(1, min(len(todo), os.cpu_count() or 1))
    with (
        handoff.scratch_folder() as folder,
        ProcessPoolExecutor(max_workers=workers, mp_context=pool_context()) as pool,
    ):
        # The first submit starts every worker (a fork pool starts them all at once, before
        # its own manager thread); only then may other threads (the progress bar's) start.
        # Biggest files first: the pool does not end on one big file with the other workers
        # idle, and this process (reading from the end of the list while the pool starts)
        # takes the smallest.
        order = sorted(todo, key=lambda i: -_estimated_json_bytes([files[i]]))
        # The patterns only (a copy without the kernel names it has memoised), for each task.
        patterns = dataclasses.replace(classifier)
        # Each task first asks the OS for the file the pool starts ``workers`` tasks later (about
        # when this one ends), so that the disk reads it while this one is parsed.
        ahead = {i: files[order[k + workers]].path for k, i in enumerate(order[:-workers])}
        futures: dict[Future[Any], int] = {
            pool.submit(
                _read_file_task, files[i], options, cache_arg, folder, patterns, ahead.get(i), preparers, source
            ): i
            for i in order
        }
        started()
        pending = set(futures)
        try:
            # While the workers start (a forkserver imports the reader first: ~0.4 s), this
            # process reads files too, from the end of the list, until a worker's first result.
            for fut in reversed(list(futures)):
                if any(f.done() for f in futures) or not fut.cancel():
                    break
                pending.discard(fut)
                i = futures[fut]
                try:
                    results[i] = _prepare.read_prepared(files[i], options, cache_arg, classifier, preparers, source)
                except TraceFormatError as exc:
                    handle_error(files[i], exc)
                advance()
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for fut in done:
                    i = futures[fut]
                    try:
                        results[i] = handoff.load(fut.result())
                    except TraceFormatError as exc:
                        handle_error(files[i], exc)
                    except BrokenProcessPool:
                        raise TraceviewError(
                            f"a worker process died while reading {files[i].path} (out of memory?); "
                            "try tv.load(..., engine='serial') or load fewer ranks with ranks=[...]"
                        ) from None
                    advance()
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise


def _load_split(
    tf: TraceFile, options: ReadOptions, cache_dir: str | None, classifier: Classifier
) -> list[RankData] | None:
    """One Kineto file read in byte ranges by a pool of worker processes, classified by
    ``classifier``; None if it must be read whole.

    A plain file is read by the workers themselves (``pread``); a compressed one is inflated
    here as it is read, and each piece is handed to a worker as soon as it is cut
    (:func:`_split_streamed`): the inflated JSON is never all in memory.
    """
    try:
        with open(tf.path, "rb") as fh:
            compressed = is_compressed(tf.path, fh.read(2))
        got = _split_streamed(tf, options) if compressed else _split_plain(tf, options)
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
        _cache.write(Path(cache_dir), _cache.entry_key(tf, options.cache_key_fields()), ranks, classifier=classifier)
    return ranks


def _split_plain(tf: TraceFile, options: ReadOptions) -> tuple[Any, list[Any]] | None:
    """The plan and the pieces' columns of a plain file, its byte ranges read by a pool (None: read it whole)."""
    workers = max(1, os.cpu_count() or 1)
    read_at, size, close = kineto.open_source(tf.path)
    try:
        n = workers * max(1, -(-size // (workers * _SPLIT_PIECE_BYTES)))
        the_plan = kineto.plan(read_at, size, -(-size // n))
        header = _kineto_header(tf, the_plan.doc, options)
    finally:
        close()
    if len(the_plan.ranges) < 2 or header is None:
        return None
    source = str(tf.path)
    pool_size = min(workers, len(the_plan.ranges))
    with _piece_pool(tf, pool_size) as (pool, folder):
        futures = [
            pool.submit(_read_piece_task, tf.path, source, lo, hi, header.base_time_ns, folder)
            for lo, hi in the_plan.ranges
        ]
        parts: list[Any] = [None] * len(futures)
        # This process reads pieces too, from the end, until a worker's first result.
        for k in reversed(range(len(futures))):
            if any(f.done() for f in futures) or not futures[k].cancel():
                break
            lo, hi = the_plan.ranges[k]
            parts[k] = _read_piece(tf.path, source, lo, hi, header.base_time_ns)
        parts = [p if p is not None else handoff.load(f.result()) for p, f in zip(parts, futures, strict=True)]
    return the_plan, parts


def _split_streamed(tf: TraceFile, options: ReadOptions) -> tuple[Any, list[Any]] | None:
    """The plan and the pieces' columns of a compressed file: inflated here as it is read,
    each piece handed to a worker as soon as it is cut, at most one more than there are
    workers in flight (None: read it whole)."""
    workers = max(1, os.cpu_count() or 1)
    source = inflate_chunks(tf.path, max_json_bytes=options.max_json_bytes)
    with contextlib.closing(source):
        cutter = kineto.Cutter(tf.path, source, _SPLIT_PIECE_BYTES)
        if cutter.whole is not None:
            return None
        with _piece_pool(tf, workers) as (pool, folder):
            futures: list[Future[Any]] = []
            ranges = []
            for lo, hi, piece in cutter.pieces():
                futures.append(pool.submit(_read_piece_bytes_task, tf.path, piece, lo, hi, cutter.base_time_ns, folder))
                ranges.append((lo, hi))
                del piece
                while len(running := [f for f in futures if not f.done()]) > workers:
                    wait(running, return_when=FIRST_COMPLETED)
            parts = [handoff.load(f.result()) for f in futures]
    assert cutter.doc is not None
    header = _kineto_header(tf, cutter.doc, options)
    if len(parts) < 2 or header is None:
        return None
    bound = max(p.state.ts_bound for p in parts)
    if not kineto.base_agrees(cutter.base_time_ns, header.base_time_ns, bound):
        return None  # (read in this process, which reads it again with the file's time base)
    return kineto.Plan(doc=cutter.doc, ranges=tuple(ranges)), parts


@contextlib.contextmanager
def _piece_pool(tf: TraceFile, workers: int) -> Iterator[tuple[ProcessPoolExecutor, str | None]]:
    """A pool of ``workers`` processes reading pieces of ``tf``, and the folder their columns
    come back through. On SplitFailed (the file must be read whole) the pieces not started
    are cancelled before it propagates; a worker that died is a TraceviewError naming the file."""
    with (
        handoff.scratch_folder() as folder,
        ProcessPoolExecutor(max_workers=workers, mp_context=pool_context()) as pool,
    ):
        try:
            yield pool, folder
        except kineto.SplitFailed:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        except BrokenProcessPool:
            raise TraceviewError(
                f"a worker process died while reading {tf.path} (out of memory?); try tv.load(..., engine='serial')"
            ) from None


def _kineto_header(tf: TraceFile, doc: Any, options: ReadOptions) -> Any:
    """The file's header as the reader reads it, or None where it would raise (the whole read says why)."""
    try:
        return kineto.read_header(tf.path, doc, tf.name_rank, options.bad_events)
    except (TraceFormatError, ValueError, RecursionError):  # (ValueError: a header field not UTF-8)
        return None


def _read_file_task(
    tf: TraceFile,
    options: ReadOptions,
    cache_dir: str | None,
    folder: str | None,
    classifier: Classifier,
    ahead: Path | None = None,
    preparers: tuple[_prepare.PrepareFunction, ...] = (),
    source: str | None = None,
) -> Any:
    """A worker's task: one file's ranks (:func:`read_file`), classified, handed back through ``folder``.

    (See :mod:`.handoff`; the cache gets them classified, with the classifier's key.)

    The worker's heap is kept or given back first (:mod:`.heap`); ``ahead``, a file a later
    task reads, is asked of the OS first (:func:`.readers.files.prefetch`). ``preparers``: the
    ranks' derived results are prepared here too (:mod:`.prepare`).
    """
    if ahead is not None:
        prefetch(ahead)
    heap.before_task(tf.size)
    return handoff.dump(_prepare.read_prepared(tf, options, cache_dir, classifier, preparers, source), folder)


def _read_piece_task(path: Path, source: str, lo: int, hi: int, base_time_ns: int, folder: str | None) -> Any:
    """A worker's task: :func:`_read_piece` handed back through ``folder`` (its heap kept or given back first)."""
    heap.before_task(hi - lo)
    return handoff.dump(_read_piece(path, source, lo, hi, base_time_ns), folder)


def _read_piece_bytes_task(path: Path, piece: bytes, lo: int, hi: int, base_time_ns: int, folder: str | None) -> Any:
    """A worker's task: the columns of bytes ``[lo, hi)`` of a document, given as ``piece``
    (``b"[" + those bytes + b"]"``; see kineto.parse_piece), handed back through ``folder``
    (its heap kept or given back first)."""
    heap.before_task(len(piece))
    return handoff.dump(kineto.parse_piece(path, kineto.bytes_source(b""), lo, hi, base_time_ns, piece), folder)


def _read_piece(path: Path, source: str, lo: int, hi: int, base_time_ns: int) -> Any:
    """A worker's task: the columns of one byte range of a file (see kineto.parse_piece)."""
    read_at, _, close = kineto.open_source(Path(source))
    try:
        return kineto.parse_piece(path, read_at, lo, hi, base_time_ns)
    finally:
        close()
