"""How much GPU work runs at once, and how much of each kernel overlaps communication or compute."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model import intervals as iv
from ..model.intervals import at_least_two, coverage_of, step_function
from ..model.schema import GPU_CLASS_CATEGORIES
from ..model.trace import Trace
from ._common import empty, scoped, warn_no_gpu, with_gpu
from ._gpu import COMM, COMPUTE, activities
from ._memo import per_rank

__all__ = ["concurrency", "kernel_overlap_stats"]

CONCURRENCY_COLUMNS = {
    "rank": "int64",
    "in_flight": "str",
    "in_flight_min": "int64",
    "with_communication": "bool",
    "time_ns": "int64",
    "time_pct": "float64",
}

OVERLAP_COLUMNS = {
    "rank": "int64",
    "name": "str",
    "gpu_class": "str",
    "count": "int64",
    "total_ns": "int64",
    "mean_ns": "float64",
    "comm_overlap_ns": "int64",
    "comm_overlap_pct": "float64",
    "compute_overlap_ns": "int64",
    "compute_overlap_pct": "float64",
    "exposed_ns": "int64",
    "exposed_pct": "float64",
}


def concurrency(
    trace: Trace,
    *,
    cap: int = 3,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Share of each rank's GPU time with 0, 1, 2, 3+ activities in flight, with or without communication.

    Over each rank's GPU span (its first GPU work start to its last GPU work end, all its
    devices and streams), time is cut where an activity starts or ends and each piece is
    labelled by how many work activities (compute, communication, memory; not sync
    records) run during it, capped at ``cap``, and by whether one of them is
    communication. The shares of a rank add up to 100 %.

    Parameters
    ----------
    cap
        Level from which counts are pooled: with 3, the last level is ``"3+"``.
    ranks, iterations, time_range
        Scope the trace first (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        Per rank, one row per level and communication flag (``2 * cap + 1`` rows: level 0
        has no communication by definition), sorted by rank, level, flag:

        rank : int
        in_flight : str
            ``"0"``, ``"1"``, ..., ``"<cap>+"``.
        in_flight_min : int
            The level as a number (the lower bound for the last, pooled level).
        with_communication : bool
            Whether a communication activity is among those in flight.
        time_ns : int, ns
            Time at that level.
        time_pct : float, %
            Share of the rank's GPU span.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> c = tv.concurrency(trace, ranks=0)
    >>> round(float(c["time_pct"].sum()), 6)  # the rows split the rank's span
    100.0
    """
    if not isinstance(cap, (int, np.integer)) or cap < 1:
        raise OptionError(f"cap={cap!r} is not accepted; give a level >= 1")
    cap = int(cap)
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    labels = [str(k) for k in range(cap)] + [f"{cap}+"]
    # Per rank 2 * cap + 1 rows: level 0 (never with communication), then each level
    # 1..cap without and with communication. Bucket code = 2 * level + with_comm.
    levels = np.array([0] + [k for k in range(1, cap + 1) for _ in (0, 1)], dtype=np.int64)
    flags = np.array([False] + [f for _ in range(1, cap + 1) for f in (False, True)])
    codes = 2 * levels + flags
    rank_ids, times, spans, idle = [], [], [], []
    for r in trace.ranks:
        acts = activities(trace, r, work_only=True)
        if len(acts) == 0:
            idle.append(r)
            continue
        pos, level, (comm,) = step_function(acts.ts, acts.end, acts.cls == COMM)
        bucket = np.minimum(level[:-1], cap) * 2 + (comm[:-1] > 0)
        time = np.bincount(bucket, weights=np.diff(pos), minlength=2 * cap + 2)
        rank_ids.append(r)
        times.append(time[codes].astype(np.int64))
        spans.append(int(pos[-1] - pos[0]))
    if idle:
        warn_no_gpu("concurrency", idle)
    if not rank_ids:
        return empty(CONCURRENCY_COLUMNS)
    k = len(codes)
    time_ns = np.concatenate(times)
    span = np.repeat(np.array(spans, dtype=np.int64), k)
    with np.errstate(divide="ignore", invalid="ignore"):
        time_pct = np.where(span > 0, 100.0 * time_ns / span, np.nan)
    out = pd.DataFrame(
        {
            "rank": np.repeat(np.array(rank_ids, dtype=np.int64), k),
            "in_flight": np.tile(np.array([labels[min(int(v), cap)] for v in levels], dtype=object), len(rank_ids)),
            "in_flight_min": np.tile(levels, len(rank_ids)),
            "with_communication": np.tile(flags, len(rank_ids)),
            "time_ns": time_ns,
            "time_pct": time_pct,
        }
    )
    return out.astype(CONCURRENCY_COLUMNS)


def kernel_overlap_stats(
    trace: Trace,
    *,
    per: Literal["job", "rank"] = "job",
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Per kernel name: how much of its time overlaps communication, and how much overlaps compute.

    For every GPU work activity (kernel, memcpy, memset), the time during which some
    *other* communication activity runs, and the time during which some *other* compute
    kernel runs, on any stream of the rank. Summed per name. For a communication kernel,
    ``compute_overlap_pct`` is the share of its time hidden under compute and
    ``exposed_ns`` the time it runs with no compute kernel alongside: the communication
    cost that the step pays. Two runs of one name that overlap each other each count their
    own time (these are per-activity shares, not a union).

    Parameters
    ----------
    per
        ``"job"``: one row per name over all ranks (no ``rank`` column); ``"rank"``: one
        row per rank and name.
    ranks, iterations, time_range
        Scope the trace first (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        Sorted by ``total_ns``, largest first (per rank with ``per="rank"``):

        rank : int
            Only with ``per="rank"``.
        name : str
            Kernel (or copy) name.
        gpu_class : str
            ``compute``, ``communication`` or ``memory``.
        count : int
            Runs.
        total_ns : int, ns
            Sum of durations.
        mean_ns : float, ns
            Mean duration.
        comm_overlap_ns : int, ns
            Time overlapped by another communication activity.
        comm_overlap_pct : float, %
            ``comm_overlap_ns / total_ns``; NaN for zero time.
        compute_overlap_ns : int, ns
            Time overlapped by another compute kernel.
        compute_overlap_pct : float, %
            ``compute_overlap_ns / total_ns``: for communication, the share hidden under
            compute.
        exposed_ns : int, ns
            ``total_ns - compute_overlap_ns``: time with no other compute kernel running.
        exposed_pct : float, %
            ``exposed_ns / total_ns``.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> o = tv.kernel_overlap_stats(trace)
    >>> sorted(set(o["gpu_class"]))
    ['communication', 'compute', 'memory']
    >>> bool((o["exposed_ns"] <= o["total_ns"]).all())
    True
    """
    if per not in ("job", "rank"):
        raise OptionError.invalid("per", per, ("job", "rank"))
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    parts = list(with_gpu(per_rank(trace, _rank_overlap), "kernel_overlap_stats").values())
    columns = dict(OVERLAP_COLUMNS)
    if per == "job":
        del columns["rank"]
    if not parts:
        return empty(columns)
    out = pd.concat(parts, ignore_index=True)
    if per == "job":
        out = out.groupby(["name", "gpu_class"], as_index=False, sort=False)[
            ["count", "total_ns", "comm_overlap_ns", "compute_overlap_ns"]
        ].sum()
        out = out.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable")
    else:
        out = out.sort_values(["rank", "total_ns", "name"], ascending=[True, False, True], kind="stable")
    total = out["total_ns"].to_numpy().astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["mean_ns"] = total / out["count"].to_numpy()
        out["exposed_ns"] = out["total_ns"] - out["compute_overlap_ns"]
        for col in ("comm_overlap", "compute_overlap", "exposed"):
            out[f"{col}_pct"] = np.where(total > 0, 100.0 * out[f"{col}_ns"].to_numpy() / total, np.nan)
    return out[list(columns)].astype(columns).reset_index(drop=True)


def _rank_overlap(trace: Trace) -> pd.DataFrame | None:
    """One rank's sums per (name, class) (the columns before the ratios); None without GPU work."""
    (r,) = trace.ranks
    acts = activities(trace, r, work_only=True)
    if len(acts) == 0:
        return None
    dur = acts.end - acts.ts
    comm_cov = _overlap_by_others(acts.ts, acts.end, acts.cls, COMM, acts.union(COMM))
    comp_cov = _overlap_by_others(acts.ts, acts.end, acts.cls, COMPUTE, acts.union(COMPUTE))
    codes = acts.name.astype(np.int64)  # the rows' name codes
    cats = np.append(np.asarray(acts.names, dtype=object), "")  # a missing name (-1) is ""
    codes[codes < 0] = len(cats) - 1
    # One key per (name, class): a name always has one class, but stay exact if not.
    # Keys are small (4 x the rank's name categories): count densely, keep those seen.
    nc = len(GPU_CLASS_CATEGORIES)
    key = codes * nc + acts.cls
    size = len(cats) * nc
    count = np.bincount(key, minlength=size)
    seen = np.flatnonzero(count)
    return pd.DataFrame(
        {
            "rank": np.full(len(seen), r, dtype=np.int64),
            "name": cats[seen // nc],
            "gpu_class": np.asarray(GPU_CLASS_CATEGORIES, dtype=object)[seen % nc],
            "count": count[seen].astype(np.int64),
            "total_ns": np.bincount(key, weights=dur, minlength=size)[seen].astype(np.int64),
            "comm_overlap_ns": np.bincount(key, weights=comm_cov, minlength=size)[seen].astype(np.int64),
            "compute_overlap_ns": np.bincount(key, weights=comp_cov, minlength=size)[seen].astype(np.int64),
        }
    )


def _overlap_by_others(
    start: np.ndarray, end: np.ndarray, cls: np.ndarray, target: int, target_union: iv.Intervals
) -> np.ndarray:
    """Per activity, time during which some *other* activity of class ``target`` runs.

    An activity of another class is covered wherever >= 1 target activity runs (the union
    of the target class, ``target_union``); one of the target class itself wherever >= 2 do
    (itself and another).
    """
    is_t = cls == target
    out = np.zeros(len(start), dtype=np.int64)
    if not is_t.any():
        return out
    # Index arrays, found once: each is gathered from twice and scattered to once.
    t, o = np.flatnonzero(is_t), np.flatnonzero(~is_t)
    out[o] = coverage_of(target_union, start[o], end[o])
    t_start, t_end = start[t], end[t]
    out[t] = coverage_of(at_least_two(t_start, t_end), t_start, t_end)
    return out
