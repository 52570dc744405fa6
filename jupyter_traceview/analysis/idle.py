"""Why each GPU stream sits idle: waiting for the host, between kernels, or otherwise."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..trace import Trace
from ._common import WORK_CLASSES, empty, gpu_activities, scoped, warn_no_gpu

__all__ = ["IDLE_CATEGORIES", "idle_time_breakdown"]

#: The idle categories, in the order rows are given.
IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")

IDLE_COLUMNS = {
    "rank": "int64",
    "stream": "int64",
    "idle_category": pd.CategoricalDtype(list(IDLE_CATEGORIES), ordered=True),
    "idle_ns": "int64",
    "idle_share_pct": "float64",
    "count": "int64",
    "mean_ns": "float64",
    "p50_ns": "float64",
    "p90_ns": "float64",
    "max_ns": "float64",
}


def _rank_gaps(trace: Trace, rank: int, acts: pd.DataFrame, kernel_wait_ns: int) -> pd.DataFrame:
    """Every idle gap of one rank: stream, length (ns) and category code."""
    stream = acts["stream"].to_numpy()
    ts = acts["ts_ns"].to_numpy()
    end = acts["end_ns"].to_numpy()
    order = np.lexsort((end, ts, stream))
    stream, ts, end = stream[order], ts[order], end[order]
    launch = acts["launch_eid"].to_numpy()[order]

    # Running maximum of the ends of the earlier activities of the same stream.
    run_end = pd.Series(end).groupby(stream).cummax().to_numpy()
    same = np.zeros(len(ts), dtype=bool)
    same[1:] = stream[1:] == stream[:-1]
    prev_end = ts.copy()  # the first activity of a stream follows no gap
    prev_end[1:][same[1:]] = run_end[:-1][same[1:]]
    gap = ts - prev_end
    at = np.flatnonzero(gap > 0)

    # The launch call of the activity that ends each gap: when did the host issue it?
    # (eid is increasing along a rank's table, also after select(); a launch outside the
    # selection is unknown, and an unknown launch never makes a host wait.)
    ev = trace.rank_data(rank).events
    eids = ev["eid"].to_numpy()
    lid = launch[at]
    pos = np.minimum(np.searchsorted(eids, lid), len(eids) - 1)
    known = (lid >= 0) & (eids[pos] == lid)
    launch_ts = np.where(known, ev["ts_ns"].to_numpy()[pos], np.iinfo(np.int64).min)

    g = gap[at]
    host = launch_ts > prev_end[at]
    category = np.where(host, 0, np.where(g < kernel_wait_ns, 1, 2)).astype(np.int8)
    return pd.DataFrame({"stream": stream[at], "gap_ns": g, "category": category})


def idle_time_breakdown(
    trace: Trace,
    *,
    kernel_wait_ns: int = 30_000,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Idle time of each GPU stream, split by cause, with statistics of the idle gaps.

    Per stream, GPU work activities (kernels, copies and sets; not synchronisation records)
    are taken in start order. An *idle gap* is time between the end of all the stream's
    earlier activities and the start of the next one (overlapping or back-to-back
    activities leave no gap). Each gap gets one category:

    ``host_wait``
        the launch call of the activity that ends the gap started after the stream went
        idle: the GPU waited for the host (CPU-bound, launch overhead, dataloader...);
    ``kernel_wait``
        otherwise, a gap shorter than ``kernel_wait_ns``: the normal delay between
        kernels queued back to back;
    ``other``
        a longer gap with the work already launched: waiting on another stream, an event,
        or a synchronisation.

    Gaps are per stream: a stream is idle while another stream of the same GPU may be busy,
    so these totals do not add up to the rank's GPU idle time (see
    :func:`temporal_breakdown`). A stream's ``idle_ns`` over the three categories adds up
    to its span (first start to last end) minus its busy time.

    Parameters
    ----------
    trace : Trace
    kernel_wait_ns : int, default 30 000 (30 us, as HTA)
        Gaps shorter than this, with the next activity already launched, are
        ``kernel_wait``.
    ranks, iterations, time_range
        Narrow the scope (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        Long format, three rows per (rank, stream), one per ``idle_category``:

        ``rank`` (int), ``stream`` (int), ``idle_category`` (categorical: host_wait,
        kernel_wait, other), ``idle_ns`` (int, ns: total idle time of the category),
        ``idle_share_pct`` (float, % of the stream's idle time; NaN when the stream has
        none), ``count`` (int: number of gaps), ``mean_ns``, ``p50_ns``, ``p90_ns``,
        ``max_ns`` (float, ns: mean, median, 90th percentile (linear interpolation) and
        largest gap; NaN when ``count`` is 0).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> idle = tv.idle_time_breakdown(tv.load(tv.sample_path()), ranks=0)
    >>> idle.pivot(index="stream", columns="idle_category", values="idle_ns").loc[7].tolist()
    [11448000, 123000, 0]
    """
    if isinstance(kernel_wait_ns, bool) or not isinstance(kernel_wait_ns, (int, np.integer)) or kernel_wait_ns < 0:
        raise ValueError(f"kernel_wait_ns must be a non-negative integer (ns), got {kernel_wait_ns!r}")
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    parts = []
    missing = []
    for r in trace.ranks:
        acts = gpu_activities(trace, r, classes=WORK_CLASSES)
        if acts.empty:
            missing.append(r)
            continue
        gaps = _rank_gaps(trace, r, acts, int(kernel_wait_ns))
        streams = np.unique(acts["stream"].to_numpy())
        parts.append(_stats(r, streams, gaps))
    if missing:
        warn_no_gpu("idle_time_breakdown", missing)
    if not parts:
        return empty(IDLE_COLUMNS)
    return pd.concat(parts, ignore_index=True).astype(IDLE_COLUMNS)


def _stats(rank: int, streams: np.ndarray, gaps: pd.DataFrame) -> pd.DataFrame:
    """Three rows per stream (every category, gaps or not) with the gap statistics."""
    n_cat = len(IDLE_CATEGORIES)
    stream_col = np.repeat(streams, n_cat)
    cat_col = np.tile(np.arange(n_cat), len(streams))
    idx = pd.MultiIndex.from_arrays([stream_col, cat_col], names=["stream", "category"])
    grouped = gaps.groupby(["stream", "category"])["gap_ns"]
    idle = grouped.sum().reindex(idx, fill_value=0).to_numpy(dtype=np.int64)
    agg = grouped.agg(["count", "mean", "max"]).astype(np.float64)
    agg["p50"] = grouped.quantile(0.5).astype(np.float64)
    agg["p90"] = grouped.quantile(0.9).astype(np.float64)
    agg = agg.reindex(idx)
    stream_idle = np.repeat(idle.reshape(-1, n_cat).sum(axis=1), n_cat)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(stream_idle > 0, 100.0 * idle / np.maximum(stream_idle, 1), np.nan)
    return pd.DataFrame(
        {
            "rank": rank,
            "stream": stream_col,
            "idle_category": pd.Categorical.from_codes(cat_col, categories=list(IDLE_CATEGORIES), ordered=True),
            "idle_ns": idle,
            "idle_share_pct": share,
            "count": agg["count"].fillna(0).to_numpy(dtype=np.int64),
            "mean_ns": agg["mean"].to_numpy(dtype=np.float64),
            "p50_ns": agg["p50"].to_numpy(dtype=np.float64),
            "p90_ns": agg["p90"].to_numpy(dtype=np.float64),
            "max_ns": agg["max"].to_numpy(dtype=np.float64),
        }
    )
