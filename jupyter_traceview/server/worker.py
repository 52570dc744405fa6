"""Background analysis for the server: runs in worker processes, never on the event loop.

:class:`Analyzer` schedules tasks (a run's headline figures, its dashboard data, the diff
of two runs) on a process pool, interactive tasks before background ones, and keeps their
results in memory by run signature (paths, sizes, modification times), so a changed run is
analysed again. Parsing goes through tv.load's on-disk cache; a worker process also keeps
its last loaded traces, so that the figures, the dashboard and a diff of one run load it once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runs import RunEntry

__all__ = [
    "Analyzer",
    "Task",
    "compute_command",
    "compute_diff",
    "compute_headline",
    "compute_run_data",
    "headline_figures",
]

#: Rows kept per table in a run's data and in a diff (the panels show top-k tables anyway).
MAX_ROWS = 5000
#: Traces kept loaded in a worker process (the last ones used).
KEEP_TRACES = 2
#: Interactive tasks (a panel waits for them) run before background ones (list figures).
PRIORITY = {"run": 0, "diff": 0, "command": 0, "headline": 1}
#: Results kept in the server process, by kind of task (the others: DEFAULT_KEEP). A
#: dashboard command's answer is handed out once, then dropped (see Analyzer.status).
KEEP = {"headline": 4096, "command": 8}
DEFAULT_KEEP = 16
KEEP_ERRORS = 4096
#: Characters kept of an error message.
MAX_MESSAGE = 2000
#: Dashboards (their analyses' frames, their timeline index) kept in a worker process.
KEEP_DASHBOARDS = 2


# ---------------------------------------------------------------------------------------
# What runs in the worker processes


def _frame_json(df: Any, max_rows: int = MAX_ROWS) -> dict[str, Any]:
    """A DataFrame as {"columns", "data", "rows", "truncated"}, NaN as null, at most ``max_rows`` rows."""
    rows = len(df)
    truncated = rows > max_rows
    if truncated:
        df = df.iloc[:max_rows]
    payload = json.loads(df.to_json(orient="split", index=False, date_format="iso", default_handler=str))
    return {"columns": payload["columns"], "data": payload["data"], "rows": rows, "truncated": truncated}


#: Loaded traces of this worker process, by (path, signature, cache), most recent last.
#: Only worker processes fill it (the server process never loads traces).
_LOADED: OrderedDict[tuple[str, Any, Any], Any] = OrderedDict()


def _load(root: str, entry: RunEntry, cache: str | bool, progress: Any, label: str, stage: str = "loading") -> Any:
    import warnings

    from ..loading.loader import load

    key = (entry.path, entry.signature, cache)
    if key in _LOADED:
        _LOADED.move_to_end(key)
        return _LOADED[key]

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress[label] = {"stage": stage, "done": done, "total": total}

    base = Path(root)
    target = base / entry.path if entry.kind in ("folder", "traceprofile") else [base / f for f in entry.files]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = load(target, cache=cache, on_progress=report, progress=False)
    _LOADED[key] = trace
    while len(_LOADED) > KEEP_TRACES:
        _LOADED.popitem(last=False)
    return trace


def _stage(progress: Any, label: str, stage: str) -> None:
    if progress is not None:
        progress[label] = {"stage": stage, "done": 0, "total": 1}


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def headline_figures(trace: Any) -> dict[str, Any]:
    """The figures the Traces list shows for a trace.

    ``ranks``, ``iterations`` (most ProfilerStep iterations of a rank), ``events`` and
    ``kernels`` (summed over ranks); ``gpu`` (whether any rank has GPU work); ``span_ns``
    (the longest GPU span of a rank, or the longest trace span without GPU work);
    ``gpu_busy_pct``, ``idle_pct``, ``exposed_comm_pct`` (means over the ranks with GPU
    work, ``None`` without any), as in :func:`jupyter_traceview.summary`.
    """
    import warnings

    from .. import analysis

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = analysis.summary(trace)
    gpu = bool(len(s)) and bool((s["gpu_span_ns"] > 0).any())
    span_col = "gpu_span_ns" if gpu else "trace_span_ns"
    figures: dict[str, Any] = {
        "ranks": len(trace.ranks),
        "iterations": int(s["iterations"].max()) if len(s) else 0,
        "events": int(s["events"].sum()),
        "kernels": int(s["kernels"].sum()),
        "gpu": gpu,
        "span_ns": int(s[span_col].max()) if len(s) else 0,
    }
    for col in ("gpu_busy_pct", "idle_pct", "exposed_comm_pct"):
        figures[col] = _clean(float(s[col].mean())) if col in s.columns and s[col].notna().any() else None
    return figures


def compute_headline(root: str, entry: RunEntry, cache: str | bool, progress: Any = None, label: str = "") -> dict:
    """Headline figures of a run (see :func:`headline_figures`); runs in a worker process."""
    trace = _load(root, entry, cache, progress, label)
    _stage(progress, label, "analysing")
    return headline_figures(trace)


def compute_run_data(root: str, entry: RunEntry, cache: str | bool, progress: Any = None, label: str = "") -> dict:
    """Everything a run's panel shows, as JSON-able tables; runs in a worker process."""
    from ..dashboard.tables import dashboard_tables

    trace = _load(root, entry, cache, progress, label)
    _stage(progress, label, "analysing")
    tables = dashboard_tables(trace)
    meta = tables.get("metadata")
    if meta is not None and "path" in meta.columns:
        # Paths as the client knows them: relative to the server root.
        prefix = root.rstrip("/") + "/"
        meta = meta.copy()
        meta["path"] = [str(p).removeprefix(prefix) for p in meta["path"]]
        tables["metadata"] = meta
    return {
        "ranks": [int(r) for r in trace.ranks],
        "source": entry.path,
        "headline": headline_figures(trace),
        "tables": {name: _frame_json(df) for name, df in tables.items()},
    }


def compute_diff(
    root: str, a: RunEntry, b: RunEntry, cache: str | bool, progress: Any = None, label: str = ""
) -> dict[str, Any]:
    """``tv.trace_diff(a, b)`` as a JSON-able table with both runs' figures; runs in a worker process."""
    from .. import analysis

    ta = _load(root, a, cache, progress, label, "loading the baseline")
    tb = _load(root, b, cache, progress, label, "loading the other run")
    _stage(progress, label, "comparing")
    diff = analysis.trace_diff(ta, tb)
    counts = {str(k): int(v) for k, v in diff["status"].value_counts().items()}
    return {
        "a": {"path": a.path, "headline": headline_figures(ta)},
        "b": {"path": b.path, "headline": headline_figures(tb)},
        "status_counts": counts,
        "table": _frame_json(diff),
    }


#: DashboardData of this worker process, by (run, baseline, cache), most recent last.
_DASHBOARDS: OrderedDict[tuple[Any, ...], Any] = OrderedDict()


def compute_command(
    root: str,
    entries: tuple[RunEntry, ...],
    cache: str | bool,
    progress: Any = None,
    label: str = "",
    command: str = "_payload",
    msg: str = "{}",
) -> dict[str, Any]:
    """One command of the dashboard's front end for a run; runs in a worker process.

    ``entries`` is the run, or the run and a baseline (the dashboard then has a Diff tab);
    ``msg`` the command's JSON message. Answered by
    :func:`jupyter_traceview.dashboard.commands.answer`, the function that answers tv.Dashboard's
    commands in a kernel: ``{"msg": ..., "buffers": [bytes, ...]}``. The analyses' frames
    and the timeline index stay in this process for the run's next commands.
    """
    from ..dashboard.commands import answer
    from ..dashboard.data import DashboardData

    entry, *rest = entries
    baseline = rest[0] if rest else None
    key: tuple[Any, ...] = (entry.path, entry.signature, cache)
    if baseline is not None:
        key = (*key, baseline.path, baseline.signature)
    data = _DASHBOARDS.get(key)
    if data is None:
        trace = _load(root, entry, cache, progress, label)
        base = _load(root, baseline, cache, progress, label, "loading the baseline") if baseline else None
        data = DashboardData(trace, baseline=base)
        _DASHBOARDS[key] = data
        while len(_DASHBOARDS) > KEEP_DASHBOARDS:
            _DASHBOARDS.popitem(last=False)
    else:
        _DASHBOARDS.move_to_end(key)

    def report(done: int, total: int, what: str) -> None:
        if progress is not None:
            progress[label] = {"stage": what, "done": done, "total": total}

    _stage(progress, label, "analysing")
    out, buffers = answer(data, command, json.loads(msg), progress=report)
    # Paths as the client knows them, relative to the server root, wherever they appear
    # (the payload's source, the Diff tab's baseline, messages): never the server's layout.
    prefix = json.dumps(root.rstrip("/") + "/")[1:-1]
    text = json.dumps(out)
    if prefix in text:
        out = json.loads(text.replace(prefix, ""))
    return {"msg": out, "buffers": [bytes(b) for b in buffers]}


# ---------------------------------------------------------------------------------------
# The scheduler, in the server process


@dataclass(frozen=True)
class Task:
    """One computation: ``what`` ("headline", "run", "diff" or "command") over one or two runs.

    ``args`` are a command's name and JSON message (``what == "command"``).
    """

    what: str
    entries: tuple[RunEntry, ...]
    args: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, tuple[tuple[str, Any], ...], tuple[str, ...]]:
        return (self.what, tuple((e.path, e.signature) for e in self.entries), self.args)

    @property
    def label(self) -> str:
        """Its name in the progress table (shared with the workers)."""
        return (
            f"{self.what}:" + "|".join(e.path for e in self.entries) + ("|" + "|".join(self.args) if self.args else "")
        )


@dataclass
class Job:
    task: Task
    cache: str | bool
    queued: float = field(default_factory=time.time)
    future: Future[dict[str, Any]] | None = None
    started: float | None = None
    #: (priority, sequence number, key): its place in the queue.
    order: tuple[int, int, Any] = (0, 0, None)
    #: Set when the job finishes (created by Analyzer.wait).
    event: asyncio.Event | None = None


_FUNCTIONS: dict[str, Callable[..., dict[str, Any]]] = {
    "headline": compute_headline,
    "run": compute_run_data,
    "diff": compute_diff,
}


class Analyzer:
    """Runs tasks in a process pool, interactive ones first, and reports their progress.

    Every method is called on the server's event loop; finished futures come back to it
    through ``call_soon_threadsafe``.
    """

    def __init__(self, root: Path, *, workers: int = 1, cache: str | bool = True) -> None:
        self.root_path = root
        self.root = str(root)
        self.cache = cache
        self._workers = max(1, workers)
        self._pool: ProcessPoolExecutor | None = None
        self._manager: Any = None
        self._progress: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._seq = itertools.count()
        self._queue: list[tuple[int, int, Any]] = []  # (priority, seq, key), a heap
        self._jobs: dict[Any, Job] = {}  # queued or running
        self._running = 0
        self._results: dict[str, OrderedDict[Any, dict[str, Any]]] = {}
        self._errors: OrderedDict[Any, str] = OrderedDict()
        #: Sniff results of runs.find_runs, kept between listings.
        self.sniff_memo: dict[tuple[str, int, int], bool] = {}

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing

            ctx = multiprocessing.get_context("spawn")
            self._manager = ctx.Manager()
            self._progress = self._manager.dict()
            self._pool = ProcessPoolExecutor(max_workers=self._workers, mp_context=ctx)
        return self._pool

    def status(
        self, what: str, *entries: RunEntry, cache: str | bool | None = None, args: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """{"status": "ready"|"queued"|"running"|"error", ...} of a task, starting it if needed.

        ``cache`` is the on-disk cache tv.load uses (a folder, or True for the default);
        None uses the server's. It does not change results, so it is not part of the key.
        ``args``: a command's name and JSON message (``what == "command"``); a command's
        answer is handed out once.
        """
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        task = Task(what, entries, args)
        key = task.key
        done = self._results.get(what)
        if done is not None and key in done:
            if what == "command":
                return {"status": "ready", "result": done.pop(key)}
            done.move_to_end(key)
            return {"status": "ready", "result": done[key]}
        if key in self._errors:
            message = self._errors.pop(key) if what == "command" else self._errors[key]
            return {"status": "error", "message": message}
        job = self._jobs.get(key)
        if job is None:
            job = self._jobs[key] = Job(task, self.cache if cache is None else cache)
            job.order = (PRIORITY.get(what, 1), next(self._seq), key)
            heapq.heappush(self._queue, job.order)
            self._pump()
        if job.future is not None and job.future.done():
            self._finished(key)  # done before its callback reached the loop
            return self.status(what, *entries, cache=cache, args=args)
        elapsed = round(time.time() - job.queued, 1)
        if job.future is None:
            position = 1 + sum(1 for item in self._queue if item < job.order and self._jobs.get(item[2]) is not None)
            return {"status": "queued", "position": position, "progress": {"stage": "queued"}, "elapsed_s": elapsed}
        progress = dict(self._progress.get(task.label, {})) if self._progress is not None else {}
        return {"status": "running", "progress": progress or {"stage": "starting"}, "elapsed_s": elapsed}

    async def wait(self, what: str, *entries: RunEntry, args: tuple[str, ...] = (), timeout: float = 1.0) -> None:
        """Wait (at most ``timeout`` seconds) for a queued or running task to finish."""
        job = self._jobs.get(Task(what, entries, args).key)
        if job is None:
            return
        if job.event is None:
            job.event = asyncio.Event()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(job.event.wait(), timeout)

    def _pump(self) -> None:
        """Hand queued jobs to the pool while workers are free, highest priority first."""
        while self._queue and self._running < self._workers:
            _, _, key = heapq.heappop(self._queue)
            job = self._jobs.get(key)
            if job is None or job.future is not None:
                continue
            pool = self._ensure_pool()
            task = job.task
            if task.what == "command":
                command, msg = task.args
                job.future = pool.submit(
                    compute_command, self.root, task.entries, job.cache, self._progress, task.label, command, msg
                )
            else:
                fn = _FUNCTIONS[task.what]
                job.future = pool.submit(fn, self.root, *task.entries, job.cache, self._progress, task.label)
            job.started = time.time()
            self._running += 1
            job.future.add_done_callback(functools.partial(self._done_soon, key))

    def _done_soon(self, key: Any, _future: Future[dict[str, Any]]) -> None:
        """Future callback (a pool thread): finish the job on the event loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (server shutdown)
            loop.call_soon_threadsafe(self._finished, key)

    def _finished(self, key: Any) -> None:
        job = self._jobs.get(key)
        if job is None or job.future is None or not job.future.done():
            return
        del self._jobs[key]
        self._running -= 1
        if job.event is not None:
            job.event.set()
        if self._progress is not None:
            self._progress.pop(job.task.label, None)
        try:
            result = job.future.result()
        except BrokenProcessPool:
            # A worker died (killed, out of memory): a fresh pool serves the next tasks.
            self._errors[key] = "the analysis process stopped while working on this run (out of memory?)"
            self._reset_pool()
        except Exception as exc:  # noqa: BLE001 - reported to the client as a message
            self._errors[key] = _message(exc, self.root)
        else:
            what = job.task.what
            done = self._results.setdefault(what, OrderedDict())
            done[key] = result
            while len(done) > KEEP.get(what, DEFAULT_KEEP):
                done.popitem(last=False)
        while len(self._errors) > KEEP_ERRORS:
            self._errors.popitem(last=False)
        self._pump()

    def _reset_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        # Jobs that were running in the dead pool fail too (their callbacks finish them).

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self._manager is not None:
            self._manager.shutdown()


def _message(exc: BaseException, root: str) -> str:
    """A one-line message (no traceback, no server paths) for an analysis failure."""
    from ..errors import TraceviewError

    text = str(exc) if isinstance(exc, TraceviewError) else f"{type(exc).__name__}: {exc}"
    # Paths relative to the server root, as the client knows them; one line, bounded.
    text = " ".join(text.replace(root.rstrip("/") + "/", "").split())
    return text[:MAX_MESSAGE] if text else type(exc).__name__
