"""Containment of events in CPU ranges by sweeps: memory linear in the events, never in pairs.

A range *encloses* a point when both are on the same thread (``scope="thread"``: same pid
and tid) or process (``scope="process"``: same pid) and ``range.ts <= point.ts`` and
``point.end <= range.end`` (see docs/semantics.md, "Launch calls inside CPU ranges").
``ranges`` and ``points`` are rows of one rank's events frame, whose rows are in start
order (``ts`` never decreases with the row; a clipped copy keeps that order).

Every question the analyses ask of the enclosure is answered here without listing the
(point, range) pairs, which grow with the square of the count where ranges nest deeply
or repeat (300,000 identical operators are 9e10 pairs):

* :func:`innermost` / :func:`outermost`: per point, the enclosing range of the largest
  (smallest) row: the latest (earliest) to start, of equal starts the last (first) row.
  Innermost is one stack sweep per thread (compiled ``_loops.innermost``; in numpy, a
  sparse table of the ranges' ends searched by halving jumps); outermost, a running
  maximum of the ends searched by bisection.
* :func:`encloses_later`: per range, whether it encloses a point of a later row (a
  descendant): a range-minimum query over the points that start inside it.
* :func:`enclosed_sums`: per range, the summed weights of the points it encloses (any
  depth): a dominance sum, by a Fenwick tree (compiled ``_loops.enclosed_sums``) or, in
  numpy, by halving (CDQ divide and conquer: one sort per level).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import OptionError
from . import loops
from ._links import row_ids

__all__ = ["enclosed_sums", "encloses_later", "innermost", "outermost", "thread_ids"]


def thread_ids(ev: pd.DataFrame, rows: np.ndarray, scope: str = "thread") -> np.ndarray:
    """Dense ids of the threads (``scope="thread"``) or processes of ``rows``."""
    pid = ev["pid"].to_numpy()[rows]
    if scope == "thread":
        return row_ids(np.column_stack((pid, ev["tid"].to_numpy()[rows])))[0]
    if scope == "process":
        return row_ids(pid[:, None])[0]
    raise OptionError.invalid("scope", scope, ("thread", "process"))


def _entries(
    ev: pd.DataFrame, ranges: np.ndarray, points: np.ndarray, scope: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ranges then valid points as one list of entries: (thread, ts, end, row, is_point, valid)."""
    ranges = np.asarray(ranges, dtype=np.int64)
    points = np.asarray(points, dtype=np.int64)
    valid = np.flatnonzero(points >= 0)
    both = np.concatenate((ranges, points[valid]))
    ts = ev["ts_ns"].to_numpy().astype(np.int64, copy=False)[both]
    end = ts + ev["dur_ns"].to_numpy().astype(np.int64, copy=False)[both]
    thread = thread_ids(ev, both, scope) if len(both) else np.empty(0, dtype=np.int64)
    is_point = np.arange(len(both)) >= len(ranges)
    return thread, ts, end, both, is_point, valid


def innermost(ev: pd.DataFrame, ranges: np.ndarray, points: np.ndarray, *, scope: str = "thread") -> np.ndarray:
    """Per point, the row of its innermost enclosing range (-1 if none, or for a point -1).

    Of the enclosing ranges, the one of the largest row: the latest to start, of equal
    starts the last row (a point that is itself one of ``ranges`` encloses itself)."""
    points = np.asarray(points, dtype=np.int64)
    out = np.full(len(points), -1, dtype=np.int64)
    if not len(ranges) or not (points >= 0).any():
        return out
    thread, ts, end, both, is_point, valid = _entries(ev, ranges, points, scope)
    # Visit by (thread, start, ranges before points, row): the last enclosing range visited
    # before a point is the one of the largest row (rows are in start order).
    order = np.lexsort((both, is_point, ts, thread)).astype(np.int64)
    at = last_enclosing(thread, end, is_point, order)
    p = at[len(ranges) :]
    out[valid] = np.where(p >= 0, both[np.maximum(p, 0)], -1)
    return out


def outermost(ev: pd.DataFrame, ranges: np.ndarray, points: np.ndarray, *, scope: str = "thread") -> np.ndarray:
    """Per point, the row of its outermost enclosing range (-1 if none, or for a point -1).

    Of the enclosing ranges, the one of the smallest row: the earliest to start, of equal
    starts the first row. Per thread, the ranges by (start, row) and the running maximum of
    their ends: a point's outermost range is the first whose running maximum reaches its
    end, among those starting by its start (one sorted search)."""
    points = np.asarray(points, dtype=np.int64)
    out = np.full(len(points), -1, dtype=np.int64)
    if not len(ranges) or not (points >= 0).any():
        return out
    thread, ts, end, both, _, valid = _entries(ev, ranges, points, scope)
    nr = len(ranges)
    r_order = np.lexsort((both[:nr], ts[:nr], thread[:nr]))
    r_thr, r_ts, r_end, r_row = thread[:nr][r_order], ts[:nr][r_order], end[:nr][r_order], both[:nr][r_order]
    run = pd.Series(r_end).groupby(r_thr, sort=False).cummax().to_numpy()
    p_thr, p_ts, p_end = thread[nr:], ts[nr:], end[nr:]
    # Of the thread's ranges starting by the point's start, [.., k), the first whose running
    # maximum reaches the point's end: j, by a search of (thread, running maximum).
    k = _search_rows(np.column_stack((r_thr, r_ts)), np.column_stack((p_thr, p_ts)), "right")
    a = _search_rows(np.column_stack((r_thr, run)), np.column_stack((p_thr, p_end)), "left")
    found = a < k
    out[valid] = np.where(found, r_row[np.minimum(a, max(nr - 1, 0))], -1)
    return out


def last_enclosing(thread: np.ndarray, end: np.ndarray, is_point: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Per entry, the entry of the last range visited before it in ``order`` (thread by
    thread) whose end is at least its end, or -1: ``_loops.innermost`` (a stack sweep), or
    in numpy the same answer by a sparse table of the ranges' ends."""
    n = len(thread)
    out = np.empty(n, dtype=np.int64)
    if loops.native is not None:
        loops.native.innermost(
            np.ascontiguousarray(thread, dtype=np.int64),
            np.ascontiguousarray(end, dtype=np.int64),
            np.ascontiguousarray(is_point, dtype=bool),
            np.ascontiguousarray(order, dtype=np.int64),
            out,
        )
        return out
    s_thr, s_end = thread[order], end[order]
    s_range = ~np.asarray(is_point, dtype=bool)[order]
    r_at = np.flatnonzero(s_range)  # sequence positions of the ranges
    ends = s_end[r_at]
    before = np.cumsum(s_range) - s_range  # ranges visited before each entry
    new_thread = np.concatenate(([True], s_thr[1:] != s_thr[:-1])) if n else np.zeros(0, dtype=bool)
    first_at = np.maximum.accumulate(np.where(new_thread, np.arange(n), 0)) if n else np.zeros(0, dtype=np.int64)
    start = before[first_at]  # the thread's first range, among the ranges
    pos = before.copy()
    table = [ends]
    while len(table[-1]) > 1 and (1 << len(table)) <= len(ends):
        prev, w = table[-1], 1 << (len(table) - 1)
        table.append(np.maximum(prev[:-w], prev[w:]))
    for lvl in range(len(table) - 1, -1, -1):  # skip 2**lvl ranges ending before the entry's end
        cand = pos - (1 << lvl)
        ok = cand >= start
        t = table[lvl]
        ok &= cand < len(t)
        idx = np.where(ok, cand, 0)
        ok &= t[idx] < s_end if len(t) else ok
        pos = np.where(ok, cand, pos)
    j = pos - 1
    res = np.where(j >= start, order[r_at[np.maximum(j, 0)]] if len(r_at) else -1, -1)
    out[order] = res
    return out


def encloses_later(ev: pd.DataFrame, ranges: np.ndarray, points: np.ndarray, *, scope: str = "thread") -> np.ndarray:
    """Per range, whether it encloses a point of a larger row (a descendant; of equal
    ranges the later one is the earlier one's). The points starting inside a range and
    after it are a run of the points by (thread, start, row); one of them ends inside the
    range exactly when the run's smallest end does (a range-minimum query, sparse table)."""
    ranges = np.asarray(ranges, dtype=np.int64)
    points = np.asarray(points, dtype=np.int64)
    points = points[points >= 0]
    out = np.zeros(len(ranges), dtype=bool)
    if not len(ranges) or not len(points):
        return out
    thread, ts, end, both, _, _ = _entries(ev, ranges, points, scope)
    nr = len(ranges)
    p_order = np.lexsort((both[nr:], ts[nr:], thread[nr:]))
    p_thr, p_ts, p_end, p_row = thread[nr:][p_order], ts[nr:][p_order], end[nr:][p_order], both[nr:][p_order]
    r_thr, r_ts, r_end, r_row = thread[:nr], ts[:nr], end[:nr], both[:nr]
    # Points of the range's thread after it by (ts, row), starting by its end: [a, b).
    key_p = np.column_stack((p_thr, p_ts, p_row))
    a = _search_rows(key_p, np.column_stack((r_thr, r_ts, r_row)), "right")
    b = _search_rows(key_p[:, :2], np.column_stack((r_thr, r_end)), "right")
    has = a < b
    if has.any():
        out[has] = _range_min(p_end, a[has], b[has]) <= r_end[has]
    return out


def _search_rows(sorted_keys: np.ndarray, queries: np.ndarray, side: str) -> np.ndarray:
    """``np.searchsorted`` of integer rows (lexicographic order) into lexsorted rows."""
    both = np.concatenate((sorted_keys, queries))
    lo = both.min(axis=0) if len(both) else np.zeros(both.shape[1], dtype=np.int64)
    span = (both.max(axis=0) - lo + 1) if len(both) else np.ones(both.shape[1], dtype=np.int64)
    if all(int(x) < 2**62 for x in span) and float(np.prod(span.astype(np.float64))) < 2.0**62:
        packed = np.zeros(len(both), dtype=np.int64)  # mixed radix: the order of the rows
        for j in range(both.shape[1]):
            packed = packed * int(span[j]) + (both[:, j] - lo[j])
    else:  # too wide to pack: dense ranks in lexicographic order
        order = np.lexsort(both.T[::-1])
        srt = both[order]
        new = np.concatenate(([True], (srt[1:] != srt[:-1]).any(axis=1))) if len(srt) else np.zeros(0, bool)
        packed = np.empty(len(both), dtype=np.int64)
        packed[order] = np.cumsum(new) - 1
    n = len(sorted_keys)
    out: np.ndarray = np.searchsorted(packed[:n], packed[n:], side=side)  # type: ignore[call-overload]
    return out


def _range_min(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``values[lo:hi].min()`` for each non-empty window, by a sparse table (O(n log n))."""
    table = [values]
    length = hi - lo
    top = int(length.max()).bit_length() - 1
    for lvl in range(1, top + 1):
        prev, w = table[-1], 1 << (lvl - 1)
        table.append(np.minimum(prev[:-w], prev[w:]))
    lvl_of = np.floor(np.log2(length)).astype(np.int64)
    lvl_of = np.where((1 << (lvl_of + 1)) <= length, lvl_of + 1, lvl_of)  # guard float rounding
    lvl_of = np.where((1 << lvl_of) > length, lvl_of - 1, lvl_of)
    out = np.empty(len(lo), dtype=values.dtype)
    for lvl in np.unique(lvl_of).tolist():
        sel = np.flatnonzero(lvl_of == lvl)
        t = table[lvl]
        out[sel] = np.minimum(t[lo[sel]], t[hi[sel] - (1 << lvl)])
    return out


def enclosed_sums(
    ev: pd.DataFrame, ranges: np.ndarray, points: np.ndarray, weights: np.ndarray, *, scope: str = "thread"
) -> np.ndarray:
    """Per range, the sum of ``weights`` (int64, one per point) of the points it encloses
    (any depth; points of -1 count nowhere). A dominance sum by one sweep per thread."""
    points = np.asarray(points, dtype=np.int64)
    out = np.zeros(len(ranges), dtype=np.int64)
    if not len(ranges) or not (points >= 0).any():
        return out
    thread, ts, end, both, is_point, valid = _entries(ev, ranges, points, scope)
    nr = len(ranges)
    w = np.zeros(len(both), dtype=np.int64)
    w[nr:] = np.asarray(weights, dtype=np.int64)[valid]
    # The ends' dense rank within the thread (a Fenwick tree per thread over these keys).
    e_order = np.lexsort((end, thread))
    s_thr, s_end = thread[e_order], end[e_order]
    new_thr = np.concatenate(([True], s_thr[1:] != s_thr[:-1]))
    new_key = new_thr | np.concatenate(([True], s_end[1:] != s_end[:-1]))
    dense = np.cumsum(new_key) - 1
    base = np.maximum.accumulate(np.where(new_thr, dense, 0))
    key = np.empty(len(both), dtype=np.int64)
    key[e_order] = dense - base
    # Visit by (thread, start descending, points before ranges): a range's query then sees
    # exactly the points of its thread starting at or after it.
    order = np.lexsort((~is_point, -ts, thread)).astype(np.int64)
    sums = np.zeros(len(both), dtype=np.int64)
    native = getattr(loops.native, "enclosed_sums", None) if loops.native is not None else None
    if native is not None:
        c64 = np.ascontiguousarray
        native(c64(thread, dtype=np.int64), c64(key), c64(is_point, dtype=bool), c64(w), c64(order), sums)
    else:
        sums = _dominance_numpy(thread, key, is_point, w, order)
    out[:] = sums[:nr]
    return out


def _dominance_numpy(
    thread: np.ndarray, key: np.ndarray, is_point: np.ndarray, w: np.ndarray, order: np.ndarray
) -> np.ndarray:
    """What ``_loops.enclosed_sums`` computes: per range entry, the summed weights of the
    point entries visited before it in ``order`` on its thread with a key at most its key.
    Halving (CDQ): at each level, the points of each block's first half answer the ranges
    of its second half, by one sort of (block, thread, key, ranges after points)."""
    n = len(order)
    out = np.zeros(n, dtype=np.int64)
    s = np.arange(n, dtype=np.int64)
    s_thr, s_key, s_pt, s_w = thread[order], key[order], np.asarray(is_point, bool)[order], w[order]
    half = 1
    while half < n:
        block, second = s // (2 * half), (s // half) % 2 == 1
        take = np.flatnonzero((s_pt & ~second) | (~s_pt & second))
        if len(take):
            g = block[take] * (int(s_thr.max()) + 1) + s_thr[take]
            o = np.lexsort((~s_pt[take], s_key[take], g))
            t = take[o]
            gg = g[o]
            csum = np.cumsum(np.where(s_pt[t], s_w[t], 0))
            starts = np.concatenate(([True], gg[1:] != gg[:-1]))
            base = np.maximum.accumulate(np.where(starts, np.arange(len(t)), 0))
            before = csum - np.where(s_pt[t], s_w[t], 0)  # exclusive of the entry itself
            group_sum = before - (csum[base] - np.where(s_pt[t[base]], s_w[t[base]], 0))
            rng = ~s_pt[t]
            out[order[t[rng]]] += group_sum[rng]
        half *= 2
    return out
