"""A rank's GPU activities as plain numpy arrays: the fast path of the timeline analyses.

:func:`activities` selects the same rows as :func:`._common.gpu_activities` (GPU activity
kinds, clipped to ``trace.window``) but works on categorical codes and returns only the
columns the timeline analyses need, without building a DataFrame: a few hundred
microseconds per rank instead of milliseconds, which matters when an analysis loops over
hundreds of ranks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..model import intervals as iv
from ..model.schema import GPU_ACTIVITY_KINDS, GpuClass
from ..model.trace import Trace
from ._memo import rank_memo, read_only, sharing

__all__ = ["CLASSES", "COMM", "COMPUTE", "MEMORY", "OTHER", "Activities", "activities"]

#: Class codes of :attr:`Activities.cls`: positions in this tuple (-1: unclassified).
CLASSES: tuple[str, ...] = (
    GpuClass.COMPUTE.value,
    GpuClass.COMMUNICATION.value,
    GpuClass.MEMORY.value,
    GpuClass.OTHER.value,
)
COMPUTE, COMM, MEMORY, OTHER = range(4)
_ACTIVITY_KINDS = frozenset(k.value for k in GPU_ACTIVITY_KINDS)


@dataclass(frozen=True)
class Activities:
    """GPU activities of one rank (kernels, memcpy, memset, sync records), one array each.

    Times are int64 ns, clipped to the trace's window, in start order; ``cls`` indexes
    :data:`CLASSES`; ``name`` holds codes into ``names``; ``rows`` are positions in the
    rank's events table (gather any other column with :meth:`column`).
    """

    ts: np.ndarray
    end: np.ndarray
    cls: np.ndarray
    stream: np.ndarray
    name: np.ndarray
    names: pd.Index
    launch_eid: np.ndarray
    rows: np.ndarray
    #: Unions already computed: only on the shared (read-only) activities of a
    #: :func:`._memo.shared_rank_facts` scope, None otherwise. One store for both variants
    #: of a rank (all activities, work only): a union of work classes is the same in both.
    _unions: dict[Any, iv.Intervals] | None = field(default=None, compare=False, repr=False)
    #: The variant, in the keys of unions that include non-work classes.
    _variant: bool = field(default=False, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.ts)

    def take(self, mask: np.ndarray) -> Activities:
        # Index arrays, not boolean masks: one pass to find the rows, then cheap gathers.
        idx = np.flatnonzero(mask)
        return Activities(
            ts=self.ts[idx],
            end=self.end[idx],
            cls=self.cls[idx],
            stream=self.stream[idx],
            name=self.name[idx],
            names=self.names,
            launch_eid=self.launch_eid[idx],
            rows=self.rows[idx],
        )

    def work(self) -> Activities:
        """Only the work: compute, communication and memory (sync records are not work)."""
        return self.take((self.cls >= 0) & (self.cls < OTHER))

    @property
    def dur(self) -> np.ndarray:
        out: np.ndarray = self.end - self.ts
        return out

    def of(self, *classes: int) -> tuple[np.ndarray, np.ndarray]:
        """Starts and ends of the activities of these classes."""
        keep = self.cls == classes[0] if len(classes) == 1 else np.isin(self.cls, classes)
        return self.ts[keep], self.end[keep]

    def column(self, events: pd.DataFrame, name: str) -> np.ndarray:
        """Values of an events column for these activities."""
        values: np.ndarray = events[name].to_numpy()[self.rows]
        return values

    def union(self, *classes: int) -> iv.Intervals:
        """Union of the intervals of these classes (all work classes if none given)."""
        if self._unions is None:
            return self._union(classes)
        key: Any = classes if all(0 <= c < OTHER for c in classes) else (self._variant, classes)
        found = self._unions.get(key)
        if found is None:
            s, e = self._union(classes)
            found = self._unions[key] = (read_only(s), read_only(e))
        return found

    def _union(self, classes: tuple[int, ...]) -> iv.Intervals:
        if len(classes) == 1:
            sel = np.flatnonzero(self.cls == classes[0])
        elif classes:
            sel = np.flatnonzero(np.isin(self.cls, classes))
        else:
            sel = np.flatnonzero((self.cls >= 0) & (self.cls < OTHER))
        return iv.union(self.ts[sel], self.end[sel])


def _lut(categorical: pd.Categorical, wanted: dict[str, int]) -> np.ndarray:
    """A table mapping the codes of a categorical through ``wanted`` (others and NaN -> -1):
    index it with the codes (code -1, NaN, picks the trailing -1)."""
    # tolist(): one conversion of the (Arrow-backed) categories, not a lookup per category.
    return np.array([wanted.get(str(c), -1) for c in categorical.categories.tolist()] + [-1], dtype=np.int8)


def activities(trace: Trace, rank: int, *, work_only: bool = False) -> Activities:
    """The GPU activities of ``rank``, clipped to ``trace.window`` (see ``gpu_activities``);
    with ``work_only`` only compute, communication and memory (as :meth:`Activities.work`).

    Inside :func:`._memo.shared_rank_facts`, computed once per rank table, window and
    ``work_only`` and shared (read-only arrays, unions memoised)."""
    ev = trace.rank_data(rank).events
    window = trace.window
    if not sharing():
        return _activities(ev, window, work_only)
    unions: dict[Any, iv.Intervals] = rank_memo(ev, ("unions", window), dict)
    if work_only:  # the work among all the activities (the same rows, in the same order)
        return rank_memo(
            ev, ("activities", window, True), lambda: _shared(activities(trace, rank).work(), unions, True)
        )
    return rank_memo(ev, ("activities", window, False), lambda: _shared(_activities(ev, window, False), unions, False))


def _shared(a: Activities, unions: dict[Any, iv.Intervals], variant: bool) -> Activities:
    fields: dict[str, Any] = {
        k: read_only(getattr(a, k)) for k in ("ts", "end", "cls", "stream", "name", "launch_eid", "rows")
    }
    return Activities(**fields, names=a.names, _unions=unions, _variant=variant)


def _activities(ev: pd.DataFrame, window: tuple[int, int] | None, work_only: bool) -> Activities:
    gpu_class = ev["gpu_class"].array
    cls_lut = _lut(gpu_class, {c: i for i, c in enumerate(CLASSES)})
    kind = ev["kind"].array
    # A flag per kind category (code -1, no kind: the trailing False), one gather.
    is_activity = np.array([str(c) in _ACTIVITY_KINDS for c in kind.categories.tolist()] + [False], dtype=bool)
    wanted = is_activity[np.asarray(kind.codes)]
    if work_only:
        cls_all = cls_lut[np.asarray(gpu_class.codes)]
        wanted &= (cls_all >= 0) & (cls_all < OTHER)
    idx = np.flatnonzero(wanted)
    ts = ev["ts_ns"].to_numpy()[idx]
    end = ts + ev["dur_ns"].to_numpy()[idx]
    if window is not None:
        lo, hi = window
        zero = end == ts
        ts = np.maximum(ts, lo)
        end = np.minimum(end, hi)
        keep = np.flatnonzero((end > ts) | (zero & (ts >= lo) & (ts < hi)))
        idx, ts, end = idx[keep], ts[keep], end[keep]
    name = ev["name"].array
    return Activities(
        ts=ts,
        end=end,
        cls=cls_lut[np.asarray(gpu_class.codes)[idx]],
        stream=ev["stream"].to_numpy()[idx],
        name=np.asarray(name.codes)[idx],
        names=name.categories,
        launch_eid=ev["launch_eid"].to_numpy()[idx],
        rows=idx,
    )
