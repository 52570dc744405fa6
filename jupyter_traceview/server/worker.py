"""Background analysis for the server: runs in worker processes, never on the event loop.

Results are kept in memory by run signature (path, sizes, modification times), so a
changed run is analysed again; parsing itself goes through tv.load's on-disk cache.
"""

from __future__ import annotations

import json
import math
import time
from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runs import RunEntry

__all__ = ["Analyzer", "Job"]

#: Rows kept per table in a run's data (the dashboard shows top-k tables anyway).
MAX_ROWS = 5000


def _frame_json(df: Any) -> dict[str, Any]:
    """A DataFrame as {"columns", "data", "truncated"}, NaN as null, at most MAX_ROWS rows."""
    truncated = len(df) > MAX_ROWS
    if truncated:
        df = df.iloc[:MAX_ROWS]
    payload = json.loads(df.to_json(orient="split", index=False, date_format="iso", default_handler=str))
    return {"columns": payload["columns"], "data": payload["data"], "truncated": truncated}


def _load(root: str, entry_path: str, files: tuple[str, ...], kind: str, cache: str | bool, progress: Any) -> Any:
    import warnings

    import jupyter_traceview as tv

    key = entry_path

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress[key] = {"stage": "loading", "done": done, "total": total}

    target = Path(root) / entry_path if kind in ("folder", "traceprofile") else [Path(root) / f for f in files]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tv.load(target, cache=cache, on_progress=report, progress=False)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def compute_headline(
    root: str, entry_path: str, files: tuple[str, ...], kind: str, cache: str | bool, progress: Any = None
) -> dict[str, Any]:
    """Headline figures of a run (runs in a worker process)."""
    import jupyter_traceview as tv

    trace = _load(root, entry_path, files, kind, cache, progress)
    s = tv.summary(trace)
    figures: dict[str, Any] = {"ranks": len(trace.ranks), "span_ns": int(s["gpu_span_ns"].max()) if len(s) else 0}
    for col in ("gpu_busy_pct", "idle_pct", "exposed_comm_pct"):
        if col in s.columns:
            figures[col] = _clean(float(s[col].mean())) if s[col].notna().any() else None
    return figures


def compute_run_data(
    root: str, entry_path: str, files: tuple[str, ...], kind: str, cache: str | bool, progress: Any = None
) -> dict[str, Any]:
    """Everything a dashboard shows for a run, as JSON-able tables (runs in a worker process)."""
    from ..report import dashboard_tables

    trace = _load(root, entry_path, files, kind, cache, progress)
    if progress is not None:
        progress[entry_path] = {"stage": "analysing", "done": 0, "total": 1}
    tables = dashboard_tables(trace)
    return {
        "ranks": list(trace.ranks),
        "source": entry_path,
        "tables": {name: _frame_json(df) for name, df in tables.items()},
    }


@dataclass
class Job:
    future: Future[dict[str, Any]]
    started: float = field(default_factory=time.time)


class Analyzer:
    """Runs headline and dashboard computations in a process pool, with progress."""

    def __init__(self, root: Path, *, workers: int = 1, cache: str | bool = True, keep: int = 256) -> None:
        self.root_path = root
        self.root = str(root)
        self.cache = cache
        self._pool: ProcessPoolExecutor | None = None
        self._workers = workers
        self._manager: Any = None
        self._progress: Any = None
        self._jobs: dict[tuple[str, str, Any], Job] = {}
        self._results: OrderedDict[tuple[str, str, Any], dict[str, Any]] = OrderedDict()
        self._errors: dict[tuple[str, str, Any], str] = {}
        self._keep = keep

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing

            ctx = multiprocessing.get_context("spawn")
            self._manager = ctx.Manager()
            self._progress = self._manager.dict()
            self._pool = ProcessPoolExecutor(max_workers=self._workers, mp_context=ctx)
        return self._pool

    def status(self, what: str, entry: RunEntry) -> dict[str, Any]:
        """{"status": "ready"|"running"|"error", ...} for a computation, starting it if needed."""
        key = (what, entry.path, entry.signature)
        if key in self._results:
            self._results.move_to_end(key)
            return {"status": "ready", "result": self._results[key]}
        if key in self._errors:
            return {"status": "error", "message": self._errors[key]}
        job = self._jobs.get(key)
        if job is None:
            fn = compute_headline if what == "headline" else compute_run_data
            pool = self._ensure_pool()
            future = pool.submit(fn, self.root, entry.path, entry.files, entry.kind, self.cache, self._progress)
            job = self._jobs[key] = Job(future)
        if job.future.done():
            del self._jobs[key]
            try:
                result = job.future.result()
            except Exception as exc:  # noqa: BLE001 - reported to the client as a message
                self._errors[key] = _message(exc)
                return {"status": "error", "message": self._errors[key]}
            self._results[key] = result
            while len(self._results) > self._keep:
                self._results.popitem(last=False)
            return {"status": "ready", "result": result}
        progress = dict(self._progress.get(entry.path, {})) if self._progress is not None else {}
        return {"status": "running", "progress": progress, "elapsed_s": round(time.time() - job.started, 1)}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self._manager is not None:
            self._manager.shutdown()


def _message(exc: BaseException) -> str:
    """A one-line message (no traceback) for an analysis failure."""
    from ..errors import TraceviewError

    if isinstance(exc, TraceviewError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
