"""Counters over time: launch queue length per stream and memory bandwidth per copy kind.

Both are step functions: each row of the time series is a change point, and the value holds
until the next row of the same series. Summaries are time-weighted (each value counts for
as long as it holds). See ``docs/semantics.md (launches, queues and bandwidth)`` for the definitions
and how they relate to HTA's ``get_queue_length_*`` and ``get_memory_bw_*``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model import intervals as iv
from ..model.classify import COPY_KINDS
from ..model.schema import GpuClass
from ..model.trace import Trace
from ._common import empty, gpu_activities, scoped, warn_no_gpu
from .launch import concat_ranks, launched, ranks_without_gpu, rows_of

__all__ = ["memory_bandwidth", "queue_length"]

#: Copy kinds of ``memory_bandwidth``: the schema's ``copy_kind`` values, plus ``unknown``
#: for memory activities the profiler did not say the direction of.
BANDWIDTH_KINDS = (*COPY_KINDS, "unknown")

QUEUE_SERIES_COLUMNS = {
    "rank": "int64",
    "device": "int16",
    "stream": "int64",
    "ts_ns": "int64",
    "queue_length": "int64",
}
QUEUE_STREAM_COLUMNS = {
    "rank": "int64",
    "device": "int16",
    "stream": "int64",
    "launches": "int64",
    "span_ns": "int64",
    "queue_length_mean": "float64",
    "queue_length_p50": "int64",
    "queue_length_p90": "int64",
    "queue_length_max": "int64",
    "blocked_ns": "int64",
    "blocked_pct": "float64",
}
BANDWIDTH_SERIES_COLUMNS = {
    "rank": "int64",
    "kind": "category",
    "ts_ns": "int64",
    "bandwidth_gbps": "float64",
    "active_copies": "int64",
}
BANDWIDTH_KIND_COLUMNS = {
    "rank": "int64",
    "kind": "category",
    "copies": "int64",
    "unmeasured": "int64",
    "total_bytes": "int64",
    "busy_ns": "int64",
    "peak_gbps": "float64",
    "mean_gbps": "float64",
    "effective_gbps": "float64",
}


# ---------------------------------------------------------------------- step functions
@dataclass(frozen=True)
class _Steps:
    """Change points of step functions, sorted by series then time.

    ``group`` is the series of each point, ``t`` its time, ``count`` the number of open
    intervals after it, ``value`` the summed value after it, ``d`` how long it holds (0 for
    the last point of a series).
    """

    group: np.ndarray
    t: np.ndarray
    count: np.ndarray
    value: np.ndarray
    d: np.ndarray

    def clip(self, window: tuple[int, int] | None) -> _Steps:
        """The step functions restricted to ``[lo, hi)``: a point at ``lo`` carries the value then."""
        if window is None:
            return self
        lo, hi = window
        start = np.maximum(self.t, lo)
        end = np.minimum(self.t + self.d, hi)
        keep = (end > start) | ((self.d == 0) & (self.t >= lo) & (self.t < hi))
        return _Steps(
            self.group[keep],
            start[keep],
            self.count[keep],
            self.value[keep],
            np.maximum(end - start, 0)[keep],
        )

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Group ids present and the first row of each (the series are contiguous)."""
        if len(self.group) == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        first = np.flatnonzero(np.concatenate(([True], self.group[1:] != self.group[:-1])))
        return self.group[first], first


def _steps(group: np.ndarray, t: np.ndarray, dcount: np.ndarray, dvalue: np.ndarray | None = None) -> _Steps:
    """Step functions from +/- events: per series, the running count and running value.

    Each series' events must sum to zero (every interval that opens also closes), which makes
    one cumulative sum over the events sorted by (series, time) a per-series sum. Events at
    the same time are collapsed to the state after all of them, and points that change
    nothing are dropped. Running float sums restart from exactly 0 whenever no interval is
    open, so rounding never leaves a residue.
    """
    if len(t) == 0:
        z = np.empty(0, dtype=np.int64)
        return _Steps(z, z.copy(), z.copy(), np.empty(0, dtype=np.float64), z.copy())
    order = np.lexsort((t, group))
    g, t, dc = group[order], t[order], dcount[order]
    count = np.cumsum(dc)
    if dvalue is None:
        value = count.astype(np.float64)
    else:
        raw = np.cumsum(dvalue[order])
        idx = np.arange(len(raw))
        # Start of the current busy period: the last point at which nothing was open.
        last_zero = np.maximum.accumulate(np.where(count == 0, idx, -1))
        prev_zero = np.concatenate(([-1], last_zero[:-1]))
        base = np.where(prev_zero >= 0, raw[np.maximum(prev_zero, 0)], 0.0)
        value = np.where(count == 0, 0.0, raw - base)
    n = len(t)
    last = np.ones(n, dtype=bool)
    last[:-1] = (g[1:] != g[:-1]) | (t[1:] != t[:-1])
    g, t, count, value = g[last], t[last], count[last], value[last]
    changed = np.ones(len(t), dtype=bool)
    changed[1:] = (g[1:] != g[:-1]) | (count[1:] != count[:-1]) | (value[1:] != value[:-1])
    g, t, count, value = g[changed], t[changed], count[changed], value[changed]
    d = np.zeros(len(t), dtype=np.int64)
    same = g[1:] == g[:-1]
    d[:-1] = np.where(same, t[1:] - t[:-1], 0)
    return _Steps(g, t, count, value, d)


def _group_sum(steps: _Steps, x: np.ndarray, first: np.ndarray) -> np.ndarray:
    return np.add.reduceat(x, first) if len(first) else np.empty(0, dtype=x.dtype)


def _weighted_lower_quantile(group: np.ndarray, v: np.ndarray, w: np.ndarray, q: float) -> np.ndarray:
    """Per group (ids 0..k-1, every id present), the smallest v whose cumulative weight reaches q."""
    k = int(group.max()) + 1 if len(group) else 0
    if len(v) and v.dtype.kind in "iu" and v.min() >= 0 and k * (int(v.max()) + 1) <= 1 << 24:
        # Small non-negative integers (queue lengths): a weighted histogram per group.
        m = int(v.max()) + 1
        hist = np.bincount(group * m + v, weights=w, minlength=k * m).reshape(k, m)
        cum = np.cumsum(hist, axis=1)
        tot = cum[:, -1]
        idx = np.argmax(cum >= (q * tot)[:, None], axis=1)
        return np.where(tot > 0, idx, np.nan)
    order = np.lexsort((v, group))
    g, v, w = group[order], v[order], w[order]
    cum = np.cumsum(w)
    tot = np.bincount(g, weights=w, minlength=k)
    base = np.cumsum(tot) - tot
    idx = np.searchsorted(cum, base + q * tot, side="left")
    idx = np.minimum(idx, len(v) - 1)
    return np.where(tot > 0, v[idx], np.nan)


def _dense(group: np.ndarray) -> np.ndarray:
    """Group ids renumbered 0..k-1 in order of appearance (groups are contiguous)."""
    change = np.concatenate(([0], (group[1:] != group[:-1]).astype(np.int64)))
    return np.cumsum(change)


def _window(trace: Trace, time_range: tuple[int, int] | None) -> tuple[int, int] | None:
    window = trace.window
    if time_range is None:
        return window
    lo, hi = int(time_range[0]), int(time_range[1])
    if hi <= lo:
        raise OptionError(f"time_range must be (start_ns, end_ns) with end > start, got {time_range}")
    if window is not None:
        lo, hi = max(lo, window[0]), min(hi, window[1])
    return (lo, hi)


# ---------------------------------------------------------------------- queue length
def _queue_steps(ev: pd.DataFrame) -> tuple[_Steps, np.ndarray, np.ndarray, np.ndarray]:
    """Queue-length step functions of one rank, per (device, stream).

    Returns the steps, the device and stream of each group id, and the GPU start and group
    of every launch (for counting launches in a window).
    """
    act, call = launched(ev)
    keep = call >= 0
    act, call = act[keep], call[keep]
    ts = ev["ts_ns"].to_numpy()
    gpu_ts = ts[act]
    # +1 when the launch call starts; never after the activity itself starts (clock skew).
    in_ts = np.minimum(ts[call], gpu_ts)
    dev = ev["device"].to_numpy()[act]
    st = ev["stream"].to_numpy()[act]
    keys = pd.DataFrame({"d": dev, "s": st})
    gid = keys.groupby(["d", "s"], sort=True).ngroup().to_numpy().astype(np.int64)
    k = int(gid.max()) + 1 if len(gid) else 0
    g_dev = np.zeros(k, dtype=np.int16)
    g_st = np.zeros(k, dtype=np.int64)
    g_dev[gid] = dev
    g_st[gid] = st
    n = len(act)
    steps = _steps(
        np.concatenate((gid, gid)),
        np.concatenate((in_ts, gpu_ts)),
        np.concatenate((np.ones(n, dtype=np.int64), np.full(n, -1, dtype=np.int64))),
    )
    return steps, g_dev, g_st, np.stack((gpu_ts, gid))


def _rank_span(ev: pd.DataFrame, window: tuple[int, int] | None) -> int:
    if len(ev) == 0:
        return 0
    ts = ev["ts_ns"].to_numpy()
    lo, hi = int(ts.min()), int((ts + ev["dur_ns"].to_numpy()).max())
    if window is not None:
        lo, hi = max(lo, window[0]), min(hi, window[1])
    return max(hi - lo, 0)


def queue_length(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    per: Literal["time", "stream"] = "time",
    max_queue_length: int = 1024,
) -> pd.DataFrame:
    """Outstanding GPU operations per stream over time, or their time-weighted summary.

    The queue of a stream grows by one when a launch call starts and shrinks by one when
    the launched activity starts on the GPU (HTA's rule). Every launch counts whose call and
    GPU activity are both in the trace (kernels, copies and sets, any launch API; see
    :func:`kernel_launch_stats`). Events at the same instant are applied together, so the
    series holds the state after each instant.

    Parameters
    ----------
    trace:
        The trace.
    ranks, iterations:
        Scope (see :meth:`Trace.select`).
    time_range:
        ``(start_ns, end_ns)``: the series is cut to this window (a first point at
        ``start_ns`` carries the queue length then, counting launches made before it).
    per:
        ``"time"``: the step function, one row per change. ``"stream"``: one row per
        (rank, device, stream) with time-weighted statistics.
    max_queue_length:
        Queue length at which the launch queue counts as full (CUDA's default is 1024
        pending launches per stream); time at or above it is ``blocked_ns``.

    Returns
    -------
    pandas.DataFrame
        With ``per="time"``, sorted by rank, device, stream and time:

        rank : int
        device : int
        stream : int
        ts_ns : int, ns
            When the queue length changes.
        queue_length : int
            Operations launched on the stream and not yet started, from ``ts_ns`` until the
            stream's next row. The last row of a stream is 0.

        With ``per="stream"``:

        rank, device, stream : int
        launches : int
            Launched operations that start on the GPU within the scope.
        span_ns : int, ns
            From the stream's first launch to its last GPU start (cut to ``time_range``):
            the time the statistics weigh.
        queue_length_mean : float
            Time-weighted mean queue length over ``span_ns``.
        queue_length_p50, queue_length_p90 : int
            Time-weighted percentiles: the smallest length the queue is at or below for
            50% (90%) of ``span_ns``.
        queue_length_max : int
            Longest queue.
        blocked_ns : int, ns
            Time with ``queue_length >= max_queue_length``.
        blocked_pct : float, %
            ``blocked_ns`` over the rank's trace span (first event start to last event end,
            cut to ``time_range``), as HTA's ``relative_duration_at_max_queue_length``.

    Warns
    -----
    TraceviewWarning
        For ranks without GPU activity (a CPU-only trace gives an empty frame).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> q = tv.queue_length(trace, ranks=0)
    >>> int(q["queue_length"].min()), int(q.groupby("stream")["queue_length"].last().max())
    (0, 0)
    >>> tv.queue_length(trace, ranks=0, per="stream")["stream"].tolist()
    [7, 22, 24, 84]
    """
    if per not in ("time", "stream"):
        raise OptionError.invalid("per", per, ("time", "stream"))
    window = _window(trace, time_range)
    no_gpu = ranks_without_gpu(trace, ranks)
    trace = scoped(trace, ranks=ranks, iterations=iterations)
    results = trace.map_ranks(_queue_rank, window, per, max_queue_length)
    parts = [p for p in results.values() if p is not None]
    if no_gpu:
        warn_no_gpu("queue_length", no_gpu)
    return concat_ranks(parts, QUEUE_SERIES_COLUMNS if per == "time" else QUEUE_STREAM_COLUMNS)


def _queue_rank(trace: Trace, window: tuple[int, int] | None, per: str, max_queue_length: int) -> dict[str, Any] | None:
    """One rank's queue-length series (``per="time"``) or per-stream rows; None if empty."""
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    steps, g_dev, g_st, starts = _queue_steps(ev)
    steps = steps.clip(window)
    if len(steps.t) == 0:
        return None
    count = steps.count
    if per == "time":
        return {
            "rank": np.full(len(count), r, dtype=np.int64),
            "device": g_dev[steps.group],
            "stream": g_st[steps.group],
            "ts_ns": steps.t,
            "queue_length": count,
        }
    gids, first = steps.bounds()
    span = _group_sum(steps, steps.d, first)
    weighted = _group_sum(steps, count * steps.d, first)
    dense = _dense(steps.group)
    blocked = _group_sum(steps, np.where(count >= max_queue_length, steps.d, 0), first)
    gpu_ts, gid = starts
    in_win = np.ones(len(gpu_ts), dtype=bool) if window is None else (gpu_ts >= window[0]) & (gpu_ts < window[1])
    launches = np.bincount(gid[in_win], minlength=len(g_st))[gids]
    rank_span = _rank_span(ev, window)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(span > 0, weighted / np.maximum(span, 1), np.nan)
    return {
        "rank": np.full(len(gids), r, dtype=np.int64),
        "device": g_dev[gids],
        "stream": g_st[gids],
        "launches": launches,
        "span_ns": span,
        "queue_length_mean": mean,
        "queue_length_p50": np.nan_to_num(_weighted_lower_quantile(dense, count, steps.d, 0.5)),
        "queue_length_p90": np.nan_to_num(_weighted_lower_quantile(dense, count, steps.d, 0.9)),
        "queue_length_max": np.maximum.reduceat(count, first),
        "blocked_ns": blocked,
        "blocked_pct": 100.0 * blocked / rank_span if rank_span > 0 else np.full(len(gids), np.nan),
    }


# ---------------------------------------------------------------------- memory bandwidth
@dataclass(frozen=True)
class _Copies:
    """Memory activities of one rank, clipped to the scope's window."""

    kind: np.ndarray  # code into BANDWIDTH_KINDS
    ts: np.ndarray
    end: np.ndarray
    bw: np.ndarray  # GB/s (= bytes/ns); NaN where unknown
    nbytes: np.ndarray  # bytes inside the window; -1 where unknown


def _copies(trace: Trace, rank: int) -> _Copies:
    ev = trace.rank_data(rank).events
    acts = gpu_activities(trace, rank, classes=[GpuClass.MEMORY.value])
    eids = acts["eid"].to_numpy()
    orig_dur = ev["dur_ns"].to_numpy()[rows_of(ev, eids)]
    ts = acts["ts_ns"].to_numpy()
    end = acts["end_ns"].to_numpy()
    ga = trace.rank_data(rank).gpu_args
    ga_eid = ga["eid"].to_numpy()
    order = np.argsort(ga_eid, kind="stable")
    pos = np.minimum(np.searchsorted(ga_eid[order], eids), max(len(ga_eid) - 1, 0))
    hit = (ga_eid[order][pos] == eids) if len(ga_eid) else np.zeros(len(eids), dtype=bool)
    rows = np.where(hit, order[pos] if len(ga_eid) else 0, -1)
    n = len(eids)
    kind = np.full(n, len(COPY_KINDS), dtype=np.int64)  # unknown
    recorded = np.full(n, np.nan)
    nbytes = np.full(n, -1, dtype=np.int64)
    if hit.any():
        r = rows[hit]
        ck = ga["copy_kind"].cat.codes.to_numpy()[r].astype(np.int64)
        kind[hit] = np.where(ck >= 0, ck, len(COPY_KINDS))
        recorded[hit] = ga["bandwidth_gbps"].to_numpy(dtype=np.float64)[r]
        nbytes[hit] = ga["bytes"].to_numpy()[r]
    with np.errstate(divide="ignore", invalid="ignore"):
        from_bytes = np.where((nbytes >= 0) & (orig_dur > 0), nbytes / np.maximum(orig_dur, 1), np.nan)
        bw = np.where(np.isfinite(recorded) & (recorded > 0), recorded, from_bytes)
        frac = np.where(orig_dur > 0, (end - ts) / np.maximum(orig_dur, 1), 1.0)
    inside = np.where(nbytes >= 0, np.rint(nbytes * frac).astype(np.int64), -1)
    return _Copies(kind, ts, end, bw, inside)


def memory_bandwidth(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    per: Literal["time", "kind"] = "time",
) -> pd.DataFrame:
    """Concurrent memory-copy bandwidth per copy kind over time, or a summary per kind.

    Each memory copy or set contributes its bandwidth (GB/s) while it runs; the series is
    the sum over the copies of one kind (``HtoD``, ``DtoH``, ``DtoD``, ``PtoP``, ``HtoH``,
    ``memset``, ``unknown``) running at each instant. A copy's bandwidth is the one the
    profiler recorded (``memory bandwidth (GB/s)``, measured on its exact duration), else
    ``bytes / duration``; copies with neither are *unmeasured* and stay out of the series.
    Zero-length copies add bytes but no time.

    Parameters
    ----------
    trace:
        The trace.
    ranks, iterations, time_range:
        Scope (see :meth:`Trace.select`). Copies are cut to ``time_range``, and their bytes
        counted in proportion to the time inside it.
    per:
        ``"time"``: the step function, one row per change. ``"kind"``: one row per (rank,
        kind) present.

    Returns
    -------
    pandas.DataFrame
        With ``per="time"``, sorted by rank, kind and time:

        rank : int
        kind : category
            Copy kind.
        ts_ns : int, ns
            When the bandwidth changes.
        bandwidth_gbps : float, GB/s
            Summed bandwidth of the copies of this kind running from ``ts_ns`` until the
            next row of the kind. The last row of a kind is 0.
        active_copies : int
            How many of them.

        With ``per="kind"``:

        rank : int
        kind : category
        copies : int
            Memory activities of this kind.
        unmeasured : int
            Of which without a recorded bandwidth or size.
        total_bytes : int, bytes
            Bytes copied (or set) by the copies of known size.
        busy_ns : int, ns
            Time at least one copy of this kind runs.
        peak_gbps : float, GB/s
            Highest concurrent bandwidth.
        mean_gbps : float, GB/s
            Time-weighted mean of the concurrent bandwidth over the time a measured copy
            of this kind runs.
        effective_gbps : float, GB/s
            ``total_bytes`` over the time the copies of known size run. Equal to
            ``mean_gbps`` where the recorded bandwidths are ``bytes / duration`` on the
            trace's own clock (ns-resolution traces); on us-resolution traces durations are
            truncated to the microsecond and the two differ.

    Warns
    -----
    TraceviewWarning
        For ranks without GPU activity (a CPU-only trace gives an empty frame).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> bw = tv.memory_bandwidth(trace, ranks=3, per="kind")
    >>> bw["kind"].tolist()
    ['HtoD', 'DtoH', 'DtoD', 'memset']
    """
    if per not in ("time", "kind"):
        raise OptionError.invalid("per", per, ("time", "kind"))
    no_gpu = ranks_without_gpu(trace, ranks)
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    kind_dtype = pd.CategoricalDtype(list(BANDWIDTH_KINDS))
    parts = [p for p in trace.map_ranks(_bandwidth_rank, per).values() if p is not None]
    if no_gpu:
        warn_no_gpu("memory_bandwidth", no_gpu)
    columns = BANDWIDTH_SERIES_COLUMNS if per == "time" else BANDWIDTH_KIND_COLUMNS
    if not parts:
        out = empty(columns)
        out["kind"] = pd.Categorical([], dtype=kind_dtype)
        return out
    out = concat_ranks(parts, columns)
    out["kind"] = out["kind"].cat.set_categories(list(BANDWIDTH_KINDS))
    return out


def _bandwidth_rank(trace: Trace, per: str) -> dict[str, Any] | None:
    """One rank's bandwidth series (``per="time"``) or per-kind rows; None without copies."""
    (r,) = trace.ranks
    kind_dtype = pd.CategoricalDtype(list(BANDWIDTH_KINDS))
    c = _copies(trace, r)
    if len(c.kind) == 0:
        return None
    timed = np.isfinite(c.bw) & (c.end > c.ts)
    n = int(timed.sum())
    k, bw = c.kind[timed], c.bw[timed]
    steps = _steps(
        np.concatenate((k, k)),
        np.concatenate((c.ts[timed], c.end[timed])),
        np.concatenate((np.ones(n, dtype=np.int64), np.full(n, -1, dtype=np.int64))),
        np.concatenate((bw, -bw)),
    )
    if per == "time":
        return {
            "rank": np.full(len(steps.t), r, dtype=np.int64),
            "kind": pd.Categorical.from_codes(steps.group, dtype=kind_dtype),
            "ts_ns": steps.t,
            "bandwidth_gbps": steps.value,
            "active_copies": steps.count,
        }
    kinds = np.unique(c.kind)
    gids, first = steps.bounds()
    peak = np.full(len(BANDWIDTH_KINDS), np.nan)
    mean = np.full(len(BANDWIDTH_KINDS), np.nan)
    if len(gids):
        peak[gids] = np.maximum.reduceat(steps.value, first)
        busy_measured = _group_sum(steps, np.where(steps.count > 0, steps.d, 0), first)
        integral = _group_sum(steps, steps.value * steps.d, first)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean[gids] = np.where(busy_measured > 0, integral / np.maximum(busy_measured, 1), np.nan)
    rows: dict[str, list[Any]] = {col: [] for col in BANDWIDTH_KIND_COLUMNS}
    for kc in kinds.tolist():
        sel = c.kind == kc
        sized = sel & (c.nbytes >= 0)
        total = int(c.nbytes[sized].sum())
        busy = iv.length(*iv.union(c.ts[sel], c.end[sel]))
        busy_sized = iv.length(*iv.union(c.ts[sized], c.end[sized]))
        rows["rank"].append(r)
        rows["kind"].append(BANDWIDTH_KINDS[kc])
        rows["copies"].append(int(sel.sum()))
        rows["unmeasured"].append(int((sel & ~np.isfinite(c.bw)).sum()))
        rows["total_bytes"].append(total)
        rows["busy_ns"].append(busy)
        rows["peak_gbps"].append(peak[kc])
        rows["mean_gbps"].append(mean[kc])
        rows["effective_gbps"].append(total / busy_sized if busy_sized > 0 else np.nan)
    rows["kind"] = pd.Categorical(rows["kind"], dtype=kind_dtype)
    return rows
