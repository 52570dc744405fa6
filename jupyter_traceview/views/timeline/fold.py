"""A rank's folded CPU threads: one summary row over all its CPU threads (kernel side).

Above :data:`~.ranks.CPU_COLLAPSE_ABOVE` ranks each rank's CPU threads open folded into one
row. That row is a summary computed here, like a collapsed rank's GPU summary: the **work**
of every CPU thread of the rank (its outermost events that are not annotations or sync
records, not starting inside another work event of its thread: an operator, a runtime call,
a Python function, whatever its depth under ``ProfilerStep#`` annotations) merged into one
track. Per pixel column the row holds the time
any thread is busy (the union, so the busy fraction is at most 1), the kind covering most of
it and the events starting in it, binned like every other row
(:func:`~.binning.bin_batch`). A rank whose CPU rows hold no work (annotations only) folds
its threads' top-level events instead.

While searching, the row's columns count the matches of every CPU event of the rank (any
thread, any depth: :meth:`.rank_index.RankIndex.window`), so the front end dims and outlines
it like the other rows. Hovering the row asks ``_fold`` (:func:`fold_summary`, :meth:`TimelineIndex.fold_summary`):
for a time range, how many threads the rank has and how many work in it, the time any of them
works and the time summed over threads, the events and the names taking most time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypedDict

import numpy as np

from ...model import intervals as iv
from ..colors import kind_code
from .binning import NO_KIND, Coverage, Starts, coverage_of, grid_points


class RankIndex(Protocol):
    """What this module reads of a rank's part (:class:`.rank_index.RankIndex`)."""

    start: np.ndarray
    end: np.ndarray
    kind: np.ndarray
    name: np.ndarray

    @property
    def rows(self) -> Sequence[Any]:
        """Its rows (``info.type``, ``info.lane``, ``info.depth``; events ``lo:hi``)."""


__all__ = ["FoldTrack", "RankFoldSummary", "build_fold", "fold_summary", "outermost_work"]

#: Kinds that are not work (the same as a rank's GPU summary leaves out).
NOT_WORK = (kind_code("sync"), kind_code("annotation"))


class FoldTrack:
    """A rank's folded CPU track: its events' positions sorted by start, and their binning tracks."""

    __slots__ = ("all", "kinds", "lane", "maxend", "positions", "starts", "threads")

    def __init__(self, part: RankIndex, positions: np.ndarray, threads: int) -> None:
        s, e, k = part.start[positions], part.end[positions], part.kind[positions]
        order = np.argsort(s, kind="stable")
        positions, s, e, k = positions[order], s[order], e[order], k[order]
        self.positions = positions.astype(np.int64)
        self.threads = threads
        #: Local lane id (thread) of each event.
        self.lane = np.asarray([0], dtype=np.int64)[:0]
        u = iv.union(s, e)
        self.all = Coverage(u[0], u[1])
        present = np.flatnonzero(np.bincount(k, minlength=NO_KIND)).tolist() if len(k) else []
        self.kinds = {int(c): coverage_of(s[k == c], e[k == c]) for c in present}
        self.starts = Starts(s)
        # Running maximum of the (instant events: 1 ns) ends: the first event that may overlap a time.
        self.maxend = np.maximum.accumulate(np.maximum(e, s + 1)) if len(s) else np.empty(0, dtype=np.int64)

    def single_kind(self) -> int:
        return next(iter(self.kinds)) if len(self.kinds) == 1 else NO_KIND

    def tabulate(self, grid_end: int, cells: int, min_size: int) -> None:
        """Tabulate the big tracks on the index's fine grid (as :meth:`RankIndex.tabulate` does)."""
        points = grid_points(grid_end, cells)
        for c in [self.all, *self.kinds.values()]:
            if len(c.s) >= min_size and c.grid is None:
                c.grid = c.until(points)
        if len(self.starts.a) >= min_size and self.starts.grid is None:
            self.starts.grid = self.starts.before(points)


def outermost_work(part: RankIndex) -> np.ndarray:
    """Local positions of each CPU thread's outermost work events (see the module docstring).

    An event is work unless its kind is an annotation or a sync record; it is outermost when
    it does not start inside a work event of its thread at a shallower depth (an instant
    event lasting 1 ns). Rows hold a thread's events by nesting depth, in start order.
    """
    by_lane: dict[int, list[tuple[int, int, int]]] = {}
    for r in part.rows:
        if r.info.type == "cpu":
            by_lane.setdefault(r.info.lane, []).append((r.info.depth, r.lo, r.hi))
    work = ~np.isin(part.kind, NOT_WORK)
    out: list[np.ndarray] = []
    for rows in by_lane.values():
        rows.sort()
        # The union of the thread's work at the depths above.
        us = ue = np.empty(0, dtype=np.int64)
        for _, lo, hi in rows:
            s = part.start[lo:hi]
            e = np.maximum(part.end[lo:hi], s + 1)
            j = np.searchsorted(us, s, side="right") - 1
            inside = (j >= 0) & (s < ue[np.maximum(j, 0)]) if len(us) else np.zeros(hi - lo, dtype=bool)
            w = work[lo:hi]
            out.append(lo + np.flatnonzero(w & ~inside))
            if w.any():
                us, ue = iv.union(np.concatenate([us, s[w]]), np.concatenate([ue, e[w]]))
    return np.sort(np.concatenate(out)) if out else np.empty(0, dtype=np.int64)


def build_fold(part: RankIndex) -> FoldTrack:
    """The folded CPU track of a rank's part (its outermost work; its top-level events when it has none)."""
    cpu_rows = [r for r in part.rows if r.info.type == "cpu"]
    threads = len({r.info.lane for r in cpu_rows})
    pos = outermost_work(part)
    if len(pos) == 0:
        tops = [np.arange(r.lo, r.hi) for r in cpu_rows if r.info.depth == 0]
        pos = np.concatenate(tops) if tops else np.empty(0, dtype=np.int64)
    track = FoldTrack(part, pos.astype(np.int64), threads)
    lane_of = np.empty(len(part.start), dtype=np.int64)
    for r in cpu_rows:
        lane_of[r.lo : r.hi] = r.info.lane
    track.lane = lane_of[track.positions]
    return track


class RankFoldSummary(TypedDict):
    """A rank's answer to :func:`fold_summary` (name codes local to the rank)."""

    threads: int
    #: Threads with an event overlapping the range.
    active: int
    #: Time any thread works, ns (the union).
    busy_ns: int
    #: Work time summed over threads, ns (over the range's length: the mean number of busy threads).
    thread_ns: int
    events: int
    #: (local name code, clipped time in ns, events) of the names present.
    names: list[tuple[int, int, int]]


def fold_summary(part: RankIndex, track: FoldTrack, lo: int, hi: int) -> RankFoldSummary:
    """What the rank's CPU threads do in ``[lo, hi)`` (see the module docstring)."""
    i0 = int(np.searchsorted(track.maxend, lo, side="right"))
    i1 = int(np.searchsorted(track.starts.a, hi, side="left"))
    pos = track.positions[i0 : max(i0, i1)]
    s, e = part.start[pos], part.end[pos]
    keep = (np.maximum(e, s + 1) > lo) & (s < hi)
    pos, s, e = pos[keep], s[keep], e[keep]
    lanes = track.lane[i0 : max(i0, i1)][keep]
    clipped = np.clip(np.minimum(e, hi) - np.maximum(s, lo), 0, None)
    names: list[tuple[int, int, int]] = []
    if len(pos):
        codes = part.name[pos].astype(np.int64)
        t = np.bincount(codes, weights=clipped)
        n = np.bincount(codes)
        names = [(int(c), int(t[c]), int(n[c])) for c in np.flatnonzero(n).tolist()]
    return RankFoldSummary(
        threads=track.threads,
        active=len(np.unique(lanes)),
        busy_ns=track.all.total(lo, hi),
        thread_ns=int(clipped.sum()),
        events=len(pos),
        names=names,
    )
