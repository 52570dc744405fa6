"""The graph of one rank: every event's start and end, and the dependency each waited for last.

The model is the package's docstring (:mod:`jupyter_traceview.analysis.critical_path`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from ...model.schema import EventKind
from ...model.text import searched
from ...model.trace import Trace
from .._links import category_mask

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
RUNTIME_KINDS = (EventKind.CUDA_RUNTIME.value, EventKind.CUDA_DRIVER.value)

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
#: Calls that only wait (Python frames and C calls of ``with_stack`` traces, OS waits): a
#: thread whose innermost calls are all waits carries no step, and a wait ending on one
#: thread is never what another thread waited for (it ends because something else happened).
WAIT_CALLS = re.compile(
    r"(?:^|[\\/])(?:threading|queue|queues|selectors|connection|synchronize|time|subprocess)\.py\(\d+\): "
    r"(?:wait|_wait_for_tstate_lock|get|select|poll|_poll|recv|_recv|recv_bytes|join|sleep)$"
    r"|^<built-in (?:method|function) (?:acquire|sleep|select|poll|epoll_wait|wait|_wait|get)\b"
    r"|futex|^nanosleep$|^pthread_cond_(?:timed)?wait$"
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


# ---------------------------------------------------------------------- the graph of one rank
@dataclass
class Graph:
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
    #: Local events the path may end at: GPU activities and the events of the threads that
    #: launch GPU work (all CPU events where no thread launches any).
    final_ok: np.ndarray
    #: One dict per CPU thread: pid, tid, thread (its name, "" if not recorded), launches
    #: (GPU activities it launched), waits_only (its innermost calls all wait).
    threads: list[dict[str, Any]]
    #: Local event -> index into ``threads`` (-1 for GPU activities).
    thread_of: np.ndarray
    #: GPU activity (local) -> its launch call (local), -1 if none.
    launcher: np.ndarray
    #: Every dependency, binding or not (the what-if replay needs them all), sorted by node:
    #: ``(node, pred, edge, attr)`` arrays, as the binding ones above.
    deps: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def node(self, eid: int, end: bool) -> int:
        return 2 * int(self.loc[eid]) + int(end)

    def final_node(self) -> int:
        """The end node of the event that ends last among :attr:`final_ok` (the earliest such
        event at a tie): where the path is traced back from."""
        ends = np.where(self.final_ok, self.t[1::2], np.iinfo(np.int64).min)
        return 2 * int(np.argmax(ends)) + 1

    def spine(self, node: int) -> dict[str, Any]:
        """The thread the path ending at ``node`` is traced back on (a GPU activity's: its
        launch call's), and why: the ``critical_path`` result's ``attrs["spine"]`` entry."""
        i = node // 2
        if self.is_gpu[i]:
            i = int(self.launcher[i])
        th = int(self.thread_of[i]) if i >= 0 else -1
        left = [x for x in self.threads if not x["carries_step"]]
        why_not = "; ".join(
            f"pid {x['pid']} tid {x['tid']}"
            + (f" ({x['thread']})" if x["thread"] else "")
            + (": waits only" if x["waits_only"] else ": launches no GPU work")
            for x in left[:5]
        ) + (f"; and {len(left) - 5} more" if len(left) > 5 else "")
        carrying = sum(1 for x in self.threads if x["carries_step"])
        if th < 0:
            reason = "the path ends at a GPU activity whose launch call is not in the trace"
            chosen: dict[str, Any] = {"pid": -1, "tid": -1, "thread": "", "launches": 0}
        else:
            chosen = self.threads[th]
            what = (
                f"{chosen['launches']} GPU launches"
                if chosen["launches"]
                else "hands work to a thread that launches GPU work and waits for it"
                if chosen["hands_off"]
                else "no thread launches GPU work in the trace"
            )
            reason = (
                f"of the {carrying} thread(s) that carry the step (launch GPU work, or hand work to a "
                f"thread that does), the one whose work ends last ({what})"
            )
        if left:
            reason += f"; not candidates: {why_not}"
        return {
            "rank": self.rank,
            "pid": chosen["pid"],
            "tid": chosen["tid"],
            "thread": chosen["thread"],
            "launches": chosen["launches"],
            "reason": reason,
        }


@lru_cache(maxsize=1 << 16)
def _is_wait(name: str) -> bool:
    """Whether ``name`` is a waiting call (:data:`WAIT_CALLS`); once per distinct name (the ranks
    of a trace share most names)."""
    return bool(WAIT_CALLS.search(searched(name)))


def _isin(col: pd.Series, values: Iterable[str]) -> np.ndarray:
    """Rows of the categorical column ``col`` whose value is in ``values`` (one test per category)."""
    return category_mask(col, values)


def build_graph(trace: Trace, *, cpu_only: bool = False) -> Graph | None:
    """The binding dependencies of a one-rank trace (None if it has no GPU activity, unless
    ``cpu_only``: then the CPU threads' graph, None only without any CPU event)."""
    (rank,) = trace.ranks
    d = trace.rank_data(rank)
    ev = d.events
    kind = ev["kind"]
    act_mask = _isin(kind, _ACTIVITY_KINDS)
    cpu_mask = (ev["device"].to_numpy() < 0) & ~_isin(kind, _NOT_CPU_NODES)
    if not act_mask.any() and not (cpu_only and cpu_mask.any()):
        return None
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
    thread, thread_pairs = _pairs(pid, tid)
    name_codes = names.cat.codes.to_numpy()
    categories = names.cat.categories
    waits_by_name = np.r_[np.fromiter((_is_wait(str(x)) for x in categories.tolist()), bool, len(categories)), False]
    is_wait = np.zeros(n, dtype=bool)
    is_wait[c] = waits_by_name[np.where(name_codes[pos[c]] >= 0, name_codes[pos[c]], len(categories))]
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
            keep = (thread == th) & ~is_wait[c]
            if not keep.any():
                continue
            mine = c[keep]
            by_end = mine[np.argsort(ends_c[keep], kind="stable")]
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
        _add_forks(x, idle_from, c, pid, thread, parent_local, t, add, is_wait)
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
    same = np.r_[False, sks[1:] == sks[:-1]][: len(gs_)]
    prev_g = np.r_[-1, gs_[:-1]][: len(gs_)]
    add(2 * gs_[same], 2 * prev_g[same] + 1, STREAM, gs_[same])
    add(2 * g + 1, 2 * g, SPAN, g)

    # ---- launches
    le = ev["launch_eid"].to_numpy()[pos[g]]
    lc = np.where((le >= 0) & (le < size), loc[np.clip(le, 0, size - 1)], -1)
    ok = lc >= 0
    ok[ok] = ~is_gpu[lc[ok]]
    add(2 * g[ok], 2 * lc[ok], LAUNCH, g[ok])
    launcher = np.full(n, -1, dtype=np.int64)
    launcher[g[ok]] = lc[ok]

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

    # ---- the threads that carry the step: those that launch GPU work
    thread_of = np.full(n, -1, dtype=np.int64)
    thread_of[c] = thread
    calls = launcher[launcher >= 0]
    launches = np.bincount(thread_of[calls], minlength=len(thread_pairs)) if len(thread_pairs) else np.zeros(0, int)
    busy_leaf = np.bincount(thread_of[leaf[~is_wait[leaf]]], minlength=len(thread_pairs))
    names_of = {(int(p_), int(t_)): str(nm) for p_, t_, nm in d.meta.thread_names}
    threads = [
        {
            "pid": p_,
            "tid": t_,
            "thread": names_of.get((p_, t_), ""),
            "launches": int(launches[i]),
            "waits_only": bool(busy_leaf[i] == 0),
            "carries_step": True,
            "hands_off": False,
        }
        for i, (p_, t_) in enumerate(thread_pairs)
    ]
    # A thread that hands work to a launching thread and waits for it (the main thread in
    # loss.backward() while the autograd thread launches) carries the step too; a thread that
    # only waits never does.
    waits_only = busy_leaf == 0
    launching = launches > 0
    linked = np.zeros(len(thread_pairs), dtype=bool)
    fj = np.flatnonzero(((out_edge == INFERRED_FORK) | (out_edge == INFERRED_JOIN)) & (out_pred >= 0))
    a, b = thread_of[fj // 2], thread_of[out_pred[fj] // 2]
    both = (a >= 0) & (b >= 0)
    a, b = a[both], b[both]
    linked[a[launching[b]]] = True
    linked[b[launching[a]]] = True
    carries = (launching | linked) & ~waits_only
    if not carries.any():
        carries[:] = True  # no thread launches GPU work: any may end the path
    for i, x in enumerate(threads):
        x["carries_step"] = bool(carries[i])
        x["hands_off"] = bool(linked[i] and not launching[i])
    final_ok = is_gpu.copy()
    final_ok[c] = carries[thread]
    return Graph(
        rank=rank,
        eid=eid,
        pos=pos,
        is_gpu=is_gpu,
        t=t,
        pred=out_pred,
        edge=out_edge,
        attr=out_attr,
        loc=loc,
        final_ok=final_ok,
        threads=threads,
        thread_of=thread_of,
        launcher=launcher,
        deps=(node, pred, edge, attr),
    )


def _add_forks(
    x: np.ndarray,
    idle_from: np.ndarray,
    c: np.ndarray,
    pid: np.ndarray,
    thread: np.ndarray,
    parent: np.ndarray,
    t: np.ndarray,
    add: Any,
    is_wait: np.ndarray,
) -> None:
    """Inferred forks: ``x`` (local CPU events starting a thread's work) from the innermost call
    running on another thread of the process that began after ``idle_from`` (not a wait: a
    waiting thread wakes no one)."""
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
        ok &= (t[2 * np.maximum(y, 0)] > idle_from) & ~is_wait[np.maximum(y, 0)]
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
