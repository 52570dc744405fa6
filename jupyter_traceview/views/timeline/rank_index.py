"""The heavy, per-rank part of the timeline index, and where the parts live (this process or dask).

:class:`RankIndex` holds a rank's drawn events sorted by row, the prefix sums, the start
arrays and its summary; it answers window, search and detail queries with ids local to the
rank. :func:`build_rank_index` builds it where the rank's tables live (see
:mod:`jupyter_traceview.views.timeline.index`).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import numpy as np
import pandas as pd

from ...errors import TraceSelectionError
from ...model import intervals as iv
from ...model.rank_data import RankData
from ...model.schema import GPU_CLASS_CATEGORIES, KIND_CATEGORIES
from ...model.trace import Trace
from ..colors import KINDS, kind_code, kind_codes, name_color_index
from .args import event_args_codes
from .binning import (
    NO_KIND,
    Binned,
    Coverage,
    RowWindow,
    Starts,
    bin_batch,
    coverage_of,
    grid_points,
    is_disjoint,
    single_kind,
    sorted_search,
)
from .fold import FoldTrack, RankFoldSummary, build_fold, fold_summary
from .layout import LaneInfo, RowInfo, RowType, fixed_codes, rank_rows
from .messages import CollectiveInfo, EventDetails, LaunchInfo, OperatorRef
from .pattern import compile_pattern

__all__ = ["RankIndex", "build_rank_index"]

#: Kinds that are not work in a rank summary (sync records, annotations).
_NOT_WORK = (kind_code("sync"), kind_code("annotation"))


@dataclass
class _Row:
    info: RowInfo
    lo: int  # slice of the event arrays
    hi: int
    disjoint: bool
    all: Coverage
    #: kind code -> coverage of that kind (only when the row has several kinds)
    kinds: dict[int, Coverage]
    single_kind: int
    starts: Starts


@dataclass
class _Summary:
    rank: int
    source: Literal["gpu", "cpu"]
    all: Coverage
    kinds: dict[int, Coverage]
    #: starts (sorted) of the events summarised, their index in the event arrays (same order)
    starts: Starts
    positions: np.ndarray


@dataclass(frozen=True)
class RankInfo:
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
class PartWindow:
    """A rank's answer to a window query (row ids and positions local to the rank)."""

    rows: list[RowWindow]
    summary: RowWindow | None
    #: With ``with_columns``: the sorted positions of the raw events and their columns.
    positions: np.ndarray | None = None
    columns: dict[str, np.ndarray] | None = None
    #: The folded CPU row (fold.py), when asked for.
    fold: RowWindow | None = None


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
        sel, sizes, rows, lanes, keys = rank_rows(rank, ev, data.meta.thread_names)
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
        kcodes = fixed_codes(ev["kind"], KIND_CATEGORIES)[sel]
        gcodes = fixed_codes(ev["gpu_class"], GPU_CLASS_CATEGORIES)[sel]
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
            kinds: dict[int, Coverage] = {}
            if len(present) > 1:
                for code in present.tolist():
                    m = k == code
                    kinds[int(code)] = coverage_of(s[m], e[m])
            self.rows.append(
                _Row(
                    info=info,
                    lo=lo,
                    hi=hi,
                    disjoint=is_disjoint(s, e),
                    all=coverage_of(s, e),
                    kinds=kinds,
                    single_kind=int(present[0]) if len(present) == 1 else NO_KIND,
                    starts=Starts(s),
                )
            )
        self.summary = self._summary()
        self._grid: tuple[int, int] | None = None
        self._grid_min = 0
        self._fold: FoldTrack | None = None
        self._patterns: OrderedDict[str, dict[str, Any]] = OrderedDict()
        #: Events with argument text (args.py), built at the first search: (positions, codes, texts).
        self._args: tuple[np.ndarray, np.ndarray, list[str]] | None = None
        self._lock = threading.Lock()

    # A part may travel between dask workers (pickled): the lock does not.
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        state["_patterns"] = OrderedDict()
        state["_args"] = None
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
        kinds = {int(c): coverage_of(s[k == c], e[k == c]) for c in present}
        u = iv.union(s, e)
        return _Summary(
            rank=self.rank,
            source=source,
            all=Coverage(u[0], u[1]),
            kinds=kinds,
            starts=Starts(s),
            positions=pos.astype(np.int32 if len(self.start) < 2**31 else np.int64),
        )

    # ------------------------------------------------------------------ building (coordinator's calls)
    def info(self) -> RankInfo:
        """What the coordinator keeps: rows, lanes, names and a few totals."""
        return RankInfo(
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
        self._grid_min = min_size
        self._fold = None
        points = grid_points(grid_end, cells)
        holders = [([r.all, *r.kinds.values()], r.starts) for r in self.rows]
        holders.append(([self.summary.all, *self.summary.kinds.values()], self.summary.starts))
        for covs, starts in holders:
            for c in covs:
                if len(c.s) >= min_size and c.grid is None:
                    c.grid = c.until(points)
            if len(starts.a) >= min_size and starts.grid is None:
                starts.grid = starts.before(points)
        return self

    def summary_view(self, grid_end: int, cells: int, keep: int) -> Binned:
        """The summary as the coordinator keeps it: tracks of at most ``keep`` intervals as they
        are, bigger ones tabulated on the coarse grid (``cells`` cells over ``[0, grid_end]``)."""
        points = grid_points(grid_end, cells) if grid_end > 0 else None
        s = self.summary

        # Tables here are on the coarse grid: kept tracks must not carry the fine grid's.
        def cov(c: Coverage) -> Coverage:
            if len(c.s) <= keep or points is None:
                return c.bare()
            return Coverage.tabulated(c.until(points))

        starts = Starts(s.starts.a)
        if len(starts.a) > keep and points is not None:
            starts = Starts.tabulated(starts.before(points), len(starts.a))
        kinds = {code: cov(c) for code, c in s.kinds.items()}
        return (cov(s.all), kinds, single_kind(kinds), starts)

    @property
    def fold(self) -> FoldTrack:
        """The folded CPU track (fold.py), built at first use."""
        if self._fold is None:
            with self._lock:
                if self._fold is None:
                    track = build_fold(self)
                    if self._grid is not None:
                        track.tabulate(*self._grid, self._grid_min)
                    self._fold = track
        return self._fold

    def fold_summary(self, lo: int, hi: int) -> RankFoldSummary:
        """What the rank's CPU threads do in ``[lo, hi)`` (:func:`.fold.fold_summary`)."""
        return fold_summary(self, self.fold, lo, hi)

    # ------------------------------------------------------------------ queries
    def _candidates(self, r: _Row, lo: int, hi: int) -> tuple[int, int]:
        i0 = r.lo + int(np.searchsorted(self._maxend[r.lo : r.hi], lo, side="right"))
        i1 = r.lo + int(np.searchsorted(self.start[r.lo : r.hi], hi, side="left"))
        return i0, max(i0, i1)

    def _eff_end(self, i0: int, i1: int) -> np.ndarray:
        """Ends of events ``i0:i1``, instant events lasting 1 ns (for overlap tests)."""
        out: np.ndarray = np.maximum(self.end[i0:i1], self.start[i0:i1] + 1)
        return out

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

    def _args_index(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Events with argument text: (local positions, code of each into the texts, distinct texts)."""
        if self._args is None:
            eids, codes, texts = event_args_codes(self.data)
            order = np.argsort(self.eid, kind="stable")
            se = self.eid[order]
            if len(se) and len(eids):
                k = np.minimum(np.searchsorted(se, eids), len(se) - 1)
                drawn = se[k] == eids
                self._args = (order[k[drawn]].astype(np.int64), codes[drawn].astype(np.int32), texts)
            else:
                self._args = (np.empty(0, np.int64), np.empty(0, np.int32), [])
        return self._args

    def _event_matches(self, pattern: str, name_mask: np.ndarray) -> np.ndarray:
        """One boolean per event: its name (``name_mask``, by local name code) or its argument text matches."""
        ev: np.ndarray = name_mask[self.name]
        pos, codes, texts = self._args_index()
        if texts:
            rx = compile_pattern(pattern)
            hit = np.fromiter((bool(rx.search(t)) for t in texts), dtype=bool, count=len(texts))
            if hit.any():
                ev[pos[hit[codes]]] = True
        return ev

    def _pattern(self, key: str, mask: np.ndarray) -> dict[str, Any]:
        with self._lock:
            cached = self._patterns.get(key)
            if cached is not None:
                self._patterns.move_to_end(key)
                return cached
            entry: dict[str, Any] = {
                "ev": self._event_matches(key, mask),
                "row_cum": {},
                "summary_cum": None,
                "row_starts": {},
                "fold_cum": None,
            }
            self._patterns[key] = entry
            while len(self._patterns) > 4:
                self._patterns.popitem(last=False)
            return entry

    def _row_match_cum(self, match: dict[str, Any], r: _Row) -> np.ndarray:
        cm = match["row_cum"].get(r.info.id)
        if cm is None:
            cm = np.concatenate(([0], np.cumsum(match["ev"][r.lo : r.hi])))
            match["row_cum"][r.info.id] = cm
        return np.asarray(cm)

    def _fold_matches(self, match: dict[str, Any], edges: np.ndarray) -> np.ndarray:
        """Matches among all the rank's CPU events (every thread and depth) starting in each column.

        The folded row draws only each thread's outermost work, but a search must still show
        where a nested operator matches, as the unfolded threads would.
        """
        fc = match["fold_cum"]
        if fc is None:
            cpu = [np.arange(r.lo, r.hi) for r in self.rows if r.info.type == "cpu"]
            pos = np.concatenate(cpu) if cpu else np.empty(0, dtype=np.int64)
            pos = pos[np.argsort(self.start[pos], kind="stable")]
            fc = (self.start[pos], np.concatenate(([0], np.cumsum(match["ev"][pos]))))
            match["fold_cum"] = fc
        starts, cm = fc
        counts: np.ndarray = np.diff(cm[sorted_search(starts, edges, "left")]).astype(np.uint32)
        return counts

    def _name_colors_at(self, r: _Row, edges: np.ndarray) -> np.ndarray:
        """Name colour of the event covering each column's centre (NO_KIND where none does)."""
        mid = (edges[:-1] + edges[1:]) // 2
        j = sorted_search(r.starts.a, mid, "right") - 1
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
        fold: bool = False,
    ) -> PartWindow:
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
                m = match["ev"][pos] if match is not None else None
                out.append(RowWindow(row=r.info.id, mode="raw", events=pos, matches=m))
            else:
                binned.append((len(out), r))
                out.append(RowWindow(row=r.info.id, mode="bins"))
        items: list[Binned] = [(r.all, r.kinds, r.single_kind, r.starts) for _, r in binned]
        s = self.summary
        if summary:
            items.append((s.all, s.kinds, single_kind(s.kinds), s.starts))
        if fold:
            f = self.fold
            items.append((f.all, f.kinds, f.single_kind(), f.starts))
        sum_out = fold_out = None
        if items:
            cov, kind, first = bin_batch(items, edges, k, cells)
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
                        cm = np.concatenate(([0], np.cumsum(match["ev"][s.positions])))
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
            if fold:
                j = len(items) - 1
                fold_out = RowWindow(
                    row=self.rank,
                    mode="bins",
                    coverage_ns=cov[j],
                    kind=kind[j],
                    count=np.diff(first[j]).astype(np.uint32),
                    matches=self._fold_matches(match, edges) if match is not None else None,
                )
        if not with_columns:
            return PartWindow(rows=out, summary=sum_out, fold=fold_out)
        raw = [r.events for r in out if r.mode == "raw" and r.events is not None and len(r.events)]
        pos = np.unique(np.concatenate(raw)) if raw else np.empty(0, dtype=np.int64)
        return PartWindow(rows=out, summary=sum_out, positions=pos, columns=self.columns(pos), fold=fold_out)

    def count_matches(self, pattern: tuple[str, np.ndarray], rows: Sequence[int] | None) -> int:
        """Events matching among ``rows`` (local ids; None: every event of the rank)."""
        match = self._pattern(*pattern)
        if rows is None:
            return int(np.count_nonzero(match["ev"]))
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
                pos = r.lo + np.flatnonzero(match["ev"][r.lo : r.hi])
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

    def details(self, eid: int) -> EventDetails:
        """:meth:`TimelineIndex.details` with local row ids (None if not drawn)."""
        d = self.data
        ev = d.events
        i = _row_of_eid(ev, eid)
        if i is None:
            raise TraceSelectionError(f"rank {self.rank} has no event with eid {eid}")
        rec = ev.iloc[i]
        pos = self.position_of(eid)
        kc = fixed_codes(ev["kind"].iloc[i : i + 1], KIND_CATEGORIES)
        gc = fixed_codes(ev["gpu_class"].iloc[i : i + 1], GPU_CLASS_CATEGORIES)
        out = EventDetails(
            rank=self.rank,
            eid=int(eid),
            name=str(rec["name"]),
            kind=KINDS[int(kind_codes(kc, gc)[0])],
            event_kind=str(rec["kind"]),
            start=int(rec["ts_ns"]) - self.t0_ns,
            start_ns=str(int(rec["ts_ns"])),
            dur_ns=int(rec["dur_ns"]),
            device=int(rec["device"]),
            stream=int(rec["stream"]),
            pid=int(rec["pid"]),
            tid=int(rec["tid"]),
            step=int(rec["step"]),
            row=None if pos is None else self.row_at(pos),
        )
        ga = d.gpu_args
        j = _row_of_eid(ga, eid)
        if j is not None:
            g = ga.iloc[j]
            if int(g["grid_x"]) >= 0:
                out["grid"] = [int(g["grid_x"]), int(g["grid_y"]), int(g["grid_z"])]
                out["block"] = [int(g["block_x"]), int(g["block_y"]), int(g["block_z"])]
            if int(g["registers_per_thread"]) >= 0:
                out["registers_per_thread"] = int(g["registers_per_thread"])
            if int(g["shared_memory_bytes"]) >= 0:
                out["shared_memory_bytes"] = int(g["shared_memory_bytes"])
            if int(g["bytes"]) >= 0:
                out["bytes"] = int(g["bytes"])
            if not pd.isna(g["occupancy_pct"]):
                out["occupancy_pct"] = float(g["occupancy_pct"])
            if not pd.isna(g["bandwidth_gbps"]):
                out["bandwidth_gbps"] = float(g["bandwidth_gbps"])
            if not pd.isna(g["copy_kind"]):
                out["copy_kind"] = str(g["copy_kind"])
        cm = d.comms
        j = _row_of_eid(cm, eid)
        if j is not None:
            c = cm.iloc[j]
            out["collective"] = CollectiveInfo(
                collective=str(c["collective"]),
                dtype=None if pd.isna(c["dtype"]) else str(c["dtype"]),
                in_nelems=int(c["in_nelems"]),
                out_nelems=int(c["out_nelems"]),
                group_size=int(c["group_size"]),
            )
        launch = int(rec["launch_eid"])
        parent = int(rec["parent_eid"])
        if launch >= 0:
            k = _row_of_eid(ev, launch)
            if k is not None:
                lrec = ev.iloc[k]
                lpos = self.position_of(launch)
                out["launch"] = LaunchInfo(
                    eid=launch,
                    name=str(lrec["name"]),
                    start=int(lrec["ts_ns"]) - self.t0_ns,
                    dur_ns=int(lrec["dur_ns"]),
                    row=None if lpos is None else self.row_at(lpos),
                )
                parent = int(lrec["parent_eid"])
        if parent >= 0:
            k = _row_of_eid(ev, parent)
            if k is not None:
                out["operator"] = OperatorRef(eid=parent, name=str(ev["name"].iloc[k]))
        return out

    def range_summary(self, lo: int, hi: int) -> RankRangeSummary:
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
        return RankRangeSummary(source=s.source, all=s.all.total(lo, hi), busy=busy, events=events, names=name_time)


class RankRangeSummary(TypedDict):
    """A rank's share of :meth:`TimelineIndex.range_summary` (kind and name codes local to the rank)."""

    #: "gpu" (GPU work summarised) or "cpu" (top-level CPU events, a CPU-only rank).
    source: str
    #: Time covered by any kind, ns.
    all: int
    #: Time covered per kind code, ns.
    busy: dict[int, int]
    #: Events overlapping the range per kind code.
    events: dict[int, int]
    #: (local name code, clipped time in ns) of the names present.
    names: list[tuple[int, int]]


def build_rank_index(data: RankData, t0_ns: int) -> RankIndex:
    """The per-rank part of the timeline index of one rank's tables (times relative to ``t0_ns``).

    Module-level so that dask can run it where the rank lives:
    ``client.submit(build_rank_index, rank_data_future, t0_ns)``.
    """
    return RankIndex(data, t0_ns)


def _call_part(part: RankIndex, method: str | Callable[..., Any], *args: Any) -> Any:
    """``part.method(*args)`` (or ``method(part, *args)`` for a module-level function): how the
    coordinator's calls run on dask workers."""
    return method(part, *args) if callable(method) else getattr(part, method)(*args)


# ---------------------------------------------------------------------- where the parts live
class LocalParts:
    """Parts held in this process (an ordinary trace): calls are plain method calls."""

    local = True

    def __init__(self, parts: dict[int, RankIndex]) -> None:
        self.parts = parts

    @classmethod
    def build(cls, trace: Trace, t0_ns: int) -> LocalParts:
        return cls({r: build_rank_index(trace.rank_data(r), t0_ns) for r in trace.ranks})

    def call(self, method: str | Callable[..., Any], args: dict[int, tuple[Any, ...]]) -> dict[int, Any]:
        return {r: _call_part(self.parts[r], method, *a) for r, a in args.items()}

    def tabulate(self, grid_end: int, cells: int, min_size: int) -> None:
        for p in self.parts.values():
            p.tabulate(grid_end, cells, min_size)


class DaskParts:
    """Parts held on the dask workers that hold the ranks (futures): one task per rank and call."""

    local = False

    def __init__(self, client: Any, futures: dict[int, Any]) -> None:
        self.client = client
        self.futures = futures

    @classmethod
    def build(cls, trace: Trace, t0_ns: int) -> DaskParts:
        return cls(trace.client, trace.keep_on_workers(build_rank_index, t0_ns))

    def call(self, method: str | Callable[..., Any], args: dict[int, tuple[Any, ...]]) -> dict[int, Any]:
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

        wait(list(self.futures.values()))  # type: ignore[no-untyped-call]  # distributed: no type hints
        for f in self.futures.values():
            if f.status == "error":
                f.result()


def parts_of(trace: Trace, t0_ns: int) -> LocalParts | DaskParts:
    if trace.client is not None:
        return DaskParts.build(trace, t0_ns)
    return LocalParts.build(trace, t0_ns)


def _row_of_eid(frame: pd.DataFrame, eid: int) -> int | None:
    """Position of ``eid`` in a frame sorted by its ``eid`` column (events, gpu_args, comms)."""
    eids = frame["eid"].to_numpy()
    k = int(np.searchsorted(eids, eid))
    if k < len(eids) and eids[k] == eid:
        return k
    hits = np.flatnonzero(eids == eid)  # not sorted (should not happen): linear fallback
    return int(hits[0]) if len(hits) else None
