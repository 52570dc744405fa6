"""The headline figures of a trace: the one source of every figure a surface shows about it.

The trace's repr, the dashboard's header and cards, the Traces sidebar, ``traceview summary``,
the ``%%traceprofile`` summary line and the HTML report all show :func:`headline`'s values
and compute none of their own. The figures come from the analyses that define them
(:func:`~jupyter_traceview.analysis.summary` per rank, :func:`iteration_stats` for step
times, :attr:`Trace.iterations` for the steps); this module only gathers them. Every term
is defined once, in ``docs/semantics.md`` ("Headline figures").
"""

from __future__ import annotations

import math
import warnings
from typing import Literal, cast, overload

import pandas as pd

from .. import format as fmt
from ..errors import TraceviewWarning
from ..model.display_hook import Headline, HeadlineFigures
from ..model.trace import Trace
from .efficiency import iteration_stats
from .summary import summary
from .workload import workload

__all__ = [
    "HEADLINE_KEYS",
    "PER_RANK_COLUMNS",
    "Headline",
    "HeadlineFigures",
    "figures_of",
    "headline",
    "headline_with_ranks",
]

#: The keys of ``headline(trace)``, with their meaning and unit (also in docs/semantics.md).
HEADLINE_KEYS: dict[str, str] = {
    "source": "the path the trace was loaded from (None for a trace built in memory)",
    "ranks": "number of ranks",
    "rank_ids": "the ranks, sorted (list of int)",
    "devices": "distinct device names the ranks report (list of str)",
    "t0_ns": "the trace's origin, absolute ns: relative times count from it (Trace.t0_ns)",
    "window": "[start_ns, end_ns] of select(time_range=...), absolute ns, or None",
    "events": "events of every kind, all ranks",
    "cpu_ops": "CPU operators, all ranks",
    "kernels": "GPU kernels, all ranks",
    "gpu_activities": "GPU activities (kernels, memory copies and sets, sync records), all ranks",
    "iterations": "number of distinct ProfilerStep iterations (a count, not a step id)",
    "steps": "the ProfilerStep ids (the N of ProfilerStep#N, list of int): ids, not a count",
    "step_median_ns": "median step time, ns: per step the slowest rank's GPU step window "
    "(iteration_stats(per='step').duration_ns), or without GPU work its ProfilerStep's CPU span; None without steps",
    "gpu": "whether any rank has GPU work (bool)",
    "job_span_ns": "job span, ns: first start of GPU work on any rank to last end on any rank; 0 without GPU work",
    "span_ns": "the longest rank span, ns (a rank's span: first start to last end of its GPU work); 0 without",
    "trace_span_ns": "the longest rank's trace span, ns: first event start to last event end, any kind",
    "gpu_busy_pct": "GPU busy, % of the rank's span, mean over ranks with GPU work; None without",
    "gpu_busy_min_pct": "lowest rank's GPU busy %; None without GPU work",
    "gpu_busy_max_pct": "highest rank's GPU busy %; None without GPU work",
    "idle_pct": "GPU idle, % of the rank's span, mean over ranks with GPU work; None without",
    "compute_pct": "compute kernel running, % of the rank's span, mean over ranks; None without",
    "exposed_comm_pct": "communication with no compute alongside, % of the rank's span, mean over ranks; None without",
    "workload": "what the trace records (tv.workload): the verdict, or the verdicts by rank "
    "(e.g. 'training', 'graph_capture (rank 0); inference (ranks 1-3)')",
    "workload_evidence": "why, in words with the counts: tv.workload's evidence of the first rank (of each verdict)",
    "skipped_files": "the trace files the load left out (on_error='skip'), each {'path': str, 'reason': str}; "
    "[] when every file was read",
    "run_status": "how the %%traceprofile run ended, from its run record: 'ok', 'error' (the cell raised: "
    "the last step is partial) or 'interrupted'; 'ok' without a run record",
}

#: Columns of ``headline(trace, per_rank=True)``: ``summary``'s, under the headline's names.
PER_RANK_COLUMNS: dict[str, str] = {
    "rank": "int64",
    "device": "object",
    "events": "int64",
    "cpu_ops": "int64",
    "kernels": "int64",
    "gpu_activities": "int64",
    "iterations": "int64",
    "start_ns": "int64",
    "end_ns": "int64",
    "span_ns": "int64",
    "trace_span_ns": "int64",
    "gpu_busy_ns": "int64",
    "gpu_busy_pct": "float64",
    "idle_pct": "float64",
    "compute_pct": "float64",
    "exposed_comm_pct": "float64",
    "overlap_pct": "float64",
}

_RENAME = {"gpu_start_ns": "start_ns", "gpu_end_ns": "end_ns", "gpu_span_ns": "span_ns"}


@overload
def headline(trace: Trace, *, per_rank: Literal[False] = ...) -> Headline: ...
@overload
def headline(trace: Trace, *, per_rank: Literal[True]) -> pd.DataFrame: ...
def headline(trace: Trace, *, per_rank: bool = False) -> Headline | pd.DataFrame:
    """The figures every surface shows about ``trace``: a JSON-ready dict, or one row per rank.

    Parameters
    ----------
    trace : Trace
        Narrow it first with :meth:`Trace.select` to describe a part of it (the figures
        then describe exactly the selection: activities are clipped to a time range).
    per_rank : bool
        False (default): the whole trace, as a dict. True: a DataFrame, one row per rank.

    Returns
    -------
    Headline
        A dict, JSON-ready (ints, floats, strings, lists, None; no NaN). Keys (units in the
        names; see :data:`HEADLINE_KEYS` and ``docs/semantics.md``): ``source``,
        ``ranks``, ``rank_ids``, ``devices``, ``t0_ns``, ``window``, ``events``,
        ``cpu_ops``, ``kernels``, ``gpu_activities``, ``iterations`` (a count),
        ``steps`` (ProfilerStep ids), ``step_median_ns``, ``gpu``, ``job_span_ns``,
        ``span_ns``, ``trace_span_ns``, ``gpu_busy_pct``, ``gpu_busy_min_pct``,
        ``gpu_busy_max_pct``, ``idle_pct``, ``compute_pct``, ``exposed_comm_pct``,
        ``workload``, ``workload_evidence``, ``skipped_files`` (list of ``{"path",
        "reason"}``: files ``on_error="skip"`` left out), ``run_status`` (``"ok"``,
        ``"error"`` or ``"interrupted"``: how the ``%%traceprofile`` run ended).
    pandas.DataFrame
        With ``per_rank=True``, one row per rank: ``rank``; ``device`` (str);
        ``events``, ``cpu_ops``, ``kernels``, ``gpu_activities``, ``iterations`` (int);
        ``start_ns``, ``end_ns`` (int, ns, absolute: the rank's GPU work; -1 without);
        ``span_ns`` (int, ns: the rank's span; 0 without GPU work); ``trace_span_ns``
        (int, ns: any kind of event); ``gpu_busy_ns`` (int, ns); ``gpu_busy_pct``,
        ``idle_pct``, ``compute_pct``, ``exposed_comm_pct`` (float, % of ``span_ns``; NaN
        without GPU work); ``overlap_pct`` (float, % of the communication time with compute
        alongside; NaN without communication). The columns of :func:`summary`, under
        these names.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> h = tv.headline(tv.load(tv.sample_path()))
    >>> h["ranks"], h["kernels"], h["iterations"], h["steps"]
    (8, 2104, 1, [10])
    >>> h["job_span_ns"]
    19685000
    >>> list(tv.headline(tv.load(tv.sample_path()), per_rank=True)["span_ns"])[:2]
    [13009000, 18749000]
    """
    s = _summary(trace)
    return _per_rank(trace, s) if per_rank else _figures(trace, s)


def headline_with_ranks(trace: Trace) -> tuple[Headline, pd.DataFrame]:
    """``(headline(trace), headline(trace, per_rank=True))`` from one :func:`summary` of the
    trace (what ``traceview summary`` prints): the same values as the two calls."""
    s = _summary(trace)
    return _figures(trace, s), _per_rank(trace, s)


def _summary(trace: Trace) -> pd.DataFrame:
    with warnings.catch_warnings():
        # Ranks without GPU work are figures too (spans 0, shares None), not a warning.
        warnings.simplefilter("ignore", TraceviewWarning)
        return summary(trace)


def _per_rank(trace: Trace, s: pd.DataFrame) -> pd.DataFrame:
    out = s.rename(columns=_RENAME)
    out.insert(1, "device", [_device(trace, int(r)) for r in out["rank"]])
    return out[list(PER_RANK_COLUMNS)].astype(PER_RANK_COLUMNS).reset_index(drop=True)


def _figures(trace: Trace, s: pd.DataFrame) -> Headline:
    gpu = s.loc[s["gpu_span_ns"] > 0]
    its = trace.iterations
    steps = sorted({int(x) for x in its["step"].tolist()}) if len(its) else []
    step_median: int | None = None
    if steps and len(gpu):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TraceviewWarning)
            st = iteration_stats(trace, per="step")
        if len(st):
            step_median = round(float(st["duration_ns"].median()))
    elif steps:
        # No GPU work: a step lasts its ProfilerStep's CPU span (the slowest rank's).
        step_median = round(float(its.groupby("step")["dur_ns"].max().median()))
    busy = gpu["gpu_busy_pct"]
    window = trace.window
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceviewWarning)
        kind, evidence = _workload(workload(trace))
    return {
        "source": trace.source,
        "ranks": len(trace.ranks),
        "rank_ids": [int(r) for r in trace.ranks],
        "devices": sorted({d for d in (_device(trace, r) for r in trace.ranks) if d}),
        "t0_ns": int(trace.t0_ns),
        "window": [int(window[0]), int(window[1])] if window is not None else None,
        "events": int(s["events"].sum()),
        "cpu_ops": int(s["cpu_ops"].sum()),
        "kernels": int(s["kernels"].sum()),
        "gpu_activities": int(s["gpu_activities"].sum()),
        "iterations": len(steps),
        "steps": steps,
        "step_median_ns": step_median,
        "gpu": bool(len(gpu)),
        "job_span_ns": int(gpu["gpu_end_ns"].max() - gpu["gpu_start_ns"].min()) if len(gpu) else 0,
        "span_ns": int(gpu["gpu_span_ns"].max()) if len(gpu) else 0,
        "trace_span_ns": int(s["trace_span_ns"].max()) if len(s) else 0,
        "gpu_busy_pct": _mean(busy),
        "gpu_busy_min_pct": _finite(float(busy.min())) if len(busy) else None,
        "gpu_busy_max_pct": _finite(float(busy.max())) if len(busy) else None,
        "idle_pct": _mean(gpu["idle_pct"]),
        "compute_pct": _mean(gpu["compute_pct"]),
        "exposed_comm_pct": _mean(gpu["exposed_comm_pct"]),
        "workload": kind,
        "workload_evidence": evidence,
        "skipped_files": [{"path": str(f["path"]), "reason": str(f["reason"])} for f in trace.skipped_files],
        "run_status": trace.run_status,
    }


def _workload(w: pd.DataFrame) -> tuple[str, str]:
    """The headline's ``workload`` and ``workload_evidence`` texts from :func:`workload`'s rows."""
    if w.empty:
        return "", ""
    groups: dict[str, list[int]] = {}
    first: dict[str, str] = {}
    for r, v, e in zip(w["rank"].tolist(), w["workload"].tolist(), w["evidence"].tolist(), strict=True):
        groups.setdefault(str(v), []).append(int(r))
        first.setdefault(str(v), str(e))
    if len(groups) == 1:
        ((v, _),) = groups.items()
        return v, first[v]
    kind = "; ".join(f"{v} (rank{'s' if len(rs) > 1 else ''} {fmt.ranges(rs)})" for v, rs in groups.items())
    return kind, " ".join(f"Rank {rs[0]}: {first[v]}" for v, rs in groups.items())


def figures_of(h: Headline) -> HeadlineFigures:
    """The figures of a headline without its ``source`` (what the Traces sidebar lists)."""
    out = {k: v for k, v in h.items() if k != "source"}
    return cast(HeadlineFigures, out)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _mean(values: pd.Series) -> float | None:
    v = values.dropna()
    return _finite(float(v.mean())) if len(v) else None


def _device(trace: Trace, rank: int) -> str:
    """The device name rank ``rank`` reports (its first device's), "" if none."""
    props = trace.meta(rank).device_properties
    return str(props[0].get("name", "")) if props else ""
