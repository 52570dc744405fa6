"""One side of a comparison: each step of each rank cut into causes that add up to the step.

A rank's step window (``efficiency``'s, as :func:`tv.iteration_stats` reports it: from its
``ProfilerStep#N`` to the next step's start) is cut into disjoint parts, the first that
applies at each instant:

On a rank with GPU work (the GPU figures are :func:`tv.iteration_stats`'s, one truth):

``operator <path>``
    Some compute kernel runs (``compute_ns``); the time is shared among the operators that
    launched the kernels running in the step, in proportion to their kernels' time (kernels
    overlapping on several streams share the union). An operator is named by its position in
    the call tree (``parts.path``), not by its kernels' names, so a renamed kernel under the
    same operator pairs.
``exposed communication``
    Communication kernels with no compute kernel (``exposed_comm_ns``).
``memory copies``
    Memory copies or sets with neither compute nor communication (``gpu_busy_ns`` minus
    the two above).
``host: syncs``, ``data loading``, ``host: launch overhead``, ``host: Python / other``
    The GPU is idle (``idle_ns``), and the step's thread (the one that records
    ``ProfilerStep#N``) is, in this order: in a host sync (``host_syncs.SYNC_CALLS`` or
    ``SYNC_OPS``), in a DataLoader range (``threads.DATALOADER_PATTERN``), in an operator or a
    launch call (CPU time that left the GPU waiting), or in none of them (Python between
    operators, sleeps, the profiler).

On a CPU-only rank the step's thread is the device: ``data loading`` (its DataLoader ranges,
operators inside them included), ``operator <path>`` (its outermost operators outside data
loading, CPU time), ``exposed communication`` (collective operators, ``c10d::allreduce_``,
and the time the thread runs no operator while a collective runs, ``gloo:all_reduce`` on
gloo's thread), ``host: Python / other`` (the rest).

The parts of a window add up to its duration exactly (integer ns; the proportional shares
are rounded by largest remainders).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...model import intervals as iv
from ...model.schema import EventKind
from ...model.text import as_text
from ...model.trace import Trace
from .. import _links as lk
from .._chains import nearest_marked, outermost_marked
from .._gpu import COMPUTE, activities
from ..efficiency import step_windows, window_times
from ..host_syncs import SYNC_CALLS, SYNC_OPS
from ..threads import DATALOADER_PATTERN

__all__ = ["CAUSES", "OPERATOR", "OTHER_OPERATORS", "RankParts", "side_parts"]

#: Prefix of the causes that are operators (``operator aten::mm``).
OPERATOR = "operator "
#: The operators beyond the top ones, summed (:func:`tv.compare`'s ``top_operators``).
OTHER_OPERATORS = "operators (other)"
EXPOSED_COMM = "exposed communication"
MEMORY = "memory copies"
SYNCS = "host: syncs"
DATA = "data loading"
LAUNCH = "host: launch overhead"
PYTHON = "host: Python / other"
STRAGGLERS = "stragglers"
#: The causes that are not operators, in the order they are listed.
CAUSES = (EXPOSED_COMM, MEMORY, SYNCS, DATA, LAUNCH, PYTHON, STRAGGLERS)
#: Highlight patterns (``Timeline.highlight``) of the causes that are not operators.
HIGHLIGHT = {
    EXPOSED_COMM: "nccl|gloo|all_reduce|allreduce|all_gather|reduce_scatter|SendRecv|broadcast",
    MEMORY: "Memcpy|Memset",
    SYNCS: "|".join(re.escape(n) for n in (*SYNC_CALLS, *SYNC_OPS)),
    DATA: DATALOADER_PATTERN,
    LAUNCH: "cudaLaunchKernel|cuLaunchKernel|hipLaunchKernel",
    PYTHON: "",
    STRAGGLERS: "",
}
_STEP_NAME = re.compile(r"^ProfilerStep#\d+$")
_OP_KINDS = (EventKind.CPU_OP.value, EventKind.CUDA_RUNTIME.value, EventKind.CUDA_DRIVER.value)
_MAX_PATH = 4
#: Operators that are collectives on a CPU-only rank (their time is communication).
_COMM_OP = re.compile(r"^(c10d::|c10d_functional::|_c10d_functional::|record_param_comms$)")
#: Annotations of a collective running (on the backend's own thread, for gloo).
_COMM_RANGE = re.compile(r"^(gloo|nccl):")


@dataclass(frozen=True)
class RankParts:
    """The causes of one rank's steps: ``values`` is steps x causes (ns), rows adding up to
    ``duration``; ``windows`` the steps' windows (``step, start_ns, end_ns``); ``calls``
    the operators' calls per step (same columns as ``values``, 0 for other causes);
    ``kernels`` per operator cause, its kernels' names (GPU) in order of time."""

    rank: int
    gpu: bool
    windows: pd.DataFrame
    values: pd.DataFrame
    calls: pd.DataFrame
    kernels: dict[str, list[str]]


#: The step id of a rank's whole trace, compared as one step when no side has ProfilerSteps.
WHOLE = -1


def side_parts(trace: Trace, *, whole: bool = False) -> dict[int, RankParts]:
    """Every rank's :class:`RankParts` (ranks without steps are left out); ``whole``: each
    rank's whole trace as one step (``WHOLE``), for runs recorded without ``prof.step()``."""
    out = {}
    for r in trace.ranks:
        part = _rank_parts(trace, r, whole)
        if part is not None:
            out[r] = part
    return out


def _whole(trace: Trace, ev: pd.DataFrame) -> pd.DataFrame:
    """The rank's span (its events, within the trace's window) as one step window."""
    ts = ev["ts_ns"].to_numpy()
    lo, hi = (int(ts.min()), int((ts + ev["dur_ns"].to_numpy()).max())) if len(ts) else (0, 0)
    if trace.window is not None:
        lo, hi = max(lo, trace.window[0]), min(hi, trace.window[1])
    return pd.DataFrame({"step": [WHOLE], "start_ns": [lo], "end_ns": [max(lo, hi)]}).astype("int64")


def _rank_parts(trace: Trace, rank: int, whole: bool) -> RankParts | None:
    ev = trace.rank_data(rank).events
    win = _whole(trace, ev) if whole else step_windows(trace, [rank])
    if win.empty:
        return None
    starts, ends = win["start_ns"].to_numpy(), win["end_ns"].to_numpy()
    dur = ends - starts
    thread = _step_thread(ev)
    on_thread = (ev["pid"].to_numpy() == thread[0]) & (ev["tid"].to_numpy() == thread[1])
    loader = iv.union(*_spans(ev, on_thread & _loader_rows(ev)))
    ops = iv.union(*_spans(ev, on_thread & lk.category_mask(ev["kind"], _OP_KINDS)))
    tops, keys = _top_operators(ev)
    cols: dict[str, np.ndarray] = {}
    calls: dict[str, np.ndarray] = {}
    kernels: dict[str, list[str]] = {}
    acts = activities(trace, rank, work_only=True)
    gpu = len(acts) > 0
    if gpu:
        # The figures of tv.iteration_stats (the same two functions compute them there).
        times = window_times(acts, starts, ends)
        compute = np.asarray(times["compute_ns"], dtype=np.int64)
        exposed = np.asarray(times["exposed_comm_ns"], dtype=np.int64)
        cols[EXPOSED_COMM] = exposed
        cols[MEMORY] = np.asarray(times["gpu_busy_ns"], dtype=np.int64) - compute - exposed
        # Compute kernels to their launching operator's path.
        k = np.flatnonzero(acts.cls == COMPUTE)
        launch = lk.lookup(lk.eid_rows(ev), acts.launch_eid[k])
        top_of = _outermost_op(ev)
        op_row = np.where(launch >= 0, top_of[np.maximum(launch, 0)], -1)
        kname = np.asarray(as_text(acts.names), dtype=object)[acts.name[k]]
        key = np.where(op_row >= 0, _keys_at(keys, tops, op_row), "kernel " + kname)
        shares = _spread(acts.ts[k], acts.end[k], key, starts, ends)
        cols.update(_scaled(shares, compute))
        _kernels_by_key(kernels, key, kname, acts.end[k] - acts.ts[k])
        # GPU idle, by what the step's thread does meanwhile.
        idle = iv.subtract(iv.union(starts, ends), acts.union())
        syncs = iv.union(*_spans(ev, on_thread & _sync_rows(ev)))
        left = idle
        for cause, busy in ((SYNCS, syncs), (DATA, loader), (LAUNCH, ops)):
            part = iv.intersect(left, busy)
            cols[cause] = iv.coverage_of(part, starts, ends)
            left = iv.subtract(left, part)
        cols[PYTHON] = iv.coverage_of(left, starts, ends)
        op_calls = tops
    else:
        data = iv.coverage_of(loader, starts, ends)
        op_u = iv.subtract(ops, loader)
        op_ns = iv.coverage_of(op_u, starts, ends)
        outside = on_thread[tops] & _keys_outside(ev, tops, loader)
        shares = _spread(
            ev["ts_ns"].to_numpy()[tops[outside]],
            (ev["ts_ns"].to_numpy() + ev["dur_ns"].to_numpy())[tops[outside]],
            keys[outside],
            starts,
            ends,
        )
        scaled = _scaled(shares, op_ns)
        # Collective operators (c10d::allreduce_...) are communication, not operators; and
        # the step thread waiting outside any operator while a collective runs (gloo's
        # gloo:all_reduce on its own thread) waits for communication.
        comm_ops = [k for k in scaled if _COMM_OP.match(k[len(OPERATOR) :].split(" > ")[-1])]
        idle = iv.subtract(iv.subtract(iv.union(starts, ends), loader), ops)
        waiting = iv.coverage_of(iv.intersect(idle, iv.union(*_spans(ev, _comm_rows(ev)))), starts, ends)
        cols.update({k: v for k, v in scaled.items() if k not in comm_ops})
        cols[EXPOSED_COMM] = waiting + sum((scaled[k] for k in comm_ops), np.zeros(len(win), dtype=np.int64))
        cols[DATA] = data
        cols[PYTHON] = dur - data - op_ns - waiting
        op_calls = tops[outside]
    if LAUNCH not in cols:
        cols[LAUNCH] = np.zeros(len(win), dtype=np.int64)
    # Operators' calls per step (the top-level operators starting in the step).
    key_of = dict(zip(tops.tolist(), keys.tolist(), strict=True))
    ts = ev["ts_ns"].to_numpy()[op_calls]
    at = np.searchsorted(starts, ts, side="right") - 1
    ok = (at >= 0) & (ts < ends[np.maximum(at, 0)])
    call_frame = pd.DataFrame({"w": at[ok], "key": [key_of[r] for r in op_calls[ok].tolist()]})
    counts = call_frame.groupby(["w", "key"]).size().unstack(fill_value=0) if len(call_frame) else pd.DataFrame()
    for c in counts.columns:
        calls[c] = counts[c].reindex(range(len(win)), fill_value=0).to_numpy()
    values = pd.DataFrame({c: np.asarray(v, dtype=np.int64) for c, v in cols.items()})
    if not (values.sum(axis=1).to_numpy() == dur).all():  # exact by construction: a bug if not
        raise RuntimeError(f"compare: the causes of rank {rank}'s steps do not add up to the steps")
    return RankParts(
        rank=rank,
        gpu=gpu,
        windows=win[["step", "start_ns", "end_ns"]].reset_index(drop=True),
        values=values,
        calls=pd.DataFrame(calls, index=range(len(win))).fillna(0).astype(np.int64),
        kernels=kernels,
    )


def _step_thread(ev: pd.DataFrame) -> tuple[int, int]:
    """The (pid, tid) that records the ``ProfilerStep#N`` ranges (the most of them); without
    steps the thread with the most operators; (-1, -1) without either."""
    rows = np.flatnonzero(lk.category_mask(ev["kind"], [EventKind.USER_ANNOTATION.value]))
    names = as_text(ev["name"].to_numpy()[rows])
    rows = rows[np.fromiter((_STEP_NAME.match(n) is not None for n in names), dtype=bool, count=len(names))]
    if not len(rows):
        rows = np.flatnonzero(lk.category_mask(ev["kind"], [EventKind.CPU_OP.value]))
    if not len(rows):
        return -1, -1
    pairs = pd.DataFrame({"pid": ev["pid"].to_numpy()[rows], "tid": ev["tid"].to_numpy()[rows]})
    pid, tid = pairs.value_counts().index[0]
    return int(pid), int(tid)


def _spans(ev: pd.DataFrame, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ts = ev["ts_ns"].to_numpy()[mask]
    return ts, ts + ev["dur_ns"].to_numpy()[mask]


def _name_mask(ev: pd.DataFrame, pattern: str) -> np.ndarray:
    cats = as_text(ev["name"].cat.categories).tolist()
    rx = re.compile(pattern)
    hit = np.append(np.fromiter((rx.search(c) is not None for c in cats), dtype=bool, count=len(cats)), False)
    out: np.ndarray = hit[np.asarray(ev["name"].array.codes)]
    return out


def _loader_rows(ev: pd.DataFrame) -> np.ndarray:
    out: np.ndarray = lk.category_mask(ev["kind"], [EventKind.USER_ANNOTATION.value]) & _name_mask(
        ev, DATALOADER_PATTERN
    )
    return out


def _comm_rows(ev: pd.DataFrame) -> np.ndarray:
    """Collectives as CPU ranges (any thread): ``gloo:all_reduce``, ``nccl:all_reduce`` annotations."""
    out: np.ndarray = lk.category_mask(ev["kind"], [EventKind.USER_ANNOTATION.value]) & _name_mask(
        ev, _COMM_RANGE.pattern
    )
    return out


def _sync_rows(ev: pd.DataFrame) -> np.ndarray:
    calls = lk.category_mask(ev["kind"], [EventKind.CUDA_RUNTIME.value, EventKind.CUDA_DRIVER.value])
    ops = lk.category_mask(ev["kind"], [EventKind.CPU_OP.value])
    out: np.ndarray = (calls & lk.category_mask(ev["name"], SYNC_CALLS)) | (
        ops & lk.category_mask(ev["name"], SYNC_OPS)
    )
    return out


def _parents(ev: pd.DataFrame) -> np.ndarray:
    """Each row's parent row (-1 at top level)."""
    return lk.lookup(lk.eid_rows(ev), ev["parent_eid"].to_numpy())


def _outermost_op(ev: pd.DataFrame) -> np.ndarray:
    """Each row's outermost enclosing operator, itself included (-1 if none), up the parent
    chain by pointer jumping (:func:`.._chains.outermost_marked`)."""
    return outermost_marked(_parents(ev), lk.category_mask(ev["kind"], [EventKind.CPU_OP.value]))


def _top_operators(ev: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The outermost operators (rows, every thread) and their causes: ``operator <path>``,
    the path being the user annotations enclosing them (the innermost ``_MAX_PATH``; not
    ``ProfilerStep#N``, not Python frames, whose file and line change with the code) and
    their name, joined by `` > ``."""
    is_op = lk.category_mask(ev["kind"], [EventKind.CPU_OP.value])
    parent = _parents(ev)
    top = np.flatnonzero(is_op & (outermost_marked(parent, is_op) == np.arange(len(ev))))
    # Which rows are annotations that name a level of the path (decided per name, not per row).
    levels = lk.category_mask(ev["kind"], [EventKind.USER_ANNOTATION.value]) & ~_name_mask(ev, _STEP_NAME.pattern)
    codes = np.asarray(ev["name"].array.codes)
    cats = np.asarray(as_text(ev["name"].cat.categories), dtype=object)
    # Each row's innermost level above it (its parent's nearest level, the parent included).
    near = nearest_marked(parent, levels)
    above = np.where(parent >= 0, near[np.maximum(parent, 0)], -1)
    keys = cats[codes[top]].astype(object) if len(top) else np.empty(0, dtype=object)
    cur = top.copy()
    for _ in range(_MAX_PATH):
        cur = np.where(cur >= 0, above[np.maximum(cur, 0)], -1)
        add = cur >= 0
        if not add.any():
            break
        keys = np.where(add, cats[codes[np.maximum(cur, 0)]] + " > " + keys, keys)
    return top, (OPERATOR + keys).astype(object)


def _keys_at(keys: np.ndarray, tops: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The path keys of operator ``rows`` (each one of ``tops``)."""
    pos = np.searchsorted(tops, rows)
    pos = np.minimum(pos, max(len(tops) - 1, 0))
    found = (len(tops) > 0) & (tops[pos] == rows) if len(tops) else np.zeros(len(rows), dtype=bool)
    return np.where(found, keys[pos] if len(tops) else "", OPERATOR + "(unknown)").astype(object)


def _keys_outside(ev: pd.DataFrame, tops: np.ndarray, loader: iv.Intervals) -> np.ndarray:
    """Which outermost operators lie outside data loading (their start not in a DataLoader range)."""
    ts = ev["ts_ns"].to_numpy()[tops]
    inside = iv.coverage_of(loader, ts, ts + 1) > 0
    return np.asarray(~inside)


def _spread(
    ts: np.ndarray, end: np.ndarray, key: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> dict[str, np.ndarray]:
    """Per key, the time its intervals spend in each window (sorted, disjoint windows; an
    interval spanning several windows is split between them)."""
    n = len(starts)
    if not len(ts) or not n:
        return {}
    codes, uniq = pd.factorize(pd.Series(key, dtype=object))
    sums = np.zeros((len(uniq), n), dtype=np.float64)
    lo = np.clip(np.searchsorted(starts, ts, side="right") - 1, 0, n - 1)
    hi = np.clip(np.searchsorted(starts, end - 1, side="right") - 1, 0, n - 1)
    one = lo == hi  # nearly every interval: one window, one vectorised pass
    ov = np.minimum(end, ends[lo]) - np.maximum(ts, starts[lo])
    np.add.at(sums, (codes[one], lo[one]), np.maximum(ov[one], 0))
    for i in np.flatnonzero(~one).tolist():  # the few that cross a step boundary
        w = np.arange(lo[i], hi[i] + 1)
        sums[codes[i], w] += np.maximum(np.minimum(end[i], ends[w]) - np.maximum(ts[i], starts[w]), 0)
    return {str(k): sums[i] for i, k in enumerate(uniq.tolist())}


def _scaled(shares: dict[str, np.ndarray], total: np.ndarray) -> dict[str, np.ndarray]:
    """``total`` per window shared among the keys in proportion to ``shares`` (integer ns,
    largest remainders); a window with a total and no shares gives it to ``OTHER_OPERATORS``."""
    names = list(shares)
    total = np.asarray(total, dtype=np.int64)
    out = {k: np.zeros(len(total), dtype=np.int64) for k in names}
    if not names:
        return {OTHER_OPERATORS: total.copy()} if total.any() else {}
    m = np.vstack([shares[k] for k in names])
    s = m.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = np.where(s > 0, m * (total / np.where(s > 0, s, 1)), 0.0)
    base = np.floor(exact).astype(np.int64)
    left = np.where(s > 0, total - base.sum(axis=0), 0)
    order = np.argsort(-(exact - base), axis=0, kind="stable")
    for w in np.flatnonzero(left > 0):
        base[order[: left[w], w], w] += 1
    for i, k in enumerate(names):
        out[k] = base[i]
    orphan = np.where(s > 0, 0, total)
    if orphan.any():
        out[OTHER_OPERATORS] = orphan
    return out


def _kernels_by_key(out: dict[str, list[str]], key: np.ndarray, kname: np.ndarray, dur: np.ndarray) -> None:
    """Per cause, the names of its kernels, longest total time first (one grouping for all)."""
    if not len(key):
        return
    tot = pd.DataFrame({"key": key, "k": kname, "d": dur}).groupby(["key", "k"], sort=False)["d"].sum()
    tot = tot.reset_index().sort_values(["key", "d"], ascending=[True, False], kind="stable")
    for k, names in zip(tot["key"].tolist(), tot["k"].tolist(), strict=True):
        out.setdefault(str(k), []).append(str(names))
