"""What the HTML report's timeline embeds besides its levels: search, hover details, range summaries.

The report has no kernel (:mod:`.levels`). So that its timeline still answers a search, a
hover and a measured range, it embeds, over a *details grid* of ``cells`` bins splitting
``[0, end_ns)`` as :meth:`TimelineIndex.edges` does (``k * end // cells``):

* per row: for each bin and event name, how many of the row's events of that name **start**
  in the bin (the widget's ``bin_match`` counts matches starting in a column): the report
  searches the names (a case-insensitive regular expression, as the widget; names only, not
  the arguments), dims the columns without a match, walks the matching bins in time order,
  and the tooltip of a merged column lists the names starting in it;
* per rank, from the events its summary row summarises (GPU work; top-level CPU events on
  a CPU-only rank: :meth:`TimelineIndex.range_summary`'s): per kind and bin the time that
  kind covers, the events starting in the bin and the events running across its left edge,
  the time any kind covers, and per bin and name the events' time clipped to the bin. A
  range summary is these added up: **exact when the range's ends are bin edges** (busy
  time, events overlapping, top names: each is additive over bins, as the tests check
  against ``range_summary``), and inside a bin prorated by the overlap (events: counted for
  every bin the range touches).

Every number comes from the rank parts' own arrays (:func:`rank_details`, run where the rank
lives, through the parts' ``call``). :func:`timeline_details` halves the grid until the encoded payload fits its bound.
"""

from __future__ import annotations

import base64
import zlib
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from ...format import short_names
from ..colors import KINDS

if TYPE_CHECKING:
    from .coordinator import TimelineIndex
    from .rank_index import RankIndex

__all__ = ["DETAILS_CELLS", "DETAILS_MAX_BYTES", "RankDetails", "rank_details", "timeline_details"]

#: Bins of the details grid tried first (then 4x fewer until the payload fits).
DETAILS_CELLS = 4096
#: Bound on the encoded details (characters of base64 text): part of the report's 3 MB.
DETAILS_MAX_BYTES = 1_200_000
#: Bins an event may be spread over while the per-name times are built (bounds memory).
MAX_SPREAD = 20_000_000


class RankDetails(TypedDict):
    """One rank's details over a grid (names and rows local to the rank)."""

    source: str
    #: Kind codes present in the summary, and per kind: busy ns, starts, events across the left edge.
    kinds: list[int]
    busy: np.ndarray  # (kinds, cells) int64
    starts: np.ndarray  # (kinds, cells) int64
    across: np.ndarray  # (kinds, cells) int64
    all: np.ndarray  # (cells,) int64: time any kind covers
    #: Summary events' time clipped to each bin, per (cell, local name): three arrays.
    name_cell: np.ndarray
    name_code: np.ndarray
    name_ns: np.ndarray
    #: Events starting per (local row, cell, local name): four arrays, sorted.
    row: np.ndarray
    row_cell: np.ndarray
    row_name: np.ndarray
    row_count: np.ndarray


def _cell_of(edges: np.ndarray, t: np.ndarray) -> np.ndarray:
    cells = len(edges) - 1
    return np.clip(np.searchsorted(edges, t, side="right") - 1, 0, cells - 1)


def rank_details(part: RankIndex, edges: np.ndarray) -> RankDetails:
    """The details of one rank part over ``edges`` (see the module docstring)."""
    e = np.asarray(edges, dtype=np.int64)
    cells = len(e) - 1
    s = part.summary
    kinds = sorted(s.kinds)
    busy = np.stack([np.diff(s.kinds[c].until(e)) for c in kinds]) if kinds else np.zeros((0, cells), np.int64)
    pos = np.asarray(s.positions, dtype=np.int64)
    st, en, kd = part.start[pos], part.end[pos], part.kind[pos]
    starts = np.zeros((len(kinds), cells), dtype=np.int64)
    across = np.zeros((len(kinds), cells), dtype=np.int64)
    left = e[:-1]
    for i, c in enumerate(kinds):
        sel = kd == c
        cs, ce = np.sort(st[sel]), np.sort(en[sel])
        starts[i] = np.bincount(_cell_of(e, cs[(cs >= e[0]) & (cs < e[-1])]), minlength=cells)
        inst = np.sort(st[sel][st[sel] == en[sel]])
        n_lt = np.searchsorted(cs, left, side="left")
        n_end_le = np.searchsorted(ce, left, side="right")
        n_inst_at = np.searchsorted(inst, left, side="right") - np.searchsorted(inst, left, side="left")
        # Start before the edge and end after it: (start < e) minus (end <= e, less instants at e).
        across[i] = n_lt - (n_end_le - n_inst_at)
    # Per (cell, name): the summary events' time clipped to each bin they overlap.
    c0 = _cell_of(e, st)
    c1 = _cell_of(e, np.maximum(en - 1, st))
    spread = (c1 - c0 + 1).astype(np.int64)
    total = int(spread.sum())
    if total > MAX_SPREAD:
        raise ValueError(f"the details grid of {cells} bins would spread events over {total} bins")
    idx = np.repeat(np.arange(len(pos)), spread)
    cell = c0[idx] + (np.arange(total) - np.repeat(np.cumsum(spread) - spread, spread))
    clipped = np.minimum(en[idx], e[cell + 1]) - np.maximum(st[idx], e[cell])
    keep = clipped > 0
    nm = part.name[pos][idx][keep].astype(np.int64)
    cell, clipped = cell[keep], clipped[keep]
    n_names = int(part.name.max()) + 1 if len(part.name) else 1
    key, inv = np.unique(cell * n_names + nm, return_inverse=True)
    name_ns = np.bincount(inv, weights=clipped, minlength=len(key)).astype(np.int64)
    # Per (row, cell, name): events starting.
    rows = part.rows
    lens = np.array([r.hi - r.lo for r in rows], dtype=np.int64)
    rpos = np.concatenate([np.arange(r.lo, r.hi) for r in rows]) if rows else np.empty(0, np.int64)
    rid = np.repeat(np.arange(len(rows), dtype=np.int64), lens)
    rcell = _cell_of(e, part.start[rpos])
    inside = (part.start[rpos] >= e[0]) & (part.start[rpos] < e[-1])
    rkey = (rid[inside] * cells + rcell[inside]) * n_names + part.name[rpos][inside].astype(np.int64)
    ukey, counts = np.unique(rkey, return_counts=True)
    return RankDetails(
        source=s.source,
        kinds=[int(c) for c in kinds],
        busy=busy.astype(np.int64),
        starts=starts,
        across=across,
        all=np.diff(s.all.until(e)).astype(np.int64),
        name_cell=(key // n_names).astype(np.int64),
        name_code=(key % n_names).astype(np.int64),
        name_ns=name_ns,
        row=ukey // (cells * n_names),
        row_cell=(ukey // n_names) % cells,
        row_name=ukey % n_names,
        row_count=counts.astype(np.int64),
    )


def _blob(a: np.ndarray, dtype: str) -> str:
    return base64.b64encode(zlib.compress(np.ascontiguousarray(a, dtype=dtype).tobytes(), 6)).decode("ascii")


def _payload(index: TimelineIndex, cells: int) -> dict[str, Any]:
    end = max(int(index.end_ns), 1)
    edges = index.edges(0, end, cells)
    ranks = [int(r) for r in index.trace.ranks]
    # Run where each rank lives (this process, or the dask worker holding it).
    parts: dict[int, RankDetails] = index._parts.call(rank_details, {r: (edges,) for r in ranks})
    used: dict[int, int] = {}

    def compact(global_codes: np.ndarray) -> np.ndarray:
        return np.array([used.setdefault(int(g), len(used)) for g in global_codes.tolist()], dtype=np.int64)

    out_ranks = []
    rows: list[np.ndarray] = []
    for r in ranks:
        p = parts[r]
        nmap = index._name_map[r]
        names = compact(nmap[p["name_code"]]) if len(p["name_code"]) else np.empty(0, np.int64)
        out_ranks.append(
            {
                "rank": r,
                "source": p["source"],
                "kinds": p["kinds"],
                # float64: exact below 2**53 ns (104 days), what JavaScript reads.
                "busy": _blob(p["busy"], "<f8"),
                "starts": _blob(p["starts"], "<u4"),
                "across": _blob(p["across"], "<u4"),
                "all": _blob(p["all"], "<f8"),
                "names": _blob(np.stack([p["name_cell"], names]) if len(names) else np.zeros((2, 0)), "<u4"),
                "name_ns": _blob(p["name_ns"], "<f8"),
            }
        )
        base = index._row_base[r]
        rn = compact(nmap[p["row_name"]]) if len(p["row_name"]) else np.empty(0, np.int64)
        rows.append(np.stack([p["row"] + base, p["row_cell"], rn, p["row_count"]]))
    table = np.concatenate(rows, axis=1) if rows else np.zeros((4, 0), dtype=np.int64)
    order = np.lexsort((table[2], table[1], table[0]))
    table = table[:, order]
    name_list = [index.names[g] for g in used]
    return {
        "cells": cells,
        "end": end,
        "kinds": list(KINDS),
        "names": name_list,
        "short": short_names(name_list),
        "ranks": out_ranks,
        # (row, cell, name, events starting) columns, sorted by row then cell.
        "rows": _blob(table, "<u4"),
        "row_entries": int(table.shape[1]),
    }


def payload_size(payload: dict[str, Any]) -> int:
    """Characters of the payload's text (what it adds to the page)."""
    import json

    return len(json.dumps(payload, separators=(",", ":")))


def timeline_details(
    index: TimelineIndex, *, max_bytes: int = DETAILS_MAX_BYTES, cells: int = DETAILS_CELLS
) -> dict[str, Any] | None:
    """The details payload over the finest grid (``cells``, then 4x fewer) within ``max_bytes``; None if none fits."""
    while cells >= 16:
        try:
            p = _payload(index, cells)
        except ValueError:
            p = None
        if p is not None and payload_size(p) <= max_bytes:
            return p
        cells //= 4
    return None
