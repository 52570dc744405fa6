"""Shared plumbing of the analyses: scoping, GPU intervals, empty results.

Conventions every analysis follows:

* a pure function ``name(trace, *, ranks=None, iterations=None, time_range=None, ...)``
  returning a pandas DataFrame whose columns (with units) its docstring lists;
* multi-rank results carry a ``rank`` column; times are int64 ns (``*_ns``),
  percentages are 0-100 floats (``*_pct``);
* no plotting, no printing, no mutation of the trace;
* a GPU analysis on a trace without GPU activity returns an empty frame with the
  documented columns and warns (never raises).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import TypeVar

import numpy as np
import pandas as pd

from ..errors import TraceviewWarning
from ..model import intervals as iv
from ..model.schema import GPU_ACTIVITY_KINDS, GpuClass
from ..model.trace import Trace

__all__ = [
    "WORK_CLASSES",
    "class_union",
    "distinct_ints",
    "empty",
    "gpu_activities",
    "pct",
    "scoped",
    "warn_no_gpu",
]

#: GPU classes that are work (busy time); ``other`` (sync records) never is.
WORK_CLASSES = (GpuClass.COMPUTE.value, GpuClass.COMMUNICATION.value, GpuClass.MEMORY.value)
_ACTIVITY_KINDS = [k.value for k in GPU_ACTIVITY_KINDS]


def scoped(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    clip: bool = True,
) -> Trace:
    """The trace narrowed as the analysis' scoping keywords ask (unchanged if none).

    ``clip=False`` keeps the events overlapping ``time_range`` whole (for analyses
    documented to count whole events, such as ``kernel_launch_stats``).
    """
    if ranks is None and iterations is None and time_range is None:
        return trace
    return trace.select(ranks=ranks, iterations=iterations, time_range=time_range, _clip=clip)


def gpu_activities(trace: Trace, rank: int, *, classes: Iterable[str] | None = None) -> pd.DataFrame:
    """GPU activities of a rank (kernels, memcpy, memset, sync) with an ``end_ns`` column.

    Clipped to ``trace.window`` when the trace was narrowed to a time range; activities
    left with no time inside the window are dropped. ``classes`` keeps only those
    ``gpu_class`` values.
    """
    ev = trace.rank_data(rank).events
    mask = ev["kind"].isin(_ACTIVITY_KINDS).to_numpy()
    if classes is not None:
        # Not in place: to_numpy() may hand back a read-only view (copy-on-write).
        mask = mask & ev["gpu_class"].isin(list(classes)).to_numpy()
    out = ev.loc[mask].copy()
    out["end_ns"] = out["ts_ns"] + out["dur_ns"]
    if trace.window is not None:
        lo, hi = trace.window
        out["ts_ns"] = out["ts_ns"].clip(lower=lo)
        out["end_ns"] = out["end_ns"].clip(upper=hi)
        out = out.loc[
            (out["end_ns"] > out["ts_ns"]) | ((out["dur_ns"] == 0) & (out["ts_ns"] >= lo) & (out["ts_ns"] < hi))
        ]
        out["dur_ns"] = out["end_ns"] - out["ts_ns"]
    return out


def class_union(acts: pd.DataFrame, classes: Iterable[str]) -> iv.Intervals:
    """Union of the intervals of activities whose gpu_class is in ``classes``."""
    sel = acts.loc[acts["gpu_class"].isin(list(classes))]
    return iv.union(sel["ts_ns"].to_numpy(), sel["end_ns"].to_numpy())


def empty(columns: Mapping[str, str]) -> pd.DataFrame:
    """An empty frame with the documented columns and dtypes."""
    return pd.DataFrame({c: pd.Series([], dtype=d) for c, d in columns.items()})


def warn_no_gpu(analysis: str, ranks: Iterable[int], *, stacklevel: int = 3) -> None:
    """Warn that ``ranks`` have no GPU activity; ``stacklevel`` 3 names the analysis' caller
    when the analysis calls this itself."""
    ranks = list(ranks)
    warnings.warn(
        f"{analysis}: rank(s) {ranks} have no GPU activity (a CPU-only trace?); their rows are empty",
        TraceviewWarning,
        stacklevel=stacklevel,
    )


_T = TypeVar("_T")


def with_gpu(results: Mapping[int, _T | None], analysis: str) -> dict[int, _T]:
    """The per-rank ``results`` of the ranks with GPU work (a result of None: the rank has
    none), warning about the others (:func:`warn_no_gpu`, naming the analysis' caller when
    the analysis calls this itself)."""
    idle = [r for r, v in results.items() if v is None]
    if idle:
        warn_no_gpu(analysis, idle, stacklevel=4)
    return {r: v for r, v in results.items() if v is not None}


def pct(part: np.ndarray | float, whole: np.ndarray | float) -> np.ndarray | float:
    """100 * part / whole, NaN where whole is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(whole) > 0, 100.0 * np.asarray(part) / np.asarray(whole), np.nan)


def distinct_ints(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an integer array, as ``np.unique`` gives them (int64).

    Category codes, steps and ranks span a small range: a count per value is an O(n) pass,
    where ``np.unique`` sorts (or, on numpy 2.4, hashes: ~15x slower on a million codes).
    """
    values = np.asarray(values)
    if len(values) == 0:
        return np.empty(0, dtype=np.int64)
    lo, hi = int(values.min()), int(values.max())
    if hi - lo > 4 * len(values) + 4096:  # sparse values: sort
        return np.unique(values).astype(np.int64)
    return np.flatnonzero(np.bincount(values.astype(np.int64) - lo)) + lo
