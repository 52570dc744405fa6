"""NVTX ranges (Nsight) and user annotations (PyTorch) projected onto the GPU time they caused."""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model.schema import LAUNCH_KINDS, EventKind
from ..model.trace import Trace
from ._common import WORK_CLASSES, empty, gpu_activities, scoped, warn_no_gpu
from ._range_names import split_range_names

__all__ = ["nvtx_gpu_projection"]

NVTX_GPU_PROJECTION_COLUMNS = {
    "rank": "int64",
    "eid": "int64",
    "name": "str",
    "name_suffix": "str",
    "pid": "int64",
    "tid": "int64",
    "depth": "int64",
    "ts_ns": "int64",
    "dur_ns": "int64",
    "launches": "int64",
    "kernels": "int64",
    "gpu_activities": "int64",
    "gpu_start_ns": "int64",
    "gpu_end_ns": "int64",
    "gpu_span_ns": "int64",
    "gpu_busy_ns": "int64",
    "gpu_time_ns": "int64",
}

_LAUNCH = [k.value for k in LAUNCH_KINDS]
_WORK_KINDS = [EventKind.KERNEL.value, EventKind.GPU_MEMCPY.value, EventKind.GPU_MEMSET.value]


def nvtx_gpu_projection(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    name: str | None = None,
) -> pd.DataFrame:
    """Each NVTX range or user annotation with the GPU work launched inside it.

    A range's GPU work is every kernel, memcpy and memset launched by a CUDA runtime or
    driver call made inside the range: on the range's thread, starting at or after the
    range's start and ending by its end (so nested ranges each count the work of their
    nested calls). Work launched by other threads, or by calls that straddle the range's
    end, is not the range's. Ranges are NVTX push/pop and start/end ranges in Nsight
    exports, and ``user_annotation`` events (``record_function``, ``ProfilerStep#N``) in
    PyTorch traces. Synchronisation records are not work and are not counted.

    Parameters
    ----------
    trace:
        The trace.
    ranks, iterations, time_range:
        Narrow the trace first (see :meth:`Trace.select`); GPU work is clipped to the
        time range.
    name:
        Keep only ranges whose name matches this regular expression (searched anywhere
        in the name).

    Returns
    -------
    pandas.DataFrame
        One row per range, sorted by rank and start time:

        ``rank`` : int
        ``eid`` : int
            The range's event id (``trace.events(rank)``).
        ``name`` : str
            The range's name (``domain:text`` for NVTX ranges of a named domain), without
            the per-call suffix PyTorch's ``emit_nvtx`` adds (``, seq = N``, ``, op_id = N``,
            ``, sizes = [...]``, ...): every call of an operator has one name.
        ``name_suffix`` : str
            That suffix (``"seq = 3, op_id = 7"``), "" for a name without one.
        ``pid``, ``tid`` : int
            The thread the range was recorded on.
        ``depth`` : int
            Nesting depth of the range on its thread (0 at top level).
        ``ts_ns``, ``dur_ns`` : int, ns
            CPU-side start and duration of the range.
        ``launches`` : int
            CUDA calls inside the range that launched GPU work.
        ``kernels`` : int
            Kernels among that work.
        ``gpu_activities`` : int
            Kernels, memcpy and memset launched inside the range.
        ``gpu_start_ns``, ``gpu_end_ns`` : int, ns
            First start and last end of that work on the GPU; -1 without work.
        ``gpu_span_ns`` : int, ns
            ``gpu_end_ns - gpu_start_ns``; 0 without work.
        ``gpu_busy_ns`` : int, ns
            Time at least one of those activities runs (union over streams).
        ``gpu_time_ns`` : int, ns
            Sum of the activities' durations (exceeds ``gpu_busy_ns`` when they overlap).

    Ranks without GPU activity get no rows, with a :class:`TraceviewWarning`.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> proj = tv.nvtx_gpu_projection(trace, ranks=0)
    >>> bool((proj["gpu_busy_ns"] <= proj["gpu_span_ns"]).all())
    True
    """
    if name is not None:
        try:
            re.compile(name)
        except re.error as exc:
            raise OptionError(f"name={name!r} is not a valid regular expression: {exc}") from None
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    results = trace.map_ranks(_projection_of_rank, name)
    no_gpu = [r for r, frame in results.items() if frame is None]
    if no_gpu:
        warn_no_gpu("nvtx_gpu_projection", no_gpu)
    parts = [frame for frame in results.values() if frame is not None and len(frame)]
    if not parts:
        return empty(NVTX_GPU_PROJECTION_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    return out.astype(NVTX_GPU_PROJECTION_COLUMNS)[list(NVTX_GPU_PROJECTION_COLUMNS)]


def _projection_of_rank(trace: Trace, name: str | None) -> pd.DataFrame | None:
    """The projection of a one-rank trace; None when the rank has no GPU work at all."""
    (r,) = trace.ranks
    acts = gpu_activities(trace, r)
    acts = acts.loc[acts["gpu_class"].isin(WORK_CLASSES)]
    if acts.empty and not trace.rank_data(r).events["kind"].isin(_WORK_KINDS).any():
        return None
    return _rank_projection(trace, r, acts, re.compile(name) if name is not None else None)


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For blocks [lo[i], hi[i]): (i, position) for every position of every block."""
    counts = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(len(lo)), counts)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(counts) else np.empty(0, dtype=np.int64)
    pos = np.arange(int(counts.sum())) + np.repeat(lo - offsets, counts)
    return owner, pos.astype(np.int64)


def _rank_projection(trace: Trace, rank: int, acts: pd.DataFrame, pattern: re.Pattern[str] | None) -> pd.DataFrame:
    ev = trace.rank_data(rank).events
    ann = ev.loc[ev["kind"] == EventKind.USER_ANNOTATION.value]
    if pattern is not None and len(ann):
        names = ann["name"].cat.categories
        wanted = [c for c in names if pattern.search(str(c))]
        ann = ann.loc[ann["name"].isin(wanted)]
    n = len(ann)
    r_ts = ann["ts_ns"].to_numpy(np.int64)
    r_end = r_ts + ann["dur_ns"].to_numpy(np.int64)

    # Launch calls that launched work (and are in the trace), and their work.
    acts = acts.loc[acts["launch_eid"] >= 0]
    eid_pos = pd.Index(ev["eid"].to_numpy())
    call_rows = eid_pos.get_indexer(acts["launch_eid"].to_numpy())
    acts = acts.loc[call_rows >= 0]
    call_rows = call_rows[call_rows >= 0]
    calls_all = ev.iloc[np.unique(call_rows)]
    calls = calls_all.loc[calls_all["kind"].isin(_LAUNCH)]
    c_eid = calls["eid"].to_numpy(np.int64)
    c_ts = calls["ts_ns"].to_numpy(np.int64)
    c_end = c_ts + calls["dur_ns"].to_numpy(np.int64)

    # Ranges x calls on the same thread, nested in time.
    r_lane = pd.MultiIndex.from_arrays([ann["pid"].to_numpy(), ann["tid"].to_numpy()])
    c_lane = pd.MultiIndex.from_arrays([calls["pid"].to_numpy(), calls["tid"].to_numpy()])
    lanes = r_lane.append(c_lane).unique()
    r_code = lanes.get_indexer(r_lane)
    c_code = lanes.get_indexer(c_lane)
    c_order = np.lexsort((c_ts, c_code))  # calls by lane, then start
    c_code_s, c_ts_s = c_code[c_order], c_ts[c_order]
    lane_lo = np.searchsorted(c_code_s, r_code, side="left")
    lane_hi = np.searchsorted(c_code_s, r_code, side="right")
    lo = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.int64)
    for lane in np.unique(r_code).tolist():
        sel = np.flatnonzero(r_code == lane)
        a, b = int(lane_lo[sel[0]]), int(lane_hi[sel[0]])
        lo[sel] = a + np.searchsorted(c_ts_s[a:b], r_ts[sel], side="left")
        hi[sel] = a + np.searchsorted(c_ts_s[a:b], r_end[sel], side="left")
    pair_range, pair_pos = _expand(lo, hi)
    pair_call = c_order[pair_pos]
    nested = c_end[pair_call] <= r_end[pair_range]
    pair_range, pair_call = pair_range[nested], pair_call[nested]
    launches = np.bincount(pair_range, minlength=n)

    # Calls x their activities.
    a_call = pd.Index(c_eid).get_indexer(acts["launch_eid"].to_numpy())
    keep = a_call >= 0
    a_call = a_call[keep]
    a_ts = acts["ts_ns"].to_numpy(np.int64)[keep]
    a_end = acts["end_ns"].to_numpy(np.int64)[keep]
    a_kernel = (acts["kind"].to_numpy()[keep] == EventKind.KERNEL.value).astype(np.int64)
    a_order = np.argsort(a_call, kind="stable")
    a_call_s = a_call[a_order]
    act_lo = np.searchsorted(a_call_s, pair_call, side="left")
    act_hi = np.searchsorted(a_call_s, pair_call, side="right")
    owner, pos = _expand(act_lo, act_hi)
    rng = pair_range[owner]
    act = a_order[pos]

    count = np.bincount(rng, minlength=n)
    kernels = np.bincount(rng, weights=a_kernel[act], minlength=n).astype(np.int64)
    start = np.full(n, -1, dtype=np.int64)
    end = np.full(n, -1, dtype=np.int64)
    time = np.zeros(n, dtype=np.int64)
    busy = np.zeros(n, dtype=np.int64)
    if len(rng):
        s, e = a_ts[act], a_end[act]
        g = pd.DataFrame({"r": rng, "s": s, "e": e, "d": e - s})
        agg = g.groupby("r").agg(s=("s", "min"), e=("e", "max"), d=("d", "sum"))
        idx = agg.index.to_numpy()
        start[idx] = agg["s"].to_numpy()
        end[idx] = agg["e"].to_numpy()
        time[idx] = agg["d"].to_numpy()
        busy[idx] = _union_lengths(rng, s, e, n)[idx]

    codes = ann["name"].cat.codes.to_numpy()
    cat_base, cat_suffix = split_range_names(ann["name"].cat.categories)
    base = cat_base[codes] if len(codes) else np.empty(0, dtype=object)
    suffix = cat_suffix[codes] if len(codes) else np.empty(0, dtype=object)
    return pd.DataFrame(
        {
            "rank": np.full(n, rank, dtype=np.int64),
            "eid": ann["eid"].to_numpy(np.int64),
            "name": base,
            "name_suffix": suffix,
            "pid": ann["pid"].to_numpy(np.int64),
            "tid": ann["tid"].to_numpy(np.int64),
            "depth": ann["depth"].to_numpy(np.int64),
            "ts_ns": r_ts,
            "dur_ns": ann["dur_ns"].to_numpy(np.int64),
            "launches": launches.astype(np.int64),
            "kernels": kernels,
            "gpu_activities": count.astype(np.int64),
            "gpu_start_ns": start,
            "gpu_end_ns": end,
            "gpu_span_ns": np.where(start >= 0, end - start, 0),
            "gpu_busy_ns": busy,
            "gpu_time_ns": time,
        }
    )


def _union_lengths(group: np.ndarray, s: np.ndarray, e: np.ndarray, n: int) -> np.ndarray:
    """Length of the union of the intervals of each group (groups 0..n-1), vectorised.

    Intervals are sorted by (group, start); within a group a new merged interval starts
    where the start is beyond every earlier end (as ``intervals.union`` merges them).
    """
    order = np.lexsort((s, group))
    g, s, e = group[order], s[order], e[order]
    run = pd.Series(e).groupby(g).cummax().to_numpy()
    first = np.ones(len(g), dtype=bool)
    first[1:] = g[1:] != g[:-1]
    prev = np.concatenate(([0], run[:-1]))
    new = first | (s > prev)
    seg_start = s[new]
    seg_end = np.maximum.reduceat(e, np.flatnonzero(new)) if len(e) else e
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, g[new], seg_end - seg_start)
    return out
