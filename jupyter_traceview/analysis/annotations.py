"""Time per user annotation (``record_function`` ranges) on the CPU and on the GPU."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import OptionError, TraceviewWarning
from ..model import intervals as iv
from ..model.schema import EventKind
from ..model.trace import Trace
from . import _links as lk
from ._common import empty, pct, warn_no_gpu
from ._gpu import activities

__all__ = ["user_annotation_breakdown"]

ANNOTATION_COLUMNS = {
    "rank": "int64",
    "name": "str",
    "count": "int64",
    "total_ns": "int64",
    "mean_ns": "int64",
    "min_ns": "int64",
    "max_ns": "int64",
    "std_ns": "float64",
    "kernels": "int64",
    "kernel_ns": "int64",
    "gpu_busy_ns": "int64",
    "gpu_busy_pct": "float64",
}

OTHERS = "others"


def user_annotation_breakdown(
    trace: Trace,
    *,
    kind: Literal["gpu", "cpu"] = "gpu",
    pattern: str | None = None,
    top_k: int | None = None,
    same_thread: bool = False,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Time per user annotation name: the ranges' own durations and the GPU time under them.

    ``kind="gpu"`` takes the ``gpu_user_annotation`` ranges (Kineto projects each
    ``record_function`` range onto the GPU stream that ran its kernels); ``kind="cpu"``
    takes the CPU-side ``user_annotation`` ranges (``record_function``, ``ProfilerStep#N``,
    ``## forward ##``...).

    Two kinds of numbers come out, per (rank, name):

    * the ranges' own durations: ``count``, ``total_ns`` and their statistics. This is
      what HTA's ``get_gpu_user_annotation_breakdown`` sums (``use_gpu_annotation=False``
      for ``kind="cpu"``). A CPU range's duration is host time: it says little about the
      GPU when the host runs ahead of it.
    * the GPU work attributed to the name, which answers "how much GPU time does this
      part of my model take": with ``kind="cpu"``, the GPU activities (kernels, memcpy,
      memset; not sync records) *launched* inside any range of that name, whole, wherever
      they run: their launch call was made while the range was open, on any thread of its
      process (the autograd engine runs the backward pass on its own threads while the
      main thread waits inside ``## backward ##``), or on the range's own thread with
      ``same_thread=True``; with ``kind="gpu"``, the parts of the activities on the
      range's own device and stream that run *inside* the range.
      ``gpu_busy_ns`` is the length of the union of those activities (wall-clock time
      with at least one of them running: overlap across streams counts once).

    Parameters
    ----------
    trace : Trace
    kind : {"gpu", "cpu"}, default "gpu"
    pattern : str, optional
        Regular expression (``re.search``): only annotation names matching it.
    top_k : int, optional
        Keep the ``top_k`` names with the largest ``total_ns`` per rank and pool the rest
        into one ``"others"`` row, whose statistics are over the pooled ranges themselves
        (HTA instead reports statistics of the per-name totals there). None keeps all.
    same_thread : bool, default False
        ``kind="cpu"``: attribute only the activities launched on the range's own thread.
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`). With ``time_range``, the ranges that overlap it
        and the GPU work that runs in it, both clipped to it (the work launched inside a
        range counts even when the launch call itself came before the window).

    Returns
    -------
    pandas.DataFrame
        One row per (rank, name), sorted by rank then ``total_ns`` descending:

        ``rank`` (int); ``name`` (str); ``count`` (int): ranges; ``total_ns``, ``mean_ns``,
        ``min_ns``, ``max_ns`` (int, ns): sum and statistics of the range durations;
        ``std_ns`` (float, ns): their standard deviation (ddof=1; 0 for a single range);
        ``kernels`` (int): GPU activities attributed; ``kernel_ns`` (int, ns): their summed
        duration (``kind="gpu"``: the parts inside the ranges); ``gpu_busy_ns`` (int, ns):
        the length of their union; ``gpu_busy_pct`` (float, %): ``gpu_busy_ns`` over the
        rank's GPU busy time (union of all its GPU work), NaN without GPU work.

        A rank without GPU activity keeps its ``kind="cpu"`` rows (the range durations
        are still right) with zero GPU columns; a warning says so. With ``kind="gpu"``
        such a rank has no rows.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> ann = tv.user_annotation_breakdown(trace, kind="cpu", ranks=0)
    >>> bool((ann["gpu_busy_ns"] <= ann["kernel_ns"]).all())
    True
    """
    if kind not in ("gpu", "cpu"):
        raise OptionError.invalid("kind", kind, ("gpu", "cpu"))
    if top_k is not None and top_k < 1:
        raise OptionError(f"top_k must be >= 1 or None, got {top_k}")
    trace, window = lk.scope_linked(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    ann_kind = EventKind.GPU_USER_ANNOTATION.value if kind == "gpu" else EventKind.USER_ANNOTATION.value
    rows: list[pd.DataFrame] = []
    no_gpu: list[int] = []
    seen_any = False
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        acts = lk.clip_to_window(_work_activities(trace, r), window)
        if acts.empty:
            no_gpu.append(r)
        is_ann = lk.category_mask(ev["kind"], [ann_kind])
        if pattern is not None:
            is_ann = is_ann & lk.match_names(ev["name"], pattern, "regex", what="annotation pattern")
        if window is not None:
            ts = ev["ts_ns"].to_numpy()
            end = ts + ev["dur_ns"].to_numpy()
            is_ann = is_ann & (ts < window[1]) & ((end > window[0]) | (ts == window[0]))
        if not is_ann.any():
            continue
        seen_any = True
        if kind == "gpu" and acts.empty:
            continue
        frame = _rank_breakdown(ev, acts, is_ann, window, kind=kind, top_k=top_k, same_thread=same_thread)
        frame.insert(0, "rank", r)
        rows.append(frame)
    if no_gpu:
        warn_no_gpu("user_annotation_breakdown", no_gpu)
    elif not seen_any:
        hint = " (try kind='cpu')" if kind == "gpu" else ""
        warnings.warn(
            f"user_annotation_breakdown: no {ann_kind} events"
            + (f" matching {pattern!r}" if pattern is not None else "")
            + f" in rank(s) {list(trace.ranks)}{hint}",
            TraceviewWarning,
            stacklevel=2,
        )
    if not rows:
        return empty(ANNOTATION_COLUMNS)
    out = pd.concat(rows, ignore_index=True)
    return out.astype(ANNOTATION_COLUMNS)[list(ANNOTATION_COLUMNS)]


def _work_activities(trace: Trace, rank: int) -> pd.DataFrame:
    """The rank's GPU work (compute, communication, memory; clipped to ``trace.window``):
    only the columns the breakdown reads, gathered from the events by row."""
    a = activities(trace, rank, work_only=True)
    ev = trace.rank_data(rank).events
    return pd.DataFrame(
        {
            "ts_ns": a.ts,
            "end_ns": a.end,
            "dur_ns": a.end - a.ts,
            "launch_eid": a.launch_eid,
            "device": ev["device"].to_numpy()[a.rows],
            "stream": a.stream,
        }
    )


def _rank_breakdown(
    ev: pd.DataFrame,
    acts: pd.DataFrame,
    is_ann: np.ndarray,
    window: tuple[int, int] | None,
    *,
    kind: str,
    top_k: int | None,
    same_thread: bool,
) -> pd.DataFrame:
    ann_rows = np.flatnonzero(is_ann)
    a_start = ev["ts_ns"].to_numpy()[ann_rows]
    a_end = a_start + ev["dur_ns"].to_numpy()[ann_rows]
    if window is not None:
        lo, hi = window
        a_start, a_end = np.maximum(a_start, lo), np.minimum(a_end, hi)
        a_end = np.maximum(a_end, a_start)
    a_dur = a_end - a_start
    codes = ev["name"].cat.codes.to_numpy().astype(np.int64)[ann_rows]
    cats = np.asarray(ev["name"].cat.categories.astype(str), dtype=object)

    # Dense name ids, the names beyond top_k (by total duration) pooled into "others".
    uniq, gid = np.unique(codes, return_inverse=True)
    gid = gid.reshape(-1)
    names = cats[uniq].astype(object)
    totals = np.bincount(gid, weights=a_dur.astype(np.float64), minlength=len(uniq))
    if top_k is not None and len(uniq) > top_k:
        rank_of = np.empty(len(uniq), dtype=np.int64)
        # Names sort through their dense ranks: no fixed-width string array as wide as the longest name.
        name_order = pd.factorize(pd.Series(names, dtype=object).astype(str), sort=True)[0]
        rank_of[np.lexsort((name_order, -totals))] = np.arange(len(uniq))
        kept = rank_of < top_k
        remap = np.where(kept, np.cumsum(kept) - 1, int(kept.sum()))
        names = np.append(names[kept], OTHERS)
        gid = remap[gid]
    n = len(names)

    count = np.bincount(gid, minlength=n)
    total = np.bincount(gid, weights=a_dur.astype(np.float64), minlength=n)
    mean = total / np.maximum(count, 1)
    dev = a_dur - mean[gid]
    var = np.bincount(gid, weights=dev * dev, minlength=n) / np.maximum(count - 1, 1)
    order = np.lexsort((a_dur, gid))
    starts = np.searchsorted(gid[order], np.arange(n))
    ends = np.append(starts[1:], len(gid)) - 1
    out = pd.DataFrame(
        {
            "name": names,
            "count": count.astype(np.int64),
            "total_ns": np.rint(total).astype(np.int64),
            "mean_ns": np.rint(mean).astype(np.int64),
            "min_ns": a_dur[order][starts].astype(np.int64),
            "max_ns": a_dur[order][ends].astype(np.int64),
            "std_ns": np.where(count > 1, np.sqrt(var), 0.0),
        }
    )

    if acts.empty:
        zero = np.zeros(n, dtype=np.int64)
        out["kernels"], out["kernel_ns"], out["gpu_busy_ns"] = zero, zero, zero
        out["gpu_busy_pct"] = np.nan
    else:
        if kind == "cpu":
            pair_g, p_start, p_end, p_act = _launched_inside(
                ev, acts, ann_rows, gid, "thread" if same_thread else "process"
            )
        else:
            pair_g, p_start, p_end, p_act = _running_inside(ev, acts, ann_rows, gid, a_start, a_end)
        out["kernels"], out["kernel_ns"], out["gpu_busy_ns"] = _attributed(pair_g, p_start, p_end, p_act, n)
        s, e = iv.union(acts["ts_ns"].to_numpy(), acts["end_ns"].to_numpy())
        out["gpu_busy_pct"] = pct(out["gpu_busy_ns"].to_numpy(), iv.length(s, e))
    return out.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _launched_inside(
    ev: pd.DataFrame, acts: pd.DataFrame, ann_rows: np.ndarray, gid: np.ndarray, scope: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(name id, start, end, activity index) for each activity launched inside a range."""
    table = lk.eid_rows(ev)
    launch = lk.lookup(table, acts["launch_eid"].to_numpy())
    act_i, anc = lk.containing_pairs(ev, ann_rows, launch, scope=scope)
    gid_of_row = np.full(len(ev), -1, dtype=np.int64)
    gid_of_row[ann_rows] = gid
    g = gid_of_row[anc]
    return g, acts["ts_ns"].to_numpy()[act_i], acts["end_ns"].to_numpy()[act_i], act_i


def _running_inside(
    ev: pd.DataFrame, acts: pd.DataFrame, ann_rows: np.ndarray, gid: np.ndarray, a_start: np.ndarray, a_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(name id, clipped start, clipped end, activity index) of activity parts inside a range
    on the range's own (device, stream)."""
    dev = acts["device"].to_numpy().astype(np.int64)
    stream = acts["stream"].to_numpy()
    lane_key = dev * (1 << 40) + stream
    order = np.lexsort((acts["ts_ns"].to_numpy(), lane_key))
    k_lane = lane_key[order]
    k_start = acts["ts_ns"].to_numpy()[order]
    k_end = acts["end_ns"].to_numpy()[order]
    # Running max of ends within each lane (activities on a stream rarely overlap, but may).
    run_end = pd.Series(k_end).groupby(k_lane).cummax().to_numpy()
    a_lane = ev["device"].to_numpy().astype(np.int64)[ann_rows] * (1 << 40) + ev["stream"].to_numpy()[ann_rows]
    lane_lo = np.searchsorted(k_lane, a_lane, side="left")
    lane_hi = np.searchsorted(k_lane, a_lane, side="right")
    # Within the lane: candidates from the first activity whose running end passes the
    # range start to the last one starting before the range end.
    lo = np.empty(len(ann_rows), dtype=np.int64)
    hi = np.empty(len(ann_rows), dtype=np.int64)
    for_lane = np.unique(a_lane)
    for lane in for_lane.tolist():  # one step per (device, stream), not per event
        sel = np.flatnonzero(a_lane == lane)
        l0, l1 = int(lane_lo[sel[0]]), int(lane_hi[sel[0]])
        lo[sel] = l0 + np.searchsorted(run_end[l0:l1], a_start[sel], side="right")
        hi[sel] = l0 + np.searchsorted(k_start[l0:l1], a_end[sel], side="left")
    cnt = np.maximum(hi - lo, 0)
    ann_i = np.repeat(np.arange(len(ann_rows)), cnt)
    act_pos = np.arange(int(cnt.sum())) + np.repeat(lo - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt)
    s = np.maximum(k_start[act_pos], a_start[ann_i])
    e = np.minimum(k_end[act_pos], a_end[ann_i])
    ok = e > s
    return gid[ann_i[ok]], s[ok], e[ok], order[act_pos[ok]]


def _attributed(
    g: np.ndarray, start: np.ndarray, end: np.ndarray, act: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per name id: distinct activities, their summed (clipped) time, and the union length."""
    if len(g) == 0:
        zero = np.zeros(n, dtype=np.int64)
        return zero, zero.copy(), zero.copy()
    # An activity under two ranges of one name (nested, or pooled into "others") counts once.
    key = g * (int(act.max()) + 1) + act
    order = np.lexsort((-(end - start), key))
    first = np.concatenate(([True], key[order][1:] != key[order][:-1]))
    piece = order[first]  # the longest (clipped) part of each (name, activity)
    kernels = np.bincount(g[piece], minlength=n).astype(np.int64)
    kernel_ns = np.rint(np.bincount(g[piece], weights=(end - start)[piece].astype(np.float64), minlength=n)).astype(
        np.int64
    )
    busy = _grouped_union_length(g, start, end, n)
    return kernels, kernel_ns, busy


def _grouped_union_length(g: np.ndarray, start: np.ndarray, end: np.ndarray, n: int) -> np.ndarray:
    """Length of the union of the intervals of each group, vectorised over groups."""
    order = np.lexsort((start, g))
    g, start, end = g[order], start[order], end[order]
    run_end = pd.Series(end).groupby(g).cummax().to_numpy()
    new = np.ones(len(g), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (start[1:] > run_end[:-1])
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(g) - 1)
    lengths = run_end[last] - start[first]
    return np.rint(np.bincount(g[first], weights=lengths.astype(np.float64), minlength=n)).astype(np.int64)
