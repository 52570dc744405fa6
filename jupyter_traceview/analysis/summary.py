"""Headline figures per rank."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..model.schema import EventKind
from ..model.trace import Trace
from . import loops
from ._common import distinct_ints, pct, scoped
from ._gpu import activities
from ._memo import per_rank
from .temporal import rank_timeline

__all__ = ["summary"]

SUMMARY_COLUMNS = {
    "rank": "int64",
    "events": "int64",
    "cpu_ops": "int64",
    "kernels": "int64",
    "gpu_activities": "int64",
    "iterations": "int64",
    "trace_span_ns": "int64",
    "gpu_span_ns": "int64",
    "gpu_busy_ns": "int64",
    "gpu_busy_pct": "float64",
    "idle_pct": "float64",
    "compute_ns": "int64",
    "compute_pct": "float64",
    "comm_ns": "int64",
    "overlap_pct": "float64",
    "exposed_comm_ns": "int64",
    "exposed_comm_pct": "float64",
    "gpu_start_ns": "int64",
    "gpu_end_ns": "int64",
}


def summary(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Headline figures of each rank, one row per rank.

    Returns
    -------
    pandas.DataFrame
        One row per rank:

        rank : int
        events : int
            Events of the rank (every kind).
        cpu_ops : int
            CPU operators (``cpu_op`` events).
        kernels : int
            GPU kernels.
        gpu_activities : int
            Kernels, memcpy, memset and sync records.
        iterations : int
            Distinct ProfilerStep iterations.
        trace_span_ns : int, ns
            First event start to last event end, any kind.
        gpu_span_ns : int, ns
            The rank's *span* (``docs/semantics.md``): ``gpu_end_ns - gpu_start_ns``; 0 without
            GPU work.
        gpu_busy_ns : int, ns
            Time at least one GPU work activity runs (union over streams).
        gpu_busy_pct : float, %
            ``gpu_busy_ns / gpu_span_ns``; NaN without GPU work.
        idle_pct : float, %
            Time no GPU work runs, % of ``gpu_span_ns`` (``100 - gpu_busy_pct``; see
            :func:`temporal_breakdown`); NaN without GPU work.
        compute_ns : int, ns
            Time at least one compute kernel runs.
        compute_pct : float, %
            ``compute_ns`` as % of ``gpu_span_ns``; NaN without GPU work.
        comm_ns : int, ns
            Time at least one communication kernel runs (see :func:`comm_comp_overlap`).
        overlap_pct : float, %
            Communication time during which compute runs too, % of ``comm_ns``; NaN without
            communication.
        exposed_comm_ns : int, ns
            Communication time with no compute running alongside.
        exposed_comm_pct : float, %
            ``exposed_comm_ns`` as % of ``gpu_span_ns``: the share of the GPU timeline spent
            only communicating; NaN without GPU work.
        gpu_start_ns, gpu_end_ns : int, ns
            First start and last end of GPU work (compute, communication, memory), absolute;
            -1 without GPU work.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> s = tv.summary(trace)
    >>> len(s), s["rank"].tolist()
    (8, [0, 1, 2, 3, 4, 5, 6, 7])
    >>> bool(((s["gpu_busy_pct"] + s["idle_pct"]).round(6) == 100).all())
    True
    """
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    rows = list(per_rank(trace, _summary_row).values())
    out = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    return out.astype(SUMMARY_COLUMNS)


def _summary_row(trace: Trace) -> dict[str, object]:
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    kinds = ev["kind"]
    acts = activities(trace, r)
    line = rank_timeline(acts)
    gpu_span = line.span_ns if line else 0
    busy = line.busy_ns if line else 0
    compute = line.compute_ns if line else 0
    comm = line.comm_ns if line else 0
    overlap = line.overlap_ns if line else 0
    if len(ev):
        ts = ev["ts_ns"].to_numpy()
        trace_span = int((ts + ev["dur_ns"].to_numpy()).max() - ts.min())
    else:
        trace_span = 0
    # Events of the two kinds counted, on the codes (int8-16 as stored: no widening pass).
    kind_code = np.asarray(kinds.array.codes)
    cats = kinds.cat.categories.tolist()

    def count(kind: str) -> int:
        return int(np.count_nonzero(kind_code == cats.index(kind))) if kind in cats else 0

    return {
        "rank": r,
        "events": len(ev),
        "cpu_ops": count(EventKind.CPU_OP.value),
        "kernels": count(EventKind.KERNEL.value),
        "gpu_activities": len(acts),
        "iterations": _count_steps(ev["step"].to_numpy()),
        "trace_span_ns": trace_span,
        "gpu_start_ns": line.start_ns if line else -1,
        "gpu_end_ns": line.start_ns + line.span_ns if line else -1,
        "gpu_span_ns": gpu_span,
        "gpu_busy_ns": busy,
        "gpu_busy_pct": float(pct(busy, gpu_span)),
        "idle_pct": float(pct(gpu_span - busy, gpu_span)),
        "compute_ns": compute,
        "compute_pct": float(pct(compute, gpu_span)),
        "comm_ns": comm,
        "overlap_pct": float(pct(overlap, comm)),
        "exposed_comm_ns": comm - overlap,
        "exposed_comm_pct": float(pct(comm - overlap, gpu_span)),
    }


def _count_steps(steps: np.ndarray) -> int:
    """How many distinct steps >= 0 (``len(distinct_ints(steps[steps >= 0]))``): a flag per
    value in one scatter, where steps are small integers from -1 up (no step: -1)."""
    if len(steps) == 0:
        return 0
    if loops.native is not None:
        with contextlib.suppress(TypeError, BufferError):  # (steps of another dtype: below)
            n = int(loops.native.count_steps(np.ascontiguousarray(steps)))
            if n >= 0:
                return n
    lo, hi = int(steps.min()), int(steps.max())
    if hi < 0:
        return 0
    if lo < -1 or hi > 4 * len(steps) + 4096:
        return len(distinct_ints(steps[steps >= 0]))
    seen = np.zeros(hi + 2, dtype=bool)
    seen[steps] = True  # -1 flags the last slot, past every step
    return int(np.count_nonzero(seen[: hi + 1]))
