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
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ...errors import TraceSelectionError
from ...model import intervals as iv
from ...model.rank_data import RankData
from ...model.schema import GPU_CLASS_CATEGORIES, KIND_CATEGORIES, EventKind
from ...model.trace import Trace
from ..colors import KINDS, kind_code, kind_codes, name_color_index

__all__ = [
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

RowType = Literal["gpu", "cpu"]
#: Kind code meaning "nothing here" in binned rows.
NO_KIND = 255
#: Event kinds not drawn: memory-allocation records and other instant markers.
_SKIPPED_KINDS = (EventKind.CPU_INSTANT_EVENT.value,)
#: Kinds that are not work in a rank summary (sync records, annotations).
_NOT_WORK = (kind_code("sync"), kind_code("annotation"))
#: Columns of :meth:`TimelineIndex.event_columns` and their dtypes.
_COLUMNS = {"start": np.int64, "end": np.int64, "eid": np.int64, "name": np.int32, "kind": np.uint8}


@dataclass(frozen=True)
class LevelOfDetail:
    """When the timeline shows raw events and when it merges them per pixel column."""

    #: A row's events in the window are sent raw when there are at most this many per pixel
    #: of width (0.5: raw events are on average at least 2 px wide); otherwise the row is
    #: binned per pixel column.
    raw_events_per_px: float = 0.5

    def __post_init__(self) -> None:
        if not self.raw_events_per_px > 0:
            raise ValueError(f"LevelOfDetail.raw_events_per_px must be > 0, got {self.raw_events_per_px}")


@dataclass(frozen=True)
class RowInfo:
    """One row of the timeline: a lane at one nesting depth."""

    id: int
    rank: int
    lane: int
    depth: int
    type: RowType
    events: int


@dataclass(frozen=True)
class LaneInfo:
    """A GPU stream or a CPU thread of one rank, drawn as one row per nesting depth."""

    id: int
    rank: int
    type: RowType
    #: Device index (GPU lanes); -1 for CPU lanes.
    device: int
    #: Stream (GPU lanes); -1 for CPU lanes.
    stream: int
    #: Process and thread ids (CPU lanes); device and stream again for GPU lanes.
    pid: int
    tid: int
    label: str
    rows: tuple[int, ...]


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


@dataclass(frozen=True)
class Window:
    """The answer to :meth:`TimelineIndex.window`: one :class:`RowWindow` per row asked for.

    Summaries of ranks are binned rows whose ``row`` is the rank.
    """

    lo: int
    hi: int
    edges: np.ndarray
    rows: list[RowWindow] = field(default_factory=list)
    summaries: list[RowWindow] = field(default_factory=list)


#: Cells of the uniform grid over the trace used by zoomed-out queries.
GRID_CELLS = 2**15
#: Tracks with at least this many intervals (or events) get their values at the grid points
#: (the table is then smaller than the track: 8 bytes per grid point, 24 per interval).
GRID_MIN = 2**14
#: The coordinator keeps each rank's summary at the points of a grid this many times coarser
#: (tracks of at most a quarter as many intervals as that grid has cells are kept as they are).
SUMMARY_GRID_DIVISOR = 4
#: A query snaps its bin edges to the grid when its bins span at least this many cells.
SNAP_CELLS = 4


def _sorted_search(a: np.ndarray, t: np.ndarray, side: Literal["left", "right"]) -> np.ndarray:
    """``np.searchsorted(a, t, side)`` for sorted ``t``, searching only the slice ``t`` spans."""
    if len(t) == 0 or len(a) < 4096:
        return np.searchsorted(a, t, side=side)
    i0 = int(np.searchsorted(a, t[0], side=side))
    i1 = int(np.searchsorted(a, t[-1], side=side))
    return i0 + np.searchsorted(a[i0:i1], t, side=side)


class _Coverage:
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

    def bare(self) -> _Coverage:
        """The same intervals (shared, not copied) without a grid."""
        c = _Coverage.__new__(_Coverage)
        c.s, c.e, c.cum, c.grid = self.s, self.e, self.cum, None
        return c

    @classmethod
    def tabulated(cls, grid: np.ndarray) -> _Coverage:
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
        idx = _sorted_search(self.s, t, "right")
        km1 = np.maximum(idx - 1, 0)
        partial = np.clip(t - self.s[km1], 0, self.e[km1] - self.s[km1])
        return np.where(idx > 0, self.cum[km1] + partial, 0)

    def total(self, lo: int, hi: int) -> int:
        u = self.until(np.array([lo, hi], dtype=np.int64))
        return int(u[1] - u[0])


class _Starts:
    """Sorted start times and, for big rows, how many start before each grid point."""

    __slots__ = ("a", "grid", "n")

    def __init__(self, a: np.ndarray) -> None:
        self.a = a
        self.n = len(a)
        self.grid: np.ndarray | None = None

    @classmethod
    def tabulated(cls, grid: np.ndarray, n: int) -> _Starts:
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
        return _sorted_search(self.a, t, "left")


def _is_disjoint(s: np.ndarray, e: np.ndarray) -> bool:
    return bool(len(s) < 2 or np.all(s[1:] >= e[:-1]))


def _coverage_of(s: np.ndarray, e: np.ndarray) -> _Coverage:
    if _is_disjoint(s, e):
        return _Coverage(s, e)
    u = iv.union(s, e)
    return _Coverage(u[0], u[1])


@dataclass
class _Row:
    info: RowInfo
    lo: int  # slice of the event arrays
    hi: int
    disjoint: bool
    all: _Coverage
    #: kind code -> coverage of that kind (only when the row has several kinds)
    kinds: dict[int, _Coverage]
    single_kind: int
    starts: _Starts


@dataclass
class _Summary:
    rank: int
    source: Literal["gpu", "cpu"]
    all: _Coverage
    kinds: dict[int, _Coverage]
    #: starts (sorted) of the events summarised, their index in the event arrays (same order)
    starts: _Starts
    positions: np.ndarray


#: What binning needs of a row or summary: all its events' coverage, per-kind coverage,
#: its single kind (NO_KIND if several) and its starts.
_Binned = tuple[_Coverage, dict[int, _Coverage], int, _Starts]


def _single(kinds: dict[int, _Coverage]) -> int:
    return next(iter(kinds)) if len(kinds) == 1 else NO_KIND


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A search pattern: a case-insensitive regular expression, or literal text if it is not one."""
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error:
        return re.compile(re.escape(pattern), re.IGNORECASE)


def _bin_batch(
    items: Sequence[_Binned], edges: np.ndarray, k: np.ndarray | None, cells: int
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


def _grid_points(end: int, cells: int) -> np.ndarray:
    """The points of a uniform grid of ``cells`` cells over ``[0, end]``: ``(k * end) // cells``."""
    return (np.arange(cells + 1, dtype=np.int64) * end) // cells


@dataclass(frozen=True)
class _RankInfo:
    """What the coordinator keeps of a rank's part (small: no per-event array)."""

    rank: int
    events: int
    names: list[str]
    #: Events per name (local name codes).
    name_counts: np.ndarray
    rows: list[RowInfo]
    lanes: list[LaneInfo]
    #: Per row: (type, a, b, depth) as :meth:`TimelineIndex.row_of` takes them.
    row_keys: list[tuple[RowType, int, int, int]]
    disjoint: np.ndarray
    end_ns: int
    kinds: list[int]
    steps: dict[int, tuple[int, int]]
    source: Literal["gpu", "cpu"]


@dataclass(frozen=True)
class _PartWindow:
    """A rank's answer to a window query (row ids and positions local to the rank)."""

    rows: list[RowWindow]
    summary: RowWindow | None
    #: With ``with_columns``: the sorted positions of the raw events and their columns.
    positions: np.ndarray | None = None
    columns: dict[str, np.ndarray] | None = None


class RankIndex:
    """The heavy part of the timeline index for one rank (see the module docstring).

    Built by :func:`build_rank_index` where the rank's tables live. Row and lane ids,
    positions and name codes are local to the rank; :class:`TimelineIndex` maps them to the
    trace's. Besides the tables it keeps a reference to the rank's data (for event details),
    which costs nothing where the data lives already.
    """

    def __init__(self, data: RankData, t0_ns: int) -> None:
        rank = int(data.meta.rank)
        ev = data.events
        self.rank = rank
        self.t0_ns = int(t0_ns)
        self.data = data
        sel, sizes, rows, lanes, keys = _rank_rows(rank, ev, data.meta.thread_names)
        ncat = ev["name"].array
        if not isinstance(ncat, pd.Categorical):
            ncat = pd.Categorical(ev["name"])
        # Local name codes: 0 is "" (events without a name), category i is i + 1.
        self.names: list[str] = ["", *(str(c) for c in ncat.categories)]
        code_type = np.uint16 if len(self.names) < 2**16 else np.int32
        self.name = (np.asarray(ncat.codes, dtype=np.int64)[sel] + 1).astype(code_type)
        self.name_colors = np.array([name_color_index(n) for n in self.names], dtype=np.uint8)
        ts = ev["ts_ns"].to_numpy()[sel]
        self.start = ts - self.t0_ns
        self.end = self.start + ev["dur_ns"].to_numpy()[sel]
        eid = ev["eid"].to_numpy()[sel]
        fits = len(eid) == 0 or (int(eid.min()) >= 0 and int(eid.max()) < 2**31)
        self.eid = eid.astype(np.int32 if fits else np.int64)
        kcodes = _fixed_codes(ev["kind"], KIND_CATEGORIES)[sel]
        gcodes = _fixed_codes(ev["gpu_class"], GPU_CLASS_CATEGORIES)[sel]
        self.kind = kind_codes(kcodes, gcodes).astype(np.uint8)
        self.row_ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        self.end_ns = int(self.end.max()) if len(self.end) else 0
        self.row_keys = keys
        self.lanes = lanes
        self._maxend = np.empty(len(self.start), dtype=np.int64)
        self.rows: list[_Row] = []
        for info in rows:
            lo, hi = int(self.row_ptr[info.id]), int(self.row_ptr[info.id + 1])
            s, e = self.start[lo:hi], self.end[lo:hi]
            if hi > lo:
                self._maxend[lo:hi] = np.maximum.accumulate(np.maximum(e, s + 1))
            k = self.kind[lo:hi]
            present = np.flatnonzero(np.bincount(k, minlength=NO_KIND))
            kinds: dict[int, _Coverage] = {}
            if len(present) > 1:
                for code in present.tolist():
                    m = k == code
                    kinds[int(code)] = _coverage_of(s[m], e[m])
            self.rows.append(
                _Row(
                    info=info,
                    lo=lo,
                    hi=hi,
                    disjoint=_is_disjoint(s, e),
                    all=_coverage_of(s, e),
                    kinds=kinds,
                    single_kind=int(present[0]) if len(present) == 1 else NO_KIND,
                    starts=_Starts(s),
                )
            )
        self.summary = self._summary()
        self._grid: tuple[int, int] | None = None
        self._patterns: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    # A part may travel between dask workers (pickled): the lock does not.
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        state["_patterns"] = OrderedDict()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _summary(self) -> _Summary:
        gpu = [r for r in self.rows if r.info.type == "gpu"]
        parts = [np.arange(r.lo, r.hi) for r in gpu]
        pos = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        pos = pos[~np.isin(self.kind[pos], _NOT_WORK)]
        source: Literal["gpu", "cpu"] = "gpu"
        if len(pos) == 0:
            source = "cpu"
            cpu = [r for r in self.rows if r.info.type == "cpu" and r.info.depth == 0]
            parts = [np.arange(r.lo, r.hi) for r in cpu]
            pos = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        s, e, k = self.start[pos], self.end[pos], self.kind[pos]
        order = np.argsort(s, kind="stable")
        pos, s, e, k = pos[order], s[order], e[order], k[order]
        present = np.flatnonzero(np.bincount(k, minlength=NO_KIND)).tolist() if len(k) else []
        kinds = {int(c): _coverage_of(s[k == c], e[k == c]) for c in present}
        u = iv.union(s, e)
        return _Summary(
            rank=self.rank,
            source=source,
            all=_Coverage(u[0], u[1]),
            kinds=kinds,
            starts=_Starts(s),
            positions=pos.astype(np.int32 if len(self.start) < 2**31 else np.int64),
        )

    # ------------------------------------------------------------------ building (coordinator's calls)
    def info(self) -> _RankInfo:
        """What the coordinator keeps: rows, lanes, names and a few totals."""
        return _RankInfo(
            rank=self.rank,
            events=len(self.start),
            names=self.names,
            name_counts=np.bincount(self.name, minlength=len(self.names)).astype(np.int64),
            rows=[r.info for r in self.rows],
            lanes=self.lanes,
            row_keys=self.row_keys,
            disjoint=np.array([r.disjoint for r in self.rows], dtype=bool),
            end_ns=self.end_ns,
            kinds=np.unique(self.kind).tolist() if len(self.kind) else [],
            steps=self._steps(),
            source=self.summary.source,
        )

    def _steps(self) -> dict[int, tuple[int, int]]:
        rx = re.compile(r"^ProfilerStep#(\d+)$")
        step_of = np.full(len(self.names), -1, dtype=np.int64)
        for i, n in enumerate(self.names):
            m = rx.match(n)
            if m:
                step_of[i] = int(m.group(1))
        if not (step_of >= 0).any() or len(self.name) == 0:
            return {}
        steps = step_of[self.name]
        sel = (steps >= 0) & np.isin(self.kind, [kind_code("annotation"), kind_code("cpu_op")])
        if not sel.any():
            return {}
        frame = pd.DataFrame({"step": steps[sel], "start": self.start[sel], "end": self.end[sel]})
        g = frame.groupby("step", sort=True).agg(start=("start", "min"), end=("end", "max"))
        return {int(st): (int(a), int(b)) for st, a, b in zip(g.index, g["start"], g["end"], strict=True)}

    def tabulate(self, grid_end: int, cells: int, min_size: int) -> RankIndex:
        """Values of the big tracks at the points of the trace's grid (``cells`` cells over ``[0, grid_end]``).

        Tracks with at least ``min_size`` intervals (or starts) are tabulated. Returns the part.
        """
        self._grid = (grid_end, cells)
        points = _grid_points(grid_end, cells)
        holders = [([r.all, *r.kinds.values()], r.starts) for r in self.rows]
        holders.append(([self.summary.all, *self.summary.kinds.values()], self.summary.starts))
        for covs, starts in holders:
            for c in covs:
                if len(c.s) >= min_size and c.grid is None:
                    c.grid = c.until(points)
            if len(starts.a) >= min_size and starts.grid is None:
                starts.grid = starts.before(points)
        return self

    def summary_view(self, grid_end: int, cells: int, keep: int) -> _Binned:
        """The summary as the coordinator keeps it: tracks of at most ``keep`` intervals as they
        are, bigger ones tabulated on the coarse grid (``cells`` cells over ``[0, grid_end]``)."""
        points = _grid_points(grid_end, cells) if grid_end > 0 else None
        s = self.summary

        # Tables here are on the coarse grid: kept tracks must not carry the fine grid's.
        def cov(c: _Coverage) -> _Coverage:
            if len(c.s) <= keep or points is None:
                return c.bare()
            return _Coverage.tabulated(c.until(points))

        starts = _Starts(s.starts.a)
        if len(starts.a) > keep and points is not None:
            starts = _Starts.tabulated(starts.before(points), len(starts.a))
        kinds = {code: cov(c) for code, c in s.kinds.items()}
        return (cov(s.all), kinds, _single(kinds), starts)

    # ------------------------------------------------------------------ queries
    def _candidates(self, r: _Row, lo: int, hi: int) -> tuple[int, int]:
        i0 = r.lo + int(np.searchsorted(self._maxend[r.lo : r.hi], lo, side="right"))
        i1 = r.lo + int(np.searchsorted(self.start[r.lo : r.hi], hi, side="left"))
        return i0, max(i0, i1)

    def _eff_end(self, i0: int, i1: int) -> np.ndarray:
        """Ends of events ``i0:i1``, instant events lasting 1 ns (for overlap tests)."""
        return np.maximum(self.end[i0:i1], self.start[i0:i1] + 1)

    def _row(self, row: int) -> _Row:
        return self.rows[row]

    def overlapping(self, row: int, lo: int, hi: int) -> np.ndarray:
        """Local positions of a row's events overlapping ``[lo, hi)``, in start order."""
        r = self._row(row)
        i0, i1 = self._candidates(r, lo, hi)
        if r.disjoint:
            return np.arange(i0, i1)
        return i0 + np.flatnonzero(self._eff_end(i0, i1) > lo)

    def columns(self, positions: np.ndarray) -> dict[str, np.ndarray]:
        """Columns of the events at local ``positions`` (names as local codes)."""
        p = np.asarray(positions, dtype=np.int64)
        return {
            "start": self.start[p],
            "end": self.end[p],
            "eid": self.eid[p].astype(np.int64),
            "name": self.name[p].astype(np.int32),
            "kind": self.kind[p],
        }

    def _pattern(self, key: str, mask: np.ndarray) -> dict[str, Any]:
        with self._lock:
            cached = self._patterns.get(key)
            if cached is not None:
                self._patterns.move_to_end(key)
                return cached
            entry: dict[str, Any] = {"name_mask": mask, "row_cum": {}, "summary_cum": None, "row_starts": {}}
            self._patterns[key] = entry
            while len(self._patterns) > 4:
                self._patterns.popitem(last=False)
            return entry

    def _row_match_cum(self, match: dict[str, Any], r: _Row) -> np.ndarray:
        cm = match["row_cum"].get(r.info.id)
        if cm is None:
            cm = np.concatenate(([0], np.cumsum(match["name_mask"][self.name[r.lo : r.hi]])))
            match["row_cum"][r.info.id] = cm
        return np.asarray(cm)

    def _name_colors_at(self, r: _Row, edges: np.ndarray) -> np.ndarray:
        """Name colour of the event covering each column's centre (NO_KIND where none does)."""
        mid = (edges[:-1] + edges[1:]) // 2
        j = _sorted_search(r.starts.a, mid, "right") - 1
        at = r.lo + np.maximum(j, 0)
        eff = np.maximum(self.end[at], self.start[at] + 1) if len(at) else at
        inside = (j >= 0) & (r.hi > r.lo) & (eff > mid)
        colors = self.name_colors[self.name[at]] if r.hi > r.lo else np.zeros(len(at), dtype=np.uint8)
        return np.where(inside, colors, NO_KIND).astype(np.uint8)

    def window(
        self,
        edges: np.ndarray,
        k: np.ndarray | None,
        cells: int,
        limit: int,
        rows: Sequence[int],
        summary: bool,
        pattern: tuple[str, np.ndarray] | None,
        with_name_colors: bool,
        with_columns: bool,
    ) -> _PartWindow:
        """Rows (local ids) and the summary over ``edges`` (see :meth:`TimelineIndex.window`).

        ``k``: grid indices of the edges on the fine grid of :meth:`tabulate`, or None;
        ``limit``: the most raw events a row may send; ``pattern``: (key, local name mask).
        """
        lo, hi = int(edges[0]), int(edges[-1])
        match = self._pattern(*pattern) if pattern is not None else None
        out: list[RowWindow] = []
        binned: list[tuple[int, _Row]] = []
        for row in rows:
            r = self._row(int(row))
            i0, i1 = self._candidates(r, lo, hi)
            pos = None
            if i1 - i0 <= limit:
                pos = np.arange(i0, i1) if r.disjoint else i0 + np.flatnonzero(self._eff_end(i0, i1) > lo)
            elif not r.disjoint and i1 - i0 <= 8 * limit:
                # Overlapping events: some candidates may end before the window; count exactly.
                pos = i0 + np.flatnonzero(self._eff_end(i0, i1) > lo)
                pos = pos if len(pos) <= limit else None
            if pos is not None:
                m = match["name_mask"][self.name[pos]] if match is not None else None
                out.append(RowWindow(row=r.info.id, mode="raw", events=pos, matches=m))
            else:
                binned.append((len(out), r))
                out.append(RowWindow(row=r.info.id, mode="bins"))
        items: list[_Binned] = [(r.all, r.kinds, r.single_kind, r.starts) for _, r in binned]
        s = self.summary
        if summary:
            items.append((s.all, s.kinds, _single(s.kinds), s.starts))
        sum_out = None
        if items:
            cov, kind, first = _bin_batch(items, edges, k, cells)
            for j, (slot, r) in enumerate(binned):
                matches = None
                if match is not None:
                    matches = np.diff(self._row_match_cum(match, r)[first[j]]).astype(np.uint32)
                out[slot] = RowWindow(
                    row=r.info.id,
                    mode="bins",
                    coverage_ns=cov[j],
                    kind=kind[j],
                    count=np.diff(first[j]).astype(np.uint32),
                    matches=matches,
                    name_color=self._name_colors_at(r, edges) if with_name_colors else None,
                )
            if summary:
                j = len(binned)
                matches = None
                if match is not None:
                    cm = match["summary_cum"]
                    if cm is None:
                        cm = np.concatenate(([0], np.cumsum(match["name_mask"][self.name[s.positions]])))
                        match["summary_cum"] = cm
                    matches = np.diff(cm[first[j]]).astype(np.uint32)
                sum_out = RowWindow(
                    row=self.rank,
                    mode="bins",
                    coverage_ns=cov[j],
                    kind=kind[j],
                    count=np.diff(first[j]).astype(np.uint32),
                    matches=matches,
                )
        if not with_columns:
            return _PartWindow(rows=out, summary=sum_out)
        raw = [r.events for r in out if r.mode == "raw" and r.events is not None and len(r.events)]
        pos = np.unique(np.concatenate(raw)) if raw else np.empty(0, dtype=np.int64)
        return _PartWindow(rows=out, summary=sum_out, positions=pos, columns=self.columns(pos))

    def count_matches(self, pattern: tuple[str, np.ndarray], rows: Sequence[int]) -> int:
        match = self._pattern(*pattern)
        return sum(int(self._row_match_cum(match, self._row(int(r)))[-1]) for r in rows)

    def find(
        self, pattern: tuple[str, np.ndarray], t: float, direction: int, rows: Sequence[int] | None
    ) -> tuple[int, int, int, dict[str, np.ndarray]] | None:
        """The first match after ``t`` (or last before it) among ``rows``: (start, row, position, columns).

        Ties in start time go to the lower row.
        """
        match = self._pattern(*pattern)
        best: tuple[float, int, int] | None = None
        for row in range(len(self.rows)) if rows is None else rows:
            r = self._row(int(row))
            starts = match["row_starts"].get(r.info.id)
            if starts is None:
                pos = r.lo + np.flatnonzero(match["name_mask"][self.name[r.lo : r.hi]])
                starts = (self.start[pos], pos)
                match["row_starts"][r.info.id] = starts
            s, pos = starts
            if len(s) == 0:
                continue
            if direction >= 0:
                k = int(np.searchsorted(s, t, side="right"))
                if k >= len(s):
                    continue
                cand = (float(s[k]), r.info.id, int(pos[k]))
                if best is None or cand[:2] < best[:2]:
                    best = cand
            else:
                k = int(np.searchsorted(s, t, side="left")) - 1
                if k < 0:
                    continue
                cand = (float(s[k]), -r.info.id, int(pos[k]))
                if best is None or cand[:2] > best[:2]:
                    best = cand
        if best is None:
            return None
        p = best[2]
        return int(self.start[p]), abs(best[1]), p, self.columns(np.array([p]))

    def position_of(self, eid: int) -> int | None:
        """Local position of event ``eid`` (None if not drawn)."""
        hits = np.flatnonzero(self.eid == eid)
        return int(hits[0]) if len(hits) else None

    def row_at(self, position: int) -> int:
        """Local row of the event at local ``position``."""
        return int(np.searchsorted(self.row_ptr, position, side="right") - 1)

    def details(self, eid: int) -> dict[str, Any]:
        """:meth:`TimelineIndex.details` with local row ids (None if not drawn)."""
        d = self.data
        ev = d.events
        i = _row_of_eid(ev, eid)
        if i is None:
            raise TraceSelectionError(f"rank {self.rank} has no event with eid {eid}")
        rec = ev.iloc[i]
        pos = self.position_of(eid)
        kc = _fixed_codes(ev["kind"].iloc[i : i + 1], KIND_CATEGORIES)
        gc = _fixed_codes(ev["gpu_class"].iloc[i : i + 1], GPU_CLASS_CATEGORIES)
        out: dict[str, Any] = {
            "rank": self.rank,
            "eid": int(eid),
            "name": str(rec["name"]),
            "kind": KINDS[int(kind_codes(kc, gc)[0])],
            "event_kind": str(rec["kind"]),
            "start": int(rec["ts_ns"]) - self.t0_ns,
            "start_ns": int(rec["ts_ns"]),
            "dur_ns": int(rec["dur_ns"]),
            "device": int(rec["device"]),
            "stream": int(rec["stream"]),
            "pid": int(rec["pid"]),
            "tid": int(rec["tid"]),
            "step": int(rec["step"]),
            "row": None if pos is None else self.row_at(pos),
        }
        ga = d.gpu_args
        j = _row_of_eid(ga, eid)
        if j is not None:
            g = ga.iloc[j]
            if int(g["grid_x"]) >= 0:
                out["grid"] = [int(g["grid_x"]), int(g["grid_y"]), int(g["grid_z"])]
                out["block"] = [int(g["block_x"]), int(g["block_y"]), int(g["block_z"])]
            for col in ("registers_per_thread", "shared_memory_bytes", "bytes"):
                if int(g[col]) >= 0:
                    out[col] = int(g[col])
            for col in ("occupancy_pct", "bandwidth_gbps"):
                if not pd.isna(g[col]):
                    out[col] = float(g[col])
            if not pd.isna(g["copy_kind"]):
                out["copy_kind"] = str(g["copy_kind"])
        cm = d.comms
        j = _row_of_eid(cm, eid)
        if j is not None:
            c = cm.iloc[j]
            out["collective"] = {
                "collective": str(c["collective"]),
                "dtype": None if pd.isna(c["dtype"]) else str(c["dtype"]),
                "in_nelems": int(c["in_nelems"]),
                "out_nelems": int(c["out_nelems"]),
                "group_size": int(c["group_size"]),
            }
        launch = int(rec["launch_eid"])
        parent = int(rec["parent_eid"])
        if launch >= 0:
            k = _row_of_eid(ev, launch)
            if k is not None:
                lrec = ev.iloc[k]
                lpos = self.position_of(launch)
                out["launch"] = {
                    "eid": launch,
                    "name": str(lrec["name"]),
                    "start": int(lrec["ts_ns"]) - self.t0_ns,
                    "dur_ns": int(lrec["dur_ns"]),
                    "row": None if lpos is None else self.row_at(lpos),
                }
                parent = int(lrec["parent_eid"])
        if parent >= 0:
            k = _row_of_eid(ev, parent)
            if k is not None:
                out["operator"] = {"eid": parent, "name": str(ev["name"].iloc[k])}
        return out

    def range_summary(self, lo: int, hi: int) -> dict[str, Any]:
        """This rank's share of :meth:`TimelineIndex.range_summary` (names as local codes)."""
        s = self.summary
        busy = {code: cov.total(lo, hi) for code, cov in s.kinds.items()}
        events: dict[int, int] = {}
        name_time: list[tuple[int, int]] = []
        k1 = int(np.searchsorted(s.starts.a, hi, side="left"))
        pos = s.positions[:k1]
        # Events starting before hi that overlap: end > lo (or an instant event at lo).
        st, en = self.start[pos], self.end[pos]
        sel = pos[(en > lo) | (st == lo)]
        if len(sel):
            kc = np.bincount(self.kind[sel], minlength=len(KINDS))
            events = {int(c): int(kc[c]) for c in np.flatnonzero(kc).tolist()}
            clipped = np.minimum(self.end[sel], hi) - np.maximum(self.start[sel], lo)
            nt = np.bincount(self.name[sel], weights=clipped, minlength=0)
            name_time = [(int(n), int(nt[n])) for n in np.flatnonzero(nt).tolist()]
        return {"source": s.source, "all": s.all.total(lo, hi), "busy": busy, "events": events, "names": name_time}


def build_rank_index(data: RankData, t0_ns: int) -> RankIndex:
    """The per-rank part of the timeline index of one rank's tables (times relative to ``t0_ns``).

    Module-level so that dask can run it where the rank lives:
    ``client.submit(build_rank_index, rank_data_future, t0_ns)``.
    """
    return RankIndex(data, t0_ns)


def _call_part(part: RankIndex, method: str, *args: Any) -> Any:
    """``part.method(*args)``: how the coordinator's calls run on dask workers."""
    return getattr(part, method)(*args)


# ---------------------------------------------------------------------- where the parts live
class _LocalParts:
    """Parts held in this process (an ordinary trace): calls are plain method calls."""

    local = True

    def __init__(self, parts: dict[int, RankIndex]) -> None:
        self.parts = parts

    @classmethod
    def build(cls, trace: Trace, t0_ns: int) -> _LocalParts:
        return cls({r: build_rank_index(trace.rank_data(r), t0_ns) for r in trace.ranks})

    def call(self, method: str, args: dict[int, tuple[Any, ...]]) -> dict[int, Any]:
        return {r: getattr(self.parts[r], method)(*a) for r, a in args.items()}

    def tabulate(self, grid_end: int, cells: int, min_size: int) -> None:
        for p in self.parts.values():
            p.tabulate(grid_end, cells, min_size)


class _DaskParts:
    """Parts held on the dask workers that hold the ranks (futures): one task per rank and call."""

    local = False

    def __init__(self, client: Any, futures: dict[int, Any]) -> None:
        self.client = client
        self.futures = futures

    @classmethod
    def build(cls, trace: Trace, t0_ns: int) -> _DaskParts:
        return cls(trace.client, trace.keep_on_workers(build_rank_index, t0_ns))

    def call(self, method: str, args: dict[int, tuple[Any, ...]]) -> dict[int, Any]:
        c = self.client
        futures = [c.submit(_call_part, self.futures[r], method, *a, pure=False) for r, a in args.items()]
        return dict(zip(args, c.gather(futures), strict=True))

    def tabulate(self, grid_end: int, cells: int, min_size: int) -> None:
        c = self.client
        self.futures = {
            r: c.submit(_call_part, f, "tabulate", grid_end, cells, min_size, pure=False)
            for r, f in self.futures.items()
        }
        # Wait for them without bringing the parts here; a failed task raises its error.
        from distributed import wait

        wait(list(self.futures.values()))
        for f in self.futures.values():
            if f.status == "error":
                f.result()


def _parts_of(trace: Trace, t0_ns: int) -> _LocalParts | _DaskParts:
    if trace.client is not None:
        return _DaskParts.build(trace, t0_ns)
    return _LocalParts.build(trace, t0_ns)


class EventColumn:
    """One column of the index's drawn events, by position (see :meth:`TimelineIndex.event_columns`).

    Indexed like a numpy array (an integer, a slice, an array of positions or a boolean
    mask) and converted to one by ``np.asarray``; the values are fetched from the ranks'
    parts, where they live. Positions run rank by rank, row by row, by start within a row.
    """

    __slots__ = ("_index", "_name")

    def __init__(self, index: TimelineIndex, name: str) -> None:
        self._index = index
        self._name = name

    def __len__(self) -> int:
        return self._index._n

    def __repr__(self) -> str:
        return f"<EventColumn {self._name!r} of {len(self):,} events>"

    def __getitem__(self, key: Any) -> Any:
        n = len(self)
        if isinstance(key, (int, np.integer)):
            p = int(key) + (n if int(key) < 0 else 0)
            if not 0 <= p < n:
                raise IndexError(f"event position {int(key)} out of range for {n} events")
            return self._index.event_columns(np.array([p]))[self._name][0]
        if isinstance(key, slice):
            pos = np.arange(*key.indices(n))
        else:
            pos = np.asarray(key)
            if pos.dtype == bool:
                if pos.shape != (n,):
                    raise IndexError(f"boolean mask of shape {pos.shape} for {n} events")
                pos = np.flatnonzero(pos)
        return self._index.event_columns(pos)[self._name]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        a = self[:]
        return a if dtype is None else a.astype(dtype)


class TimelineIndex:
    """Rows and level-of-detail window queries over a :class:`~jupyter_traceview.Trace`.

    Build it once per trace with :meth:`of` (cached on the trace) or the constructor. On a
    trace loaded with ``engine="dask"`` the per-rank parts are built and kept on the workers
    that hold the ranks; this object keeps only what does not grow with the number of
    events per rank (see the module docstring).

    Events are addressed by *position*: positions run rank by rank, row by row (see
    :attr:`row_ptr`), by start within a row. :attr:`start`, :attr:`end`, :attr:`eid`,
    :attr:`name` (index into :attr:`names`), :attr:`kind` (colour kind code) and
    :attr:`rank` are the columns by position (:class:`EventColumn`).
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.t0_ns = int(trace.t0_ns)
        self._parts = _parts_of(trace, self.t0_ns)
        ranks = list(trace.ranks)
        infos: dict[int, _RankInfo] = self._parts.call("info", {r: () for r in ranks})
        names: dict[str, int] = {"": 0}  # "" names events without one
        rows: list[RowInfo] = []
        lanes: list[LaneInfo] = []
        self._row_key: dict[tuple[int, str, int, int, int], int] = {}
        self._name_map: dict[int, np.ndarray] = {}
        self._row_base: dict[int, int] = {}
        self._rank_names: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        offsets = [0]
        steps: dict[int, tuple[int, int]] = {}
        kinds: set[int] = set()
        self._sources: dict[int, str] = {}
        end_ns = 0
        disjoint: list[np.ndarray] = []
        for rank in ranks:
            info = infos.pop(rank)
            nmap = np.array([names.setdefault(n, len(names)) for n in info.names], dtype=np.int32)
            self._name_map[rank] = nmap
            present = np.flatnonzero(info.name_counts)
            self._rank_names[rank] = _merge_counts(nmap[present], info.name_counts[present])
            row_base, lane_base = len(rows), len(lanes)
            self._row_base[rank] = row_base
            rows += [RowInfo(r.id + row_base, rank, r.lane + lane_base, r.depth, r.type, r.events) for r in info.rows]
            lanes += [
                LaneInfo(
                    id=ln.id + lane_base,
                    rank=rank,
                    type=ln.type,
                    device=ln.device,
                    stream=ln.stream,
                    pid=ln.pid,
                    tid=ln.tid,
                    label=ln.label,
                    rows=tuple(x + row_base for x in ln.rows),
                )
                for ln in info.lanes
            ]
            for j, (rtype, a, b, depth) in enumerate(info.row_keys):
                self._row_key[(rank, rtype, a, b, depth)] = row_base + j
            offsets.append(offsets[-1] + info.events)
            for st, (a, b) in info.steps.items():
                old = steps.get(st)
                steps[st] = (a, b) if old is None else (min(old[0], a), max(old[1], b))
            kinds.update(info.kinds)
            disjoint.append(info.disjoint)
            self._sources[rank] = info.source
            end_ns = max(end_ns, info.end_ns)
        self.names: list[str] = list(names)
        self.name_colors = np.array([name_color_index(n) for n in self.names], dtype=np.uint8)
        self.rows: list[RowInfo] = rows
        self.lanes: list[LaneInfo] = lanes
        self.row_ptr = np.concatenate(([0], np.cumsum([r.events for r in rows], dtype=np.int64))).astype(np.int64)
        self._disjoint = np.concatenate(disjoint) if disjoint else np.empty(0, dtype=bool)
        self._row_rank = np.array([r.rank for r in rows], dtype=np.int64)
        self._ranks = np.asarray(ranks, dtype=np.int32)
        self._offsets = np.asarray(offsets, dtype=np.int64)
        self._offset_of = {r: int(o) for r, o in zip(ranks, offsets, strict=False)}
        self._n = int(offsets[-1])
        self._steps = sorted((st, a, b) for st, (a, b) in steps.items())
        self._kinds = sorted(kinds)
        self.end_ns = int(end_ns)
        self._patterns: OrderedDict[str, np.ndarray] = OrderedDict()
        self._recent: list[dict[int, tuple[np.ndarray, dict[str, np.ndarray]]]] = []
        self._build_grid()
        self.start = EventColumn(self, "start")
        self.end = EventColumn(self, "end")
        self.eid = EventColumn(self, "eid")
        self.name = EventColumn(self, "name")
        self.kind = EventColumn(self, "kind")
        self.rank = EventColumn(self, "rank")

    def _build_grid(self) -> None:
        """The grids over the trace: the ranks tabulate their big tracks on the fine one; the
        coordinator keeps each rank's summary at the points of the coarse one."""
        end = max(self.end_ns, 1)
        self._grid_end = end
        self._grid_cells = GRID_CELLS
        self._coarse_cells = max(1, GRID_CELLS // SUMMARY_GRID_DIVISOR)
        # Grid points are (k * end) // GRID_CELLS: at least 1 ns apart, and k * end far from
        # int64 overflow (traces up to ~200 days).
        self._grid_ok = GRID_CELLS <= end < 2**62 // (8 * GRID_CELLS)
        self._views: dict[int, _Binned] = {}
        if not self._grid_ok:
            return
        self._parts.tabulate(end, self._grid_cells, GRID_MIN)
        keep = max(1, self._coarse_cells // 4)
        args = {int(r): (end, self._coarse_cells, keep) for r in self._ranks.tolist()}
        self._views = self._parts.call("summary_view", args)

    # ------------------------------------------------------------------ building
    @classmethod
    def of(cls, trace: Trace) -> TimelineIndex:
        """The index of ``trace``, built on first use and kept with the trace."""
        # The trace's memo holds derived data that lives as long as the trace.
        index = trace._cached("timeline_index", lambda: cls(trace))
        return index if isinstance(index, cls) else cls(trace)

    # ------------------------------------------------------------------ metadata
    @property
    def kinds_present(self) -> list[str]:
        """Colour kinds that occur in the trace, in palette order."""
        return [KINDS[c] for c in self._kinds]

    def steps(self) -> list[tuple[int, int, int]]:
        """ProfilerStep spans: ``(step, start, end)`` (relative ns), earliest start and latest end over ranks.

        Read from the ``ProfilerStep#N`` annotations drawn on the CPU rows (cheaper than
        ``trace.iterations`` and consistent with what the timeline shows).
        """
        return list(self._steps)

    def row_of(self, rank: int, type: RowType, a: int, b: int, depth: int) -> int | None:
        """Row id of (rank, gpu, device, stream, depth) or (rank, cpu, pid, tid, depth)."""
        return self._row_key.get((rank, type, a, b, depth))

    def event_columns(self, positions: np.ndarray) -> dict[str, np.ndarray]:
        """Columns of the events at ``positions`` (start and end relative to :attr:`t0_ns`).

        Keys ``start``, ``end``, ``eid`` (int64), ``name`` (int32 into :attr:`names`),
        ``kind`` (uint8 colour kind code), ``rank`` (int32).
        """
        pos = np.asarray(positions, dtype=np.int64).reshape(-1)
        n = len(pos)
        out = {c: np.empty(n, dtype=t) for c, t in _COLUMNS.items()}
        out["rank"] = np.empty(n, dtype=np.int32)
        if n == 0:
            return out
        if int(pos.min()) < 0 or int(pos.max()) >= self._n:
            raise IndexError(f"event positions must be in [0, {self._n}), got [{int(pos.min())}, {int(pos.max())}]")
        ri = np.searchsorted(self._offsets, pos, side="right") - 1
        out["rank"][:] = self._ranks[ri]
        groups = _groups(ri)
        wanted = {int(self._ranks[i]): pos[sel] - self._offsets[i] for i, sel in groups}
        cols = self._columns_of(wanted)
        for i, sel in groups:
            rank = int(self._ranks[i])
            got = cols[rank]
            for c in ("start", "end", "eid", "kind"):
                out[c][sel] = got[c]
            out["name"][sel] = self._name_map[rank][got["name"]]
        return out

    def _columns_of(self, wanted: dict[int, np.ndarray]) -> dict[int, dict[str, np.ndarray]]:
        """Columns (local names) of local positions per rank: remembered ones, else from the parts."""
        if isinstance(self._parts, _LocalParts):
            return {r: self._parts.parts[r].columns(p) for r, p in wanted.items()}
        out: dict[int, dict[str, np.ndarray]] = {}
        for rank, p in wanted.items():
            got = self._remembered(rank, p)
            if got is not None:
                out[rank] = got
        missing = {r: (p,) for r, p in wanted.items() if r not in out}
        if missing:
            out.update(self._parts.call("columns", missing))
        return out

    def _remember(self, blocks: dict[int, tuple[np.ndarray, dict[str, np.ndarray]]]) -> None:
        """Keep the columns that came back with a window or a search (parts on dask), for
        the :meth:`event_columns` call that follows; the last few answers only."""
        if blocks:
            self._recent.append(blocks)
            del self._recent[:-4]

    def _remembered(self, rank: int, local: np.ndarray) -> dict[str, np.ndarray] | None:
        for blocks in reversed(self._recent):
            block = blocks.get(rank)
            if block is None or len(block[0]) == 0:
                continue
            have, cols = block
            idx = np.minimum(np.searchsorted(have, local), len(have) - 1)
            if np.array_equal(have[idx], local):
                return {c: v[idx] for c, v in cols.items()}
        return None

    def row_disjoint(self, row: int) -> bool:
        """True when a row's events do not overlap each other (well-nested traces)."""
        return bool(self._disjoint[self._check_row(row)])

    def row_events(self, row: int) -> np.ndarray:
        """Positions of all events of a row."""
        self._check_row(row)
        return np.arange(self.row_ptr[row], self.row_ptr[row + 1])

    def _check_row(self, row: int) -> int:
        if not 0 <= row < len(self.rows):
            raise TraceSelectionError(f"unknown timeline row {row}; rows are 0..{len(self.rows) - 1}")
        return int(row)

    def _check_rank(self, rank: int) -> int:
        if rank not in self._offset_of:
            raise TraceSelectionError.unknown("rank", rank, self.trace.ranks)
        return int(rank)

    def _local_row(self, row: int) -> tuple[int, int]:
        """(rank, local row id) of a row."""
        info = self.rows[self._check_row(int(row))]
        return info.rank, info.id - self._row_base[info.rank]

    def _by_rank(self, rows: Iterable[int]) -> dict[int, list[int]]:
        """Local row ids grouped by rank, ranks in trace order, rows in the order given."""
        grouped: dict[int, list[int]] = {}
        for row in rows:
            rank, local = self._local_row(int(row))
            grouped.setdefault(rank, []).append(local)
        return {r: grouped[r] for r in sorted(grouped)}

    # ------------------------------------------------------------------ queries
    @staticmethod
    def edges(lo: int, hi: int, width: int) -> np.ndarray:
        """Integer bin edges splitting ``[lo, hi)`` into ``width`` columns as evenly as ns allow."""
        return lo + (np.arange(width + 1, dtype=np.int64) * (hi - lo)) // width

    def overlapping(self, row: int, lo: int, hi: int) -> np.ndarray:
        """Positions of a row's events overlapping ``[lo, hi)``, in start order.

        The rule of :meth:`Trace.select`: ``start < hi`` and (``end > lo`` or ``start == lo``
        for an instant event), so an event is never lost or counted twice at a window edge.
        """
        rank, local = self._local_row(row)
        got = self._parts.call("overlapping", {rank: (local, int(lo), int(hi))})[rank]
        return np.asarray(got, dtype=np.int64) + self._offset_of[rank]

    def window(
        self,
        lo: int,
        hi: int,
        width: int,
        *,
        rows: Iterable[int] = (),
        summaries: Iterable[int] = (),
        lod: LevelOfDetail | None = None,
        pattern: str | None = None,
        with_name_colors: bool = False,
    ) -> Window:
        """Rows and rank summaries over ``[lo, hi)`` (ns relative to :attr:`t0_ns`) at ``width`` px.

        Parameters
        ----------
        lo, hi
            The window, ns relative to :attr:`t0_ns`; ``hi > lo``.
        width
            Pixel columns: the bins of binned rows, and the scale of the raw/binned decision.
        rows
            Row ids (see :attr:`rows`).
        summaries
            Ranks whose summary row is wanted.
        lod
            When to send raw events (default :class:`LevelOfDetail`).
        pattern
            A search pattern (:func:`compile_pattern`): matches are flagged.
        with_name_colors
            Also give binned rows the name colour of the event at each column's centre.

        Zoomed far out (each column spanning at least :data:`SNAP_CELLS` cells of a grid over
        the trace) the bin edges snap to the grid's points, moving by at most
        ``1 / (2 * SNAP_CELLS)`` of a column; the answer's ``lo``, ``hi`` and ``edges`` say
        where they are.
        """
        lo, hi, width = int(lo), int(hi), int(width)
        if hi <= lo:
            raise ValueError(f"window: need hi > lo, got [{lo}, {hi})")
        if width < 1:
            raise ValueError(f"window: width must be at least 1 pixel, got {width}")
        lod = lod or LevelOfDetail()
        limit = max(1, int(width * lod.raw_events_per_px))
        edges = self.edges(lo, hi, width)
        k_fine = k_coarse = None
        if self._grid_ok:
            end, fine, coarse = self._grid_end, self._grid_cells, self._coarse_cells
            # Zoomed out: bins span several grid cells; snap their edges to grid points (a
            # shift of at most 1/(2 * SNAP_CELLS) of a pixel), where big tracks are tabulated.
            if (hi - lo) >= SNAP_CELLS * width * end / coarse:
                k_coarse = np.rint(edges.astype(np.float64) * (coarse / end)).astype(np.int64)
                edges = (k_coarse * end) // coarse
                k_fine = k_coarse * (fine // coarse)
            elif (hi - lo) >= SNAP_CELLS * width * end / fine:
                k_fine = np.rint(edges.astype(np.float64) * (fine / end)).astype(np.int64)
                edges = (k_fine * end) // fine
            lo, hi = int(edges[0]), int(edges[-1])
        row_ids = [self._check_row(int(r)) for r in rows]
        sum_ranks = [self._check_rank(int(r)) for r in summaries]
        # Collapsed ranks zoomed out: answered here, from the summaries kept at the coarse grid.
        here = k_coarse is not None and pattern is None
        by_rank = self._by_rank(row_ids)
        wanted = set() if here else set(sum_ranks)
        asked = set(by_rank) | wanted
        remote = not isinstance(self._parts, _LocalParts)
        args = {
            r: (
                edges,
                k_fine,
                self._grid_cells,
                limit,
                by_rank.get(r, []),
                r in wanted,
                None if pattern is None else (pattern, self._local_mask(pattern, r)),
                with_name_colors,
                remote,
            )
            for r in sorted(asked)
        }
        answers: dict[int, _PartWindow] = self._parts.call("window", args) if args else {}
        if remote:
            self._remember(
                {
                    r: (a.positions, a.columns)
                    for r, a in answers.items()
                    if a.positions is not None and a.columns is not None and len(a.positions)
                }
            )
        out = Window(lo=lo, hi=hi, edges=edges)
        slot = dict.fromkeys(answers, 0)
        for row in row_ids:
            rank = int(self._row_rank[row])
            rw = answers[rank].rows[slot[rank]]
            slot[rank] += 1
            if rw.events is not None:
                rw = RowWindow(
                    row=row, mode=rw.mode, events=rw.events.astype(np.int64) + self._offset_of[rank], matches=rw.matches
                )
            else:
                rw = _with_row(rw, row)
            out.rows.append(rw)
        if here and sum_ranks:
            items = [self._views[r] for r in sum_ranks]
            cov, kind, first = _bin_batch(items, edges, k_coarse, self._coarse_cells)
            out.summaries.extend(
                RowWindow(
                    row=r,
                    mode="bins",
                    coverage_ns=cov[j],
                    kind=kind[j],
                    count=np.diff(first[j]).astype(np.uint32),
                )
                for j, r in enumerate(sum_ranks)
            )
        else:
            for r in sum_ranks:
                s = answers[r].summary
                assert s is not None
                out.summaries.append(s)
        return out

    # ------------------------------------------------------------------ search
    def _name_mask(self, pattern: str) -> np.ndarray:
        mask = self._patterns.get(pattern)
        if mask is None:
            rx = compile_pattern(pattern)
            mask = np.fromiter((bool(rx.search(n)) for n in self.names), dtype=bool, count=len(self.names))
            self._patterns[pattern] = mask
            while len(self._patterns) > 4:
                self._patterns.popitem(last=False)
        else:
            self._patterns.move_to_end(pattern)
        return mask

    def _local_mask(self, pattern: str, rank: int) -> np.ndarray:
        return self._name_mask(pattern)[self._name_map[rank]]

    def _rank_matches(self, pattern: str, rank: int) -> int:
        codes, counts = self._rank_names[rank]
        return int(counts[self._name_mask(pattern)[codes]].sum())

    def name_mask(self, pattern: str) -> np.ndarray:
        """One boolean per name of :attr:`names`: does ``pattern`` match it."""
        return self._name_mask(pattern).copy()

    def matching_names(self, pattern: str) -> list[str]:
        """Names (in the trace) that ``pattern`` matches."""
        mask = self._name_mask(pattern)
        return [n for n, m in zip(self.names, mask, strict=True) if m]

    def count_matches(self, pattern: str, *, rows: Iterable[int] | None = None) -> int:
        """Number of events whose name matches ``pattern`` (in ``rows``, default all)."""
        if rows is None:
            return sum(self._rank_matches(pattern, int(r)) for r in self._ranks.tolist())
        by_rank = self._by_rank(rows)
        args = {r: ((pattern, self._local_mask(pattern, r)), ids) for r, ids in by_rank.items()}
        args = {r: a for r, a in args.items() if self._rank_matches(pattern, r)}
        return sum(self._parts.call("count_matches", args).values())

    def find(self, pattern: str, t: float, *, direction: int = 1, rows: Iterable[int] | None = None) -> int | None:
        """Position of the matching event starting first after ``t`` (``direction=1``) or last before it (-1).

        Among ``rows`` (default all); ties in start time go to the lower row. None if no match.
        """
        if rows is None:
            by_rank: dict[int, list[int] | None] = {int(r): None for r in self._ranks.tolist()}
        else:
            by_rank = dict(self._by_rank(rows))
        args = {
            r: ((pattern, self._local_mask(pattern, r)), float(t), int(direction), ids)
            for r, ids in by_rank.items()
            if self._rank_matches(pattern, r)
        }
        best: tuple[tuple[float, int], int, int, dict[str, np.ndarray]] | None = None
        for rank, got in self._parts.call("find", args).items():
            if got is None:
                continue
            start, local_row, local_pos, cols = got
            row = self._row_base[rank] + local_row
            key = (float(start), row) if direction >= 0 else (float(start), -row)
            if best is None or (key < best[0] if direction >= 0 else key > best[0]):
                best = (key, rank, local_pos, cols)
        if best is None:
            return None
        _, rank, local_pos, cols = best
        if not isinstance(self._parts, _LocalParts):
            self._remember({rank: (np.array([local_pos], dtype=np.int64), cols)})
        return self._offset_of[rank] + local_pos

    # ------------------------------------------------------------------ event lookup
    def position_of(self, rank: int, eid: int) -> int | None:
        """Position in the event arrays of event ``eid`` of ``rank`` (None if not drawn)."""
        if rank not in self._offset_of:
            return None
        local = self._parts.call("position_of", {rank: (int(eid),)})[rank]
        return None if local is None else self._offset_of[rank] + int(local)

    def row_at(self, position: int) -> int:
        """Row id of the event at ``position``."""
        return int(np.searchsorted(self.row_ptr, position, side="right") - 1)

    def details(self, rank: int, eid: int) -> dict[str, Any]:
        """What the tooltip and the selection show about one event (JSON-able).

        Keys: ``rank``, ``eid``, ``name``, ``kind`` (colour kind), ``event_kind``,
        ``start`` (ns relative to :attr:`t0_ns`), ``start_ns`` (absolute), ``dur_ns``,
        ``device``, ``stream``, ``pid``, ``tid``, ``step``, ``row`` (None if not drawn), and
        where they apply ``grid``, ``block``, ``registers_per_thread``,
        ``shared_memory_bytes``, ``occupancy_pct``, ``bytes``, ``bandwidth_gbps``,
        ``copy_kind``, ``collective``, ``launch`` (the CPU call that launched a GPU
        activity: ``eid``, ``name``, ``start``, ``dur_ns``, ``row``), ``operator`` (the
        operator around that call, or the parent of a CPU event: ``eid``, ``name``).
        """
        rank = self._check_rank(int(rank))
        out: dict[str, Any] = self._parts.call("details", {rank: (int(eid),)})[rank]
        base = self._row_base[rank]
        if out["row"] is not None:
            out["row"] += base
        if "launch" in out and out["launch"]["row"] is not None:
            out["launch"]["row"] += base
        return out

    # ------------------------------------------------------------------ range summary
    def range_summary(self, lo: int, hi: int, *, ranks: Sequence[int] | None = None, top: int = 5) -> dict[str, Any]:
        """What happened in ``[lo, hi)`` (relative ns) on ``ranks`` (default all), per kind (JSON-able).

        Per colour kind summarised by the ranks' summary rows (GPU work, or top-level CPU
        events on CPU-only traces): ``busy_ns`` (time covered by that kind, summed over
        ranks), ``pct`` (``busy_ns`` over ``(hi - lo) x ranks``, 0-100) and ``events``
        (events overlapping the range). ``busy_ns`` and ``pct`` of ``"all"`` count time
        covered by any kind (overlaps counted once); ``top`` lists the names taking most
        (clipped) time in the range.
        """
        lo, hi = int(lo), int(hi)
        if hi <= lo:
            raise ValueError(f"range_summary: need hi > lo, got [{lo}, {hi})")
        ranks = list(self.trace.ranks if ranks is None else ranks)
        for r in ranks:
            self._check_rank(int(r))
        parts = self._parts.call("range_summary", {int(r): (lo, hi) for r in dict.fromkeys(ranks)})
        busy: dict[int, int] = {}
        events: dict[int, int] = {}
        all_busy = 0
        name_time: dict[int, int] = {}
        sources = set()
        for rank in ranks:
            p = parts[int(rank)]
            sources.add(p["source"])
            all_busy += p["all"]
            for code, t in p["busy"].items():
                busy[code] = busy.get(code, 0) + t
            for code, n in p["events"].items():
                events[code] = events.get(code, 0) + n
            nmap = self._name_map[int(rank)]
            for g, t in sorted((int(nmap[n]), t) for n, t in p["names"]):
                name_time[g] = name_time.get(g, 0) + t
        span = (hi - lo) * max(len(ranks), 1)
        kinds = [
            {
                "kind": KINDS[code],
                "busy_ns": busy.get(code, 0),
                "pct": 100.0 * busy.get(code, 0) / span,
                "events": events.get(code, 0),
            }
            for code in sorted(set(busy) | set(events))
        ]
        best = sorted(name_time.items(), key=lambda kv: -kv[1])[:top]
        return {
            "lo": lo,
            "hi": hi,
            "ranks": ranks,
            "source": "gpu" if sources == {"gpu"} else ("cpu" if sources == {"cpu"} else "mixed"),
            "all": {"busy_ns": all_busy, "pct": 100.0 * all_busy / span, "events": sum(events.values())},
            "kinds": kinds,
            "top": [{"name": self.names[n], "time_ns": t} for n, t in best],
        }

    # ------------------------------------------------------------------ memory
    def _local_arrays(self, root: Any = None) -> list[np.ndarray]:
        """Every numpy array this coordinator holds (or ``root`` holds), the ranks' parts and the trace excluded."""
        found: list[np.ndarray] = []
        seen: set[int] = set()

        def walk(o: Any) -> None:
            if id(o) in seen or o is self.trace or o is self._parts or isinstance(o, (str, bytes, int, float)):
                return
            seen.add(id(o))
            if isinstance(o, np.ndarray):
                found.append(o)
            elif isinstance(o, dict):
                for v in o.values():
                    walk(v)
            elif isinstance(o, (list, tuple, set)):
                for v in o:
                    walk(v)
            elif isinstance(o, (_Coverage, _Starts)):
                for s in o.__slots__:
                    walk(getattr(o, s))
            elif isinstance(o, (RowInfo, LaneInfo)):
                return
            elif hasattr(o, "__dict__") and not isinstance(o, EventColumn):
                for v in vars(o).values():
                    walk(v)

        walk(self.__dict__ if root is None else root)
        return found


def _merge_counts(codes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts per global name code (several local names may share one)."""
    u, inv = np.unique(codes, return_inverse=True)
    return u.astype(np.int32), np.bincount(inv, weights=counts, minlength=len(u)).astype(np.int64)


def _groups(ri: np.ndarray) -> list[tuple[int, Any]]:
    """(value, selector) per distinct value of ``ri``: a slice where ``ri`` is sorted."""
    if ri[0] == ri[-1] and (len(ri) < 3 or bool(np.all(ri == ri[0]))):
        return [(int(ri[0]), slice(None))]
    if bool(np.all(ri[1:] >= ri[:-1])):
        cuts = np.flatnonzero(np.diff(ri)) + 1
        bounds = [0, *cuts.tolist(), len(ri)]
        return [(int(ri[a]), slice(a, b)) for a, b in itertools.pairwise(bounds)]
    order = np.argsort(ri, kind="stable")
    sorted_ri = ri[order]
    cuts = np.flatnonzero(np.diff(sorted_ri)) + 1
    bounds = [0, *cuts.tolist(), len(ri)]
    return [(int(sorted_ri[a]), order[a:b]) for a, b in itertools.pairwise(bounds)]


def _with_row(rw: RowWindow, row: int) -> RowWindow:
    return RowWindow(
        row=row,
        mode=rw.mode,
        events=rw.events,
        coverage_ns=rw.coverage_ns,
        kind=rw.kind,
        count=rw.count,
        matches=rw.matches,
        name_color=rw.name_color,
    )


def _rank_rows(
    rank: int, ev: pd.DataFrame, thread_names: Iterable[tuple[int, int, str]]
) -> tuple[np.ndarray, np.ndarray, list[RowInfo], list[LaneInfo], list[tuple[RowType, int, int, int]]]:
    """A rank's lanes and rows (ids local to the rank).

    Returns the positions in ``ev`` of the events drawn, ordered by row then start, the
    number of events of each row, the rows, the lanes and each row's key (type, device or
    pid, stream or tid, depth).
    """
    rows: list[RowInfo] = []
    lanes: list[LaneInfo] = []
    keys: list[tuple[RowType, int, int, int]] = []
    idx = np.flatnonzero(_drawn(ev))
    device = ev["device"].to_numpy()[idx].astype(np.int64)
    depth = ev["depth"].to_numpy()[idx].astype(np.int64)
    is_dev = device >= 0
    # Lanes: GPU (device, stream) then CPU (pid, tid), sorted; rows: lane x depth.
    a = np.where(is_dev, device, ev["pid"].to_numpy()[idx])
    b = np.where(is_dev, ev["stream"].to_numpy()[idx], ev["tid"].to_numpy()[idx])
    # Group by hashing (O(n)), then order the few lanes and rows: no sort of the events
    # except a stable radix sort by row id.
    fa, ua = pd.factorize(a)
    fb, ub = pd.factorize(b)
    na, nb = max(len(ua), 1), max(len(ub), 1)
    lane_codes, lane_uniques = pd.factorize((~is_dev).astype(np.int64) * (na * nb) + fa.astype(np.int64) * nb + fb)
    lane_uniques = np.asarray(lane_uniques, dtype=np.int64)
    lane_cpu = lane_uniques // (na * nb)
    lane_a = np.asarray(ua, dtype=np.int64)[(lane_uniques % (na * nb)) // nb] if len(ua) else lane_uniques
    lane_b = np.asarray(ub, dtype=np.int64)[lane_uniques % nb] if len(ub) else lane_uniques
    lane_order = np.lexsort((lane_b, lane_a, lane_cpu))
    lane_rank = np.empty(len(lane_order), dtype=np.int64)
    lane_rank[lane_order] = np.arange(len(lane_order))
    lane_table = np.stack([lane_cpu[lane_order], lane_a[lane_order], lane_b[lane_order]], axis=1)
    lane_of = lane_rank[lane_codes] if len(lane_codes) else np.empty(0, dtype=np.int64)
    n_depth = int(depth.max(initial=0)) + 1
    row_codes, row_uniques = pd.factorize(lane_of * n_depth + depth)
    row_keys = np.sort(np.asarray(row_uniques, dtype=np.int64))
    row_rank = np.empty(len(row_keys), dtype=np.int64)
    row_rank[np.argsort(np.asarray(row_uniques, dtype=np.int64))] = np.arange(len(row_keys))
    row_of = row_rank[row_codes] if len(row_codes) else np.empty(0, dtype=np.int64)
    # numpy sorts 16-bit integers with a stable radix sort: O(n).
    order = np.argsort(row_of.astype(np.int16 if len(row_keys) < 2**15 else np.int64), kind="stable")
    row_sizes = np.bincount(row_of, minlength=len(row_keys)).astype(np.int64)
    names_of = {(p, t): n for p, t, n in thread_names}
    rows_of_lane: dict[int, list[tuple[int, int]]] = {}
    for j, key in enumerate(row_keys.tolist()):
        rows_of_lane.setdefault(key // n_depth, []).append((key % n_depth, j))
    for li, (is_cpu, la, lb) in enumerate(lane_table.tolist()):
        cpu = bool(is_cpu)
        rtype: RowType = "cpu" if cpu else "gpu"
        lane_id = len(lanes)
        row_ids = []
        for dep, j in rows_of_lane.get(li, []):
            rid = len(rows)
            rows.append(RowInfo(id=rid, rank=rank, lane=lane_id, depth=dep, type=rtype, events=int(row_sizes[j])))
            row_ids.append(rid)
            keys.append((rtype, la, lb, dep))
        if cpu:
            tname = names_of.get((la, lb))
            label = tname.strip() if tname else f"thread {lb}"
        else:
            label = f"GPU {la} · stream {lb}"
        lanes.append(
            LaneInfo(
                id=lane_id,
                rank=rank,
                type=rtype,
                device=-1 if cpu else la,
                stream=-1 if cpu else lb,
                pid=la,
                tid=lb,
                label=label,
                rows=tuple(row_ids),
            )
        )
    return idx[order], row_sizes, rows, lanes, keys


def _drawn(ev: pd.DataFrame) -> np.ndarray:
    """Events the timeline draws: all but memory records and instant markers of kind "other"."""
    codes = _fixed_codes(ev["kind"], KIND_CATEGORIES)
    skipped = np.isin(codes, [KIND_CATEGORIES.index(k) for k in _SKIPPED_KINDS])
    marker = (codes == KIND_CATEGORIES.index(EventKind.OTHER.value)) & (ev["dur_ns"].to_numpy() == 0)
    return np.asarray(~(skipped | marker))


def _fixed_codes(col: pd.Series, categories: Sequence[str]) -> np.ndarray:
    """Codes of a categorical column relative to the fixed ``categories`` (-1 for NaN)."""
    cat = col.array
    if not isinstance(cat, pd.Categorical):
        cat = pd.Categorical(col)
    own = list(cat.categories)
    if own == list(categories):
        return np.asarray(cat.codes, dtype=np.int64)
    lookup = np.array([categories.index(c) if c in categories else -1 for c in own] + [-1], dtype=np.int64)
    codes = np.asarray(cat.codes, dtype=np.int64)
    return lookup[np.where(codes >= 0, codes, len(own))]


def _row_of_eid(frame: pd.DataFrame, eid: int) -> int | None:
    """Position of ``eid`` in a frame sorted by its ``eid`` column (events, gpu_args, comms)."""
    eids = frame["eid"].to_numpy()
    k = int(np.searchsorted(eids, eid))
    if k < len(eids) and eids[k] == eid:
        return k
    hits = np.flatnonzero(eids == eid)  # not sorted (should not happen): linear fallback
    return int(hits[0]) if len(hits) else None
