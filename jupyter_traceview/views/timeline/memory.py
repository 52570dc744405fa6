"""Memory lanes of the timeline: memory allocated and reserved per rank and device, binned to a window.

A rank with memory records (``profile_memory=True``) gets one *memory lane* per device
(``CUDA:0``, ``CPU``, ...) drawn under its lanes. Its values are
:func:`jupyter_traceview.memory_timeline`'s, unchanged (one truth): allocated and reserved
bytes as a step function that changes at every record and holds its value until the next
one; before a device's first record it has no value.

Window query (:meth:`MemoryIndex.window`, binned by
:func:`jupyter_traceview.analysis.memory.binning.bin_step`, the one binning of every counter
surface, ``memory_timeline(resample=)`` included). Over the bin edges of a timeline window (the
same edges as :meth:`TimelineIndex.window`'s answer) each lane gets, per pixel column
``[e_i, e_i+1)``, the **maximum** of the step function over the column (the value in force
at ``e_i`` and every record inside, so a zoomed-out lane never loses a peak, even one that
lasted a nanosecond) and the value **at the column's end** (in force just before
``e_i+1``): drawn as a step line, the maximum is the column's top and the end value joins
it to the next column. A column before the first record has neither (NaN). The cost is a
search per edge plus, per column, at most ``2 * BLOCK`` records and the maxima of the
``BLOCK``-record blocks it spans (kept per series): O(width x BLOCK + records / BLOCK),
bounded however many records the window holds.

Where the work happens. As for the event rows (:mod:`.rank_index`), each rank's series
lives where the rank's tables live (this process, or the dask worker holding the rank):
:func:`build_rank_memory` runs there; :class:`MemoryIndex`, kept by the notebook, holds
only the lanes' descriptions (:class:`~.messages.MemoryMeta`, what the timeline's state
lists as ``_memory``) and asks the ranks for windows.

Hardware counters. A rank whose trace holds PM sampling's counter samples (the ``counters``
table: Kineto's ``"GPU N Counters"`` tracks) gets one lane more per device and metric
(``GPU 0 · SM Active (%)``), after its memory lanes: the same kind of lane, drawn, binned
and answered the same way, since a sampled counter is a step function too (a value holds
until the metric's next sample, Chrome's counter semantics). Such a lane's
:class:`~.messages.MemoryMeta` says ``kind="counter"`` and the value's ``unit`` (``%`` from a
label ending in ``(%)``, else none; memory lanes: ``bytes``); its values travel as the
first series (``allocated`` on the wire), the second (``reserved``) is zero.

Not to be confused with the *counters* of :mod:`jupyter_traceview.analysis.counters` (launch
queue length and copy bandwidth, the dashboard's Counters tab).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...analysis.memory import device_label, memory_timeline
from ...analysis.memory.binning import bin_step, block_maxima
from ...errors import TraceSelectionError
from ...model.rank_data import RankData
from ...model.trace import Trace
from .messages import MemoryMeta
from .rank_index import DaskParts, LocalParts

__all__ = ["MEMORY_SERIES", "MemoryIndex", "MemoryWindow", "RankMemory", "build_rank_memory", "counter_unit"]

#: The series of a memory lane, as named in window answers: column of memory_timeline.
MEMORY_SERIES = {"allocated": "allocated_bytes", "reserved": "reserved_bytes"}
#: Records per block of the block maxima that bound a zoomed-out query's cost.
BLOCK = 64


@dataclass(frozen=True)
class MemoryWindow:
    """One lane over a window's columns: per series, the maximum and the end value of each column."""

    id: int
    #: series name -> (max per column, value at each column's end), float64 bytes, NaN before the first record.
    series: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


@dataclass
class _Series:
    info: MemoryMeta
    ts: np.ndarray  # int64, relative ns, sorted
    values: dict[str, np.ndarray]  # series -> bytes after each record (float64, exact)
    blocks: dict[str, np.ndarray]  # series -> float64 maximum of each BLOCK records


class RankMemory:
    """The memory series of one rank (ids local to the rank), built where the rank lives."""

    def __init__(self, trace: Trace, t0_ns: int) -> None:
        (rank,) = trace.ranks
        self.rank = int(rank)
        self.series: list[_Series] = []
        data = trace.rank_data(rank)
        if len(data.memory):
            self._add_memory(trace, int(t0_ns))
        if len(data.counters):
            self._add_counters(data.counters, int(t0_ns))

    def _add_memory(self, trace: Trace, t0_ns: int) -> None:
        tl = memory_timeline(trace)
        for (dtype, dev), g in tl.groupby(["device_type", "device"], observed=True, sort=True):
            ts = g["ts_ns"].to_numpy(dtype=np.int64) - int(t0_ns)
            # Float64 once (bytes stay exact below 2**53): a query converts nothing.
            values = {name: g[col].to_numpy(dtype=np.float64) for name, col in MEMORY_SERIES.items()}
            alloc, res = values["allocated"], values["reserved"]
            ia, ir = int(np.argmax(alloc)), int(np.argmax(res))
            info = MemoryMeta(
                id=len(self.series),
                rank=self.rank,
                device_type=str(dtype),
                device=int(dev),
                label=f"memory · {device_label(str(dtype), int(dev))}",
                kind="memory",
                unit="bytes",
                records=len(ts),
                peak_allocated=int(alloc[ia]),
                peak_ts=int(ts[ia]),
                peak_reserved=int(res[ir]),
                peak_reserved_ts=int(ts[ir]),
                start=int(ts[0]),
                end=int(ts[-1]),
            )
            blocks = {k: block_maxima(v, BLOCK) for k, v in values.items()}
            self.series.append(_Series(info=info, ts=ts, values=values, blocks=blocks))

    def _add_counters(self, counters: pd.DataFrame, t0_ns: int) -> None:
        """One lane per (device, metric) of the rank's counter samples (see the module docstring)."""
        for (dev, name), g in counters.groupby(["device", "name"], observed=True, sort=True):
            ts = g["ts_ns"].to_numpy(dtype=np.int64) - t0_ns
            value = g["value"].to_numpy(dtype=np.float64)
            values = {"allocated": value, "reserved": np.zeros_like(value)}
            top = int(np.argmax(value))
            info = MemoryMeta(
                id=len(self.series),
                rank=self.rank,
                device_type="GPU",
                device=int(dev),
                label=f"GPU {int(dev)} · {name}",
                kind="counter",
                unit=counter_unit(str(name)),
                records=len(ts),
                peak_allocated=float(value[top]),
                peak_ts=int(ts[top]),
                peak_reserved=0,
                peak_reserved_ts=int(ts[0]),
                start=int(ts[0]),
                end=int(ts[-1]),
            )
            blocks = {k: block_maxima(v, BLOCK) for k, v in values.items()}
            self.series.append(_Series(info=info, ts=ts, values=values, blocks=blocks))

    def info(self) -> list[MemoryMeta]:
        """The rank's lanes (local ids)."""
        return [s.info for s in self.series]

    def window(self, edges: np.ndarray, ids: Sequence[int]) -> list[MemoryWindow]:
        """The lanes ``ids`` (local) binned over ``edges`` (see the module docstring)."""
        out = []
        for i in ids:
            s = self.series[int(i)]
            series = {k: bin_step(s.ts, v, edges, blocks=(BLOCK, s.blocks[k])) for k, v in s.values.items()}
            out.append(MemoryWindow(id=int(i), series=series))
        return out

    def values_at(self, local: int, times: np.ndarray) -> dict[str, np.ndarray]:
        """The value of each series in force at ``times`` (relative ns; NaN before the first record)."""
        s = self.series[int(local)]
        t = np.asarray(times, dtype=np.int64)
        at = np.searchsorted(s.ts, t, side="right") - 1
        return {k: np.where(at >= 0, v[np.maximum(at, 0)].astype(np.float64), np.nan) for k, v in s.values.items()}


def counter_unit(name: str) -> str:
    """The unit of a counter lane's values: ``%`` for a label ending in ``(%)`` (Kineto's
    friendly labels), else none (a raw metric name: its unit is in the name)."""
    return "%" if name.rstrip().endswith("(%)") else ""


def build_rank_memory(data: RankData, t0_ns: int, window: tuple[int, int] | None) -> RankMemory:
    """The memory series of one rank's tables (module-level: dask runs it where the rank lives)."""
    return RankMemory(Trace([data], window=window, _classified=True), t0_ns)


class MemoryIndex:
    """The timeline's memory lanes of a trace: their descriptions here, their series with the ranks.

    Lane ids run rank by rank, device by device (``CPU`` before ``CUDA:0``, ...); a trace
    without memory records has none.
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.t0_ns = int(trace.t0_ns)
        held = trace.keep_on_workers(build_rank_memory, self.t0_ns, trace.window)
        self._parts: LocalParts | DaskParts = (
            DaskParts(trace.client, held) if trace.client is not None else LocalParts(held)
        )
        infos: dict[int, list[MemoryMeta]] = self._parts.call("info", {int(r): () for r in trace.ranks})
        self.lanes: list[MemoryMeta] = []
        self._local: list[tuple[int, int]] = []
        for rank in trace.ranks:
            for info in infos[int(rank)]:
                self._local.append((int(rank), info["id"]))
                lane = info.copy()
                lane["id"] = len(self.lanes)
                self.lanes.append(lane)

    @classmethod
    def of(cls, trace: Trace) -> MemoryIndex:
        """The memory lanes of ``trace``, built on first use and kept with the trace."""
        index = trace._cached("timeline_memory", lambda: cls(trace))
        return index if isinstance(index, cls) else cls(trace)

    def find(self, rank: int, device_type: str, device: int) -> MemoryMeta | None:
        """The lane of ``rank``'s device (type compared case-insensitively), or None."""
        for c in self.lanes:
            if (
                c["kind"] == "memory"
                and c["rank"] == int(rank)
                and c["device_type"].upper() == str(device_type).upper()
                and c["device"] == int(device)
            ):
                return c
        return None

    def _check(self, lane: int) -> tuple[int, int]:
        if not 0 <= int(lane) < len(self.lanes):
            known = f"0..{len(self.lanes) - 1}" if self.lanes else "none (no memory records)"
            raise TraceSelectionError(f"unknown memory lane {lane}; lanes are {known}")
        return self._local[int(lane)]

    def window(self, edges: np.ndarray, lanes: Sequence[int]) -> list[MemoryWindow]:
        """Lanes ``lanes`` binned over ``edges`` (int64 relative ns), in the order asked."""
        by_rank: dict[int, list[int]] = {}
        for c in lanes:
            rank, local = self._check(int(c))
            by_rank.setdefault(rank, []).append(local)
        if not by_rank:
            return []
        e = np.asarray(edges, dtype=np.int64)
        got = self._parts.call("window", {r: (e, ids) for r, ids in by_rank.items()})
        answers = {(r, w.id): w for r, ws in got.items() for w in ws}
        out = []
        for c in lanes:
            w = answers[self._local[int(c)]]
            out.append(MemoryWindow(id=int(c), series=w.series))
        return out

    def values_at(self, lane: int, times: np.ndarray) -> pd.DataFrame:
        """Each series' value in force at ``times`` (relative ns): columns ``t`` and one per series (NaN before the first record)."""
        rank, local = self._check(int(lane))
        t = np.asarray(times, dtype=np.int64)
        got = self._parts.call("values_at", {rank: (local, t)})[rank]
        return pd.DataFrame({"t": t, **got})


#: Bound on the report's embedded memory levels (characters of base64 text): part of its 3 MB.
MEMORY_LEVELS_MAX_BYTES = 400_000


def memory_levels(
    index: MemoryIndex, end_ns: int, cells: Sequence[int], *, max_bytes: int = MEMORY_LEVELS_MAX_BYTES
) -> dict[str, Any] | None:
    """The memory lanes binned over ``[0, end_ns)`` at each of ``cells`` (coarsest first), for the HTML report.

    Each level is :meth:`MemoryIndex.window` over ``TimelineIndex.edges(0, end_ns, cells)``
    (the binning of every counter surface, :func:`~jupyter_traceview.analysis.memory.binning.bin_step`):
    per lane, ``allocated`` max and end, ``reserved`` max and end, float64 (NaN before the
    lane's first record), deflated and base64-encoded. Levels are added while the text stays
    within ``max_bytes``; None when the trace has no lane or not even the first level fits.
    """
    import base64
    import zlib

    ids = [c["id"] for c in index.lanes if c["kind"] == "memory"]
    if not ids:
        return None
    levels: list[dict[str, Any]] = []
    size = 0
    end = max(int(end_ns), 1)
    for n in cells:
        edges = (np.arange(n + 1, dtype=np.int64) * end) // n
        wins = index.window(edges, ids)
        arr = np.stack([np.stack([*w.series["allocated"], *w.series["reserved"]]) for w in wins])  # (lanes, 4, cells)
        text = base64.b64encode(zlib.compress(np.ascontiguousarray(arr, dtype="<f8").tobytes(), 6)).decode("ascii")
        if size + len(text) > max_bytes:
            break
        size += len(text)
        levels.append({"cells": int(n), "data": text})
    if not levels:
        return None
    return {
        "lanes": ids,
        "series": ["allocated_max", "allocated_end", "reserved_max", "reserved_end"],
        "levels": levels,
    }
