"""Fast per-rank GPU activity arrays and step functions for the time-resolved analyses.

The analyses of ``timeseries``, ``concurrency``, ``efficiency`` and ``nccl`` loop over
ranks and need, per rank, the start, end and class of every GPU activity as plain numpy
arrays. Building them from the columns directly (categorical codes, no DataFrame copy)
keeps a rank of a million events in the low milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import intervals as iv
from ..schema import GPU_ACTIVITY_KINDS, GPU_CLASS_CATEGORIES, GpuClass
from ..trace import Trace

__all__ = [
    "COMM",
    "COMPUTE",
    "MEMORY",
    "OTHER",
    "Activities",
    "activities",
    "at_least",
    "coverage_of",
    "step_function",
]

COMPUTE = GPU_CLASS_CATEGORIES.index(GpuClass.COMPUTE.value)
COMM = GPU_CLASS_CATEGORIES.index(GpuClass.COMMUNICATION.value)
MEMORY = GPU_CLASS_CATEGORIES.index(GpuClass.MEMORY.value)
OTHER = GPU_CLASS_CATEGORIES.index(GpuClass.OTHER.value)
_ACTIVITY_KINDS = [k.value for k in GPU_ACTIVITY_KINDS]


@dataclass(frozen=True)
class Activities:
    """GPU activities of one rank, in start order, clipped to the trace's window.

    ``rows`` are positions in ``trace.rank_data(rank).events`` (gather any other column
    with ``column.to_numpy()[rows]``).
    """

    rank: int
    start: np.ndarray
    end: np.ndarray
    cls: np.ndarray
    rows: np.ndarray

    def __len__(self) -> int:
        return len(self.start)

    def of(self, *classes: int) -> tuple[np.ndarray, np.ndarray]:
        """Starts and ends of the activities of these classes."""
        if len(classes) == 1:
            keep = self.cls == classes[0]
        else:
            keep = np.isin(self.cls, classes)
        return self.start[keep], self.end[keep]

    def union(self, *classes: int) -> iv.Intervals:
        """Union of the activities of these classes (all work classes when none given)."""
        if not classes:
            return iv.union(self.start, self.end)
        return iv.union(*self.of(*classes))

    def column(self, events: pd.DataFrame, name: str) -> np.ndarray:
        """Values of an events column for these activities."""
        return events[name].to_numpy()[self.rows]


def _class_codes(col: pd.Series) -> np.ndarray:
    """gpu_class as codes into GPU_CLASS_CATEGORIES (-1 for NaN), whatever the column's categories."""
    codes = col.cat.codes.to_numpy()
    cats = list(col.cat.categories)
    if cats == list(GPU_CLASS_CATEGORIES):
        return codes
    lut = np.array([GPU_CLASS_CATEGORIES.index(c) if c in GPU_CLASS_CATEGORIES else -1 for c in cats] + [-1])
    return lut[codes]


def activities(trace: Trace, rank: int, *, work_only: bool = True) -> Activities:
    """GPU activities of ``rank``: work (compute, communication, memory) or all of them.

    Clipped to ``trace.window`` like :func:`._common.gpu_activities`: activities with no
    time inside the window are dropped (zero-length ones are kept when they start inside).
    """
    ev = trace.rank_data(rank).events
    cls = _class_codes(ev["gpu_class"])
    if work_only:
        mask = (cls >= 0) & (cls != OTHER)
    else:
        mask = ev["kind"].isin(_ACTIVITY_KINDS).to_numpy()
    rows = np.flatnonzero(mask)
    start = ev["ts_ns"].to_numpy()[rows]
    dur = ev["dur_ns"].to_numpy()[rows]
    end = start + dur
    if trace.window is not None:
        lo, hi = trace.window
        start = np.maximum(start, lo)
        end = np.minimum(end, hi)
        keep = (end > start) | ((dur == 0) & (start >= lo) & (start < hi))
        if not keep.all():
            rows, start, end = rows[keep], start[keep], end[keep]
    return Activities(rank=rank, start=start, end=end, cls=cls[rows].astype(np.int8), rows=rows)


def step_function(
    starts: np.ndarray, ends: np.ndarray, *weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """How many intervals are in flight over time.

    Returns ``(pos, level, weighted)``: ``pos`` the sorted distinct boundaries, ``level[i]``
    the number of intervals covering ``[pos[i], pos[i+1])`` (0 after the last boundary),
    and for each ``weights`` array the sum of the weights of the covering intervals.
    Zero-length intervals cover nothing.
    """
    n = len(starts)
    if n == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy(), [empty.copy() for _ in weights]
    pos = np.concatenate((starts, ends))
    # Starts are usually sorted already and ends nearly so: the stable sort (timsort)
    # then costs about a merge.
    order = np.argsort(pos, kind="stable")
    pos = pos[order]
    delta = np.ones(2 * n, dtype=np.int64)
    delta[n:] = -1
    level = np.cumsum(delta[order])
    # The last of each run of equal positions holds the level after all of them.
    last = np.flatnonzero(pos[1:] != pos[:-1])
    last = np.append(last, 2 * n - 1)
    weighted = []
    for w in weights:
        w = np.asarray(w, dtype=np.int64)
        weighted.append(np.cumsum(np.concatenate((w, -w))[order])[last])
    return pos[last], level[last], weighted


def at_least(pos: np.ndarray, level: np.ndarray, k: int) -> iv.Intervals:
    """The union of the time where a step function (from :func:`step_function`) is >= k."""
    if len(pos) < 2:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    keep = level[:-1] >= k
    return iv.union(pos[:-1][keep], pos[1:][keep])


def coverage_of(union: iv.Intervals, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Time (ns) of each interval ``[starts[i], ends[i])`` covered by ``union``.

    ``union`` is sorted and disjoint (from :func:`intervals.union`); the query intervals
    may be in any order and overlap each other. Exact, O((n + m) log m).
    """
    s, e = union
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if len(s) == 0 or len(starts) == 0:
        return np.zeros(len(starts), dtype=np.int64)
    # A zero-length sentinel interval first, at or before every query: then each query t
    # has a last interval starting at or before it, and the time covered until t is the
    # length of the intervals before that one plus the part of it before t.
    lo = min(int(s[0]), int(starts.min()), int(ends.min()))
    first = np.concatenate(([lo], s))
    length = np.concatenate(([0], e - s))
    before = np.concatenate(([0], np.cumsum(length)[:-1]))

    def upto(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(first, t, side="right") - 1
        return before[k] + np.minimum(t - first[k], length[k])

    return upto(ends) - upto(starts)
