"""What the server's worker processes compute: a run's headline figures, its data, a diff, a
dashboard command.

The scheduler (:mod:`.worker`, in the server process) submits these functions to its pool.
A worker reads exactly the files that the path check validated (``RunEntry.files``, each
checked again to be a regular file inside the root, not a link: :func:`checked_files`),
with the run's load options (``RunEntry.load_options``); a run in object storage, exactly
the objects that ``remote.remote_run`` found, with the server's ``remote_storage_options``
(given to each worker process once, at its start: :func:`set_storage_options`). It keeps its last loaded traces
and dashboards, so that the figures, the dashboard and a diff of one run load it once.
Progress goes into the scheduler's Manager table (:func:`report`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any, TypedDict

from .messages import DiffData, FrameJson, RunData, RunFigures, RunVerdict, TaskProgress
from .runs import RunEntry

__all__ = [
    "CommandResult",
    "TaskResult",
    "checked_files",
    "compute_command",
    "compute_diff",
    "compute_headline",
    "compute_run_data",
    "compute_verdict",
    "headline_figures",
    "report",
    "set_storage_options",
    "verdict_of",
]

#: Rows kept per table in a run's data and in a diff (the panels show top-k tables anyway).
MAX_ROWS = 5000
#: Warnings kept in a run's verdict (the Diff tab has them all).
MAX_VERDICT_WARNINGS = 8
#: Traces kept loaded in a worker process (the last ones used).
KEEP_TRACES = 2
#: Dashboards (their analyses' frames, their timeline index) kept in a worker process.
KEEP_DASHBOARDS = 2


def _frame_json(df: Any, max_rows: int = MAX_ROWS) -> FrameJson:
    """A DataFrame as {"columns", "data", "rows", "truncated"}, NaN as null, at most ``max_rows`` rows."""
    rows = len(df)
    truncated = rows > max_rows
    if truncated:
        df = df.iloc[:max_rows]
    payload = json.loads(df.to_json(orient="split", index=False, date_format="iso", default_handler=str))
    return FrameJson(columns=payload["columns"], data=payload["data"], rows=rows, truncated=truncated)


#: Loaded traces of this worker process, by (path, signature, cache, load options), most recent last.
#: Only worker processes fill it (the server process never loads traces).
_LOADED: OrderedDict[tuple[Any, ...], Any] = OrderedDict()


#: fsspec options for the runs in object storage (the server's ``remote_storage_options``):
#: set once per worker process by the pool's initializer, never part of a task.
_STORAGE_OPTIONS: dict[str, Any] = {}


def set_storage_options(options: dict[str, Any]) -> None:
    """Keep the options with which this worker process reads runs in object storage."""
    _STORAGE_OPTIONS.clear()
    _STORAGE_OPTIONS.update(options)


def report(progress: Any, label: str, value: TaskProgress) -> None:
    """Progress into the Manager's table; a dead Manager only loses the progress (the server restarts it)."""
    if progress is None:
        return
    with contextlib.suppress(Exception):
        progress[label] = value


def checked_files(root: str, entry: RunEntry) -> list[Path]:
    """The run's files, each checked again: a regular file (no link) whose real path is where the check found it."""
    from ..errors import TraceFormatError
    from .runs import check_regular_file

    base = Path(root)
    out = []
    for rel in entry.files:
        path = base / rel
        try:
            check_regular_file(path)
            real = os.path.realpath(path)
        except OSError:
            raise TraceFormatError(rel, "is no longer a regular file", "Refresh the list of runs") from None
        if real != str(path):
            raise TraceFormatError(
                rel, "leads elsewhere through a symbolic link", "Only regular files are read"
            ) from None
        out.append(path)
    return out


def _load(root: str, entry: RunEntry, cache: str | bool, progress: Any, label: str, stage: str = "loading") -> Any:
    import warnings

    from ..errors import TraceFormatError
    from ..loading.loader import load
    from ..loading.storage import is_url
    from ..model.trace import Trace

    key = (entry.path, entry.signature, cache, entry.load_options)
    if key in _LOADED:
        _LOADED.move_to_end(key)
        return _LOADED[key]

    def loading(done: int, total: int, _what: str) -> None:  # a Progress; ``stage`` says which run loads
        report(progress, label, {"stage": stage, "done": done, "total": total})

    if entry.options_error:
        raise TraceFormatError(entry.path, entry.options_error, "Fix or remove the run's load options file")
    options = json.loads(entry.load_options) if entry.load_options else {}
    if "pid_map" in options:
        # JSON keys are strings: process ids written as integers in the trace are ints again.
        options["pid_map"] = {
            int(k) if re.fullmatch(r"-?[0-9]{1,18}", k) else k: v for k, v in options["pid_map"].items()
        }
    remote = is_url(entry.path)
    # Exactly the files (or objects) the path check validated: never the folder (which could hold more).
    files: list[Any] = list(entry.files) if remote else checked_files(root, entry)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if remote:
            # One object (or a dataset's URL) alone: as tv.load(url) reads it.
            paths = files if len(files) > 1 else files[0]
            trace = load(paths, cache=cache, progress=loading, storage_options=dict(_STORAGE_OPTIONS), **options)
        else:
            trace = load(files, cache=cache, progress=loading, **options)
    if entry.kind in ("folder", "traceprofile"):
        # Named after the run's folder, as tv.load(folder) names it.
        trace = Trace(
            [trace.rank_data(r) for r in trace.ranks],
            classifier=trace.classifier,
            source=entry.path if remote else str(Path(root) / entry.path),
            skipped_files=trace.skipped_files,
            run_status=trace.run_status,
            _classified=True,
        )
    _LOADED[key] = trace
    while len(_LOADED) > KEEP_TRACES:
        _LOADED.popitem(last=False)
    return trace


def _stage(progress: Any, label: str, stage: str) -> None:
    report(progress, label, {"stage": stage, "done": 0, "total": 1})


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def headline_figures(trace: Any) -> RunFigures:
    """The figures the Traces list shows for a trace: ``tv.headline(trace)`` without ``source``.

    (The run's entry carries its own path, relative to the server root; the trace's
    absolute source path stays on the server.) Absolute ns (``t0_ns``, ``window``) travel as
    strings, as in every protocol. Keys and units: docs/semantics.md, "Headline figures".
    """
    from ..analysis.headline import figures_of, headline

    figures = figures_of(headline(trace))
    window = figures["window"]
    return RunFigures(
        **{k: v for k, v in figures.items() if k not in ("t0_ns", "window")},  # type: ignore[typeddict-item]
        t0_ns=str(figures["t0_ns"]),
        window=None if window is None else [str(t) for t in window],
    )


def compute_headline(
    root: str, entry: RunEntry, cache: str | bool, progress: Any = None, label: str = ""
) -> RunFigures:
    """Headline figures of a run (see :func:`headline_figures`); runs in a worker process."""
    trace = _load(root, entry, cache, progress, label)
    _stage(progress, label, "analysing")
    return headline_figures(trace)


def compute_run_data(root: str, entry: RunEntry, cache: str | bool, progress: Any = None, label: str = "") -> RunData:
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
    return RunData(
        ranks=[int(r) for r in trace.ranks],
        source=entry.path,
        headline=headline_figures(trace),
        tables={name: _frame_json(df) for name, df in tables.items()},
    )


def _compare(ta: Any, tb: Any) -> Any:
    """``tv.compare(ta, tb)``, its warnings kept in the result (not shown as Python warnings)."""
    import warnings

    from ..analysis.compare import compare

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compare(ta, tb)


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def verdict_of(cmp: Any) -> RunVerdict:
    """A run's verdict against a baseline, from ``tv.compare(baseline, run)`` (a Comparison).

    The top cause is the largest change outside noise (the causes are sorted by
    ``|delta_ns|``), else the largest change.
    """
    causes = cmp.causes
    outside = causes.loc[~causes["within_noise"].astype(bool)]
    top = outside.iloc[0] if len(outside) else (causes.iloc[0] if len(causes) else None)
    return RunVerdict(
        verdict=str(cmp.verdict),
        base_ns=_finite(cmp.base_ns),
        new_ns=_finite(cmp.new_ns),
        delta_ns=_finite(cmp.delta_ns),
        delta_pct=_finite(cmp.delta_pct),
        top_cause="" if top is None else str(top["cause"]),
        top_cause_delta_ns=None if top is None else _finite(float(top["delta_ns"])),
        top_cause_within_noise=False if top is None else bool(top["within_noise"]),
        noise_test=str(cmp.noise_test),
        warnings=[str(w) for w in cmp.warnings[:MAX_VERDICT_WARNINGS]],
    )


def compute_verdict(
    root: str, baseline: RunEntry, run: RunEntry, cache: str | bool, progress: Any = None, label: str = ""
) -> RunVerdict:
    """``run`` against ``baseline`` (:func:`verdict_of`), for the runs list; runs in a worker process."""
    tb = _load(root, baseline, cache, progress, label, "loading the baseline")
    tr = _load(root, run, cache, progress, label)
    _stage(progress, label, "comparing")
    return verdict_of(_compare(tb, tr))


def compute_diff(
    root: str, a: RunEntry, b: RunEntry, cache: str | bool, progress: Any = None, label: str = ""
) -> DiffData:
    """``tv.compare(a, b)`` (verdict, headline, causes, ranks, warnings) as JSON-able tables with
    both runs' figures; runs in a worker process."""
    ta = _load(root, a, cache, progress, label, "loading the baseline")
    tb = _load(root, b, cache, progress, label, "loading the other run")
    _stage(progress, label, "comparing")
    cmp = _compare(ta, tb)
    return DiffData(
        a={"path": a.path, "headline": headline_figures(ta)},
        b={"path": b.path, "headline": headline_figures(tb)},
        verdict=cmp.verdict,
        summary=cmp.headline(),
        delta_ns=_finite(cmp.delta_ns),
        delta_pct=_finite(cmp.delta_pct),
        causes=_frame_json(cmp.causes),
        per_rank=_frame_json(cmp.per_rank),
        warnings=[str(w) for w in cmp.warnings],
    )


class CommandResult(TypedDict):
    """A dashboard command's answer (:func:`compute_command`): its JSON message and binary buffers."""

    msg: Any
    buffers: list[bytes]


#: What a task computes, by its kind: "headline", "run", "diff", "verdict", "command".
TaskResult = RunFigures | RunData | DiffData | RunVerdict | CommandResult


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
) -> CommandResult:
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
    key: tuple[Any, ...] = (entry.path, entry.signature, cache, entry.load_options)
    if baseline is not None:
        key = (*key, baseline.path, baseline.signature, baseline.load_options)
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

    def analysing(done: int, total: int, what: str) -> None:
        report(progress, label, {"stage": what, "done": done, "total": total})

    _stage(progress, label, "analysing")
    out, buffers = answer(data, command, json.loads(msg), progress=analysing)
    # Paths as the client knows them, relative to the server root, wherever they appear
    # (the payload's source, the Diff tab's baseline, messages): never the server's layout.
    prefix = json.dumps(root.rstrip("/") + "/")[1:-1]
    text = json.dumps(out)
    if prefix in text:
        out = json.loads(text.replace(prefix, ""))
    return CommandResult(msg=out, buffers=[bytes(b) for b in buffers])
