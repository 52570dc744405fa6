"""A multi-level summary of a timeline, small enough to embed in a file: the offline timeline.

The HTML report (``traceview report`` / ``tv.write_report``) has no kernel to ask for windows.
Instead it carries, for every row of the timeline and every rank's summary, the busy time and
dominant kind of each bin of a few levels: level 0 splits the trace's extent ``[0, end_ns)``
into :data:`BASE_CELLS` bins, each next level into :data:`LEVEL_FACTOR` times more. The bins
come from :meth:`TimelineIndex.window` (the binning the widget's windows use), so a level's
bins add up to the row's busy time and each bin of a level is the sum of the
:data:`LEVEL_FACTOR` bins under it at the next.

The page's in-page fetcher (``js/report/offline.ts``) answers the timeline view's window
requests from the finest level at least as fine as the view, so the report's timeline zooms
and pans with the widget's drawing code. Below the finest level it shows merged bins, never
events.

Size: levels are added, coarsest first, while the encoded total (base64 of the deflated
bytes) stays within ``max_bytes`` (:data:`DEFAULT_MAX_BYTES`, 3 MB); a level is never cut.
When even level 0 of all rows is over the bound, only the ranks' summaries are kept (the
report's timeline then opens with every rank collapsed); :func:`timeline_levels` returns
``None`` when even those are over it. See docs/report.md.
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...model import intervals as iv
from .binning import NO_KIND, RowWindow
from .coordinator import LevelOfDetail, TimelineIndex

__all__ = [
    "BASE_CELLS",
    "DEFAULT_MAX_BYTES",
    "LEVEL_FACTOR",
    "MAX_LEVELS",
    "Level",
    "TimelineLevels",
    "decode_level",
    "encode_levels",
    "timeline_levels",
]

#: Bins of level 0 over the trace's extent.
BASE_CELLS = 2048
#: Each level has this many times more bins than the one above.
LEVEL_FACTOR = 4
#: Levels at most (level 5 has 2048 * 4**5 = 2M bins per row).
MAX_LEVELS = 6
#: Default bound on the embedded summary (characters of base64 text).
DEFAULT_MAX_BYTES = 3_000_000
#: A level is not computed when it would hold more than this many bins (rows x cells): its
#: arrays would take hundreds of MB while being built.
MAX_LEVEL_BINS = 2**23
#: Bins (tracks x cells) binned per window query while a level is built.
CHUNK_BINS = 2**20
#: Busy fractions are stored as bytes: 0..FRAC_SCALE.
FRAC_SCALE = 255
# Only one event per row is ever sent raw (then binned here): the rest come binned.
_BINS_ONLY = LevelOfDetail(raw_events_per_px=1e-12)


@dataclass(frozen=True)
class Level:
    """One level: ``cells`` bins over ``[0, end_ns)`` with ``edges``; per track (rows, then ranks'
    summaries) the busy time (ns) and the dominant kind code of each bin."""

    cells: int
    edges: np.ndarray
    #: ``(tracks, cells)`` int64 busy time, ns.
    busy_ns: np.ndarray
    #: ``(tracks, cells)`` uint8 kind code (:data:`NO_KIND` where nothing is).
    kind: np.ndarray
    #: ``(tracks, cells)`` uint32 events starting in each bin.
    count: np.ndarray


@dataclass
class TimelineLevels:
    """The levels of a timeline: which rows and ranks they hold and their encoded size."""

    end_ns: int
    rows: list[int]
    ranks: list[int]
    levels: list[Level] = field(default_factory=list)
    #: The base64 text of each level (what is embedded).
    encoded: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        """Characters embedded (the base64 text of all levels)."""
        return sum(len(e) for e in self.encoded)


_Track = tuple[np.ndarray, np.ndarray, np.ndarray]


def _track(rw: RowWindow, index: TimelineIndex, edges: np.ndarray) -> _Track:
    """Busy time, kind and starts per bin of one row's window answer (binned, or its one raw event binned here)."""
    if rw.mode == "bins":
        assert rw.coverage_ns is not None and rw.kind is not None and rw.count is not None
        return rw.coverage_ns.astype(np.int64), rw.kind.astype(np.uint8), rw.count.astype(np.uint32)
    pos = rw.events if rw.events is not None else np.empty(0, dtype=np.int64)
    cols = index.event_columns(pos)
    s, e = iv.union(cols["start"], cols["end"])
    busy = iv.binned_coverage(s, e, edges)
    kind = np.full(len(edges) - 1, NO_KIND, dtype=np.uint8)
    # Few events (a raw answer): each covered bin takes the kind of the event covering most of it.
    best = np.zeros(len(edges) - 1, dtype=np.int64)
    for a, b, k in zip(cols["start"].tolist(), cols["end"].tolist(), cols["kind"].tolist(), strict=True):
        cov = iv.binned_coverage(np.array([a]), np.array([b]), edges)
        better = cov > best
        kind[better] = k
        best = np.maximum(best, cov)
    starts = np.sort(cols["start"])
    count = np.diff(np.searchsorted(starts, edges, side="left")).astype(np.uint32)
    return busy, kind, count


def _level(index: TimelineIndex, end: int, cells: int, rows: list[int], ranks: list[int]) -> Level:
    # A few tracks per query: the binning's per-kind arrays are tracks x kinds x cells.
    step = max(1, CHUNK_BINS // cells)
    tracks: list[_Track] = []
    edges = TimelineIndex.edges(0, end, cells)
    for i in range(0, len(rows), step):
        win = index.window(0, end, cells, rows=rows[i : i + step], lod=_BINS_ONLY)
        edges = win.edges
        tracks += [_track(rw, index, edges) for rw in win.rows]
    for i in range(0, len(ranks), step):
        win = index.window(0, end, cells, summaries=ranks[i : i + step], lod=_BINS_ONLY)
        edges = win.edges
        tracks += [_track(rw, index, edges) for rw in win.summaries]

    def stack(i: int, dtype: type) -> np.ndarray:
        return np.stack([t[i] for t in tracks]).astype(dtype) if tracks else np.zeros((0, cells), dtype=dtype)

    return Level(
        cells=cells, edges=edges, busy_ns=stack(0, np.int64), kind=stack(1, np.uint8), count=stack(2, np.uint32)
    )


def _encode(level: Level) -> str:
    """base64 of the deflated bytes: per track the busy fraction of each bin as a byte
    (0..FRAC_SCALE), then per track the kind codes (bytes), then per track the starts
    (little-endian uint32)."""
    width = np.diff(level.edges).astype(np.float64)
    frac = np.divide(level.busy_ns, width, out=np.zeros(level.busy_ns.shape), where=width > 0)
    q = np.clip(np.rint(frac * FRAC_SCALE), 0, FRAC_SCALE).astype(np.uint8)
    # A busy bin never reads as idle (a 1 ns kernel in a 1 ms bin still shows).
    q[(q == 0) & (level.busy_ns > 0)] = 1
    raw = (
        q.tobytes()
        + np.ascontiguousarray(level.kind, dtype=np.uint8).tobytes()
        + np.ascontiguousarray(level.count, dtype="<u4").tobytes()
    )
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def decode_level(text: str, tracks: int, cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The busy fractions (0..1), kind codes and starts, ``(tracks, cells)`` each, of an encoded level."""
    raw = np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=np.uint8)
    n = tracks * cells
    if len(raw) != 6 * n:
        raise ValueError(f"an encoded level of {tracks} tracks x {cells} bins has {len(raw)} bytes, expected {6 * n}")
    frac = raw[:n].reshape(tracks, cells) / FRAC_SCALE
    return frac, raw[n : 2 * n].reshape(tracks, cells), raw[2 * n :].view("<u4").reshape(tracks, cells)


def timeline_levels(
    index: TimelineIndex,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    base_cells: int = BASE_CELLS,
    max_levels: int = MAX_LEVELS,
) -> TimelineLevels | None:
    """The levels of ``index``'s rows and ranks' summaries that fit in ``max_bytes`` (see the module doc).

    Returns ``None`` when not even level 0 of the ranks' summaries fits.
    """
    if max_bytes < 1 or base_cells < 1 or max_levels < 1:
        raise ValueError(
            f"timeline_levels: max_bytes, base_cells and max_levels must be positive, "
            f"got {max_bytes}, {base_cells}, {max_levels}"
        )
    end = max(int(index.end_ns), 1)
    ranks = [int(r) for r in index.trace.ranks]
    all_rows = [r.id for r in index.rows]
    for rows in (all_rows, []):
        out = TimelineLevels(end_ns=end, rows=rows, ranks=ranks)
        tracks = len(rows) + len(ranks)
        for k in range(max_levels):
            cells = base_cells * LEVEL_FACTOR**k
            if k and (cells * tracks > MAX_LEVEL_BINS or cells >= 4 * end):
                break  # too big to build, or finer than a few ns per bin
            level = _level(index, end, cells, rows, ranks)
            text = _encode(level)
            if out.size + len(text) > max_bytes:
                break
            out.levels.append(level)
            out.encoded.append(text)
        if out.levels:
            return out
    return None


def encode_levels(levels: TimelineLevels) -> dict[str, Any]:
    """The JSON-able payload the report embeds (read by ``js/report/offline.ts``).

    ``end``: the extent (ns); ``rows`` and ``ranks``: the tracks, in order (rows first, then
    the ranks' summaries); ``levels``: per level its ``cells`` (bin ``k`` is
    ``[k * end // cells, (k + 1) * end // cells)``) and ``data`` (see ``_encode``).
    """
    return {
        "end": levels.end_ns,
        "rows": levels.rows,
        "ranks": levels.ranks,
        "frac_scale": FRAC_SCALE,
        "no_kind": NO_KIND,
        "levels": [{"cells": lv.cells, "data": text} for lv, text in zip(levels.levels, levels.encoded, strict=True)],
    }
