"""Per-pixel binning of a track of events: covered time, dominant kind and starts per column.

A track (a row of the timeline, or a rank's summary) is kept as disjoint intervals with the
prefix sums of their lengths (:class:`Coverage`) and its sorted starts (:class:`Starts`),
so that binning costs O(width x log n) per track, or O(width) on the points of a grid where
big tracks are tabulated. Part of the timeline index (see
:mod:`jupyter_traceview.views.timeline.index`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ...model import intervals as iv

__all__ = ["NO_KIND", "RowWindow"]

#: Kind code meaning "nothing here" in binned rows.
NO_KIND = 255


@dataclass(frozen=True)
class RowWindow:
    """A row's answer to a window query: raw events or per-pixel bins.

    ``events`` (raw rows) are positions in the index's event arrays (see
    :meth:`TimelineIndex.event_columns`). Binned rows have ``coverage_ns`` (time covered by
    the row's events in each bin), ``kind`` (the kind code covering most of the bin;
    :data:`NO_KIND` when nothing does), ``count`` (events starting in the bin) and, with a
    search pattern, ``matches`` (matching events starting in the bin). With a pattern raw rows
    have ``matches`` too: one boolean per event.
    """

    row: int
    mode: Literal["raw", "bins"]
    events: np.ndarray | None = None
    coverage_ns: np.ndarray | None = None
    kind: np.ndarray | None = None
    count: np.ndarray | None = None
    matches: np.ndarray | None = None
    name_color: np.ndarray | None = None


def sorted_search(a: np.ndarray, t: np.ndarray, side: Literal["left", "right"]) -> np.ndarray:
    """``np.searchsorted(a, t, side)`` for sorted ``t``, searching only the slice ``t`` spans."""
    if len(t) == 0 or len(a) < 4096:
        return np.searchsorted(a, t, side=side)
    i0 = int(np.searchsorted(a, t[0], side=side))
    i1 = int(np.searchsorted(a, t[-1], side=side))
    return i0 + np.searchsorted(a[i0:i1], t, side=side)


class Coverage:
    """Disjoint sorted intervals with the prefix sums of their lengths.

    :func:`jupyter_traceview.model.intervals.binned_coverage` with the prefix sums computed once,
    so that each query costs O(bins x log n) instead of O(n); with ``grid`` (the covered
    time up to each grid point) a query on grid points costs O(bins).
    """

    __slots__ = ("cum", "e", "grid", "s")

    def __init__(self, s: np.ndarray, e: np.ndarray) -> None:
        self.s = s
        self.e = e
        self.cum = np.concatenate(([0], np.cumsum(e - s)))
        self.grid: np.ndarray | None = None

    def bare(self) -> Coverage:
        """The same intervals (shared, not copied) without a grid."""
        c = Coverage.__new__(Coverage)
        c.s, c.e, c.cum, c.grid = self.s, self.e, self.cum, None
        return c

    @classmethod
    def tabulated(cls, grid: np.ndarray) -> Coverage:
        """A track known only at the points of a grid (queries must be on grid points)."""
        empty = np.empty(0, dtype=np.int64)
        c = cls(empty, empty)
        c.grid = grid
        return c

    def until(self, t: np.ndarray, k: np.ndarray | None = None) -> np.ndarray:
        """Time covered before each of the sorted times ``t``.

        ``k``: when ``t`` are grid points, their indices clipped to the grid (points before
        the trace have nothing before them, points after it everything).
        """
        if k is not None and self.grid is not None:
            return np.asarray(self.grid[k])
        if len(self.s) == 0:
            return np.zeros(len(t), dtype=np.int64)
        idx = sorted_search(self.s, t, "right")
        km1 = np.maximum(idx - 1, 0)
        partial = np.clip(t - self.s[km1], 0, self.e[km1] - self.s[km1])
        return np.where(idx > 0, self.cum[km1] + partial, 0)

    def total(self, lo: int, hi: int) -> int:
        u = self.until(np.array([lo, hi], dtype=np.int64))
        return int(u[1] - u[0])


class Starts:
    """Sorted start times and, for big rows, how many start before each grid point."""

    __slots__ = ("a", "grid", "n")

    def __init__(self, a: np.ndarray) -> None:
        self.a = a
        self.n = len(a)
        self.grid: np.ndarray | None = None

    @classmethod
    def tabulated(cls, grid: np.ndarray, n: int) -> Starts:
        """``n`` starts known only by their counts at the points of a grid."""
        s = cls(np.empty(0, dtype=np.int64))
        s.n = n
        s.grid = grid
        return s

    def before(self, t: np.ndarray, k: np.ndarray | None = None, after: np.ndarray | None = None) -> np.ndarray:
        """How many start before each of the sorted times ``t``.

        ``k``: when ``t`` are grid points, their indices clipped to the grid; ``after`` flags
        the points beyond the grid's last (where everything has started).
        """
        if k is not None and self.grid is not None:
            out = np.asarray(self.grid[k])
            return out if after is None else np.where(after, self.n, out)
        return sorted_search(self.a, t, "left")


def is_disjoint(s: np.ndarray, e: np.ndarray) -> bool:
    return bool(len(s) < 2 or np.all(s[1:] >= e[:-1]))


def coverage_of(s: np.ndarray, e: np.ndarray) -> Coverage:
    if is_disjoint(s, e):
        return Coverage(s, e)
    u = iv.union(s, e)
    return Coverage(u[0], u[1])


#: What binning needs of a row or summary: all its events' coverage, per-kind coverage,
#: its single kind (NO_KIND if several) and its starts.
Binned = tuple[Coverage, dict[int, Coverage], int, Starts]


def single_kind(kinds: dict[int, Coverage]) -> int:
    return next(iter(kinds)) if len(kinds) == 1 else NO_KIND


def bin_batch(
    items: Sequence[Binned], edges: np.ndarray, k: np.ndarray | None, cells: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: covered time, dominant kind and events started before each edge, of many tracks at once.

    ``k``: when the edges are points of a grid of ``cells`` cells, their indices (tracks
    tabulated on that grid are read there). One gather (grid) or one search per track, then
    the arithmetic on 2-D arrays: the cost per track is a few microseconds of numpy calls,
    not a Python loop over columns. Each track's answer depends on that track only.
    """
    n, width = len(items), len(edges) - 1
    kc = after = None
    if k is not None:
        kc = np.clip(k, 0, cells)
        after = k > cells
    upto = np.empty((n, width + 1), dtype=np.int64)
    first = np.empty((n, width + 1), dtype=np.int64)
    for i, (cov_all, _, _, starts) in enumerate(items):
        upto[i] = cov_all.until(edges, kc)
        first[i] = starts.before(edges, kc, after)
    cov = np.diff(upto, axis=1)
    kind = np.full((n, width), NO_KIND, dtype=np.uint8)
    single = np.array([it[2] for it in items], dtype=np.int64)
    one = np.flatnonzero(single != NO_KIND)
    if len(one):
        kind[one] = np.where(cov[one] > 0, single[one, None], NO_KIND)
    many = [i for i, it in enumerate(items) if it[2] == NO_KIND and it[1]]
    if many:
        codes = sorted(set().union(*(items[i][1] for i in many)))
        ku = np.zeros((len(many), len(codes), width + 1), dtype=np.int64)
        for a, i in enumerate(many):
            for b, c in enumerate(codes):
                track = items[i][1].get(c)
                if track is not None:
                    ku[a, b] = track.until(edges, kc)
        per_kind = np.diff(ku, axis=2)
        best = per_kind.argmax(axis=1)
        top = np.take_along_axis(per_kind, best[:, None, :], axis=1)[:, 0, :]
        kind[many] = np.where(top > 0, np.asarray(codes, dtype=np.int64)[best], NO_KIND)
    return cov, kind, first


def grid_points(end: int, cells: int) -> np.ndarray:
    """The points of a uniform grid of ``cells`` cells over ``[0, end]``: ``(k * end) // cells``."""
    return (np.arange(cells + 1, dtype=np.int64) * end) // cells
