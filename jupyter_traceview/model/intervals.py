"""Interval algebra on int64 nanosecond intervals, vectorised with numpy.

Intervals are half-open ``[start, end)``, given as two arrays. A *union* (the output of
:func:`union`) is sorted, disjoint and has no two intervals that touch: intervals that
overlap or touch (``end == next start``) are merged, as HTA merges kernel intervals.
Zero-length intervals contribute no time but are kept by :func:`union` if isolated.

:func:`union`, :func:`at_least_two`, :func:`coverage_of` and :func:`subtract` run their
loops in C when the compiled module ``_sweep`` (``_sweep.c``, built by ``pip install``) is
there: one pass each instead of several numpy passes, the same results (the numpy code
below is the fallback, and the tests compare both). ``TRACEVIEW_NATIVE=0`` turns it off.
The module also holds single passes that analyses call through :data:`native` (thread
states, iterations, operator calls, kernel occupancy), each with its numpy fallback.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import sweep_build

__all__ = [
    "at_least",
    "at_least_two",
    "binned_coverage",
    "clip",
    "coverage_of",
    "intersect",
    "length",
    "overlap_length",
    "segments",
    "step_function",
    "subtract",
    "union",
]

Intervals = tuple[np.ndarray, np.ndarray]


#: The compiled loops (``_sweep``, found by :mod:`.sweep_build`), or None: not built, of
#: another version, or turned off by ``TRACEVIEW_NATIVE=0`` (the numpy code then runs; tests
#: set it to None to compare).
native: Any = sweep_build.SWEEP


def _as_i64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.int64)


def _c64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def _first(a: np.ndarray, k: int) -> np.ndarray:
    """``a[:k]`` as an array of its own (shrunk in place: ``a`` is a fresh buffer of the caller)."""
    a.resize(k, refcheck=False)
    return a


def _native_pair(fn: Any, s: np.ndarray, e: np.ndarray) -> Intervals:
    """``fn(s, e, out_s, out_e)`` of the compiled module, the inputs put in start order
    (stable, as the numpy code) if they were not."""
    s, e = _c64(s), _c64(e)
    out_s, out_e = np.empty(len(s), dtype=np.int64), np.empty(len(s), dtype=np.int64)
    k = fn(s, e, out_s, out_e)
    if k < 0:  # not in start order
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
        k = fn(s, e, out_s, out_e)
    return _first(out_s, k), _first(out_e, k)


def union(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """Merge intervals into a sorted, disjoint set (overlapping or touching ones merge)."""
    s, e = _as_i64(starts), _as_i64(ends)
    if len(s) == 0:
        return s.copy(), e.copy()
    if native is not None and len(e) == len(s):
        return _native_pair(native.union_sorted, s, e)
    if not bool((s[1:] >= s[:-1]).all()):  # most inputs come in start order: no sort, no copies
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    # A new group starts where the start is beyond every earlier end.
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    last = np.concatenate((first[1:] - 1, [len(s) - 1]))
    return s[first], run_end[last]


def length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length of a union (or of any disjoint intervals), ns."""
    return int(np.sum(_as_i64(ends) - _as_i64(starts)))


def overlap_length(a: Intervals, b: Intervals) -> int:
    """Total time of two unions' intersection, ns: ``length(*intersect(a, b))`` without
    building it (the time of ``a`` inside each interval of ``b``, summed). Cheap when ``b``
    has few intervals (a rank's iterations)."""
    return int(coverage_of(a, b[0], b[1]).sum())


def segments(*sets: Intervals) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut time into elementary segments labelled by which sets cover them.

    Each argument is a union (disjoint, sorted). Returns ``(starts, ends, mask)`` of the
    segments covered by at least one set, where bit ``i`` of ``mask`` is set when set ``i``
    covers the segment. Segments are sorted and do not overlap. At most 62 sets.
    """
    if len(sets) > 62:
        raise ValueError(f"segments() takes at most 62 sets, got {len(sets)}")
    pos_parts, delta_parts = [], []
    for i, (s, e) in enumerate(sets):
        bit = np.int64(1) << np.int64(i)
        pos_parts += [_as_i64(s), _as_i64(e)]
        delta_parts += [np.full(len(s), bit, dtype=np.int64), np.full(len(e), -bit, dtype=np.int64)]
    if not pos_parts:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy(), empty.copy()
    pos = np.concatenate(pos_parts)
    delta = np.concatenate(delta_parts)
    if len(pos) == 0:
        return pos, pos.copy(), pos.copy()
    order = np.argsort(pos, kind="stable")
    pos, delta = pos[order], delta[order]
    # Within one set intervals are disjoint, so adding bits never carries: the running
    # sum is the bitmask of sets covering the time after each boundary.
    level = np.cumsum(delta)
    # Collapse boundaries at the same position: the level after the last of them counts.
    last_at_pos = np.concatenate((pos[1:] != pos[:-1], [True]))
    pos, level = pos[last_at_pos], level[last_at_pos]
    starts, ends, mask = pos[:-1], pos[1:], level[:-1]
    keep = (mask != 0) & (ends > starts)
    return starts[keep], ends[keep], mask[keep]


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """Intersection of two unions, as a union."""
    s, e, m = segments(a, b)
    keep = m == 3
    return union(s[keep], e[keep])


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """Parts of union ``a`` not covered by union ``b``, as a union."""
    if native is not None and len(a[0]) == len(a[1]) and len(b[0]) == len(b[1]):
        # One merge of the two (intervals of positive length, not touching: other unions below).
        sa, ea, sb, eb = _c64(a[0]), _c64(a[1]), _c64(b[0]), _c64(b[1])
        out_s = np.empty(len(sa) + len(sb), dtype=np.int64)
        out_e = np.empty(len(sa) + len(sb), dtype=np.int64)
        k = native.subtract(sa, ea, sb, eb, out_s, out_e)
        if k >= 0:
            return _first(out_s, k), _first(out_e, k)
    s, e, m = segments(a, b)
    keep = m == 1
    return union(s[keep], e[keep])


def clip(starts: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> Intervals:
    """Intervals cut to ``[lo, hi)``; those entirely outside are dropped."""
    s = np.maximum(_as_i64(starts), lo)
    e = np.minimum(_as_i64(ends), hi)
    keep = e > s
    return s[keep], e[keep]


def binned_coverage(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Covered time (ns) of a union within each bin ``[edges[k], edges[k+1])``.

    ``edges`` must be sorted. Exact: the covered time up to each edge is computed from
    prefix sums of interval lengths, so the cost is O((intervals + bins) log intervals).
    """
    s, e = _as_i64(starts), _as_i64(ends)
    edges = _as_i64(edges)
    if len(s) == 0:
        return np.zeros(max(len(edges) - 1, 0), dtype=np.int64)
    cum = np.concatenate(([0], np.cumsum(e - s)))

    def covered_until(t: np.ndarray) -> np.ndarray:
        # Intervals starting before t: all full ones plus the part of the last one.
        k = np.searchsorted(s, t, side="right")
        km1 = np.maximum(k - 1, 0)
        partial = np.where(k > 0, np.clip(t - s[km1], 0, e[km1] - s[km1]), 0)
        return np.where(k > 0, cum[km1] + partial, 0)

    upto = covered_until(edges)
    return np.diff(upto)


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


def at_least(pos: np.ndarray, level: np.ndarray, k: int) -> Intervals:
    """The union of the time where a step function (from :func:`step_function`) is >= k."""
    if len(pos) < 2:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    keep = level[:-1] >= k
    return union(pos[:-1][keep], pos[1:][keep])


def at_least_two(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """The union of the time where at least two of these intervals run:
    ``at_least(*step_function(starts, ends)[:2], 2)`` without the step function.

    In start order, interval ``i`` runs alongside an earlier one exactly over
    ``[s_i, min(e_i, max(e_j for j < i)))``, and any time covered twice is covered so by
    the later-starting of two intervals: the union of those pieces is the set (zero-length
    intervals cover nothing, as in :func:`step_function`).
    """
    s, e = _as_i64(starts), _as_i64(ends)
    if len(s) < 2:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    if native is not None and len(e) == len(s):
        return _native_pair(native.at_least_two_sorted, s, e)
    if not bool((s[1:] >= s[:-1]).all()):
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    before = np.maximum.accumulate(e)[:-1]  # the latest end among the earlier intervals
    s, e = s[1:], np.minimum(e[1:], before)
    keep = e > s
    return union(s[keep], e[keep])


def coverage_of(union: Intervals, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Time (ns) of each interval ``[starts[i], ends[i])`` covered by ``union``.

    ``union`` is sorted and disjoint (from :func:`intervals.union`); the query intervals
    may be in any order and overlap each other. Exact, O((n + m) log m).
    """
    s, e = union
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if len(s) == 0 or len(starts) == 0:
        return np.zeros(len(starts), dtype=np.int64)
    if native is not None and s.dtype == e.dtype == np.int64 and len(s) == len(e) and len(starts) == len(ends):
        cov = np.empty(len(starts), dtype=np.int64)
        if native.coverage(_c64(s), _c64(e), _c64(starts), _c64(ends), np.empty(len(s), dtype=np.int64), cov):
            return cov  # (False: the union's starts are out of order, below answers as it always did)
    # A zero-length sentinel interval first, at or before every query: then each query t
    # has a last interval starting at or before it, and the time covered until t is the
    # length of the intervals before that one plus the part of it before t.
    lo = min(int(s[0]), int(starts.min()), int(ends.min()))
    first = np.concatenate(([lo], s))
    length = np.concatenate(([0], e - s))
    before = np.concatenate(([0], np.cumsum(length)[:-1]))

    def upto(t: np.ndarray) -> np.ndarray:
        # In place where it can: a query array's worth of temporaries fewer (this runs on
        # every GPU activity of a rank, several times per analysis).
        k = np.searchsorted(first, t, side="right")
        k -= 1
        out: np.ndarray = t - first[k]
        np.minimum(out, length[k], out=out)
        out += before[k]
        return out

    out = upto(ends)
    out -= upto(starts)
    return out
