"""Where the GPU's time goes: temporal breakdown and communication/computation overlap.

Both analyses look at one rank's GPU timeline as a whole: the union over all its streams of
the GPU *work* activities (``gpu_class`` ``compute``, ``communication`` and ``memory``).
Synchronisation records (``gpu_class == "other"``) are waits, not work, and play no part.
``docs/semantics.md`` defines every figure and lists where and why HTA differs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..model import intervals as iv
from ..model.trace import Trace
from ._common import empty, pct, scoped, warn_no_gpu
from ._gpu import COMM, COMPUTE, Activities, activities

__all__ = ["comm_comp_overlap", "temporal_breakdown"]

TEMPORAL_COLUMNS = {
    "rank": "int64",
    "idle_ns": "int64",
    "compute_ns": "int64",
    "non_compute_ns": "int64",
    "span_ns": "int64",
    "idle_pct": "float64",
    "compute_pct": "float64",
    "non_compute_pct": "float64",
}

OVERLAP_COLUMNS = {
    "rank": "int64",
    "comm_ns": "int64",
    "compute_ns": "int64",
    "overlap_ns": "int64",
    "exposed_comm_ns": "int64",
    "overlap_pct": "float64",
}


@dataclass(frozen=True)
class RankTimeline:
    """Headline figures of one rank's GPU timeline (ns); the building block of both analyses."""

    #: First start to last end of GPU work.
    span_ns: int
    #: First start of GPU work (absolute ns).
    start_ns: int
    #: Time at least one work activity runs.
    busy_ns: int
    #: Time at least one compute kernel runs.
    compute_ns: int
    #: Time at least one communication kernel runs.
    comm_ns: int
    #: Time communication and compute run together.
    overlap_ns: int

    @property
    def idle_ns(self) -> int:
        return self.span_ns - self.busy_ns

    @property
    def exposed_comm_ns(self) -> int:
        return self.comm_ns - self.overlap_ns


def rank_timeline(acts: Activities) -> RankTimeline | None:
    """The figures of one rank from its GPU activities; None without work."""
    s, e = acts.union()
    if len(s) == 0:
        return None
    comp = acts.union(COMPUTE)
    comm = acts.union(COMM)
    return RankTimeline(
        span_ns=int(e[-1] - s[0]),
        start_ns=int(s[0]),
        busy_ns=iv.length(s, e),
        compute_ns=iv.length(*comp),
        comm_ns=iv.length(*comm),
        overlap_ns=iv.length(*iv.intersect(comm, comp)),
    )


def _rank_timeline(trace: Trace) -> RankTimeline | None:
    """Per rank, where the rank lives (see ``Trace.map_ranks``)."""
    (r,) = trace.ranks
    return rank_timeline(activities(trace, r, work_only=True))


def _timelines(trace: Trace, analysis: str) -> dict[int, RankTimeline]:
    lines = trace.map_ranks(_rank_timeline)
    missing = [r for r, t in lines.items() if t is None]
    if missing:
        warn_no_gpu(analysis, missing)
    return {r: t for r, t in lines.items() if t is not None}


def temporal_breakdown(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Idle, compute and non-compute time of each rank's GPU, over its GPU span.

    The span runs from the first start to the last end of GPU work on any stream of the
    rank. Every instant of it is exactly one of: *compute* (a compute kernel runs, whatever
    else runs too), *non-compute* (only communication and/or memory work runs) or *idle*
    (no work runs on any stream). Synchronisation records are not work: a GPU blocked in a
    ``Stream Sync`` is idle. Ranks without GPU work are left out, with a warning.

    Parameters
    ----------
    trace : Trace
    ranks, iterations, time_range
        Narrow the scope (see :meth:`Trace.select`); with ``time_range`` activities are
        clipped to it.

    Returns
    -------
    pandas.DataFrame
        One row per rank:

        ``rank`` (int), ``idle_ns`` (int, ns), ``compute_ns`` (int, ns),
        ``non_compute_ns`` (int, ns), ``span_ns`` (int, ns; ``idle_ns + compute_ns +
        non_compute_ns``), ``idle_pct``, ``compute_pct``, ``non_compute_pct`` (float, % of
        ``span_ns``; they add up to 100).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> tb = tv.temporal_breakdown(tv.load(tv.sample_path()))
    >>> list(tb.columns)  # doctest: +NORMALIZE_WHITESPACE
    ['rank', 'idle_ns', 'compute_ns', 'non_compute_ns', 'span_ns', 'idle_pct',
     'compute_pct', 'non_compute_pct']
    >>> int(tb.loc[0, "span_ns"])
    13009000
    """
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    lines = _timelines(trace, "temporal_breakdown")
    if not lines:
        return empty(TEMPORAL_COLUMNS)
    r = np.array(list(lines), dtype=np.int64)
    span = np.array([t.span_ns for t in lines.values()], dtype=np.int64)
    idle = np.array([t.idle_ns for t in lines.values()], dtype=np.int64)
    compute = np.array([t.compute_ns for t in lines.values()], dtype=np.int64)
    non_compute = span - idle - compute
    out = pd.DataFrame(
        {
            "rank": r,
            "idle_ns": idle,
            "compute_ns": compute,
            "non_compute_ns": non_compute,
            "span_ns": span,
            "idle_pct": pct(idle, span),
            "compute_pct": pct(compute, span),
            "non_compute_pct": pct(non_compute, span),
        }
    )
    return out.astype(TEMPORAL_COLUMNS)


def comm_comp_overlap(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """How much of each rank's communication runs while compute runs.

    Communication time is the union, over all streams, of the rank's communication kernels;
    compute time likewise. The overlap is the time both run at once; what is left of the
    communication time is *exposed*: the GPU does nothing but communicate. Memory
    activities and synchronisation records play no part. Ranks without GPU work are left
    out, with a warning.

    Parameters
    ----------
    trace : Trace
    ranks, iterations, time_range
        Narrow the scope (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        One row per rank:

        ``rank`` (int), ``comm_ns`` (int, ns: communication time), ``compute_ns`` (int,
        ns: compute time), ``overlap_ns`` (int, ns: both at once; ``<= comm_ns``),
        ``exposed_comm_ns`` (int, ns: ``comm_ns - overlap_ns``), ``overlap_pct`` (float,
        % of ``comm_ns``; NaN when the rank does not communicate).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> ov = tv.comm_comp_overlap(tv.load(tv.sample_path()))
    >>> float(ov.loc[0, "overlap_pct"].round(2))
    4.5
    """
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    lines = _timelines(trace, "comm_comp_overlap")
    if not lines:
        return empty(OVERLAP_COLUMNS)
    comm = np.array([t.comm_ns for t in lines.values()], dtype=np.int64)
    overlap = np.array([t.overlap_ns for t in lines.values()], dtype=np.int64)
    out = pd.DataFrame(
        {
            "rank": np.array(list(lines), dtype=np.int64),
            "comm_ns": comm,
            "compute_ns": np.array([t.compute_ns for t in lines.values()], dtype=np.int64),
            "overlap_ns": overlap,
            "exposed_comm_ns": comm - overlap,
            "overlap_pct": pct(overlap, comm),
        }
    )
    return out.astype(OVERLAP_COLUMNS)
