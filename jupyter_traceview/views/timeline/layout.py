"""Rows and lanes of the timeline: which events are drawn, and in which lane and row of their rank.

A rank has *lanes*: one per GPU stream (``device``, ``stream``), then one per CPU thread
(``pid``, ``tid``). A lane has one *row* per nesting depth. Part of the timeline index (see
:mod:`jupyter_traceview.views.timeline.index`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ...model.schema import KIND_CATEGORIES, EventKind

__all__ = ["LaneInfo", "RowInfo", "RowType"]

RowType = Literal["gpu", "cpu"]
#: Event kinds not drawn: memory-allocation records and other instant markers.
_SKIPPED_KINDS = (EventKind.CPU_INSTANT_EVENT.value,)


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


def rank_rows(
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
    codes = fixed_codes(ev["kind"], KIND_CATEGORIES)
    skipped = np.isin(codes, [KIND_CATEGORIES.index(k) for k in _SKIPPED_KINDS])
    marker = (codes == KIND_CATEGORIES.index(EventKind.OTHER.value)) & (ev["dur_ns"].to_numpy() == 0)
    return np.asarray(~(skipped | marker))


def fixed_codes(col: pd.Series, categories: Sequence[str]) -> np.ndarray:
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
