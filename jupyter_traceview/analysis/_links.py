"""Vectorised links between a rank's events: launch calls and the CPU ranges enclosing them.

Every function works on one rank's events frame and on *row positions* in it (not eids:
a narrowed trace keeps eids but drops rows). Nothing here loops over events in Python.
Enclosure questions (innermost, outermost, sums, descendants) are answered by the sweeps of
:mod:`._enclose`, in memory linear in the events; :func:`containing_pairs` lists the pairs
themselves, for the one result made of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model.text import as_text
from ..model.trace import Trace
from ._common import scoped
from ._memo import rank_memo, read_only, sharing

__all__ = [
    "category_mask",
    "clip_to_window",
    "containing_pairs",
    "eid_rows",
    "group_sequences",
    "launch_rows",
    "lookup",
    "match_names",
    "row_ids",
    "scope_linked",
]


def scope_linked(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None,
    iterations: Iterable[int] | int | None,
    time_range: tuple[int, int] | None,
) -> tuple[Trace, tuple[int, int] | None]:
    """Scope by ranks and iterations; return ``time_range`` as a window to apply after linking.

    ``Trace.select(time_range=...)`` drops the launch calls made before the window of the
    kernels running in it; analyses that follow launch links select the activities by
    time themselves, on a trace that still holds the calls. A trace already narrowed to a
    window keeps it (intersected with ``time_range``).
    """
    t = scoped(trace, ranks=ranks, iterations=iterations)
    window = t.window
    if time_range is not None:
        lo, hi = int(time_range[0]), int(time_range[1])
        if hi <= lo:
            raise OptionError(f"time_range must be (start_ns, end_ns) with end > start, got {time_range}")
        if window is not None:
            lo, hi = max(lo, window[0]), min(hi, window[1])
        window = (lo, hi)
    return t, window


def clip_to_window(frame: pd.DataFrame, window: tuple[int, int] | None) -> pd.DataFrame:
    """Rows of ``frame`` (``ts_ns``, ``end_ns``, ``dur_ns``) cut to ``window``; rows with no
    time inside it are dropped (instants inside it are kept), as ``gpu_activities`` does."""
    if window is None:
        return frame
    lo, hi = window
    out = frame.copy()
    out["ts_ns"] = out["ts_ns"].clip(lower=lo)
    out["end_ns"] = out["end_ns"].clip(upper=hi)
    keep = (out["end_ns"] > out["ts_ns"]) | ((frame["dur_ns"] == 0) & (frame["ts_ns"] >= lo) & (frame["ts_ns"] < hi))
    out = out.loc[keep.to_numpy()]
    out["dur_ns"] = out["end_ns"] - out["ts_ns"]
    return out


def category_mask(column: pd.Series, values: Iterable[str]) -> np.ndarray:
    """Rows of a categorical column whose value is in ``values``, tested once per category."""
    cat = column.array
    cats = cat.categories
    values = list(values)
    if len(cats) <= 256:  # few categories (kinds, classes): a set test each, no Arrow kernel
        wanted = set(values)
        flags = np.fromiter((c in wanted for c in cats.tolist()), dtype=bool, count=len(cats))
    else:
        flags = np.asarray(cats.isin(values), dtype=bool)
    lut = np.append(flags, False)  # code -1 (NaN) -> False
    out: np.ndarray = lut[np.asarray(cat.codes)]
    return out


def kind_any(ev: pd.DataFrame, kinds: Iterable[str]) -> bool:
    """Whether any row's ``kind`` is one of ``kinds``: ``category_mask(ev["kind"], kinds).any()``,
    one comparison of the stored codes per kind (no table gather, no mask of the rows)."""
    cat = ev["kind"].array
    codes = np.asarray(cat.codes)
    cats = cat.categories.tolist()
    return any(bool((codes == cats.index(k)).any()) for k in set(kinds) if k in cats)


def eid_rows(ev: pd.DataFrame) -> np.ndarray:
    """Lookup table eid -> row position in ``ev`` (-1 where the eid is not in the frame).

    Computed once per rank table inside :func:`._memo.shared_rank_facts` (then read-only)."""
    if sharing():
        return rank_memo(ev, "eid_rows", lambda: read_only(_eid_rows(ev)))
    return _eid_rows(ev)


def _eid_rows(ev: pd.DataFrame) -> np.ndarray:
    eids = ev["eid"].to_numpy()
    if len(eids) == 0:
        return np.empty(0, dtype=np.int64)
    n = len(eids)
    if eids[0] == 0 and eids[-1] == n - 1:  # a rank's full table (sorted by eid): eid is the row
        return np.arange(n, dtype=np.int64)
    table = np.full(int(eids.max()) + 1, -1, dtype=np.int64)
    table[eids] = np.arange(len(eids), dtype=np.int64)
    return table


def lookup(table: np.ndarray, eids: np.ndarray) -> np.ndarray:
    """Rows of ``eids`` through an :func:`eid_rows` table (-1 for -1 or absent eids)."""
    eids = np.asarray(eids, dtype=np.int64)
    if len(table) == 0:
        return np.full(len(eids), -1, dtype=np.int64)
    bad = (eids < 0) | (eids >= len(table))
    out: np.ndarray = table[np.where(bad, 0, eids)]  # one gather, then the misses set to -1
    out[bad] = -1
    return out


def launch_rows(ev: pd.DataFrame, table: np.ndarray) -> np.ndarray:
    """Row of each event's launch call (-1 if none or not in ``ev``)."""
    return lookup(table, ev["launch_eid"].to_numpy())


def containing_pairs(
    ev: pd.DataFrame, ranges: np.ndarray, points: np.ndarray, *, scope: str = "thread"
) -> tuple[np.ndarray, np.ndarray]:
    """Every (point index, range row) pair where the range encloses the point.

    ``ranges`` and ``points`` are rows of ``ev`` (``points`` may hold -1: no pairs). A
    range encloses a point when both are on the same thread (``scope="thread"``: same pid
    and tid) or process (``scope="process"``: same pid) and ``range.ts <= point.ts`` and
    ``point.end <= range.end``: the call happened while the range was open. On one thread
    and for properly nested events these are exactly the point's ancestors through
    ``parent_eid``; unlike the parent links, the test also holds when the trace nests
    events improperly (a ``ProfilerStep`` range that starts inside a Python frame and
    outlives it, as PyTorch 2.x traces with stacks have).

    Pairs come sorted by point index, then by range row; rows are in ``(ts, -dur)``
    order, so a point's first pair is its outermost range and its last the innermost.

    Memory is proportional to the pairs returned, which grow with points x nesting depth
    and, where ranges repeat, with the square of the count (300,000 identical operators
    around one launch are 300,000 pairs; as points of each other, 9e10). Only
    ``op_kernels(level="all")`` calls it, whose result counts every (kernel, operator) pair;
    every other question is a sweep of :mod:`._enclose`.
    """
    ranges = np.asarray(ranges, dtype=np.int64)
    points = np.asarray(points, dtype=np.int64)
    empty = np.empty(0, dtype=np.int64)
    valid = np.flatnonzero(points >= 0)
    if len(ranges) == 0 or len(valid) == 0:
        return empty, empty.copy()
    pid = ev["pid"].to_numpy()
    tid = ev["tid"].to_numpy()
    ts = ev["ts_ns"].to_numpy()
    end = ts + ev["dur_ns"].to_numpy()
    p_rows = points[valid]
    both = np.concatenate((ranges, p_rows))
    if scope == "thread":
        thread = row_ids(np.column_stack((pid[both], tid[both])))[0]
    elif scope == "process":
        thread = row_ids(pid[both][:, None])[0]
    else:
        raise OptionError.invalid("scope", scope, ("thread", "process"))
    r_thr, p_thr = thread[: len(ranges)], thread[len(ranges) :]
    # Points sorted by (thread, start); each range's candidates are a contiguous run.
    order = np.lexsort((ts[p_rows], p_thr))
    sp_thr, sp_ts, sp_end = p_thr[order], ts[p_rows][order], end[p_rows][order]
    out_i: list[np.ndarray] = []
    out_r: list[np.ndarray] = []
    for t in np.unique(r_thr).tolist():  # one step per thread, not per event
        t0 = int(np.searchsorted(sp_thr, t, side="left"))
        t1 = int(np.searchsorted(sp_thr, t, side="right"))
        if t0 == t1:
            continue
        rr = ranges[r_thr == t]
        lo = t0 + np.searchsorted(sp_ts[t0:t1], ts[rr], side="left")
        hi = t0 + np.searchsorted(sp_ts[t0:t1], end[rr], side="right")
        cnt = hi - lo
        pos = np.arange(int(cnt.sum()), dtype=np.int64) + np.repeat(
            lo - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt
        )
        rng = np.repeat(rr, cnt)
        ok = sp_end[pos] <= end[rng]
        out_i.append(valid[order[pos[ok]]])
        out_r.append(rng[ok])
    if not out_i:
        return empty, empty.copy()
    i = np.concatenate(out_i)
    r = np.concatenate(out_r)
    o = np.lexsort((r, i))
    return i[o], r[o]


def match_names(names: pd.Series, pattern: str, how: str, *, what: str = "operator") -> np.ndarray:
    """Boolean mask of the rows of categorical ``names`` that match ``pattern``.

    ``how``: ``exact`` (equal), ``substring`` (contains, as HTA) or ``regex`` (``re.search``).
    The test runs once per distinct name, not per row.
    """
    cats = pd.Index(as_text(names.cat.categories))
    if how == "exact":
        ok = cats == pattern
    elif how == "substring":
        ok = cats.str.contains(pattern, regex=False)
    elif how == "regex":
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"{what} pattern {pattern!r} is not a valid regular expression: {exc}") from None
        ok = np.fromiter((rx.search(c) is not None for c in cats.tolist()), dtype=bool, count=len(cats))
    else:
        raise OptionError.invalid("match", how, ("exact", "substring", "regex"))
    codes = names.cat.codes.to_numpy()
    lut = np.append(np.asarray(ok, dtype=bool), False)  # code -1 (NaN) -> False
    out: np.ndarray = lut[codes]
    return out


def row_ids(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense ids of the rows of an integer matrix (equal rows, equal ids), and each id's first row.

    Columns are packed into one int64 key (mixed radix), re-densified by a hash
    factorisation whenever the key would overflow: O(rows x columns), much faster than
    ``np.unique(axis=0)``, which sorts rows as opaque bytes.
    """
    n = mat.shape[0]
    ids = np.zeros(n, dtype=np.int64)
    bound = 1  # ids < bound
    for j in range(mat.shape[1]):
        col = mat[:, j]
        lo = int(col.min()) if n else 0
        span = (int(col.max()) - lo + 1) if n else 1
        if bound * span >= 2**62:  # re-densify before the packed key would overflow
            codes, uniq = pd.factorize(ids)
            ids, bound = codes.astype(np.int64), len(uniq)
        ids = ids * span + (col - lo)
        bound *= span
    if n:
        codes, _ = pd.factorize(ids)
        ids = codes.astype(np.int64)
    m = int(ids.max()) + 1 if n else 0
    first = np.empty(m, dtype=np.int64)
    first[ids[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
    return ids, first


def group_sequences(lead: np.ndarray, codes: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Identify equal sequences exactly, without a Python loop over sequences.

    Sequence ``g`` is ``(lead[g], codes[bounds[g]:bounds[g + 1]])``. Returns
    ``(seq_id, first)``: a dense id per sequence (equal sequences, equal ids) and, per id,
    the first sequence holding it. Sequences are compared per length, as the rows of a
    (count, length + 1) matrix (:func:`row_ids`).
    """
    n = len(bounds) - 1
    seq_id = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return seq_id, np.empty(0, dtype=np.int64)
    lengths = np.diff(bounds)
    next_id = 0
    firsts: list[np.ndarray] = []
    for length in np.unique(lengths).tolist():  # one step per distinct length
        gs = np.flatnonzero(lengths == length)
        mat = np.empty((len(gs), length + 1), dtype=np.int64)
        mat[:, 0] = lead[gs]
        if length:
            mat[:, 1:] = codes[bounds[gs][:, None] + np.arange(length)[None, :]]
        ids, first = row_ids(mat)
        seq_id[gs] = next_id + ids
        firsts.append(gs[first])
        next_id += len(first)
    return seq_id, np.concatenate(firsts)
