"""Derived columns, computed once per rank at load: launch links, nesting, iterations.

Every function here is vectorised (numpy) and works on a rank's columns sorted by
``(ts_ns, -dur_ns)``, where an event's eid equals its row position.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import build

__all__ = ["ONE_PASS_ROWS", "in_codes", "launch_links", "nesting", "start_order", "steps"]

#: The compiled scanner module, whose ``nest`` walks the lanes in C (None: numpy only).
_kscan: Any = build.SCANNER


def in_codes(values: np.ndarray, codes: object) -> np.ndarray:
    """``np.isin(values, codes)`` for integer codes (kinds, names), by a lookup table.

    The same booleans; np.isin costs ~20-40 us a call whatever the sizes, about ten times a
    table's, and a small rank's reading makes a few dozen such calls.
    """
    wanted = np.asarray(codes, dtype=np.int64).ravel()
    if len(values) == 0 or len(wanted) == 0:
        return np.zeros(len(values), dtype=bool)
    if values.dtype.kind not in "iu":
        return np.isin(values, wanted)
    lo, hi = int(values.min()), int(values.max())
    if lo < 0 or hi >= 1 << 20:
        return np.isin(values, wanted)
    lut = np.zeros(hi + 1, dtype=bool)
    lut[wanted[(wanted >= 0) & (wanted <= hi)]] = True
    out: np.ndarray = lut[values]
    return out


def start_order(ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The row order by start, longer first at equal starts (parents before children), stably.

    What ``np.lexsort((-dur, ts))`` gives, about 10x faster: one stable sort by start (a
    trace is nearly in start order already), then only the rows that share a start with
    another row are sorted again by ``(start, -dur)``.
    """
    order = np.argsort(ts, kind="stable")
    start = ts[order]
    tie = np.flatnonzero(start[1:] == start[:-1])
    if len(tie) == 0:
        return order
    group = np.concatenate(([0], np.cumsum(start[1:] != start[:-1])))
    in_tie = np.zeros(len(start), dtype=bool)
    in_tie[tie] = True
    in_tie[tie + 1] = True
    at = np.flatnonzero(in_tie)
    tied = order[at]
    order[at] = tied[np.lexsort((-dur[tied], group[at]))]
    return order


def launch_links(correlation: np.ndarray, is_launch: np.ndarray, is_activity: np.ndarray) -> np.ndarray:
    """For each GPU activity, the row of the launch call with the same correlation id (-1 if none).

    Several activities may share one launch (CUDA graphs); if several launch calls carry the
    same id, the first one is used.
    """
    out = np.full(len(correlation), -1, dtype=np.int64)
    launches = np.flatnonzero(is_launch & (correlation >= 0))
    activities = np.flatnonzero(is_activity & (correlation >= 0))
    if len(launches) == 0 or len(activities) == 0:
        return out
    keys = correlation[launches]
    order = np.argsort(keys, kind="stable")
    keys, launches = keys[order], launches[order]
    wanted = correlation[activities]
    pos = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    hit = keys[pos] == wanted
    out[activities[hit]] = launches[pos[hit]]
    return out


def _lane_nesting(start: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth and parent (local positions) of intervals on one lane, sorted by (start, -dur).

    The depth of an interval is the number of earlier intervals still open at its start
    (an interval [s, e) is open at t when s <= t < e); its parent is the latest earlier
    interval one level up. For properly nested intervals this is the call stack.
    """
    m = len(start)
    idx = np.arange(m)
    closed = np.searchsorted(np.sort(start + dur), start, side="right")
    # Zero-length intervals at the same start, at or after position i, count as closed
    # above but do not precede i: take them back out. (Each temporary is dropped as soon
    # as it is used: a lane can hold most of a rank's events.)
    zero = np.concatenate(([0], np.cumsum(dur == 0)))
    closed -= zero[np.searchsorted(start, start, side="right")]
    closed += zero[:m]
    del zero
    depth = idx - closed
    del closed
    parent = np.full(m, -1, dtype=np.int64)
    if m and depth.max() > 0:
        by_level = np.lexsort((idx, depth))
        levels = depth[by_level]
        bounds = np.searchsorted(levels, np.arange(levels[-1] + 2))
        for d in range(1, int(levels[-1]) + 1):
            above = by_level[bounds[d - 1] : bounds[d]]
            here = by_level[bounds[d] : bounds[d + 1]]
            k = np.searchsorted(above, here) - 1
            ok = k >= 0
            parent[here[ok]] = above[k[ok]]
    return depth, parent


#: Ranks of up to this many events have every lane's nesting computed in one pass (a small
#: rank's fixed cost); a bigger rank's lanes are walked one by one (its peak memory).
ONE_PASS_ROWS = 1 << 16


def _all_lanes(start: np.ndarray, dur: np.ndarray, change: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_lane_nesting` of every lane at once (rows grouped by lane, lanes starting at
    ``change``, each in time order), or None where the shifted times could overflow.

    Lane k's times are shifted by k * width, so that lanes follow one another in time and
    never overlap: an event's depth and parent come out as within its lane alone (earlier
    lanes count both as earlier and as closed, and an event of depth d has an earlier event
    of depth d - 1 in its own lane, which is the latest of that depth before it).
    """
    lo = int(start.min())
    width = int((start + dur).max()) - lo + 1  # longer than any lane's span
    if width <= 0 or (len(change) + 1) * width >= 1 << 62:
        return None
    lane = np.zeros(len(start), dtype=np.int64)
    lane[change] = 1
    return _lane_nesting((start - lo) + np.cumsum(lane) * width, dur)


def nesting(
    ts: np.ndarray, dur: np.ndarray, lane_a: np.ndarray, lane_b: np.ndarray, lane_c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Depth and parent eid of every event within its lane (lane = (lane_c, lane_a, lane_b))."""
    n = len(ts)
    if n and _kscan is not None:  # the lanes found and walked in C: _lane_nesting's depths and parents
        depth, parent = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        _kscan.nest(
            *(np.ascontiguousarray(x, dtype=np.int64) for x in (ts, dur, lane_a, lane_b, lane_c)), depth, parent
        )
        return np.minimum(depth, np.iinfo(np.int16).max).astype(np.int16), parent
    depth = np.zeros(n, dtype=np.int64)
    parent = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return depth.astype(np.int16), parent
    order = np.lexsort((lane_b, lane_a, lane_c.astype(np.int64)))  # stable: time order kept per lane
    ka, kb, kc = lane_a[order], lane_b[order], lane_c[order]
    change = np.flatnonzero((ka[1:] != ka[:-1]) | (kb[1:] != kb[:-1]) | (kc[1:] != kc[:-1])) + 1
    del ka, kb, kc  # (peak memory: the lanes are walked from here)
    one_pass = _all_lanes(ts[order], dur[order], change) if len(change) and n <= ONE_PASS_ROWS else None
    if one_pass is not None:
        d, p = one_pass
        depth[order] = d
        has = p >= 0
        parent[order[has]] = order[p[has]]
        return np.minimum(depth, np.iinfo(np.int16).max).astype(np.int16), parent
    bounds = np.concatenate(([0], change, [n]))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        rows = order[lo:hi]
        d, p = _lane_nesting(ts[rows], dur[rows])
        depth[rows] = d
        has = p >= 0
        parent[rows[has]] = rows[p[has]]
    return np.minimum(depth, np.iinfo(np.int16).max).astype(np.int16), parent


def steps(
    ts: np.ndarray,
    dur: np.ndarray,
    name_codes: np.ndarray,
    kind: np.ndarray,
    step_numbers: dict[int, int],
    *,
    cpu_step_kinds: np.ndarray,
    device_side: np.ndarray,
    launch_eid: np.ndarray,
) -> np.ndarray:
    """ProfilerStep number of every event (-1 if none).

    Iterations are the CPU-side ``ProfilerStep#N`` spans. A CPU event belongs to the span
    containing its start. A GPU activity belongs to the iteration of the call that launched
    it; one without a launch call, to the CPU span containing its start.
    """
    n = len(ts)
    out = np.full(n, -1, dtype=np.int32)
    if n == 0 or not step_numbers:
        return out
    codes = np.array(sorted(step_numbers), dtype=np.int64)
    rows = np.flatnonzero(in_codes(name_codes, codes) & in_codes(kind, cpu_step_kinds))
    if len(rows) == 0:
        return out
    lut = np.full(int(codes.max()) + 1, -1, dtype=np.int64)
    lut[codes] = [step_numbers[c] for c in codes.tolist()]
    numbers = lut[name_codes[rows]]
    # One span per step number (union over rows naming it), sorted by start.
    uniq = np.unique(numbers)
    starts = np.array([ts[rows[numbers == s]].min() for s in uniq], dtype=np.int64)
    ends = np.array([(ts[rows[numbers == s]] + dur[rows[numbers == s]]).max() for s in uniq], dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    starts, ends, uniq = starts[order], ends[order], uniq[order]

    k = np.searchsorted(starts, ts, side="right") - 1
    ok = k >= 0
    kk = np.where(ok, k, 0)
    inside = ok & ((ts < ends[kk]) | (ts == starts[kk]))
    by_time = np.where(inside, uniq[kk], -1)
    out[:] = by_time
    launched = device_side & (launch_eid >= 0)
    out[launched] = out[launch_eid[launched]]
    return out
