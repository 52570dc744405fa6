"""The coordinator of the timeline index: :class:`TimelineIndex`, the object the notebook keeps.

It holds rows, lanes, names, ProfilerStep spans and each rank's summary at a bounded
resolution, and sends every other query to the ranks' parts (see
:mod:`jupyter_traceview.views.timeline.index` for the design).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import TraceSelectionError
from ...format import short_names
from ...model.trace import Trace
from ..colors import KINDS, name_color_index
from .binning import Binned, Coverage, RowWindow, Starts, bin_batch
from .fold import RankFoldSummary
from .layout import LaneInfo, RowInfo, RowType
from .messages import BusyTotal, EventDetails, FoldName, FoldSummary, KindBusy, RangeSummary, TopName
from .pattern import compile_pattern
from .rank_index import LocalParts, PartWindow, RankInfo, RankRangeSummary, parts_of

__all__ = ["LevelOfDetail", "TimelineIndex", "Window"]

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
class Window:
    """The answer to :meth:`TimelineIndex.window`: one :class:`RowWindow` per row asked for.

    Summaries of ranks are binned rows whose ``row`` is the rank.
    """

    lo: int
    hi: int
    edges: np.ndarray
    rows: list[RowWindow] = field(default_factory=list)
    summaries: list[RowWindow] = field(default_factory=list)
    #: Folded CPU rows (views/timeline/fold.py), ``row`` the rank.
    folds: list[RowWindow] = field(default_factory=list)


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
        out: np.ndarray = a if dtype is None else a.astype(dtype)
        return out


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
        self._parts = parts_of(trace, self.t0_ns)
        ranks = list(trace.ranks)
        infos: dict[int, RankInfo] = self._parts.call("info", {r: () for r in ranks})
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
        self._match_counts: OrderedDict[str, dict[int, int]] = OrderedDict()
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
        self._views: dict[int, Binned] = {}
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
        if isinstance(self._parts, LocalParts):
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
        folds: Iterable[int] = (),
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
        folds
            Ranks whose folded CPU row is wanted (:mod:`.fold`).

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
        fold_ranks = [self._check_rank(int(r)) for r in folds]
        # Collapsed ranks zoomed out: answered here, from the summaries kept at the coarse grid.
        here = k_coarse is not None and pattern is None
        by_rank = self._by_rank(row_ids)
        wanted = set() if here else set(sum_ranks)
        asked = set(by_rank) | wanted | set(fold_ranks)
        remote = not isinstance(self._parts, LocalParts)
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
                r in fold_ranks,
            )
            for r in sorted(asked)
        }
        answers: dict[int, PartWindow] = self._parts.call("window", args) if args else {}
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
            cov, kind, first = bin_batch(items, edges, k_coarse, self._coarse_cells)
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
        for r in fold_ranks:
            f = answers[r].fold
            assert f is not None
            out.folds.append(f)
        return out

    def fold_summary(self, rank: int, lo: int, hi: int, *, top: int = 5) -> FoldSummary:
        """What ``rank``'s CPU threads do in ``[lo, hi)`` (relative ns): the folded row's tooltip (:mod:`.fold`)."""
        lo, hi = int(lo), int(hi)
        if hi <= lo:
            raise ValueError(f"fold_summary: need hi > lo, got [{lo}, {hi})")
        rank = self._check_rank(int(rank))
        p: RankFoldSummary = self._parts.call("fold_summary", {rank: (lo, hi)})[rank]
        nmap = self._name_map[rank]
        best = sorted(p["names"], key=lambda x: (-x[1], -x[2], x[0]))[:top]
        return FoldSummary(
            rank=rank,
            lo=lo,
            hi=hi,
            threads=p["threads"],
            active=p["active"],
            busy_ns=p["busy_ns"],
            thread_ns=p["thread_ns"],
            events=p["events"],
            top=[
                FoldName(name=self.names[int(nmap[n])], short=s, time_ns=t, events=c)
                for (n, t, c), s in zip(best, short_names(self.names[int(nmap[n])] for n, _, _ in best), strict=True)
            ],
        )

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
        out: np.ndarray = self._name_mask(pattern)[self._name_map[rank]]
        return out

    def _rank_matches(self, pattern: str, rank: int) -> int:
        """Events of ``rank`` whose name or argument text matches (counted by the ranks' parts, kept)."""
        counts = self._match_counts.get(pattern)
        if counts is None:
            args = {int(r): ((pattern, self._local_mask(pattern, int(r))), None) for r in self._ranks.tolist()}
            counts = {int(r): int(n) for r, n in self._parts.call("count_matches", args).items()}
            self._match_counts[pattern] = counts
            while len(self._match_counts) > 4:
                self._match_counts.popitem(last=False)
        else:
            self._match_counts.move_to_end(pattern)
        return counts[rank]

    def name_mask(self, pattern: str) -> np.ndarray:
        """One boolean per name of :attr:`names`: does ``pattern`` match it."""
        out: np.ndarray = self._name_mask(pattern).copy()
        return out

    def matching_names(self, pattern: str) -> list[str]:
        """Names (in the trace) that ``pattern`` matches."""
        mask = self._name_mask(pattern)
        return [n for n, m in zip(self.names, mask, strict=True) if m]

    def count_matches(self, pattern: str, *, rows: Iterable[int] | None = None) -> int:
        """Number of events whose name or argument text matches ``pattern`` (in ``rows``, default all).

        The argument text of an event is described in :mod:`~jupyter_traceview.views.timeline.args`.
        """
        if rows is None:
            return sum(self._rank_matches(pattern, int(r)) for r in self._ranks.tolist())
        by_rank = self._by_rank(rows)
        args = {r: ((pattern, self._local_mask(pattern, r)), ids) for r, ids in by_rank.items()}
        args = {r: a for r, a in args.items() if self._rank_matches(pattern, r)}
        return sum(self._parts.call("count_matches", args).values())

    def find(self, pattern: str, t: float, *, direction: int = 1, rows: Iterable[int] | None = None) -> int | None:
        """Position of the event matching ``pattern`` (name or argument text) starting first after ``t``
        (``direction=1``) or last before it (-1).

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
        if not isinstance(self._parts, LocalParts):
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

    def details(self, rank: int, eid: int) -> EventDetails:
        """What the tooltip and the selection show about one event (JSON-able).

        Keys: ``rank``, ``eid``, ``name``, ``kind`` (colour kind), ``event_kind``,
        ``start`` (ns relative to :attr:`t0_ns`), ``start_ns`` (absolute, a string), ``dur_ns``,
        ``device``, ``stream``, ``pid``, ``tid``, ``step``, ``row`` (None if not drawn), and
        where they apply ``grid``, ``block``, ``registers_per_thread``,
        ``shared_memory_bytes``, ``occupancy_pct``, ``bytes``, ``bandwidth_gbps``,
        ``copy_kind``, ``collective``, ``launch`` (the CPU call that launched a GPU
        activity: ``eid``, ``name``, ``start``, ``dur_ns``, ``row``), ``operator`` (the
        operator around that call, or the parent of a CPU event: ``eid``, ``name``).
        """
        rank = self._check_rank(int(rank))
        out: EventDetails = self._parts.call("details", {rank: (int(eid),)})[rank]
        base = self._row_base[rank]
        if out["row"] is not None:
            out["row"] += base
        if "launch" in out and out["launch"]["row"] is not None:
            out["launch"]["row"] += base
        return out

    # ------------------------------------------------------------------ range summary
    def range_summary(self, lo: int, hi: int, *, ranks: Sequence[int] | None = None, top: int = 5) -> RangeSummary:
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
        parts: dict[int, RankRangeSummary] = self._parts.call(
            "range_summary", {int(r): (lo, hi) for r in dict.fromkeys(ranks)}
        )
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
            KindBusy(
                kind=KINDS[code],
                busy_ns=busy.get(code, 0),
                pct=100.0 * busy.get(code, 0) / span,
                events=events.get(code, 0),
            )
            for code in sorted(set(busy) | set(events))
        ]
        best = sorted(name_time.items(), key=lambda kv: -kv[1])[:top]
        return RangeSummary(
            lo=lo,
            hi=hi,
            ranks=ranks,
            source="gpu" if sources == {"gpu"} else ("cpu" if sources == {"cpu"} else "mixed"),
            all=BusyTotal(busy_ns=all_busy, pct=100.0 * all_busy / span, events=sum(events.values())),
            kinds=kinds,
            top=[
                TopName(name=self.names[n], short=s, time_ns=t)
                for (n, t), s in zip(best, short_names(self.names[n] for n, _ in best), strict=True)
            ],
        )

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
            elif isinstance(o, (Coverage, Starts)):
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
