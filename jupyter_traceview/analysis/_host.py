"""The host side of a rank: its CPU ranges (operators, annotations, Python frames) and their nesting.

The CPU ranges of a PyTorch trace are ``cpu_op`` events (ATen operators), ``user_annotation``
events (``record_function`` ranges, ``ProfilerStep#N``, ``## backward ##``) and, with
``with_stack=True``, ``python_function`` events (Python frames). They nest on their thread.
The nesting here is torch's own (``torch.autograd.profiler_util.EventList``'s
``_populate_cpu_children``): a range's *parent* is the innermost range of those three kinds on
the same thread (pid, tid) that encloses it (``parent.ts <= ts`` and ``end <= parent.end``);
of two ranges with the same start and end, the one listed first is the parent. A range's
*self* time is its duration minus its children's durations and minus the runtime and driver
calls (``cudaLaunchKernel``, ``cuLaunchKernelEx``...) made directly in it: torch counts those
calls as children too (they are CPU events of its ``EventList``). With these rules the sums
per operator name equal ``prof.key_averages()``'s ``cpu_time_total`` and
``self_cpu_time_total`` (tests check it on traces recorded with CPU torch,
``tests/data/torch_cpu/``, and with CUDA torch on an H200, ``tests/data/h200_cuda/``).

Runtime calls are not ranges here (nothing nests in them, and no breakdown reports them);
instants are neither ranges nor children.

The nesting is one stack sweep per thread in compiled code (``_loops.innermost``: O(n log n)
for the sort, then linear); without the compiled loops, :func:`._enclose.last_enclosing`
gives the same parents from a sparse table of the ranges' ends (O(n log n) memory, no pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..model.schema import EventKind
from ..model.text import as_text
from . import _links as lk
from ._chains import depths
from ._enclose import last_enclosing

__all__ = ["HOST_KINDS", "HostRanges", "host_ranges"]

#: Event kinds that are host ranges (nest, and count as children for self time).
HOST_KINDS: tuple[str, ...] = (
    EventKind.CPU_OP.value,
    EventKind.USER_ANNOTATION.value,
    EventKind.PYTHON_FUNCTION.value,
)


#: CPU calls that are children of the range they run in (torch's tree), without being ranges.
_CALL_KINDS: tuple[str, ...] = (EventKind.CUDA_RUNTIME.value, EventKind.CUDA_DRIVER.value)


@dataclass(frozen=True)
class HostRanges:
    """A rank's host ranges, clipped to a window, with their nesting.

    Every array has one entry per range, in the order of ``rows`` (rows of ``ev``, in time
    order). ``parent`` is a position in these arrays (-1 at top level).
    """

    ev: pd.DataFrame
    rows: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    dur: np.ndarray
    #: Duration minus the children's durations and the runtime/driver calls made directly in it.
    self_ns: np.ndarray
    #: Children per range: nested ranges plus runtime/driver calls made directly in it.
    n_children: np.ndarray
    #: Time with none of the range's children open (``dur`` minus the union of the
    #: children): ``self_ns`` where children do not overlap, never negative.
    exclusive_ns: np.ndarray
    parent: np.ndarray
    kind: np.ndarray  # str per range
    name_codes: np.ndarray
    names: np.ndarray  # the categories of ev["name"]

    def __len__(self) -> int:
        return len(self.rows)

    def depth(self) -> np.ndarray:
        """Nesting depth of each range (0 at top level), by pointer jumping up ``parent``."""
        return depths(self.parent)


def host_ranges(ev: pd.DataFrame, window: tuple[int, int] | None = None) -> HostRanges:
    """The host ranges of one rank's events frame (clipped to ``window``) and their nesting."""
    mask = lk.category_mask(ev["kind"], HOST_KINDS)
    ts = ev["ts_ns"].to_numpy()
    end = ts + ev["dur_ns"].to_numpy()
    if window is not None:
        lo, hi = window
        mask = mask & (ts < hi) & ((end > lo) | (ts == lo))
    rows = np.flatnonzero(mask)
    r_ts, r_end = ts[rows], end[rows]
    if window is not None:
        r_ts, r_end = np.maximum(r_ts, window[0]), np.minimum(r_end, window[1])
    dur = r_end - r_ts
    n = len(rows)
    parent = np.full(n, -1, dtype=np.int64)
    if n:
        pid, tid = ev["pid"].to_numpy()[rows], ev["tid"].to_numpy()[rows]
        parent = _innermost(pid, tid, r_ts, r_end, np.zeros(n, dtype=bool))
    child_sum = np.zeros(n, dtype=np.int64)
    has = parent >= 0
    if has.any():
        np.add.at(child_sum, parent[has], dur[has])
    exclusive = dur - children_cover(parent, r_ts, r_end)
    n_children = np.bincount(parent[has], minlength=n).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    calls_ns = _runtime_children(ev, rows, window, n, n_children)
    # The rows are host kinds (valid codes): their texts through the categories, not per event.
    kind_cats = as_text(np.asarray(ev["kind"].cat.categories, dtype=object))
    kind = kind_cats[ev["kind"].cat.codes.to_numpy()[rows]] if n else np.empty(0, dtype=object)
    return HostRanges(
        ev=ev,
        rows=rows,
        ts=r_ts,
        end=r_end,
        dur=dur,
        self_ns=dur - child_sum - calls_ns,
        n_children=n_children,
        exclusive_ns=exclusive,
        parent=parent,
        kind=kind,
        name_codes=ev["name"].cat.codes.to_numpy().astype(np.int64)[rows],
        names=np.asarray(ev["name"].cat.categories, dtype=object),
    )


def _innermost(pid: np.ndarray, tid: np.ndarray, ts: np.ndarray, end: np.ndarray, is_point: np.ndarray) -> np.ndarray:
    """Per entry, the position of its innermost enclosing range on its thread (-1 if none).

    Ranges are the entries with ``is_point`` False, in their innermost-last order (a
    range's position breaks ties between equal ranges: only an earlier one encloses a
    later one): of the enclosing ranges, the latest to start, then the shortest, then the
    last listed. The stack sweep ``_loops.innermost`` (:func:`._enclose.last_enclosing`).
    """
    n = len(ts)
    thread = lk.row_ids(np.column_stack((pid, tid)))[0]
    pos = np.arange(n, dtype=np.int64)
    order = np.lexsort((pos, is_point, -end, ts, thread)).astype(np.int64)
    return last_enclosing(thread, np.asarray(end, dtype=np.int64), np.asarray(is_point, dtype=bool), order)


def _runtime_children(
    ev: pd.DataFrame, rows: np.ndarray, window: tuple[int, int] | None, n: int, n_children: np.ndarray
) -> np.ndarray:
    """Per range, the (clipped) time of the runtime/driver calls whose innermost range it is.

    Adds those calls to ``n_children`` in place.
    """
    out = np.zeros(n, dtype=np.int64)
    calls = np.flatnonzero(lk.category_mask(ev["kind"], _CALL_KINDS)) if n else np.zeros(0, dtype=np.int64)
    if not len(calls):
        return out
    ts = ev["ts_ns"].to_numpy()[calls]
    end = ts + ev["dur_ns"].to_numpy()[calls]
    if window is not None:
        ts, end = np.maximum(ts, window[0]), np.minimum(end, window[1])
    # The ranges' unclipped times (clipping keeps the nesting).
    both = np.concatenate((rows, calls))
    b_ts = ev["ts_ns"].to_numpy()[both]
    at = _innermost(
        ev["pid"].to_numpy()[both],
        ev["tid"].to_numpy()[both],
        b_ts,
        b_ts + ev["dur_ns"].to_numpy()[both],
        np.arange(len(both)) >= len(rows),
    )[len(rows) :]
    inner = np.where(at >= 0, rows[np.maximum(at, 0)], -1)
    k = np.flatnonzero(inner >= 0)
    if not len(k):
        return out
    pos_of_row = np.full(len(ev), -1, dtype=np.int64)
    pos_of_row[rows] = np.arange(n)
    pos = pos_of_row[inner[k]]
    np.add.at(out, pos, np.maximum(end[k] - ts[k], 0))
    np.add.at(n_children, pos, 1)
    return out


def children_cover(parent: np.ndarray, ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per range, the length of the union of its children's intervals.

    Children of one parent can overlap only where ranges nest improperly (a
    ``ProfilerStep#N`` range starting inside ``profiler.step()``'s Python frame and outliving
    it); torch's self time then goes negative, the union does not.
    """
    n = len(parent)
    cover = np.zeros(n, dtype=np.int64)
    kids = np.flatnonzero(parent >= 0)
    if not len(kids):
        return cover
    o = np.lexsort((ts[kids], parent[kids]))
    k = kids[o]
    p, s, e = parent[k], ts[k], end[k]
    # Running max of the ends of earlier siblings (per parent), shifted by one.
    run = pd.Series(e).groupby(p).cummax().to_numpy()
    prev = np.concatenate(([np.iinfo(np.int64).min], run[:-1]))
    first = np.concatenate(([True], p[1:] != p[:-1]))
    prev[first] = np.iinfo(np.int64).min
    part = np.maximum(e - np.maximum(s, prev), 0)
    np.add.at(cover, p, part)
    return cover
