"""Why each GPU stream sits idle: waiting for the host, between kernels, or otherwise."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model.trace import Trace
from ._common import empty, pct, scoped, warn_no_gpu
from ._gpu import Activities, activities

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


def _rank_gaps(trace: Trace, rank: int, acts: Activities, kernel_wait_ns: int) -> tuple[np.ndarray, ...]:
    """Every idle gap of one rank: (stream, length in ns, category code), and the streams."""
    # The launch call of each activity: when did the host issue it? (eid is increasing
    # along a rank's table, also after select(); a launch outside the selection is
    # unknown, and an unknown launch never makes a host wait.)
    ev = trace.rank_data(rank).events
    eids = ev["eid"].to_numpy()
    lid = acts.launch_eid
    pos = np.minimum(np.searchsorted(eids, lid), max(len(eids) - 1, 0))
    known = (lid >= 0) & (eids[pos] == lid) if len(eids) else np.zeros(len(lid), dtype=bool)
    launch_ts = np.where(known, ev["ts_ns"].to_numpy()[pos] if len(eids) else 0, np.iinfo(np.int64).min)
    # Activities of a stream in start order; among equal starts and ends, the one launched
    # first (unknown launches first) ends a gap, so that the result does not depend on the
    # order of the events in the file.
    order = np.lexsort((launch_ts, acts.end, acts.ts, acts.stream))
    stream, ts, end, launch_ts = acts.stream[order], acts.ts[order], acts.end[order], launch_ts[order]
    # Running maximum of the ends of the earlier activities of the same stream.
    first = np.flatnonzero(np.concatenate(([True], stream[1:] != stream[:-1])))
    prev_end = ts.copy()  # the first activity of a stream follows no gap
    for a, b in zip(first, [*first[1:], len(ts)], strict=True):
        prev_end[a + 1 : b] = np.maximum.accumulate(end[a : b - 1])
    gap = ts - prev_end
    at = np.flatnonzero(gap > 0)

    g = gap[at]
    host = launch_ts[at] > prev_end[at]
    category = np.where(host, 0, np.where(g < kernel_wait_ns, 1, 2)).astype(np.int64)
    return stream[at], g, category, stream[first]


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
    are taken in start order (then end; among activities that start and end together,
    the one launched first, so the order of events in the file does not matter). An *idle
    gap* is time between the end of all the stream's earlier activities and the start of
    the next one (overlapping or back-to-back activities leave no gap). Each gap gets one
    category:

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
        raise OptionError(f"kernel_wait_ns must be a non-negative integer (ns), got {kernel_wait_ns!r}")
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    per_rank = trace.map_ranks(_rank_idle, int(kernel_wait_ns))
    missing = [r for r, f in per_rank.items() if f is None]
    if missing:
        warn_no_gpu("idle_time_breakdown", missing)
    parts = [f for f in per_rank.values() if f is not None]
    if not parts:
        return empty(IDLE_COLUMNS)
    return pd.concat(parts, ignore_index=True).astype(IDLE_COLUMNS)


def _rank_idle(trace: Trace, kernel_wait_ns: int) -> pd.DataFrame | None:
    """One rank's rows (three per stream with work), where the rank lives; None without work."""
    (r,) = trace.ranks
    acts = activities(trace, r, work_only=True)
    if len(acts) == 0:
        return None
    stream, gap, category, streams = _rank_gaps(trace, r, acts, kernel_wait_ns)
    n_cat = len(IDLE_CATEGORIES)
    n_rows = len(streams) * n_cat
    stats = _gap_stats(np.searchsorted(streams, stream) * n_cat + category, gap, n_rows)
    idle = stats["sum"]
    stream_idle = np.repeat(idle.reshape(-1, n_cat).sum(axis=1), n_cat)
    return pd.DataFrame(
        {
            "rank": np.full(n_rows, r, dtype=np.int64),
            "stream": np.repeat(streams, n_cat),
            "idle_category": pd.Categorical.from_codes(
                np.tile(np.arange(n_cat), len(streams)), categories=list(IDLE_CATEGORIES), ordered=True
            ),
            "idle_ns": idle,
            "idle_share_pct": pct(idle, stream_idle),
            "count": stats["count"],
            "mean_ns": stats["mean"],
            "p50_ns": stats["p50"],
            "p90_ns": stats["p90"],
            "max_ns": stats["max"],
        }
    )


def _gap_stats(row: np.ndarray, gap: np.ndarray, n_rows: int) -> dict[str, np.ndarray]:
    """Sum, count, mean, median, 90th percentile (linear interpolation, as numpy) and max of
    the gaps of each row; NaN statistics for rows without gaps."""
    order = np.lexsort((gap, row))
    row, gap = row[order], gap[order]
    count = np.bincount(row, minlength=n_rows)
    total = np.zeros(n_rows, dtype=np.int64)
    np.add.at(total, row, gap)
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    has = count > 0

    def quantile(q: float) -> np.ndarray:
        out = np.full(n_rows, np.nan)
        n, s = count[has], start[has]
        x = q * (n - 1)
        lo = np.floor(x).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        a, b = gap[s + lo].astype(np.float64), gap[s + hi].astype(np.float64)
        out[has] = a + (x - lo) * (b - a)
        return out

    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(has, total / np.maximum(count, 1), np.nan)
    return {
        "sum": total,
        "count": count,
        "mean": mean,
        "p50": quantile(0.5),
        "p90": quantile(0.9),
        "max": quantile(1.0),
    }
