"""How each change edits the replay graph: edge weights, dropped edges, redirected edges.

Every function takes the model and the edited edge arrays (:class:`Edit`) and changes
them in place; nothing loops over events in Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...model.schema import EventKind
from ...model.trace import Trace
from ..critical_path.graph import (
    DEVICE_SYNC_CALLS,
    EVENT_SYNC_CALLS,
    IDLE,
    INFERRED_JOIN,
    LAUNCH,
    SELF,
    SPAN,
    STREAM,
    STREAM_SYNC_CALLS,
    SYNC,
)
from ..kernel_families import family_of
from ..workload import GRAPH_LAUNCH
from .changes import (
    BalanceStraggler,
    Change,
    FuseKernels,
    GraphLaunch,
    OverlapCommunication,
    RemoveDataLoading,
    RemovePython,
    RemoveSyncs,
    ScaleKernels,
)
from .model import Model

__all__ = ["Edit", "apply_change", "graph_launched", "lateness", "straggler_of"]

#: The DataLoader's annotations (torch's ``enumerate(DataLoader)#...__next__``).
DATALOADER_RANGE = re.compile(r"^enumerate\(DataLoader\)#")
_SYNC_NAMES = STREAM_SYNC_CALLS | DEVICE_SYNC_CALLS | EVENT_SYNC_CALLS


@dataclass
class Edit:
    """The edges of one replay: sources (redirectable), weights, and which are kept."""

    src: np.ndarray
    w: np.ndarray
    keep: np.ndarray

    @classmethod
    def of(cls, m: Model) -> Edit:
        return cls(m.src.copy(), m.w.copy(), np.ones(len(m.dst), dtype=bool))


def _dst_event(m: Model) -> np.ndarray:
    """The event of each edge's destination (-1 for collective arrival nodes)."""
    return np.where(m.dst < 2 * m.n_events, m.dst // 2, -1)


def _into(m: Model, events: np.ndarray, end: bool | None = None) -> np.ndarray:
    """Edges whose destination is a node of one of ``events`` (bool per event): its end, start or either."""
    de = _dst_event(m)
    hit = np.r_[events, False][np.where(de >= 0, de, len(events))]
    if end is None:
        return np.asarray(hit, dtype=bool)
    return np.asarray(hit & ((m.dst % 2 == 1) == end), dtype=bool)


def _src_event(m: Model, src: np.ndarray) -> np.ndarray:
    return np.where(src < 2 * m.n_events, src // 2, -1)


def subtree(m: Model, roots: np.ndarray) -> np.ndarray:
    """The events under ``roots`` (bool per event), the roots included."""
    mark = roots.copy()
    parent = m.ev_parent
    has = parent >= 0
    for _ in range(512):
        new = mark.copy()
        new[has] |= mark[parent[has]]
        if np.array_equal(new, mark):
            break
        mark = new
    return np.asarray(mark, dtype=bool)


def names_matching(m: Model, pattern: re.Pattern[str] | str) -> np.ndarray:
    """Events whose name matches (bool per event), by distinct name."""
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    return by_name(m, np.fromiter((bool(rx.search(str(u))) for u in m.names), bool, len(m.names)))


def by_name(m: Model, ok: np.ndarray) -> np.ndarray:
    """Per event: ``ok`` of its name (``ok`` per distinct name, ``m.names``)."""
    return np.asarray(ok[m.ev_name], dtype=bool)


def _kernels(m: Model) -> np.ndarray:
    return np.asarray(m.ev_gpu & (m.ev_kind == EventKind.KERNEL.value), dtype=bool)


def _durations(m: Model) -> np.ndarray:
    return np.asarray(m.t[1 : 2 * m.n_events : 2] - m.t[0 : 2 * m.n_events : 2], dtype=np.int64)


# ---------------------------------------------------------------------- the changes
def _remove_syncs(m: Model, e: Edit, c: RemoveSyncs, trace: Trace) -> None:
    waits = np.zeros(m.n_events, dtype=bool)
    syncing = m.code == SYNC
    waits[_dst_event(m)[syncing]] = True
    calls = ~m.ev_gpu & (by_name(m, np.isin(m.names, list(_SYNC_NAMES))) | waits)
    into = _into(m, calls, end=True)
    e.keep &= ~(into & np.isin(m.code, [SYNC, INFERRED_JOIN]))
    own = into & np.isin(m.code, [SPAN, SELF])
    e.w[own] = 0


def dataloader_events(m: Model) -> np.ndarray:
    """The DataLoader ranges and everything under them (bool per event)."""
    return subtree(m, ~m.ev_gpu & names_matching(m, DATALOADER_RANGE))


def _remove_dataloading(m: Model, e: Edit, c: RemoveDataLoading, trace: Trace) -> None:
    roots = ~m.ev_gpu & names_matching(m, DATALOADER_RANGE)
    sub = subtree(m, roots)
    into = _into(m, sub)
    root_start = _into(m, roots, end=False)
    se = _src_event(m, e.src)
    inside = (se >= 0) & np.r_[sub, False][np.where(se >= 0, se, len(sub))]
    tree = np.isin(m.code, [SPAN, SELF, IDLE])
    zero = into & ~root_start & inside & tree
    e.w[zero] = 0
    e.keep &= ~(into & ~root_start & ~zero)


def _remove_python(m: Model, e: Edit, c: RemovePython, trace: Trace) -> None:
    th = m.ev_thread
    carries = np.zeros(m.n_events, dtype=bool)
    cpu = th >= 0
    carries[cpu] = m.thread_carries[th[cpu]]
    host_level = np.isin(m.ev_kind, [EventKind.PYTHON_FUNCTION.value, EventKind.USER_ANNOTATION.value])
    host_level &= ~dataloader_events(m)
    de = _dst_event(m)
    ok = (de >= 0) & np.r_[carries, False][np.where(de >= 0, de, m.n_events)]
    attr_ok = (m.attr >= 0) & np.r_[host_level, False][np.where(m.attr >= 0, m.attr, m.n_events)]
    leaf_py = (
        (m.code == SPAN)
        & attr_ok
        & np.r_[m.ev_kind == EventKind.PYTHON_FUNCTION.value, False][np.where(m.attr >= 0, m.attr, m.n_events)]
    )
    gaps = ok & ((m.code == IDLE) | ((m.code == SELF) & attr_ok) | leaf_py)
    # An idle gap of a thread's dataloader wait stays (RemoveDataLoading's part).
    gaps &= ~np.r_[dataloader_events(m), False][np.where(de >= 0, de, m.n_events)] | (m.code != IDLE)
    e.w[gaps] = np.minimum(e.w[gaps], c.floor_ns)


def _roofline_ratio(m: Model, trace: Trace) -> np.ndarray:
    """Per event: ideal_ns / gpu_ns of the modelled operator that launched it (NaN where none)."""
    from ..perfmodel.performance import op_performance

    perf = op_performance(trace)
    ratio = np.full(m.n_events, np.nan)
    perf = perf.loc[(perf["gpu_ns"] > 0) & perf["ideal_ns"].notna() & (perf["ideal_ns"] > 0)]
    if not len(perf):
        return ratio
    key = pd.MultiIndex.from_arrays([m.ev_rank, m.ev_eid])
    at = pd.Series(
        np.minimum(perf["ideal_ns"].to_numpy() / perf["gpu_ns"].to_numpy(), 1.0),
        index=pd.MultiIndex.from_arrays([perf["rank"].to_numpy(), perf["eid"].to_numpy()]),
    )
    at = at[~at.index.duplicated()]
    op_ratio = at.reindex(key).to_numpy()
    x = m.ev_launcher.copy()
    for _ in range(256):
        live = (x >= 0) & np.isnan(ratio)
        if not live.any():
            break
        ratio[live] = op_ratio[x[live]]
        x = np.where(live, m.ev_parent[np.maximum(x, 0)], -1)
    return ratio


def _scale_kernels(m: Model, e: Edit, c: ScaleKernels, trace: Trace) -> None:
    k = _kernels(m)
    if c.pattern is not None:
        k &= names_matching(m, c.pattern)
    if c.family is not None:
        k &= by_name(m, np.fromiter((family_of(str(u)) == c.family for u in m.names), bool, len(m.names)))
    factor = np.full(m.n_events, c.factor)
    if c.to_roofline:
        ratio = _roofline_ratio(m, trace)
        factor = np.where(np.isnan(ratio), 1.0, ratio)
    _scale(m, e, k, factor)
    if c.to_roofline or c.family is not None:
        return  # roofline times and kernel families are the GPU kernels' only
    # Ranks without GPU kernels: their CPU operators matching the pattern (every one without).
    ops = ~m.ev_gpu & (m.ev_kind == EventKind.CPU_OP.value) & ~np.isin(m.ev_rank, np.unique(m.ev_rank[_kernels(m)]))
    if c.pattern is not None:
        ops &= names_matching(m, c.pattern)
    if ops.any():
        _scale_operators(m, e, ops, c.factor)


def _scale_operators(m: Model, e: Edit, ops: np.ndarray, factor: float) -> None:
    """Scale CPU ``ops`` with everything nested in them: the own-time (``self``) and ``span``
    edges inside the outermost matches, their ends included, not the edge to their start.
    A match nested in another is scaled once, with its outermost match."""
    sub = subtree(m, ops)
    has = m.ev_parent >= 0
    nested = np.zeros(m.n_events, dtype=bool)
    nested[has] = sub[m.ev_parent[has]]
    inside = _into(m, sub) & np.isin(m.code, [SPAN, SELF]) & ~_into(m, sub & ~nested, end=False)
    e.w[inside] = np.round(e.w[inside] * factor).astype(np.int64)


def _scale(m: Model, e: Edit, events: np.ndarray, factor: np.ndarray) -> None:
    """Scale the own time of GPU ``events``: their span edges (and a collective's time after arrival)."""
    ends = _into(m, events, end=True) & np.isin(m.code, [SPAN]) | (
        _into(m, events, end=True) & (m.src >= 2 * m.n_events)
    )
    de = _dst_event(m)[ends]
    e.w[ends] = np.round(e.w[ends] * factor[de]).astype(np.int64)


def _comm(m: Model) -> np.ndarray:
    return np.asarray(m.ev_gpu & (m.ev_class == "communication"), dtype=bool)


def _overlap(m: Model, e: Edit, c: OverlapCommunication, trace: Trace) -> None:
    comm = _comm(m)
    se = _src_event(m, e.src)
    from_end = (se >= 0) & (e.src % 2 == 1) & np.r_[comm, False][np.where(se >= 0, se, m.n_events)]
    de = _dst_event(m)
    to_other = (de >= 0) & ~np.r_[comm, False][np.where(de >= 0, de, m.n_events)]
    move = from_end & to_other
    e.src[move] -= 1
    e.w[move] = 0


def arrivals(m: Model) -> pd.DataFrame:
    """One row per (matched collective instance, participant): ``edge`` (the participant's
    edge into the instance's arrival point), ``rank``, ``kernel`` (its collective kernel),
    ``start_ns`` (recorded) and ``lateness_ns``: for the last participant, its start minus
    the second-last's (what it held the others up, as :func:`~jupyter_traceview.stragglers`
    measures it); 0 for the others."""
    idx = np.flatnonzero(m.dst >= 2 * m.n_events)
    kev = m.src[idx] // 2
    out = pd.DataFrame(
        {"node": m.dst[idx], "edge": idx, "rank": m.ev_rank[kev], "kernel": kev, "start_ns": m.t[m.src[idx]]}
    ).sort_values(["node", "start_ns"], kind="stable")
    node = out["node"].to_numpy()
    start = out["start_ns"].to_numpy()
    last = np.r_[node[1:] != node[:-1], True]
    has_prev = np.r_[False, node[1:] == node[:-1]]
    prev = np.r_[start[:1], start[:-1]]
    late = np.where(last & has_prev, start - prev, 0)
    if m.arrival_lateness is not None:  # a rank's share: the lateness over every participant, given
        late = m.arrival_lateness[node - 2 * m.n_events]
    return out.assign(lateness_ns=np.maximum(late, 0)).drop(columns="node").reset_index(drop=True)


def lateness(node: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Per (instance ``node``, participant ``start``): :func:`arrivals`' ``lateness_ns``."""
    order = np.lexsort((start, node))
    nd, st = node[order], start[order]
    last = np.r_[nd[1:] != nd[:-1], True]
    has_prev = np.r_[False, nd[1:] == nd[:-1]]
    prev = np.r_[st[:1], st[:-1]]
    out = np.empty(len(node), dtype=np.int64)
    out[order] = np.maximum(np.where(last & has_prev, st - prev, 0), 0)
    return out


def straggler_of(rank: np.ndarray, late: np.ndarray) -> int:
    """The rank whose late arrivals held the others up most (the first of equals)."""
    return int(pd.Series(late).groupby(rank).sum().idxmax())


#: The edges that carry a rank's own work and the gaps between it (not its waits).
_WORK = [SPAN, SELF, IDLE, LAUNCH, STREAM]


def _balance(m: Model, e: Edit, c: BalanceStraggler, trace: Trace) -> None:
    arr = arrivals(m)
    if not len(arr):
        return
    if c.rank is not None:
        rank = c.rank
    elif m.straggler is not None:
        rank = m.straggler
    else:
        rank = straggler_of(arr["rank"].to_numpy(), arr["lateness_ns"].to_numpy())
    late = arr.loc[(arr["rank"] == rank) & (arr["lateness_ns"] > 0)].sort_values("start_ns", kind="stable")
    if not len(late):
        return
    mine = arr.loc[arr["rank"] == rank]
    ends = np.sort(m.t[2 * mine["kernel"].to_numpy() + 1])
    a = late["start_ns"].to_numpy()
    lateness = late["lateness_ns"].to_numpy()
    # Each late arrival's segment: since the rank's previous collective ended, or its step began.
    k = late["kernel"].to_numpy()
    row = m.ev_step_row[k]
    step_ev = np.where(row >= 0, m.steps["event"].to_numpy()[np.maximum(row, 0)], -1)
    on_rank = m.ev_rank == rank
    first = int(m.t[0 : 2 * m.n_events : 2][on_rank].min())
    floor = np.where(step_ev >= 0, m.t[2 * np.maximum(step_ev, 0)], first)
    before = np.searchsorted(ends, a, side="right") - 1
    tie = np.where(before >= 0, ends[np.maximum(before, 0)], np.iinfo(np.int64).min)
    lo = np.maximum(np.maximum(floor, tie), first)
    span = a - lo
    keep_share = np.where(span > 0, np.maximum(span - lateness, 0) / np.maximum(span, 1), 1.0)
    # Its own work in each segment, host and GPU alike, shrinks by its lateness ...
    de = _dst_event(m)
    cand = np.flatnonzero(
        (de >= 0) & np.r_[on_rank & ~_comm(m), False][np.where(de >= 0, de, m.n_events)] & np.isin(m.code, _WORK)
    )
    t = m.t[m.dst[cand]]
    j = np.searchsorted(a, t, side="left")
    inside = j < len(a)
    inside[inside] &= t[inside] > lo[j[inside]]
    cand, j = cand[inside], j[inside]
    e.w[cand] = np.round(e.w[cand] * keep_share[j]).astype(np.int64)
    # ... and what the segment cannot absorb (lateness from before it: a step begun late) no
    # longer holds the others: its arrival counts that much earlier.
    rest = np.maximum(lateness - np.maximum(span, 0), 0)
    e.w[late["edge"].to_numpy()] = -rest


def graph_launched(m: Model) -> np.ndarray:
    """GPU activities launched by a graph launch call (:data:`..workload.GRAPH_LAUNCH`): their
    launch call, reached through the correlation id, is one (bool per event)."""
    calls = ~m.ev_gpu & names_matching(m, GRAPH_LAUNCH)
    la = m.ev_launcher
    return np.asarray(m.ev_gpu & (la >= 0) & np.r_[calls, False][np.where(la >= 0, la, m.n_events)], dtype=bool)


def _graph_launch(m: Model, e: Edit, c: GraphLaunch, trace: Trace) -> None:
    work = _kernels(m) if c.whole_step else graph_launched(m)
    calls = np.zeros(m.n_events, dtype=bool)
    la = m.ev_launcher[work]
    calls[la[la >= 0]] = True
    e.w[_into(m, calls, end=True) & (m.code == SPAN)] = 0
    e.w[_into(m, work, end=False) & (m.code == LAUNCH)] = 0


def _fuse(m: Model, e: Edit, c: FuseKernels, trace: Trace) -> None:
    k = np.flatnonzero(_kernels(m))
    if len(k) < 2:
        return
    order = np.lexsort((m.t[2 * k], m.ev_lane[k]))
    k = k[order]
    lane = m.ev_lane[k]
    same = np.r_[False, lane[1:] == lane[:-1]]
    merged = np.zeros(len(k), dtype=bool)  # fused into the kernel before it
    if c.sequence is not None:
        parts = [names_matching(m, p)[k] for p in c.sequence]
        n = len(parts)
        occ = np.ones(len(k) - n + 1, dtype=bool) if len(k) >= n else np.zeros(0, bool)
        for j, p in enumerate(parts):
            occ &= p[j : j + len(occ)]
            if j:
                occ &= same[j : j + len(occ)]
        for j in range(1, n):
            merged[np.flatnonzero(occ) + j] = True
    else:
        if c.pattern is not None:
            hit = names_matching(m, c.pattern)[k]
        else:
            hit = _durations(m)[k] < int(c.shorter_than_ns or 0)
        merged = hit & np.r_[False, hit[:-1]] & same
    fused = np.zeros(m.n_events, dtype=bool)
    fused[k[merged]] = True
    if not fused.any():
        return
    calls = np.zeros(m.n_events, dtype=bool)
    la = m.ev_launcher[fused]
    calls[la[la >= 0]] = True
    e.w[_into(m, calls, end=True) & (m.code == SPAN)] = 0
    into_start = _into(m, fused, end=False)
    e.keep &= ~(into_start & (m.code == LAUNCH))
    e.w[into_start & (m.code == STREAM)] = 0


_APPLY: dict[type, Any] = {
    RemoveSyncs: _remove_syncs,
    RemoveDataLoading: _remove_dataloading,
    RemovePython: _remove_python,
    ScaleKernels: _scale_kernels,
    OverlapCommunication: _overlap,
    BalanceStraggler: _balance,
    GraphLaunch: _graph_launch,
    FuseKernels: _fuse,
}


def apply_change(m: Model, e: Edit, change: Change, trace: Trace) -> None:
    """Edit ``e`` as ``change`` assumes."""
    _APPLY[type(change)](m, e, change, trace)
