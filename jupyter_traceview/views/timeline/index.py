"""Level-of-detail index of a trace for the timeline: rows, window queries, event details.

Pure numpy and pandas, no UI import: the timeline widget asks it for the visible window at
its pixel width, and tests check it against brute force.

Layout. Each rank has *lanes*: one per GPU stream (``device``, ``stream``), then one per CPU
thread (``pid``, ``tid``). A lane has one *row* per nesting depth. Within a row events are
sorted by start and (for well-nested traces) do not overlap.

Window query (:meth:`TimelineIndex.window`). For every requested row, the events that
overlap ``[lo, hi)`` (the rule of :meth:`Trace.select`: ``start < hi`` and ``end > lo``, or an
instant event at ``lo``) are counted in O(log n). When there are few enough of them for the
pixel width (:class:`LevelOfDetail`) they are returned raw; otherwise the row is *binned*:
per pixel column, the time covered by the row's events (exact, in ns), the kind that covers
most of it, and how many events start there. Binning costs O(width x log n) per row thanks to
prefix sums of interval lengths computed once, so a query's cost does not grow with the
number of events in the window. A *summary* of a rank (drawn when its lanes are collapsed)
is binned the same way over the union of its GPU work (or of its top-level CPU events on a
CPU-only trace).

Where the work happens. The index has two parts. The heavy one is per rank
(:class:`RankIndex`: a rank's drawn events sorted by row, the prefix sums, the start arrays,
its summary), built by :func:`build_rank_index` where the rank's tables live: in this
process for an ordinary trace, on the dask worker holding the rank for a trace loaded with
``engine="dask"`` (it stays there as a future). :class:`TimelineIndex` is the coordinator
the notebook keeps: rows, lanes, names, ProfilerStep spans, and each rank's summary at a
bounded resolution (tabulated at the points of a coarse grid, or its intervals when there
are few), so that an overview of collapsed ranks is answered without asking the ranks. Every
other query goes to the ranks it concerns, one call (one dask task) per rank. Both engines
run the same per-rank code, so their answers are identical; the coordinator's memory does
not grow with the number of events per rank.

Times inside the index are int64 ns relative to :attr:`TimelineIndex.t0_ns` (the trace's
first event): relative times stay exact in a JavaScript float64 for 104 days.

Modules. :mod:`.layout` (lanes and rows of a rank), :mod:`.binning` (tracks and per-pixel
binning), :mod:`.rank_index` (:class:`RankIndex` and where the parts live),
:mod:`.coordinator` (:class:`TimelineIndex`), :mod:`.memory` (the memory lanes: one
per rank and device with memory records, ``tv.memory_timeline``'s series binned per column
keeping each column's maximum). This module is the public face: import from it.
"""

from __future__ import annotations

from .binning import NO_KIND, RowWindow
from .coordinator import (
    EventColumn,
    LevelOfDetail,
    TimelineIndex,
    Window,
)
from .layout import LaneInfo, RowInfo
from .pattern import MAX_PATTERN_CHARS, compile_pattern
from .rank_index import RankIndex, build_rank_index

__all__ = [
    "MAX_PATTERN_CHARS",
    "NO_KIND",
    "EventColumn",
    "LaneInfo",
    "LevelOfDetail",
    "RankIndex",
    "RowInfo",
    "RowWindow",
    "TimelineIndex",
    "Window",
    "build_rank_index",
    "compile_pattern",
]
