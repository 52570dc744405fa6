"""Reading files in a pool of worker processes: how the pool starts, and one file per task.

Each worker reads a file (:func:`~.ingest.read_file`, through the cache), classifies its
ranks and prepares their derived results (:mod:`.prepare`), and hands the tables back
through a scratch folder (:mod:`.handoff`). :func:`pool_context` is also how the analyses
start their rank workers.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from ..errors import TraceFormatError, TraceviewError
from ..model.classify import Classifier
from ..model.rank_data import RankData
from . import handoff, heap
from . import prepare as preparing
from .ingest import ReadOptions
from .readers.files import TraceFile, prefetch

__all__ = ["pool_context", "read_file_task", "read_in_pool", "starts_cheaply"]

#: Set once this process has started a forkserver (it then serves every later pool).
_forkserver_started = False


def starts_cheaply() -> bool:
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


def read_in_pool(
    files: list[TraceFile],
    order: list[int],
    options: ReadOptions,
    cache_arg: str | None,
    results: dict[int, list[RankData]],
    handle_error: Callable[[TraceFile, TraceFormatError], None],
    advance: Callable[[], None],
    started: Callable[[], None],
    classifier: Classifier,
    preparers: tuple[preparing.PrepareFunction, ...] = (),
    source: str | None = None,
) -> None:
    """Read ``files[i]`` for ``i`` in ``order`` (biggest first) into ``results``, classified
    (:func:`~..model.trace.classified`); ``preparers``: the functions that prepare per-rank
    results (:mod:`.prepare`), run where each file is read."""
    workers = max(1, min(len(order), os.cpu_count() or 1))
    with (
        handoff.scratch_folder() as folder,
        ProcessPoolExecutor(max_workers=workers, mp_context=pool_context()) as pool,
    ):
        # The first submit starts every worker (a fork pool starts them all at once, before
        # its own manager thread); only then may other threads (the progress bar's) start.
        # The patterns only (a copy without the kernel names it has memoised), for each task.
        patterns = dataclasses.replace(classifier)
        # Each task first asks the OS for the file the pool starts ``workers`` tasks later (about
        # when this one ends), so that the disk reads it while this one is parsed.
        ahead = {i: files[order[k + workers]].path for k, i in enumerate(order[:-workers])}
        futures: dict[Future[Any], int] = {
            pool.submit(
                read_file_task, files[i], options, cache_arg, folder, patterns, ahead.get(i), preparers, source
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
                    results[i] = preparing.read_prepared(files[i], options, cache_arg, classifier, preparers, source)
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


def read_file_task(
    tf: TraceFile,
    options: ReadOptions,
    cache_dir: str | None,
    folder: str | None,
    classifier: Classifier,
    ahead: Path | None = None,
    preparers: tuple[preparing.PrepareFunction, ...] = (),
    source: str | None = None,
) -> Any:
    """A worker's task: one file's ranks (:func:`~.ingest.read_file`), classified, handed back through ``folder``.

    (See :mod:`.handoff`; the cache gets them classified, with the classifier's key.)

    The worker's heap is kept or given back first (:mod:`.heap`); ``ahead``, a file a later
    task reads, is asked of the OS first (:func:`.readers.files.prefetch`). ``preparers``: the
    ranks' derived results are prepared here too (:mod:`.prepare`).
    """
    if ahead is not None:
        prefetch(ahead)
    heap.before_task(tf.size)
    return handoff.dump(preparing.read_prepared(tf, options, cache_dir, classifier, preparers, source), folder)
