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

Times inside the index are int64 ns relative to :attr:`TimelineIndex.t0_ns` (the trace's
first event): relative times stay exact in a JavaScript float64 for 104 days.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from . import intervals as iv
from .colors import KINDS, kind_code, kind_codes, name_color_index
from .errors import TraceSelectionError
from .schema import GPU_CLASS_CATEGORIES, KIND_CATEGORIES, EventKind
from .trace import Trace
from .trace_data import RankData

__all__ = ["LaneInfo", "LevelOfDetail", "RowInfo", "RowWindow", "TimelineIndex", "Window", "compile_pattern"]

RowType = Literal["gpu", "cpu"]
#: Kind code meaning "nothing here" in binned rows.
NO_KIND = 255
#: Event kinds not drawn: memory-allocation records and other instant markers.
_SKIPPED_KINDS = (EventKind.CPU_INSTANT_EVENT.value,)
#: Kinds that are not work in a rank summary (sync records, annotations).
_NOT_WORK = (kind_code("sync"), kind_code("annotation"))


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
#: Tracks with at least this many intervals (or events) get their values at the grid points.
GRID_MIN = 2048
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

    :func:`jupyter_traceview.intervals.binned_coverage` with the prefix sums computed once,
    so that each query costs O(bins x log n) instead of O(n); with ``grid`` (the covered
    time up to each grid point) a query on grid points costs O(bins).
    """

    __slots__ = ("cum", "e", "grid", "s")

    def __init__(self, s: np.ndarray, e: np.ndarray) -> None:
        self.s = s
        self.e = e
        self.cum = np.concatenate(([0], np.cumsum(e - s)))
        self.grid: np.ndarray | None = None

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

    __slots__ = ("a", "grid")

    def __init__(self, a: np.ndarray) -> None:
        self.a = a
        self.grid: np.ndarray | None = None

    def before(self, t: np.ndarray, k: np.ndarray | None = None, after: np.ndarray | None = None) -> np.ndarray:
        """How many start before each of the sorted times ``t``.

        ``k``: when ``t`` are grid points, their indices clipped to the grid; ``after`` flags
        the points beyond the grid's last (where everything has started).
        """
        if k is not None and self.grid is not None:
            out = np.asarray(self.grid[k])
            return out if after is None else np.where(after, len(self.a), out)
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


class TimelineIndex:
    """Rows and level-of-detail window queries over a :class:`~jupyter_traceview.Trace`.

    Build it once per trace with :meth:`of` (cached on the trace) or the constructor.
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.t0_ns = int(trace.t0_ns)
        names: dict[str, int] = {"": 0}  # "" names events without one
        rows: list[RowInfo] = []
        lanes: list[LaneInfo] = []
        self._row_key: dict[tuple[int, str, int, int, int], int] = {}
        self._rank_data: dict[int, RankData] = {}
        # Two passes: count what is drawn, then fill preallocated columns rank by rank.
        total = sum(int(_drawn(trace.rank_data(r).events).sum()) for r in trace.ranks)
        self.start = np.empty(total, dtype=np.int64)
        self.end = np.empty(total, dtype=np.int64)
        self.eid = np.empty(total, dtype=np.int64)
        self.name = np.empty(total, dtype=np.int32)
        self.kind = np.empty(total, dtype=np.uint8)
        self.rank = np.empty(total, dtype=np.int32)
        row_sizes: list[np.ndarray] = []
        at = 0
        for rank in trace.ranks:
            ev = trace.rank_data(rank).events
            sel, sizes = self._rank_rows(rank, ev, rows, lanes)
            n = len(sel)
            part = slice(at, at + n)
            ts = ev["ts_ns"].to_numpy()[sel]
            np.subtract(ts, self.t0_ns, out=self.start[part])
            np.add(self.start[part], ev["dur_ns"].to_numpy()[sel], out=self.end[part])
            self.eid[part] = ev["eid"].to_numpy()[sel]
            ncat = ev["name"].array
            local = np.array([names.setdefault(str(c), len(names)) for c in ncat.categories] + [0], dtype=np.int32)
            ncodes = np.asarray(ncat.codes)[sel]
            self.name[part] = local[np.where(ncodes >= 0, ncodes, len(local) - 1)]
            # Kind codes relative to the fixed categories (codes are stable, see schema).
            kcodes = _fixed_codes(ev["kind"], KIND_CATEGORIES)[sel]
            gcodes = _fixed_codes(ev["gpu_class"], GPU_CLASS_CATEGORIES)[sel]
            self.kind[part] = kind_codes(kcodes, gcodes)
            self.rank[part] = rank
            row_sizes.append(sizes)
            at += n
        self.names: list[str] = list(names)
        self.rows: list[RowInfo] = rows
        self.lanes: list[LaneInfo] = lanes
        sizes_all = np.concatenate(row_sizes) if row_sizes else np.empty(0, dtype=np.int64)
        self.row_ptr = np.concatenate(([0], np.cumsum(sizes_all))).astype(np.int64)
        self.end_ns = int(self.end.max()) if len(self.end) else 0
        eff_end = np.maximum(self.end, self.start + 1)
        self._maxend = np.empty_like(eff_end)
        self._rows: list[_Row] = []
        for info in rows:
            lo, hi = int(self.row_ptr[info.id]), int(self.row_ptr[info.id + 1])
            s, e = self.start[lo:hi], self.end[lo:hi]
            self._maxend[lo:hi] = np.maximum.accumulate(eff_end[lo:hi]) if hi > lo else eff_end[lo:hi]
            k = self.kind[lo:hi]
            present = np.flatnonzero(np.bincount(k, minlength=NO_KIND))
            kinds: dict[int, _Coverage] = {}
            if len(present) > 1:
                for code in present.tolist():
                    m = k == code
                    kinds[int(code)] = _coverage_of(s[m], e[m])
            self._rows.append(
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
        self._eff_end = eff_end
        self._summaries: dict[int, _Summary] = {}
        for rank in trace.ranks:
            self._summaries[rank] = self._summary(rank)
        self.name_colors = np.array([name_color_index(n) for n in self.names], dtype=np.uint8)
        self._patterns: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._build_grid()

    def _build_grid(self) -> None:
        """Values of the big tracks at the points of a uniform grid over the trace."""
        end = max(self.end_ns, 1)
        self._grid_end = end
        self._grid_cells = GRID_CELLS
        # Grid points are (k * end) // GRID_CELLS: at least 1 ns apart, and k * end far from
        # int64 overflow (traces up to ~200 days).
        self._grid_ok = GRID_CELLS <= end < 2**62 // (8 * GRID_CELLS)
        if not self._grid_ok:
            return
        points = (np.arange(GRID_CELLS + 1, dtype=np.int64) * end) // GRID_CELLS
        holders: list[tuple[list[_Coverage], _Starts]] = [
            ([r.all, *r.kinds.values()], r.starts) for r in self._rows
        ] + [([s.all, *s.kinds.values()], s.starts) for s in self._summaries.values()]
        for covs, starts in holders:
            for c in covs:
                if len(c.s) >= GRID_MIN and c.grid is None:
                    c.grid = c.until(points)
            if len(starts.a) >= GRID_MIN:
                starts.grid = starts.before(points)

    # ------------------------------------------------------------------ building
    @classmethod
    def of(cls, trace: Trace) -> TimelineIndex:
        """The index of ``trace``, built on first use and kept with the trace."""
        # The trace's memo holds derived data that lives as long as the trace.
        index = trace._cached("timeline_index", lambda: cls(trace))
        return index if isinstance(index, cls) else cls(trace)

    def _rank_rows(
        self, rank: int, ev: pd.DataFrame, rows: list[RowInfo], lanes: list[LaneInfo]
    ) -> tuple[np.ndarray, np.ndarray]:
        """A rank's lanes and rows (appended to ``rows`` and ``lanes``).

        Returns the positions in ``ev`` of the events drawn, ordered by row then start, and
        the number of events of each row.
        """
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
        thread_names = {(p, t): n for p, t, n in self.trace.meta(rank).thread_names}
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
                self._row_key[(rank, rtype, la, lb, dep)] = rid
            if cpu:
                tname = thread_names.get((la, lb))
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
        return idx[order], row_sizes

    def _summary(self, rank: int) -> _Summary:
        rows = [r for r in self._rows if r.info.rank == rank]
        gpu = [r for r in rows if r.info.type == "gpu"]
        pos_parts = [np.arange(r.lo, r.hi) for r in gpu]
        pos = np.concatenate(pos_parts) if pos_parts else np.empty(0, dtype=np.int64)
        pos = pos[~np.isin(self.kind[pos], _NOT_WORK)]
        source: Literal["gpu", "cpu"] = "gpu"
        if len(pos) == 0:
            source = "cpu"
            cpu = [r for r in rows if r.info.type == "cpu" and r.info.depth == 0]
            parts = [np.arange(r.lo, r.hi) for r in cpu]
            pos = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        s, e, k = self.start[pos], self.end[pos], self.kind[pos]
        order = np.argsort(s, kind="stable")
        pos, s, e, k = pos[order], s[order], e[order], k[order]
        present = np.flatnonzero(np.bincount(k, minlength=NO_KIND)).tolist() if len(k) else []
        kinds = {int(c): _coverage_of(s[k == c], e[k == c]) for c in present}
        u = iv.union(s, e)
        return _Summary(
            rank=rank, source=source, all=_Coverage(u[0], u[1]), kinds=kinds, starts=_Starts(s), positions=pos
        )

    # ------------------------------------------------------------------ metadata
    @property
    def kinds_present(self) -> list[str]:
        """Colour kinds that occur in the trace, in palette order."""
        present = np.unique(self.kind) if len(self.kind) else np.empty(0, dtype=np.uint8)
        return [KINDS[int(c)] for c in present]

    def steps(self) -> list[tuple[int, int, int]]:
        """ProfilerStep spans: ``(step, start, end)`` (relative ns), earliest start and latest end over ranks.

        Read from the ``ProfilerStep#N`` annotations drawn on the CPU rows (cheaper than
        ``trace.iterations`` and consistent with what the timeline shows).
        """
        rx = re.compile(r"^ProfilerStep#(\d+)$")
        step_of = np.full(len(self.names), -1, dtype=np.int64)
        for i, n in enumerate(self.names):
            m = rx.match(n)
            if m:
                step_of[i] = int(m.group(1))
        if not (step_of >= 0).any() or len(self.name) == 0:
            return []
        steps = step_of[self.name]
        sel = (steps >= 0) & np.isin(self.kind, [kind_code("annotation"), kind_code("cpu_op")])
        if not sel.any():
            return []
        frame = pd.DataFrame({"step": steps[sel], "start": self.start[sel], "end": self.end[sel]})
        g = frame.groupby("step", sort=True).agg(start=("start", "min"), end=("end", "max"))
        return [(int(st), int(a), int(b)) for st, a, b in zip(g.index, g["start"], g["end"], strict=True)]

    def row_of(self, rank: int, type: RowType, a: int, b: int, depth: int) -> int | None:
        """Row id of (rank, gpu, device, stream, depth) or (rank, cpu, pid, tid, depth)."""
        return self._row_key.get((rank, type, a, b, depth))

    def event_columns(self, positions: np.ndarray) -> dict[str, np.ndarray]:
        """Columns of the events at ``positions`` (start and end relative to :attr:`t0_ns`)."""
        return {
            "start": self.start[positions],
            "end": self.end[positions],
            "eid": self.eid[positions],
            "name": self.name[positions],
            "kind": self.kind[positions],
            "rank": self.rank[positions],
        }

    def row_events(self, row: int) -> np.ndarray:
        """Positions of all events of a row."""
        r = self._row(row)
        return np.arange(r.lo, r.hi)

    def _data_of(self, rank: int) -> RankData:
        """A rank's tables, fetched once (a distributed trace fetches them from its workers)."""
        d = self._rank_data.get(rank)
        if d is None:
            d = self.trace.rank_data(rank)
            self._rank_data[rank] = d
        return d

    def _row(self, row: int) -> _Row:
        if not 0 <= row < len(self._rows):
            raise TraceSelectionError(f"unknown timeline row {row}; rows are 0..{len(self._rows) - 1}")
        return self._rows[row]

    def _summary_of(self, rank: int) -> _Summary:
        try:
            return self._summaries[rank]
        except KeyError:
            raise TraceSelectionError.unknown("rank", rank, self.trace.ranks) from None

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
        r = self._row(row)
        i0, i1 = self._candidates(r, lo, hi)
        if r.disjoint:
            return np.arange(i0, i1)
        return i0 + np.flatnonzero(self._eff_end[i0:i1] > lo)

    def _candidates(self, r: _Row, lo: int, hi: int) -> tuple[int, int]:
        i0 = r.lo + int(np.searchsorted(self._maxend[r.lo : r.hi], lo, side="right"))
        i1 = r.lo + int(np.searchsorted(self.start[r.lo : r.hi], hi, side="left"))
        return i0, max(i0, i1)

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
        """
        lo, hi, width = int(lo), int(hi), int(width)
        if hi <= lo:
            raise ValueError(f"window: need hi > lo, got [{lo}, {hi})")
        if width < 1:
            raise ValueError(f"window: width must be at least 1 pixel, got {width}")
        lod = lod or LevelOfDetail()
        limit = max(1, int(width * lod.raw_events_per_px))
        edges = self.edges(lo, hi, width)
        k = None
        if self._grid_ok and (hi - lo) >= SNAP_CELLS * width * self._grid_end / self._grid_cells:
            # Zoomed out: bins span several grid cells; snap their edges to grid points (a
            # shift of at most 1/(2 * SNAP_CELLS) of a pixel), where big tracks are tabulated.
            k = np.rint(edges.astype(np.float64) * (self._grid_cells / self._grid_end)).astype(np.int64)
            edges = (k * self._grid_end) // self._grid_cells
            lo, hi = int(edges[0]), int(edges[-1])
        match = self._pattern(pattern) if pattern else None
        out = Window(lo=lo, hi=hi, edges=edges)
        binned: list[tuple[int, _Row]] = []
        for row in rows:
            r = self._row(int(row))
            i0, i1 = self._candidates(r, lo, hi)
            pos = None
            if i1 - i0 <= limit:
                pos = np.arange(i0, i1) if r.disjoint else i0 + np.flatnonzero(self._eff_end[i0:i1] > lo)
            elif not r.disjoint and i1 - i0 <= 8 * limit:
                # Overlapping events: some candidates may end before the window; count exactly.
                pos = i0 + np.flatnonzero(self._eff_end[i0:i1] > lo)
                pos = pos if len(pos) <= limit else None
            if pos is not None:
                m = match["name_mask"][self.name[pos]] if match is not None else None
                out.rows.append(RowWindow(row=r.info.id, mode="raw", events=pos, matches=m))
            else:
                binned.append((len(out.rows), r))
                out.rows.append(RowWindow(row=r.info.id, mode="bins"))
        sums = [self._summary_of(int(rank)) for rank in summaries]
        items: list[_Binned] = [(r.all, r.kinds, r.single_kind, r.starts) for _, r in binned]
        items += [(s.all, s.kinds, _single(s.kinds), s.starts) for s in sums]
        cov, kind, first = self._bin_batch(items, edges, k)
        for j, (slot, r) in enumerate(binned):
            matches = None
            if match is not None:
                matches = np.diff(self._row_match_cum(match, r)[first[j]]).astype(np.uint32)
            colors = self._name_colors_at(r, edges) if with_name_colors else None
            out.rows[slot] = RowWindow(
                row=r.info.id,
                mode="bins",
                coverage_ns=cov[j],
                kind=kind[j],
                count=np.diff(first[j]).astype(np.uint32),
                matches=matches,
                name_color=colors,
            )
        for j, s in enumerate(sums, start=len(binned)):
            matches = None
            if match is not None:
                cm = match["summary_cum"].get(s.rank)
                if cm is None:
                    cm = np.concatenate(([0], np.cumsum(match["name_mask"][self.name[s.positions]])))
                    match["summary_cum"][s.rank] = cm
                matches = np.diff(cm[first[j]]).astype(np.uint32)
            out.summaries.append(
                RowWindow(
                    row=s.rank,
                    mode="bins",
                    coverage_ns=cov[j],
                    kind=kind[j],
                    count=np.diff(first[j]).astype(np.uint32),
                    matches=matches,
                )
            )
        return out

    def _bin_batch(
        self, items: Sequence[_Binned], edges: np.ndarray, k: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per column: covered time, dominant kind and events started before each edge, of many tracks at once.

        One gather (grid) or one search per track, then the arithmetic on 2-D arrays: the cost
        per track is a few microseconds of numpy calls, not a Python loop over columns.
        """
        n, width = len(items), len(edges) - 1
        kc = after = None
        if k is not None:
            kc = np.clip(k, 0, self._grid_cells)
            after = k > self._grid_cells
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

    def _name_colors_at(self, r: _Row, edges: np.ndarray) -> np.ndarray:
        """Name colour of the event covering each column's centre (NO_KIND where none does)."""
        mid = (edges[:-1] + edges[1:]) // 2
        j = _sorted_search(r.starts.a, mid, "right") - 1
        at = r.lo + np.maximum(j, 0)
        inside = (j >= 0) & (self._eff_end[at] > mid)
        return np.where(inside, self.name_colors[self.name[at]], NO_KIND).astype(np.uint8)

    # ------------------------------------------------------------------ search
    def _pattern(self, pattern: str) -> dict[str, Any]:
        cached = self._patterns.get(pattern)
        if cached is not None:
            self._patterns.move_to_end(pattern)
            return cached
        rx = compile_pattern(pattern)
        name_mask = np.fromiter((bool(rx.search(n)) for n in self.names), dtype=bool, count=len(self.names))
        entry: dict[str, Any] = {"name_mask": name_mask, "row_cum": {}, "summary_cum": {}, "row_starts": {}}
        self._patterns[pattern] = entry
        while len(self._patterns) > 4:
            self._patterns.popitem(last=False)
        return entry

    def _row_match_cum(self, match: dict[str, Any], r: _Row) -> np.ndarray:
        cm = match["row_cum"].get(r.info.id)
        if cm is None:
            cm = np.concatenate(([0], np.cumsum(match["name_mask"][self.name[r.lo : r.hi]])))
            match["row_cum"][r.info.id] = cm
        return np.asarray(cm)

    def name_mask(self, pattern: str) -> np.ndarray:
        """One boolean per name of :attr:`names`: does ``pattern`` match it."""
        return np.asarray(self._pattern(pattern)["name_mask"])

    def matching_names(self, pattern: str) -> list[str]:
        """Names (in the trace) that ``pattern`` matches."""
        mask = self._pattern(pattern)["name_mask"]
        return [n for n, m in zip(self.names, mask, strict=True) if m]

    def count_matches(self, pattern: str, *, rows: Iterable[int] | None = None) -> int:
        """Number of events whose name matches ``pattern`` (in ``rows``, default all)."""
        match = self._pattern(pattern)
        if rows is None:
            return int(np.count_nonzero(match["name_mask"][self.name])) if len(self.name) else 0
        return sum(int(self._row_match_cum(match, self._row(int(r)))[-1]) for r in rows)

    def find(self, pattern: str, t: float, *, direction: int = 1, rows: Iterable[int] | None = None) -> int | None:
        """Position of the matching event starting first after ``t`` (``direction=1``) or last before it (-1).

        Among ``rows`` (default all); ties in start time go to the lower row. None if no match.
        """
        match = self._pattern(pattern)
        best: tuple[float, int, int] | None = None
        for row in range(len(self._rows)) if rows is None else rows:
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
        return None if best is None else best[2]

    # ------------------------------------------------------------------ event lookup
    def position_of(self, rank: int, eid: int) -> int | None:
        """Position in the event arrays of event ``eid`` of ``rank`` (None if not drawn)."""
        ranks = self.rank
        lo = int(np.searchsorted(ranks, rank, side="left"))
        hi = int(np.searchsorted(ranks, rank, side="right"))
        hits = lo + np.flatnonzero(self.eid[lo:hi] == eid)
        return int(hits[0]) if len(hits) else None

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
        d = self._data_of(rank)
        ev = d.events
        i = _row_of_eid(ev, eid)
        if i is None:
            raise TraceSelectionError(f"rank {rank} has no event with eid {eid}")
        rec = ev.iloc[i]
        pos = self.position_of(rank, eid)
        kc = _fixed_codes(ev["kind"].iloc[i : i + 1], KIND_CATEGORIES)
        gc = _fixed_codes(ev["gpu_class"].iloc[i : i + 1], GPU_CLASS_CATEGORIES)
        out: dict[str, Any] = {
            "rank": int(rank),
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
                lpos = self.position_of(rank, launch)
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
        busy: dict[int, int] = {}
        events: dict[int, int] = {}
        all_busy = 0
        name_time: dict[int, int] = {}
        sources = set()
        for rank in ranks:
            s = self._summary_of(int(rank))
            sources.add(s.source)
            all_busy += s.all.total(lo, hi)
            for code, cov in s.kinds.items():
                busy[code] = busy.get(code, 0) + cov.total(lo, hi)
            k1 = int(np.searchsorted(s.starts.a, hi, side="left"))
            pos = s.positions[:k1]
            # Events starting before hi that overlap: end > lo (or an instant event at lo).
            st, en = self.start[pos], self.end[pos]
            sel = pos[(en > lo) | (st == lo)]
            if len(sel):
                kc = np.bincount(self.kind[sel], minlength=len(KINDS))
                for code in np.flatnonzero(kc).tolist():
                    events[code] = events.get(code, 0) + int(kc[code])
                clipped = np.minimum(self.end[sel], hi) - np.maximum(self.start[sel], lo)
                nt = np.bincount(self.name[sel], weights=clipped, minlength=0)
                for n in np.flatnonzero(nt).tolist():
                    name_time[n] = name_time.get(n, 0) + int(nt[n])
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
