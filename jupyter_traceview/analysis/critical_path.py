"""The critical path through CPU operators, launches, GPU activities and waits, within a rank and across ranks.

The model (``docs/semantics.md``, *Critical path*): every event of a rank is two points in
time, its start and its end. A point waits for other points:

* **CPU threads** are sequential and nested: an event starts after its previous sibling
  ends (or, first child, after its parent starts); a parent ends after its last child
  (its own time around the children is the parent's ``self`` time); a top-level event
  starts after the previous top-level event of its thread (the gap is ``idle``).
* A **launch** call's start comes before the start of the GPU activity it launched.
* A **stream** runs its activities in order: an activity starts after the previous one
  on its stream ends.
* A **stream wait** (``cudaStreamWaitEvent``, recorded as a ``Stream Wait Event`` record
  with the awaited event's stream and ``cudaEventRecord`` correlation) makes the next
  activity launched on the waiting stream start after the last activity launched on the
  recorded stream before the ``cudaEventRecord`` call ends.
* A **synchronisation** call (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``,
  ``cudaEventSynchronize``, synchronous ``cudaMemcpy``/``cudaMemset`` and pageable
  copies) returns after the GPU work it waits for ends: the last activity launched
  before it on the synchronised stream (from its ``Stream Sync``/``Event Sync`` record),
  on every stream (``Context Sync``, or when no record says which stream), or its own
  copy.
* Across ranks, a **collective** kernel ends after every rank of the collective has
  started its kernel (matched as in :mod:`jupyter_traceview.model.collectives`).
* Where the trace does not record them, cross-stream waits and waits between threads of
  a process are inferred from timing (``inferred_wait``, ``inferred_join``,
  ``inferred_fork``; see ``docs/semantics.md``).

Each dependency is an edge whose length is the time between its two points, so a path
of edges covers the time from its first point to its last without gaps or overlap. The
critical path is found backwards from the end of the trace's last event: at every point,
the path follows the dependency that was satisfied last (the *binding* one: the point
could not have happened before it), as in Scalasca's backward replay of MPI traces. It
is the longest path (by time) ending at that event among the paths made of binding
dependencies, and its segments add up to its length exactly.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..errors import OptionError, TraceSelectionError, TraceviewWarning
from ..model.collectives import match_instances, rank_collective_kernels
from ..model.schema import EventKind
from ..model.trace import Trace
from ._common import empty, scoped, warn_no_gpu

__all__ = ["CRITICAL_PATH_CATEGORIES", "critical_path"]

CRITICAL_PATH_COLUMNS = {
    "rank": "int64",
    "eid": "int64",
    "name": "str",
    "kind": "str",
    "category": "str",
    "edge": "str",
    "start_ns": "int64",
    "end_ns": "int64",
    "dur_ns": "int64",
    "from_rank": "int64",
}
CATEGORY_COLUMNS = {"category": "str", "time_ns": "int64", "time_pct": "float64"}

#: Categories of critical-path time, in the order of ``view="categories"``.
CRITICAL_PATH_CATEGORIES = (
    "cpu",
    "cpu_runtime",
    "cpu_idle",
    "launch_delay",
    "sync",
    "gpu_compute",
    "gpu_communication",
    "gpu_memory",
    "gpu_other",
    "gpu_gap",
    "stream_wait",
    "wait_other_rank",
)

# Edge codes; the tie-break priority (higher wins when two dependencies end together).
SPAN, SELF, IDLE, LAUNCH, STREAM, STREAM_WAIT, SYNC, COLLECTIVE, WAIT, INFERRED_WAIT, INFERRED_JOIN, INFERRED_FORK = (
    range(12)
)
EDGE_NAMES = (
    "span",
    "self",
    "idle",
    "launch",
    "stream",
    "stream_wait",
    "sync",
    "collective",
    "wait",
    "inferred_wait",
    "inferred_join",
    "inferred_fork",
)
_PRIORITY = np.array([1, 2, 0, 3, 4, 7, 8, 9, 10, 6, 5, 5], dtype=np.int8)

_ACTIVITY_KINDS = [EventKind.KERNEL.value, EventKind.GPU_MEMCPY.value, EventKind.GPU_MEMSET.value]
_NOT_CPU_NODES = [
    *_ACTIVITY_KINDS,
    EventKind.CUDA_SYNC.value,
    EventKind.GPU_USER_ANNOTATION.value,
    EventKind.CPU_INSTANT_EVENT.value,
    EventKind.OTHER.value,  # markers such as Kineto's "Record Window End"
]
_RUNTIME_KINDS = (EventKind.CUDA_RUNTIME.value, EventKind.CUDA_DRIVER.value)

#: Calls that block the CPU until GPU work ends (the stream comes from their sync record).
STREAM_SYNC_CALLS = frozenset({"cudaStreamSynchronize", "cuStreamSynchronize", "hipStreamSynchronize"})
DEVICE_SYNC_CALLS = frozenset(
    {"cudaDeviceSynchronize", "cuCtxSynchronize", "hipDeviceSynchronize", "cudaThreadSynchronize"}
)
EVENT_SYNC_CALLS = frozenset({"cudaEventSynchronize", "cuEventSynchronize", "hipEventSynchronize"})
#: Copies and sets that return only when their own GPU activity is done.
SYNC_COPY_CALLS = frozenset(
    {
        "cudaMemcpy",
        "cudaMemcpy2D",
        "cudaMemcpy3D",
        "cudaMemcpyToSymbol",
        "cudaMemcpyFromSymbol",
        "cudaMemset",
        "cudaMemset2D",
        "cuMemcpy",
        "cuMemcpyDtoH_v2",
        "cuMemcpyHtoD_v2",
        "hipMemcpy",
        "hipMemset",
    }
)
#: A GPU activity may end this much after the synchronising call returned (CPU and GPU
#: timestamps come from different clocks, converted by the profiler) and still count.
SYNC_TOLERANCE_NS = 2_000
_CORR_BITS = 40
#: Without Stream Wait Event records, a GPU activity that starts more than this after both
#: its launch call's start and its stream predecessor's end was held by something else ...
INFERRED_WAIT_MIN_DELAY_NS = 20_000
#: ... and an activity of another stream of its device that ended at most this long before
#: it started is taken to be what it waited for (``inferred_wait``).
INFERRED_WAIT_WINDOW_NS = 10_000


def critical_path(
    trace: Trace,
    *,
    rank: int | None = None,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    view: Literal["path", "categories"] = "path",
) -> pd.DataFrame:
    """The critical path ending at the trace's last event, one rank or across ranks.

    With ``rank=r`` the path stays within rank ``r``; when the trace holds other ranks,
    the part of each collective kernel on the path spent before the last of the other
    ranks arrived is split off as ``wait_other_rank``. Without ``rank``, the path runs
    across ranks: at a collective whose last rank to arrive (start its kernel) is another
    rank, it continues on that rank. See the module documentation for the dependencies
    followed, and ``docs/semantics.md`` for how this compares with HTA.

    Parameters
    ----------
    trace:
        The trace.
    rank:
        The one rank to follow; None follows the path across the ranks.
    ranks, iterations, time_range:
        Narrow the trace first (see :meth:`Trace.select`); times are clipped to the time
        range, and the path ends at the last event of what is left.
    view:
        ``"path"``: the path's segments; ``"categories"``: the time of each category.

    Returns
    -------
    pandas.DataFrame
        ``view="path"``: one row per segment of the path, in time order; consecutive
        segments touch, and their ``dur_ns`` add up to the path's length.

        ``rank`` : int
            The rank the segment is on.
        ``eid`` : int
            The event the segment belongs to (``trace.events(rank)``): the event whose
            own time it is (``span``, ``self``), or whose start it leads to.
        ``name``, ``kind`` : str
            That event's name and kind.
        ``category`` : str
            One of :data:`CRITICAL_PATH_CATEGORIES`: ``cpu`` (operators, annotations,
            Python), ``cpu_runtime`` (CUDA runtime/driver calls), ``cpu_idle`` (gaps
            between top-level events of a thread), ``launch_delay`` (from a launch call
            to its GPU activity, the GPU waiting for the CPU), ``sync`` (from the awaited
            GPU activity's end to the synchronising call's return), ``gpu_compute``,
            ``gpu_communication``, ``gpu_memory``, ``gpu_other`` (GPU activities by
            class), ``gpu_gap`` (between dependent activities of one stream),
            ``stream_wait`` (between an awaited activity on another stream and the
            waiting one), ``wait_other_rank`` (a collective waiting for a later rank).
        ``edge`` : str
            The dependency the segment follows: ``span`` (the event's own duration),
            ``self`` (a parent's time around its children), ``idle``, ``launch``,
            ``stream``, ``stream_wait``, ``sync``, ``collective`` (from the start of the
            last rank's kernel to this rank's end of the collective), ``wait``, and the
            dependencies inferred where the trace does not record them:
            ``inferred_wait`` (an unrecorded cross-stream wait), ``inferred_join`` and
            ``inferred_fork`` (one thread waiting for, or woken by, another).
        ``start_ns``, ``end_ns``, ``dur_ns`` : int, ns
            The segment (absolute times, as ``ts_ns``).
        ``from_rank`` : int
            The rank the segment starts on: differs from ``rank`` for ``collective``
            segments (and names the last rank to arrive for ``wait`` ones).

        ``view="categories"``: one row per category, in the order above:
        ``category`` (str), ``time_ns`` (int, ns) and ``time_pct`` (float, % of the
        path's length); the times add up to the length.

    Raises
    ------
    TraceSelectionError
        ``rank`` (or one of ``ranks``) is not in the trace.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> path = tv.critical_path(tv.load(tv.sample_path()), rank=0)
    >>> int(path["dur_ns"].sum()) == int(path["end_ns"].iloc[-1] - path["start_ns"].iloc[0])
    True
    """
    if view not in ("path", "categories"):
        raise OptionError.invalid("view", view, ("path", "categories"))
    if rank is not None and rank not in trace.ranks:
        raise TraceSelectionError.unknown("rank", rank, trace.ranks)
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    if rank is not None and rank not in scope.ranks:
        raise TraceSelectionError.unknown("rank", rank, scope.ranks)
    if rank is not None:
        path = _one_rank_path(scope, rank)
    else:
        path = _cross_rank_path(scope)
    if view == "categories":
        return _categories(path)
    return path


# ---------------------------------------------------------------------- the graph of one rank
@dataclass
class _Graph:
    """The binding dependency of every point of one rank: node 2i is event i's start, 2i+1 its end."""

    rank: int
    eid: np.ndarray  # event id of local event i
    pos: np.ndarray  # row of local event i in the rank's events table
    is_gpu: np.ndarray
    t: np.ndarray  # time of each node (clipped to the window)
    pred: np.ndarray  # binding predecessor node, -1 at a source
    edge: np.ndarray  # edge code of the binding dependency
    attr: np.ndarray  # local event the segment (pred -> node) belongs to
    loc: np.ndarray  # eid -> local event, -1 if not in the graph

    def node(self, eid: int, end: bool) -> int:
        return 2 * int(self.loc[eid]) + int(end)


def _isin(col: pd.Series, values: Iterable[str]) -> np.ndarray:
    return np.asarray(col.isin(list(values)).to_numpy(), dtype=bool)


def _build_graph(trace: Trace) -> _Graph | None:
    """The binding dependencies of a one-rank trace (None if it has no GPU activity)."""
    (rank,) = trace.ranks
    d = trace.rank_data(rank)
    ev = d.events
    kind = ev["kind"]
    act_mask = _isin(kind, _ACTIVITY_KINDS)
    if not act_mask.any():
        return None
    cpu_mask = (ev["device"].to_numpy() < 0) & ~_isin(kind, _NOT_CPU_NODES)
    pos = np.flatnonzero(act_mask | cpu_mask)
    n = len(pos)
    all_eid = ev["eid"].to_numpy()
    eid = all_eid[pos]
    ts = ev["ts_ns"].to_numpy()[pos]
    end = ts + ev["dur_ns"].to_numpy()[pos]
    if trace.window is not None:
        lo, hi = trace.window
        ts, end = np.clip(ts, lo, hi), np.clip(end, lo, hi)
    t = np.empty(2 * n, dtype=np.int64)
    t[0::2], t[1::2] = ts, end
    size = int(all_eid.max()) + 1
    loc = np.full(size, -1, dtype=np.int64)
    loc[eid] = np.arange(n)
    row_of = np.full(size, -1, dtype=np.int64)
    row_of[all_eid] = np.arange(len(all_eid))
    is_gpu = act_mask[pos]
    names = ev["name"]

    cand: list[tuple[np.ndarray, np.ndarray, np.ndarray | int, np.ndarray]] = []

    def add(node: np.ndarray, pred: np.ndarray, edge: np.ndarray | int, attr: np.ndarray) -> None:
        if len(node):
            cand.append((node.astype(np.int64), pred.astype(np.int64), edge, attr.astype(np.int64)))

    # ---- CPU threads: sequential and nested
    c = np.flatnonzero(~is_gpu)
    parent_all = ev["parent_eid"].to_numpy()
    pe = parent_all[pos[c]].copy()
    p = np.where((pe >= 0) & (pe < size), loc[np.clip(pe, 0, size - 1)], -1)
    # A parent that is not a graph event (an instant, say): take its nearest graph ancestor.
    pending = np.flatnonzero((p < 0) & (pe >= 0) & (pe < size))
    for _ in range(512):
        if not len(pending):
            break
        rows = row_of[pe[pending]]
        known = rows >= 0
        pending = pending[known]
        pe[pending] = parent_all[rows[known]]
        ok = (pe[pending] >= 0) & (pe[pending] < size)
        pending = pending[ok]
        p[pending] = loc[pe[pending]]
        pending = pending[p[pending] < 0]
    pid = ev["pid"].to_numpy()[pos[c]]
    tid = ev["tid"].to_numpy()[pos[c]]
    thread, _ = _pairs(pid, tid)
    group = np.where(p >= 0, p, n + thread)
    order = np.lexsort((c, group))
    cs, gs, ps = c[order], group[order], p[order]
    first = np.r_[True, gs[1:] != gs[:-1]] if len(cs) else np.zeros(0, bool)
    last = np.r_[gs[1:] != gs[:-1], True] if len(cs) else np.zeros(0, bool)
    prev = np.r_[-1, cs[:-1]] if len(cs) else np.zeros(0, np.int64)
    sib = ~first
    add(2 * cs[sib], 2 * prev[sib] + 1, np.where(ps[sib] >= 0, SELF, IDLE), np.where(ps[sib] >= 0, ps[sib], cs[sib]))
    head = first & (ps >= 0)
    add(2 * cs[head], 2 * ps[head], SELF, ps[head])
    tail = last & (ps >= 0)
    add(2 * ps[tail] + 1, 2 * cs[tail] + 1, SELF, ps[tail])
    # A thread that resumes long after its own last step resumed because another thread of
    # its process finished something (loss.backward() waiting for the autograd thread): take
    # the other thread's event that ended just before as what it waited for.
    gap_node = np.concatenate([2 * cs[sib], 2 * cs[head], 2 * ps[tail] + 1])
    gap_pred = np.concatenate([2 * prev[sib] + 1, 2 * ps[head], 2 * cs[tail] + 1])
    long_gap = t[gap_node] - t[gap_pred] > INFERRED_WAIT_MIN_DELAY_NS
    if long_gap.any() and len(np.unique(thread)) > 1:
        waiting = gap_node[long_gap]
        wait_t = t[waiting]
        c_thread = np.full(n, -1, dtype=np.int64)
        c_thread[c] = thread
        c_pid = np.zeros(n, dtype=np.int64)
        c_pid[c] = pid
        ends_c = t[2 * c + 1]
        best = np.full(len(waiting), -1, dtype=np.int64)
        for th in np.unique(thread).tolist():
            # The event of thread th that ends last at or before each waiting point.
            mine = c[thread == th]
            by_end = mine[np.argsort(ends_c[thread == th], kind="stable")]
            j = np.searchsorted(t[2 * by_end + 1], wait_t, side="right") - 1
            before = by_end[np.maximum(j, 0)]
            ok = (j >= 0) & (c_thread[waiting // 2] != th) & (c_pid[before] == c_pid[waiting // 2])
            later = ok & ((best < 0) | (t[2 * before + 1] > t[2 * np.maximum(best, 0) + 1]))
            best = np.where(later, before, best)
        good = (best >= 0) & (wait_t - t[2 * np.maximum(best, 0) + 1] <= INFERRED_WAIT_WINDOW_NS)
        add(waiting[good], 2 * best[good] + 1, INFERRED_JOIN, waiting[good] // 2)
    # ... and a thread that starts work after idling, while another thread of its process is
    # inside a call that began during that idle time, was woken by that call (the autograd
    # thread starting the backward pass that loss.backward() on the main thread asked for).
    top_first = (ps < 0) & (first | (t[2 * cs] - t[2 * np.maximum(prev, 0) + 1] > INFERRED_WAIT_MIN_DELAY_NS))
    if top_first.any() and len(np.unique(thread)) > 1:
        x = cs[top_first]
        idle_from = np.where(first[top_first], np.iinfo(np.int64).min, t[2 * np.maximum(prev[top_first], 0) + 1])
        parent_local = np.full(n, -1, dtype=np.int64)
        parent_local[c] = p
        _add_forks(x, idle_from, c, pid, thread, parent_local, t, add)
    has_child = np.zeros(n, dtype=bool)
    has_child[p[p >= 0]] = True
    leaf = c[~has_child[c]]
    add(2 * leaf + 1, 2 * leaf, SPAN, leaf)

    # ---- GPU streams: in order; an activity's own time
    g = np.flatnonzero(is_gpu)
    device = ev["device"].to_numpy()[pos[g]].astype(np.int64)
    stream = ev["stream"].to_numpy()[pos[g]]
    sk, lanes = _pairs(device, stream)
    lane_of = {pair: i for i, pair in enumerate(lanes)}
    order = np.lexsort((g, sk))
    gs_, sks = g[order], sk[order]
    same = np.r_[False, sks[1:] == sks[:-1]]
    prev_g = np.r_[-1, gs_[:-1]]
    add(2 * gs_[same], 2 * prev_g[same] + 1, STREAM, gs_[same])
    add(2 * g + 1, 2 * g, SPAN, g)

    # ---- launches
    le = ev["launch_eid"].to_numpy()[pos[g]]
    lc = np.where((le >= 0) & (le < size), loc[np.clip(le, 0, size - 1)], -1)
    ok = lc >= 0
    ok[ok] = ~is_gpu[lc[ok]]
    add(2 * g[ok], 2 * lc[ok], LAUNCH, g[ok])

    # Activities of each stream by correlation (launch order), for "last launched before".
    corr = ev["correlation"].to_numpy()[pos[g]]
    has_corr = corr >= 0
    comb = (sk[has_corr].astype(np.int64) << _CORR_BITS) + corr[has_corr]
    by_corr = np.argsort(comb, kind="stable")
    comb = comb[by_corr]
    comb_local = g[has_corr][by_corr]

    def last_before(lane: np.ndarray, bound: np.ndarray) -> np.ndarray:
        j = np.searchsorted(comb, (lane << _CORR_BITS) + bound, side="left") - 1
        good = (j >= 0) & ((comb[np.maximum(j, 0)] >> _CORR_BITS) == lane)
        return np.where(good, comb_local[np.maximum(j, 0)], -1)

    def first_after(lane: np.ndarray, bound: np.ndarray) -> np.ndarray:
        j = np.searchsorted(comb, (lane << _CORR_BITS) + bound, side="right")
        jj = np.minimum(j, len(comb) - 1)
        good = (j < len(comb)) & ((comb[jj] >> _CORR_BITS) == lane)
        return np.where(good, comb_local[jj], -1)

    # ---- synchronisation records (cuda_sync events: not nodes, they say who waits for what)
    rec_rows = np.flatnonzero(_isin(kind, [EventKind.CUDA_SYNC.value]))
    recs = pd.DataFrame(
        {
            "eid": all_eid[rec_rows],
            "name": np.asarray(names.cat.categories, dtype=object)[names.cat.codes.to_numpy()[rec_rows]],
            "device": ev["device"].to_numpy()[rec_rows].astype(np.int64),
            "stream": ev["stream"].to_numpy()[rec_rows],
            "correlation": ev["correlation"].to_numpy()[rec_rows],
        }
    )
    wait_cols = ["eid", "wait_on_stream", "wait_on_record_correlation"]
    if len(recs) and set(wait_cols) <= set(d.gpu_args.columns):
        recs = recs.merge(d.gpu_args[wait_cols], on="eid", how="left")
        recs[wait_cols[1:]] = recs[wait_cols[1:]].fillna(-1).astype(np.int64)
    else:
        recs["wait_on_stream"] = np.full(len(recs), -1, dtype=np.int64)
        recs["wait_on_record_correlation"] = np.full(len(recs), -1, dtype=np.int64)

    # ---- stream waits: the next launch on the waiting stream after the last on the recorded one
    waits = recs.loc[
        (recs["name"] == "Stream Wait Event")
        & (recs["wait_on_stream"] >= 0)
        & (recs["wait_on_record_correlation"] >= 0)
    ]
    if len(waits) and len(comb):
        src_lane = np.array(
            [lane_of.get((dv, ws), -1) for dv, ws in zip(waits["device"], waits["wait_on_stream"], strict=True)],
            dtype=np.int64,
        )
        dst_lane = np.array(
            [lane_of.get((dv, s), -1) for dv, s in zip(waits["device"], waits["stream"], strict=True)], dtype=np.int64
        )
        src = last_before(src_lane, waits["wait_on_record_correlation"].to_numpy())
        dst = first_after(dst_lane, waits["correlation"].to_numpy())
        good = (src_lane >= 0) & (dst_lane >= 0) & (src >= 0) & (dst >= 0)
        src, dst = src[good], dst[good]
        good = t[2 * src + 1] <= t[2 * dst] + SYNC_TOLERANCE_NS
        add(2 * dst[good], 2 * src[good] + 1, STREAM_WAIT, dst[good])

    elif len(g) > 1 and not (recs["name"] == "Stream Wait Event").any():
        # No wait records (older traces, or cuda_sync events not enabled): an activity that
        # started long after both its launch and its stream predecessor was held by a
        # cudaStreamWaitEvent the trace does not show; take the activity of another stream
        # of its device that ended just before it as the one it waited for.
        launch_t = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        launch_t[g[ok]] = t[2 * lc[ok]]
        prev_end = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        prev_end[gs_[same]] = t[2 * prev_g[same] + 1]
        start_g = t[2 * g]
        explained = np.maximum(launch_t[g], prev_end[g])
        held = start_g - explained > INFERRED_WAIT_MIN_DELAY_NS
        ends_g = t[2 * g + 1]
        for dev in np.unique(device[held]).tolist():
            # The activity of the device that ends last at or before each held start.
            mine = np.flatnonzero(device == dev)
            by_end = mine[np.argsort(ends_g[mine], kind="stable")]
            waiting = np.flatnonzero(held & (device == dev))
            j = np.searchsorted(ends_g[by_end], start_g[waiting], side="right") - 1
            before = by_end[np.maximum(j, 0)]
            gap = start_g[waiting] - ends_g[before]
            good = (j >= 0) & (gap <= INFERRED_WAIT_WINDOW_NS) & (sk[before] != sk[waiting])
            add(2 * g[waiting[good]], 2 * g[before[good]] + 1, INFERRED_WAIT, g[waiting[good]])

    # ---- synchronising calls: the CPU waits for GPU work
    name_codes = names.cat.codes.to_numpy()
    categories = names.cat.categories

    def by_name(mask_of_category: np.ndarray) -> np.ndarray:
        """Per event: the mask of its name's category (False for no name)."""
        out: np.ndarray = np.r_[mask_of_category, False][np.where(name_codes >= 0, name_codes, len(categories))]
        return out

    sync_names = STREAM_SYNC_CALLS | DEVICE_SYNC_CALLS | EVENT_SYNC_CALLS
    sync_calls = c[by_name(categories.isin(list(sync_names)))[pos[c]]]
    if len(sync_calls) and len(comb):
        rec_by_corr = recs.drop_duplicates("correlation").set_index("correlation")
        call_corr = ev["correlation"].to_numpy()[pos[sync_calls]]
        all_lanes = np.arange(len(lanes), dtype=np.int64)
        q_node: list[np.ndarray] = []
        q_lane: list[np.ndarray] = []
        q_bound: list[np.ndarray] = []
        for i, cc in zip(sync_calls.tolist(), call_corr.tolist(), strict=True):
            rec = rec_by_corr.loc[cc] if cc >= 0 and cc in rec_by_corr.index else None
            lane_ids, bound = all_lanes, cc
            if rec is not None and rec["name"] == "Stream Sync":
                lane = lane_of.get((int(rec["device"]), int(rec["stream"])))
                if lane is not None:
                    lane_ids = np.array([lane], dtype=np.int64)
            elif rec is not None and rec["name"] == "Event Sync" and int(rec["wait_on_stream"]) >= 0:
                lane = lane_of.get((int(rec["device"]), int(rec["wait_on_stream"])))
                if lane is not None:
                    lane_ids = np.array([lane], dtype=np.int64)
                    if int(rec["wait_on_record_correlation"]) >= 0:
                        bound = int(rec["wait_on_record_correlation"])
            if bound < 0:
                continue
            q_node.append(np.full(len(lane_ids), 2 * i + 1, dtype=np.int64))
            q_lane.append(lane_ids)
            q_bound.append(np.full(len(lane_ids), bound, dtype=np.int64))
        if q_node:
            qn, ql, qb = np.concatenate(q_node), np.concatenate(q_lane), np.concatenate(q_bound)
            a = last_before(ql, qb)
            good = a >= 0
            qn, a = qn[good], a[good]
            good = t[2 * a + 1] <= t[qn] + SYNC_TOLERANCE_NS
            add(qn[good], 2 * a[good] + 1, SYNC, qn[good] // 2)
    # Synchronous copies (by name, or pageable host memory): the call waits for its own copy.
    if len(g):
        own = lc >= 0
        own[own] = ~is_gpu[lc[own]]
        gi, ci = g[own], lc[own]
        sync_copy = by_name(categories.isin(list(SYNC_COPY_CALLS)))[pos[ci]]
        if len(d.gpu_args) and "pageable" in d.gpu_args.columns:
            pageable = d.gpu_args.loc[d.gpu_args["pageable"].to_numpy(), "eid"].to_numpy()
            memcpy_call = by_name(np.asarray(categories.str.contains("Memcpy"), dtype=bool))[pos[ci]]
            sync_copy = sync_copy | (np.isin(eid[gi], pageable) & memcpy_call)
        gi, ci = gi[sync_copy], ci[sync_copy]
        good = t[2 * gi + 1] <= t[2 * ci + 1] + SYNC_TOLERANCE_NS
        add(2 * ci[good] + 1, 2 * gi[good] + 1, SYNC, ci[good])

    # ---- the binding dependency of every node: the one satisfied last
    node = np.concatenate([x[0] for x in cand])
    pred = np.concatenate([x[1] for x in cand])
    edge = np.concatenate([np.broadcast_to(np.asarray(x[2], dtype=np.int8), x[0].shape) for x in cand])
    attr = np.concatenate([x[3] for x in cand])
    order = np.lexsort((_PRIORITY[edge], t[pred], node))
    node, pred, edge, attr = node[order], pred[order], edge[order], attr[order]
    pick = np.r_[node[1:] != node[:-1], True]
    out_pred = np.full(2 * n, -1, dtype=np.int64)
    out_edge = np.full(2 * n, SPAN, dtype=np.int8)
    out_attr = np.repeat(np.arange(n, dtype=np.int64), 2)
    out_pred[node[pick]] = pred[pick]
    out_edge[node[pick]] = edge[pick]
    out_attr[node[pick]] = attr[pick]
    return _Graph(rank=rank, eid=eid, pos=pos, is_gpu=is_gpu, t=t, pred=out_pred, edge=out_edge, attr=out_attr, loc=loc)


def _add_forks(
    x: np.ndarray,
    idle_from: np.ndarray,
    c: np.ndarray,
    pid: np.ndarray,
    thread: np.ndarray,
    parent: np.ndarray,
    t: np.ndarray,
    add: Any,
) -> None:
    """Inferred forks: ``x`` (local CPU events starting a thread's work) from the innermost call
    running on another thread of the process that began after ``idle_from``."""
    n_local = len(t) // 2
    thread_of = np.full(n_local, -1, dtype=np.int64)
    thread_of[c] = thread
    pid_of = np.zeros(n_local, dtype=np.int64)
    pid_of[c] = pid
    at = t[2 * x]
    best = np.full(len(x), -1, dtype=np.int64)
    for th in np.unique(thread).tolist():
        mine = c[thread == th]  # in start order
        starts = t[2 * mine]
        j = np.searchsorted(starts, at, side="right") - 1
        y = np.where(j >= 0, mine[np.maximum(j, 0)], -1)
        # Up to the innermost ancestor still running at the query time.
        for _ in range(256):
            done = (y >= 0) & (t[2 * np.maximum(y, 0) + 1] <= at)
            if not done.any():
                break
            y = np.where(done, parent[np.maximum(y, 0)], y)
        ok = (y >= 0) & (thread_of[np.maximum(y, 0)] != thread_of[x]) & (pid_of[np.maximum(y, 0)] == pid_of[x])
        ok &= t[2 * np.maximum(y, 0)] > idle_from
        better = ok & ((best < 0) | (t[2 * np.maximum(y, 0)] > t[2 * np.maximum(best, 0)]))
        best = np.where(better, y, best)
    good = best >= 0
    add(2 * x[good], 2 * best[good], INFERRED_FORK, x[good])


def _pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Codes 0..k-1 of the distinct (a, b) pairs, and the pairs (hashing, not sorting)."""
    ca, ua = pd.factorize(a)
    cb, ub = pd.factorize(b)
    codes, combined = pd.factorize(ca.astype(np.int64) * max(len(ub), 1) + cb)
    pairs = [(int(ua[c // max(len(ub), 1)]), int(ub[c % max(len(ub), 1)])) for c in combined.tolist()]
    return codes.astype(np.int64), pairs


# ---------------------------------------------------------------------- walking
# A segment of the path: (rank, eid, edge, start, end, from_rank), all ints.
_Seg = tuple[int, int, int, int, int, int]


def _walk(g: _Graph, start: int, eff: int, stop: int | None, lists: dict[str, list[Any]]) -> list[_Seg]:
    """Segments from node ``start`` (at effective time ``eff``) back to ``stop`` or a source, latest first.

    Effective times never increase going back (a dependency reported as ending after
    the point that waited for it is taken to end at that point), so segments tile time.
    """
    pred, t, edge, attr, eids = lists["pred"], lists["t"], lists["edge"], lists["attr"], lists["eid"]
    rank = g.rank
    out: list[_Seg] = []
    cur = start
    seen = set()
    for _ in range(len(pred) + 1):
        if cur == stop:
            break
        p = pred[cur]
        if p < 0 or p in seen:  # a source (or, with self-contradicting times, a loop: stop there)
            break
        seen.add(cur)
        ep = t[p] if t[p] < eff else eff
        out.append((rank, eids[attr[cur]], edge[cur], ep, eff, rank))
        cur, eff = p, ep
    return out


def _lists(g: _Graph) -> dict[str, list[Any]]:
    return {
        "pred": g.pred.tolist(),
        "t": g.t.tolist(),
        "edge": g.edge.tolist(),
        "attr": g.attr.tolist(),
        "eid": g.eid.tolist(),
    }


def _final_node(g: _Graph) -> int:
    """The end node of the event that ends last (the earliest such event at a tie)."""
    ends = g.t[1::2]
    return 2 * int(np.argmax(ends)) + 1


def _roots(g: _Graph, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every node: the stop or source its backward chain reaches, and the minimum time on the way."""
    nxt = g.pred.copy()
    src = nxt < 0
    nxt[src] = np.flatnonzero(src)
    nxt[stops] = stops
    low = g.t.copy()
    for _ in range(64):
        low = np.minimum(low, low[nxt])
        jumped = nxt[nxt]
        if np.array_equal(jumped, nxt):
            break
        nxt = jumped
    return nxt, np.minimum(low, g.t[nxt])


# ---------------------------------------------------------------------- one rank
def _one_rank_path(trace: Trace, rank: int) -> pd.DataFrame:
    one = trace.select(ranks=[rank])
    segs = one.map_ranks(_rank_full_path)[rank]
    if segs is None:
        warn_no_gpu("critical_path", [rank])
        return empty(CRITICAL_PATH_COLUMNS)
    if len(trace.ranks) > 1:
        segs = _split_waits(trace, rank, segs)
    return _frame(trace, segs)


def _rank_full_path(trace: Trace) -> np.ndarray | None:
    g = _build_graph(trace)
    if g is None:
        return None
    end = _final_node(g)
    return _seg_array(_walk(g, end, int(g.t[end]), None, _lists(g))[::-1])


def _seg_array(segs: list[_Seg]) -> np.ndarray:
    return np.array(segs, dtype=np.int64).reshape(len(segs), 6)


def _split_waits(trace: Trace, rank: int, segs: np.ndarray) -> np.ndarray:
    """Split each collective kernel on a one-rank path at the last other rank's arrival."""
    kernels = trace.map_ranks(rank_collective_kernels)
    inst, _ = match_instances(kernels)
    inst = _consistent(inst)
    if not len(inst):
        return segs
    mine = kernels[rank]
    latest = inst.loc[inst["rank"] != rank].sort_values(["start_ns", "rank"]).groupby("key").tail(1)
    arrival = mine[["eid", "key"]].merge(latest[["key", "start_ns", "rank"]], on="key", how="inner")
    if not len(arrival):
        return segs
    lookup = pd.Series(np.arange(len(arrival)), index=arrival["eid"].to_numpy())
    at = lookup.reindex(segs[:, 1]).to_numpy()
    cand = (segs[:, 2] == SPAN) & ~np.isnan(at)
    idx = np.flatnonzero(cand)
    if not len(idx):
        return segs
    row = at[idx].astype(np.int64)
    cut = np.minimum(np.maximum(arrival["start_ns"].to_numpy()[row], segs[idx, 3]), segs[idx, 4])
    split = cut > segs[idx, 3]
    idx, row, cut = idx[split], row[split], cut[split]
    if not len(idx):
        return segs
    waits = segs[idx].copy()
    waits[:, 2] = WAIT
    waits[:, 4] = cut
    waits[:, 5] = arrival["rank"].to_numpy()[row]
    out = segs.copy()
    out[idx, 3] = cut
    # Each wait goes right before the rest of its kernel.
    merged: np.ndarray = np.insert(out, idx, waits, axis=0)
    return merged


# ---------------------------------------------------------------------- across ranks
def _rank_summary(trace: Trace) -> dict[str, Any] | None:
    """Phase 1, per rank: where the backward chains of its entry points lead."""
    g = _build_graph(trace)
    if g is None:
        return None
    kernels = rank_collective_kernels(trace)
    kernels = kernels.loc[kernels["collective"] != "unknown"]
    k_local = g.loc[kernels["eid"].to_numpy()]
    stops = 2 * k_local + 1
    root, low = _roots(g, stops)
    final = _final_node(g)
    starts = 2 * k_local
    return {
        "final_eid": int(g.eid[final // 2]),
        "final_t": int(g.t[final]),
        "final_root": _node_ref(g, int(root[final])),
        "final_low": int(low[final]),
        "kernels": kernels.assign(
            start_t=g.t[starts],
            end_t=g.t[stops],
            root=[_node_ref(g, int(x)) for x in root[starts].tolist()],
            low=low[starts],
        ),
    }


def _node_ref(g: _Graph, node: int) -> tuple[int, bool, bool]:
    """(eid, is_end, is_source) of a node, stable across rebuilds of the graph."""
    return int(g.eid[node // 2]), bool(node % 2), bool(g.pred[node] < 0)


def _rank_expand(trace: Trace, pieces: Mapping[int, list[tuple[int, bool, int, int | None]]]) -> dict[int, list[_Seg]]:
    """Phase 3, per rank: the segments of the path pieces on this rank (rebuilding its graph)."""
    (rank,) = trace.ranks
    mine = pieces.get(rank, [])
    if not mine:
        return {}
    g = _build_graph(trace)
    if g is None:  # cannot happen: phase 1 found GPU activity on this rank
        return {}
    lists = _lists(g)
    out = {}
    for index, (eid, is_end, eff, stop_eid) in enumerate(mine):
        stop = None if stop_eid is None else g.node(stop_eid, True)
        out[index] = _walk(g, g.node(eid, is_end), eff, stop, lists)
    return out


def _cross_rank_path(trace: Trace) -> pd.DataFrame:
    summaries = trace.map_ranks(_rank_summary)
    without = [r for r, s in summaries.items() if s is None]
    live = {r: s for r, s in summaries.items() if s is not None}
    if without:
        warn_no_gpu("critical_path", without)
    if not live:
        return empty(CRITICAL_PATH_COLUMNS)
    kernels = {r: s["kernels"].reset_index() for r, s in live.items()}
    inst, _ = match_instances(kernels)
    inst = _consistent(inst)
    latest = inst.sort_values(["start_ns", "rank"]).groupby("key").tail(1)
    last_arrival = {
        key: (int(r), int(t), int(e))
        for key, r, t, e in zip(latest["key"], latest["rank"], latest["start_ns"], latest["start_eid"], strict=True)
    }
    # Per rank: eid -> (key, start, root, low) of its communication kernels.
    info = {
        r: {
            int(e): (str(key), int(st), root, int(low))
            for e, key, st, root, low in zip(k["eid"], k["key"], k["start_t"], k["root"], k["low"], strict=True)
        }
        for r, k in kernels.items()
    }

    end_rank = max(live, key=lambda r: (live[r]["final_t"], -r))
    s = live[end_rank]
    cur_rank, cur_eid, cur_end, eff = end_rank, s["final_eid"], True, s["final_t"]
    root, low = s["final_root"], s["final_low"]
    # The path, latest first: pieces (walked later, on their ranks) and collective hand-overs.
    steps: list[tuple[str, Any]] = []
    pieces: dict[int, list[tuple[int, bool, int, int | None]]] = {}
    seen: set[tuple[int, int]] = set()
    while True:
        root_eid, _, root_is_source = root
        stop = None if root_is_source else root_eid
        pieces.setdefault(cur_rank, []).append((cur_eid, cur_end, eff, stop))
        steps.append(("piece", (cur_rank, len(pieces[cur_rank]) - 1)))
        eff = min(eff, low)
        if root_is_source or (cur_rank, root_eid) in seen:
            break
        seen.add((cur_rank, root_eid))
        if root_eid not in info[cur_rank]:
            # Ties (events at one time, as in a trace whose timestamps are all equal) can leave a
            # root that is not a communication kernel: the path starts there.
            warnings.warn(
                f"critical_path: rank {cur_rank}'s events tie in time; the path is traced back only "
                "to where the ties begin",
                TraceviewWarning,
                stacklevel=3,
            )
            break
        key, own_start, own_root, own_low = info[cur_rank][root_eid]
        late = last_arrival.get(key)
        if late is not None and late[0] != cur_rank and late[1] > own_start:
            to_rank, late_start, to_eid = late
            seg_start = min(late_start, eff)
            steps.append(("segment", (cur_rank, root_eid, COLLECTIVE, seg_start, eff, to_rank)))
            _, _, root, low = info[to_rank][to_eid]
            cur_rank, cur_eid = to_rank, to_eid
        else:
            seg_start = min(own_start, eff)
            steps.append(("segment", (cur_rank, root_eid, SPAN, seg_start, eff, cur_rank)))
            root, low = own_root, own_low
            cur_eid = root_eid
        cur_end, eff = False, seg_start
    expanded = trace.map_ranks(_rank_expand, pieces)
    segments: list[_Seg] = []
    for kind, what in steps:
        if kind == "piece":
            r, index = what
            segments.extend(expanded[r][index])
        else:
            segments.append(what)
    return _frame(trace, _seg_array(segments[::-1]))


def _consistent(inst: pd.DataFrame) -> pd.DataFrame:
    """The matched collectives that no rank starts after another has ended them (warns about the others).

    Such a collective is impossible as recorded: either the ranks' clocks disagree or the
    collectives were matched wrongly (by order, when ranks run different sequences). It
    is not followed across ranks.
    """
    if not len(inst):
        return inst
    g = inst.groupby("key")
    bad = g["start_ns"].transform("max") > g["end_ns"].transform("min")
    n_bad = int(inst.loc[bad, "key"].nunique())
    if n_bad:
        warnings.warn(
            f"critical_path: {n_bad} of {g.ngroups} matched collective(s) start on some rank after they have "
            "ended on another, so they are not followed across ranks: the ranks' clocks disagree (load with "
            "tv.load(..., align='collectives')) or, for collectives matched by order, the ranks ran different "
            "sequences of them",
            TraceviewWarning,
            stacklevel=4,
        )
    return inst.loc[~bad]


# ---------------------------------------------------------------------- output
_EDGE_CATEGORY = {
    IDLE: "cpu_idle",
    LAUNCH: "launch_delay",
    STREAM: "gpu_gap",
    STREAM_WAIT: "stream_wait",
    INFERRED_WAIT: "stream_wait",
    INFERRED_JOIN: "sync",
    INFERRED_FORK: "sync",
    SYNC: "sync",
    COLLECTIVE: "gpu_communication",
    WAIT: "wait_other_rank",
}


def _frame(trace: Trace, segs: np.ndarray) -> pd.DataFrame:
    """The path frame from segments in time order (columns: rank, eid, edge, start, end, from_rank)."""
    segs = segs[(segs[:, 4] > segs[:, 3]) | (segs[:, 2] == SPAN)]  # instantaneous hand-overs add nothing
    n = len(segs)
    ranks = segs[:, 0]
    wanted = {int(r): segs[ranks == r, 1] for r in np.unique(ranks).tolist()}
    described = trace.map_ranks(_describe, wanted)
    name = np.empty(n, dtype=object)
    kind = np.empty(n, dtype=object)
    gpu_class = np.empty(n, dtype=object)
    for r, (names, kinds, classes) in described.items():
        if r in wanted:
            at = ranks == r
            name[at], kind[at], gpu_class[at] = names, kinds, classes
    edge = segs[:, 2]
    is_gpu = gpu_class != ""
    category = np.where(
        is_gpu,
        np.char.add("gpu_", gpu_class.astype(str)),
        np.where(np.isin(kind, _RUNTIME_KINDS), "cpu_runtime", "cpu"),
    ).astype(object)
    for code, label in _EDGE_CATEGORY.items():
        category[edge == code] = label
    out = pd.DataFrame(
        {
            "rank": ranks,
            "eid": segs[:, 1],
            "name": name,
            "kind": kind,
            "category": category,
            "edge": np.asarray(EDGE_NAMES, dtype=object)[edge] if n else np.empty(0, dtype=object),
            "start_ns": segs[:, 3],
            "end_ns": segs[:, 4],
            "dur_ns": segs[:, 4] - segs[:, 3],
            "from_rank": segs[:, 5],
        }
    )
    return out.astype(CRITICAL_PATH_COLUMNS)


def _describe(trace: Trace, eids: Mapping[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Names, kinds and GPU classes ("" for CPU events) of the given events of a one-rank trace."""
    (rank,) = trace.ranks
    wanted = np.asarray(eids.get(rank, np.empty(0, dtype=np.int64)), dtype=np.int64)
    ev = trace.rank_data(rank).events
    if not len(wanted):
        empty_obj = np.empty(0, dtype=object)
        return empty_obj, empty_obj.copy(), empty_obj.copy()
    all_eid = ev["eid"].to_numpy()
    row_of = np.full(int(all_eid.max()) + 1, -1, dtype=np.int64)
    row_of[all_eid] = np.arange(len(all_eid))
    rows = row_of[wanted]

    def column(col: str, missing: str) -> np.ndarray:
        cat = ev[col].array
        codes = np.asarray(cat.codes)[rows]
        values = np.asarray(cat.categories, dtype=object)
        return np.where(codes >= 0, values[np.maximum(codes, 0)] if len(values) else missing, missing)

    return column("name", ""), column("kind", ""), column("gpu_class", "")


def _categories(path: pd.DataFrame) -> pd.DataFrame:
    total = int(path["dur_ns"].sum())
    sums = path.groupby("category")["dur_ns"].sum()
    times = np.array([int(sums.get(c, 0)) for c in CRITICAL_PATH_CATEGORIES], dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(total > 0, 100.0 * times / max(total, 1), np.nan)
    out = pd.DataFrame({"category": list(CRITICAL_PATH_CATEGORIES), "time_ns": times, "time_pct": pct})
    return out.astype(CATEGORY_COLUMNS)
