"""Vectorised walks over a rank's event links: CPU nesting (``parent_eid``) and launches.

Every function works on one rank's events frame and on *row positions* in it (not eids:
a narrowed trace keeps eids but drops rows). Nothing here loops over events in Python:
ancestor searches advance all start points one level per numpy step, so the cost is
O(starts x depth) with depth the CPU nesting depth (tens at most).
"""

from __future__ import annotations

import re
import numpy as np
import pandas as pd

__all__ = [
    "ancestor_pairs",
    "eid_rows",
    "group_sequences",
    "innermost",
    "launch_rows",
    "lookup",
    "match_names",
    "outermost",
    "parent_rows",
]


def eid_rows(ev: pd.DataFrame) -> np.ndarray:
    """Lookup table eid -> row position in ``ev`` (-1 where the eid is not in the frame)."""
    eids = ev["eid"].to_numpy()
    if len(eids) == 0:
        return np.empty(0, dtype=np.int64)
    table = np.full(int(eids.max()) + 1, -1, dtype=np.int64)
    table[eids] = np.arange(len(eids), dtype=np.int64)
    return table


def lookup(table: np.ndarray, eids: np.ndarray) -> np.ndarray:
    """Rows of ``eids`` through an :func:`eid_rows` table (-1 for -1 or absent eids)."""
    eids = np.asarray(eids, dtype=np.int64)
    ok = (eids >= 0) & (eids < len(table))
    out = np.full(len(eids), -1, dtype=np.int64)
    out[ok] = table[eids[ok]]
    return out


def parent_rows(ev: pd.DataFrame, table: np.ndarray) -> np.ndarray:
    """Row of each event's parent (-1 at top level, for device events, or if not in ``ev``)."""
    return lookup(table, ev["parent_eid"].to_numpy())


def launch_rows(ev: pd.DataFrame, table: np.ndarray) -> np.ndarray:
    """Row of each event's launch call (-1 if none or not in ``ev``)."""
    return lookup(table, ev["launch_eid"].to_numpy())


def ancestor_pairs(
    parent: np.ndarray, start: np.ndarray, target: np.ndarray, *, include_start: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Every (start index, ancestor row) pair where the ancestor is a ``target`` row.

    ``parent`` maps a row to its parent row (-1: none); ``start`` holds rows (-1 allowed,
    giving no pairs); ``target`` is a boolean mask over rows. Ancestors are searched from
    the parent up (from the row itself with ``include_start``). Pairs come sorted by start
    index and, within one start, innermost ancestor first.
    """
    start = np.asarray(start, dtype=np.int64)
    idx = np.arange(len(start), dtype=np.int64)
    cur = start.copy()
    if not include_start:
        ok = cur >= 0
        cur[ok] = parent[cur[ok]]
    out_i: list[np.ndarray] = []
    out_a: list[np.ndarray] = []
    out_level: list[np.ndarray] = []
    level = 0
    # Parent links strictly decrease nesting depth, so the walk ends; the cap guards
    # against a malformed table with a cycle.
    for _ in range(len(parent) + 1):
        ok = cur >= 0
        if not ok.any():
            break
        idx, cur = idx[ok], cur[ok]
        hit = target[cur]
        out_i.append(idx[hit])
        out_a.append(cur[hit])
        out_level.append(np.full(int(hit.sum()), level, dtype=np.int64))
        cur = parent[cur]
        level += 1
    if not out_i:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy()
    i = np.concatenate(out_i)
    a = np.concatenate(out_a)
    lv = np.concatenate(out_level)
    order = np.lexsort((lv, i))
    return i[order], a[order]


def innermost(n: int, pairs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """For each of ``n`` starts, the innermost ancestor row of ``pairs`` (-1 if none)."""
    i, a = pairs
    out = np.full(n, -1, dtype=np.int64)
    if len(i):
        first = np.concatenate(([True], i[1:] != i[:-1]))
        out[i[first]] = a[first]
    return out


def outermost(n: int, pairs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """For each of ``n`` starts, the outermost ancestor row of ``pairs`` (-1 if none)."""
    i, a = pairs
    out = np.full(n, -1, dtype=np.int64)
    if len(i):
        last = np.concatenate((i[1:] != i[:-1], [True]))
        out[i[last]] = a[last]
    return out


def match_names(names: pd.Series, pattern: str, how: str, *, what: str = "operator") -> np.ndarray:
    """Boolean mask of the rows of categorical ``names`` that match ``pattern``.

    ``how``: ``exact`` (equal), ``substring`` (contains, as HTA) or ``regex`` (``re.search``).
    The test runs once per distinct name, not per row.
    """
    cats = pd.Index(names.cat.categories.astype(str))
    if how == "exact":
        ok = cats == pattern
    elif how == "substring":
        ok = cats.str.contains(pattern, regex=False)
    elif how == "regex":
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{what} pattern {pattern!r} is not a valid regular expression: {exc}") from None
        ok = np.fromiter((rx.search(c) is not None for c in cats), dtype=bool, count=len(cats))
    else:
        raise ValueError(f"match must be 'exact', 'substring' or 'regex', got {how!r}")
    codes = names.cat.codes.to_numpy()
    lut = np.append(np.asarray(ok, dtype=bool), False)  # code -1 (NaN) -> False
    return lut[codes]


def group_sequences(lead: np.ndarray, codes: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Identify equal sequences exactly, without a Python loop over sequences.

    Sequence ``g`` is ``(lead[g], codes[bounds[g]:bounds[g + 1]])``. Returns
    ``(seq_id, first)``: a dense id per sequence (equal sequences, equal ids) and, per id,
    the first sequence holding it. Sequences are compared per length with ``np.unique``
    over the rows of a (count, length + 1) matrix.
    """
    n = len(bounds) - 1
    seq_id = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return seq_id, np.empty(0, dtype=np.int64)
    lengths = np.diff(bounds)
    next_id = 0
    firsts: list[np.ndarray] = []
    for length in np.unique(lengths).tolist():
        gs = np.flatnonzero(lengths == length)
        mat = np.empty((len(gs), length + 1), dtype=np.int64)
        mat[:, 0] = lead[gs]
        if length:
            mat[:, 1:] = codes[bounds[gs][:, None] + np.arange(length)[None, :]]
        _, first, inverse = np.unique(mat, axis=0, return_index=True, return_inverse=True)
        seq_id[gs] = next_id + inverse.reshape(-1)
        firsts.append(gs[first])
        next_id += len(first)
    # Ids are handed out per length in np.unique's order, so the firsts line up with them.
    return seq_id, np.concatenate(firsts)
