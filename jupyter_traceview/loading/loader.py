"""``tv.load``: find rank traces, read them (in parallel, through the cache), build a Trace.

A load runs in three steps, each a function: the plan (:mod:`.plan`: the files, the cache's
hits, how the rest is read), the reading it decided (:func:`_read`: in this process, in a
pool of worker processes (:mod:`.pool`), or one big file in byte ranges (:mod:`.split`);
or on dask workers, :mod:`.dask_engine`), and the assembly (:func:`_assemble`: the ranks
numbered, checked and put into a :class:`~..model.trace.Trace`).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from ..deprecation import removed_parameters
from ..errors import OptionError, TraceFormatError
from ..model.classify import Classifier
from ..model.rank_data import RankData
from ..model.trace import Trace
from ..progress import Progress
from . import cache as cache_folder
from . import pool, split
from . import prepare as preparing
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
from .plan import ENGINES, Engine, Found, OnError, Plan, find, make_plan
from .pool import pool_context
from .readers import kineto
from .readers.common import NotATraceError
from .readers.files import DEFAULT_MAX_JSON_BYTES, TraceFile, out_of_memory
from .run_notes import run_folder, run_status_of, skipped_files_of
from .storage import is_dataset

__all__ = ["load", "pool_context"]

#: With ``progress=None`` the bar appears only once a load has taken this long (seconds).
BAR_DELAY_S = 1.0
_clock = time.monotonic  # (the bar's clock: a test's to replace)
_LABEL = "loading traces"


@removed_parameters(
    on_progress="pass the callable as progress=, called as progress(files_done, files_total, label)",
    align="align the ranks' clocks with tv.align_clocks(tv.load(path)), "
    "the one way (it works on any trace, with estimated or given offsets)",
)
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
    storage_options: dict[str, Any] | None = None,
) -> Trace:
    """Load PyTorch profiler traces: one file, or a folder with one file per rank.

    Nsight Systems SQLite exports (``nsys export --type sqlite``) load the same way, alone
    or in a folder; see ``docs/nsys.md`` for what is read from them.
    JAX profiles too: the folder ``jax.profiler.trace(dir)`` wrote (its latest run), a run
    folder, its trace JSON, or its ``<host>.xplane.pb`` (with the extra
    ``jupyter_traceview[jax]``); see ``docs/jax.md``.

    Parameters
    ----------
    path:
        A trace file (``.json``, ``.json.gz`` or an Nsight ``.sqlite`` export), a folder of
        rank traces (read non-recursively), or a list of files; or a dataset written by
        :func:`~jupyter_traceview.export` (read back as it was written). Each may be an
        fsspec URL (``s3://bucket/run/``): see ``storage_options``.
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
    storage_options:
        For a URL (``s3://bucket/run/``, ``gs://``, ``az://``, ``hf://``, ``https://``: any
        fsspec URL; extra ``jupyter_traceview[cloud]``): the filesystem's options
        (``{"profile": ...}``, ``{"endpoint_url": ...}``, keys), as fsspec takes them. By
        default the store's usual environment (``AWS_PROFILE``, ``AWS_ENDPOINT_URL``,
        ``AWS_ACCESS_KEY_ID``..., ``GOOGLE_APPLICATION_CREDENTIALS``...). Objects are read in
        blocks as they are parsed, never whole; the cache keys them by their ETag or version
        (never by the credentials, which are not written anywhere). With ``engine="dask"``
        the workers read the objects themselves.

    Returns
    -------
    Trace

    Raises
    ------
    TraceFormatError
        A missing path, an empty folder, an unreadable, truncated or invalid file, a file
        that is not a trace, two files claiming one rank.
    OptionError
        An option with a value it does not take, or a removed keyword: ``on_progress=f``
        is ``progress=f``, a callable taking ``(done, total, label)``; ``align="collectives"``
        is ``tv.align_clocks(tv.load(path))``, the one way to align ranks' clocks.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> len(trace.ranks)
    8
    """
    options = _read_options(
        on_error=on_error,
        engine=engine,
        bad_events=bad_events,
        prepare=prepare,
        classifier=classifier,
        pid_map=pid_map,
        max_json_bytes=max_json_bytes,
    )
    if isinstance(path, (str, os.PathLike)) and is_dataset(path, storage_options):
        from . import dataset

        if engine == "dask":
            from .dask_engine import load_dataset_dask

            doc, metas = dataset.dataset_ranks(str(path), ranks, storage_options)
            return load_dataset_dask(
                str(path), doc, metas, classifier=classifier, client=client, storage_options=storage_options
            )
        return dataset.read_dataset(str(path), ranks=ranks, classifier=classifier, storage_options=storage_options)
    found = find(path, ranks, storage_options)
    cache_dir = cache_folder.resolve_dir(cache)
    classifier = classifier or Classifier()
    if engine == "dask":
        from .dask_engine import load_dask

        return load_dask(
            found.files,
            options=options,
            cache_dir=cache_dir,
            classifier=classifier,
            client=client,
            wanted=found.wanted,
            folder_mode=found.folder_mode,
            on_error=on_error,
            source=found.source,
            claimed=found.claimed,
        )
    if client is not None:
        raise OptionError("client= is for engine='dask'")
    plan = make_plan(
        found,
        options=options,
        classifier=classifier,
        on_error=on_error,
        cache_dir=cache_dir,
        engine=engine,
        prepare=prepare,
    )
    results, failures = _read(plan, progress)
    return _assemble(plan, results, failures)


def _read_options(
    *,
    on_error: object,
    engine: object,
    bad_events: Literal["raise", "drop"],
    prepare: object,
    classifier: object,
    pid_map: Mapping[int | str, int] | None,
    max_json_bytes: object,
) -> ReadOptions:
    """The options that change what a file reads as, each checked (OptionError, TypeError)."""
    if on_error not in ("raise", "skip"):
        raise OptionError.invalid("on_error", on_error, ("raise", "skip"))
    if engine not in ENGINES:
        raise OptionError.invalid("engine", engine, ENGINES)
    if bad_events not in ("raise", "drop"):
        raise OptionError.invalid("bad_events", bad_events, ("raise", "drop"))
    if prepare is not None and not isinstance(prepare, bool):
        raise OptionError(f"prepare must be True, False or None, got {prepare!r}")
    if classifier is not None and not isinstance(classifier, Classifier):
        raise TypeError(f"classifier must be a tv.Classifier, got {type(classifier).__name__}")
    if isinstance(max_json_bytes, bool) or not isinstance(max_json_bytes, int) or max_json_bytes <= 0:
        raise OptionError(f"max_json_bytes must be a positive int, got {max_json_bytes!r}")
    return ReadOptions(
        bad_events=bad_events,
        pid_map=_pid_map_items(pid_map) if pid_map else None,
        max_json_bytes=max_json_bytes,
    )


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


@dataclasses.dataclass
class _Failures:
    """The files a load could not read: raised at once (``on_error="raise"``), else kept to
    warn about; in a folder, a file that is not a trace is skipped either way."""

    on_error: OnError
    folder_mode: bool
    failed: list[tuple[TraceFile, TraceFormatError]] = dataclasses.field(default_factory=list)
    not_traces: list[TraceFile] = dataclasses.field(default_factory=list)

    def __call__(self, tf: TraceFile, exc: TraceFormatError) -> None:
        if isinstance(exc, NotATraceError) and self.folder_mode:
            self.not_traces.append(tf)
            return
        if self.on_error == "raise":
            try:
                raise exc
            finally:
                # This frame is in exc's traceback: without the del, the two make a cycle that
                # keeps the reader's frames and buffers (a gzip bomb's inflated GiB) until
                # the garbage collector runs, and the next load in this process runs out.
                del exc
        self.failed.append((tf, exc))


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


class _Bar:
    """A load's progress: the caller's :data:`~..progress.Progress`, told before the first
    file and after each, else a tqdm bar (``progress=None``: only once the load has taken
    :data:`BAR_DELAY_S`, starting at the files already read)."""

    def __init__(self, progress: bool | Progress | None, files: int, todo: int) -> None:
        self.report = progress if callable(progress) else None
        self.show = False if callable(progress) else progress
        self.files, self.todo = files, todo
        self.done = files - todo  # the cache's hits count as read
        self.tqdm: Any = None
        self.due: float | None = None  # progress=None: when a bar is due, if the load is still going
        if self.report is not None:
            self.report(self.done, files, _LABEL)

    def start(self) -> None:
        # tqdm starts a monitor thread with its first bar: a pool's workers are forked
        # before that (see pool_context), so the bar starts once they are.
        if self.show:
            self.tqdm = _progress(self.todo, _LABEL)
        elif self.show is None:
            # Only a load that takes a while gets a bar (and tqdm is imported only then).
            self.due = _clock() + BAR_DELAY_S

    def advance(self) -> None:
        self.done += 1
        if self.due is not None and _clock() >= self.due:
            self.due = None
            done_here = self.done - (self.files - self.todo)
            self.tqdm = _progress(self.todo, _LABEL, initial=done_here - 1)
        if self.tqdm is not None:
            self.tqdm.update(1)
        if self.report is not None:
            self.report(self.done, self.files, _LABEL)

    def close(self) -> None:
        if self.tqdm is not None:
            self.tqdm.close()


def _read(plan: Plan, progress: bool | Progress | None) -> tuple[dict[int, list[RankData]], _Failures]:
    """The ranks of every file (index -> ranks), the cache's hits and the files read as the
    plan says, and the files that failed. Every rank comes classified by the plan's classifier."""
    results = dict(plan.hits)
    failures = _Failures(plan.on_error, plan.found.folder_mode)
    bar = _Bar(progress, len(plan.files), len(plan.todo))
    try:
        if plan.reading == "split":
            bar.start()
            (i,) = plan.todo
            _read_split(plan, i, results, failures)
            bar.advance()
        elif plan.reading == "pool":
            # The workers also add each rank's gpu_class column: that work is spread over the
            # pool and overlaps the reading.
            pool.read_in_pool(
                plan.files,
                plan.todo,
                plan.options,
                plan.cache_arg,
                results,
                failures,
                bar.advance,
                bar.start,
                plan.classifier,
                plan.preparers,
                plan.found.source,
            )
        else:
            bar.start()
            _read_here(plan, results, failures, bar.advance)
    finally:
        bar.close()
    return results, failures


def _read_split(plan: Plan, i: int, results: dict[int, list[RankData]], failures: _Failures) -> None:
    """One big file: its byte ranges read by worker processes, or whole where they cannot be."""
    tf = plan.files[i]
    out_of_memory_here = False
    try:
        got = split.read_split(tf, plan.options, plan.cache_arg, plan.classifier)
        results[i] = got if got is not None else read_file(tf, plan.options, plan.cache_arg, plan.classifier)
    except TraceFormatError as exc:
        failures(tf, exc)
    except MemoryError:
        # Said once the handler has ended: its traceback keeps the reader's buffers alive,
        # and the message needs memory too.
        out_of_memory_here = True
    if out_of_memory_here:
        failures(tf, out_of_memory(tf.path, file_bytes=tf.size))


def _read_here(plan: Plan, results: dict[int, list[RankData]], failures: _Failures, advance: Any) -> None:
    """The files left read in this process: small one-rank files' tables built together
    (:class:`~.ingest.SmallFiles`), in batches."""
    small = SmallFiles(plan.options, plan.cache_arg, plan.classifier)

    def settle(done: list[tuple[int, list[RankData] | TraceFormatError]]) -> None:
        for j, got in done:
            if isinstance(got, TraceFormatError):
                failures(plan.files[j], got)
            else:
                results[j] = got

    with kineto.shared_scratch():  # one set of scanner buffers for all the files
        for i in plan.todo:
            try:
                read = small.read(i, plan.files[i])
                if read is not None:
                    results[i] = read
            except TraceFormatError as exc:
                failures(plan.files[i], exc)
            if small.full():
                settle(small.finish())
            advance()
        settle(small.finish())


def _assemble(plan: Plan, results: dict[int, list[RankData]], failures: _Failures) -> Trace:
    """The Trace of the ranks read: the cache kept up to date, the failures reported, the
    ranks without a number numbered, those ``ranks=`` did not ask for left out."""
    _keep_in_cache(plan, results)
    report_failures(failures.not_traces, failures.failed)
    _renumber(results, number_unranked([[d.meta for d in results[i]] for i in sorted(results)], plan.found.claimed))
    wanted = plan.found.wanted
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
        raise _nothing_read(plan.found, results, failures)
    return Trace(
        list(by_rank.values()),
        classifier=plan.classifier,
        source=plan.found.source,
        skipped_files=skipped_files_of(failures.failed),
        run_status=run_status_of(run_folder(tf.path for tf in plan.found.files)),
        _classified=True,
    )


def _keep_in_cache(plan: Plan, results: dict[int, list[RankData]]) -> None:
    """Derived per-rank results prepared and kept with each file's cache entry; the cache pruned."""
    if plan.cache_dir is None:
        return
    if plan.preparers and plan.reading != "pool":
        # Read in this process (one file, or small ones): prepared here (prepare=True).
        for i in plan.todo:
            if i in results:
                preparing.run(
                    plan.preparers,
                    results[i],
                    cache_dir=str(plan.cache_dir),
                    key=plan.keys[i],
                    classifier=plan.classifier,
                    source=plan.found.source,
                )
    if plan.todo:
        cache_folder.prune(plan.cache_dir)
    # Each rank read through the cache keeps derived per-rank results with its entry.
    for i, key in plan.keys.items():
        cache_folder.attach_facts(plan.cache_dir, key, results.get(i, ()))


def _nothing_read(found: Found, results: dict[int, list[RankData]], failures: _Failures) -> TraceFormatError:
    """Why a load has no rank to give: none of those asked for, or no readable trace."""
    if found.wanted is not None and (results or not found.files):
        present = sorted(found.claimed | {d.meta.rank for rs in results.values() for d in rs})
        return TraceFormatError(
            found.source,
            f"no rank among {sorted(found.wanted)} in these traces (they hold ranks {present})",
            "Check the ranks= argument",
        )
    problem = "no readable trace"
    if failures.failed:
        problem += f" ({len(failures.failed)} file(s) failed: see the warning above)"
    elif failures.not_traces:
        problem += " (the files here are not traces)"
    return TraceFormatError(
        found.source, problem, "Point tv.load() at PyTorch profiler traces or Nsight Systems SQLite exports"
    )


def _renumber(results: dict[int, list[RankData]], numbers: list[list[int]]) -> None:
    for i, ranks in zip(sorted(results), numbers, strict=True):
        results[i] = [with_rank(d, r) for d, r in zip(results[i], ranks, strict=True)]
