"""Time-resolved views: GPU utilisation per rank and time bin, and one kernel's pace."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import OptionError, TraceSelectionError, TraceviewWarning
from ..model import intervals as iv
from ..model.trace import Trace
from ._common import empty, scoped, warn_no_gpu
from ._gpu import COMM, COMPUTE, MEMORY, activities

__all__ = ["kernel_pace", "utilization_heatmap"]

HEATMAP_KINDS = ("all", "compute", "communication", "memory", "overlap")

HEATMAP_COLUMNS = {
    "rank": "int64",
    "device": "int64",
    "bin": "int64",
    "bin_start_ns": "int64",
    "bin_end_ns": "int64",
    "origin_ns": "int64",
    "busy_ns": "int64",
    "busy_pct": "float64",
}

PACE_COLUMNS = {
    "rank": "int64",
    "name": "str",
    "occurrence": "int64",
    "eid": "int64",
    "step": "int64",
    "device": "int64",
    "stream": "int64",
    "ts_ns": "int64",
    "t_ns": "int64",
    "dur_ns": "int64",
    "gap_ns": "int64",
}


def _kind_union(start: np.ndarray, end: np.ndarray, cls: np.ndarray, kind: str) -> iv.Intervals:
    """The union of the time with some activity of ``kind`` (see utilization_heatmap)."""
    if kind == "all":
        return iv.union(start, end)
    if kind == "overlap":
        comm = iv.union(start[cls == COMM], end[cls == COMM])
        comp = iv.union(start[cls == COMPUTE], end[cls == COMPUTE])
        return iv.intersect(comm, comp)
    keep = cls == {"compute": COMPUTE, "communication": COMM, "memory": MEMORY}[kind]
    return iv.union(start[keep], end[keep])


def _rank_activities(trace: Trace) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """A one-rank trace's GPU work by device: ``(device, start, end, class)``, devices in order."""
    r = trace.ranks[0]
    acts = activities(trace, r, work_only=True)
    if len(acts) == 0:
        return []
    device = acts.column(trace.rank_data(r).events, "device")
    if (device == device[0]).all():  # the usual case: one device per rank
        return [(int(device[0]), acts.ts, acts.end, acts.cls)]
    out = []
    for d in np.unique(device):
        keep = device == d
        out.append((int(d), acts.ts[keep], acts.end[keep], acts.cls[keep]))
    return out


def _heatmap_extents(trace: Trace) -> list[tuple[int, int, int, int]]:
    """Per device of a one-rank trace: (device, first activity's start, earliest start, latest end)."""
    return [(d, int(s[0]), int(s.min()), int(e.max())) for d, s, e, _c in _rank_activities(trace)]


def _heatmap_bins(trace: Trace, kind: str, rel_edges: np.ndarray, origin: dict[int, int]) -> dict[int, np.ndarray]:
    """Per device of a one-rank trace: the time covered by ``kind`` in each bin (ns); {} for a rank left out."""
    r = trace.ranks[0]
    if r not in origin:
        return {}
    edges = rel_edges + origin[r]
    out = {}
    for d, s, e, c in _rank_activities(trace):
        us, ue = _kind_union(s, e, c, kind)
        out[d] = iv.binned_coverage(us, ue, edges)
    return out


def utilization_heatmap(
    trace: Trace,
    *,
    bins: int = 200,
    bin_ns: int | None = None,
    kind: Literal["all", "compute", "communication", "memory", "overlap"] = "all",
    align: Literal["start", "rank_start"] | int = "start",
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """GPU utilisation per rank, device and time bin: the Nsight-style heatmap, in long form.

    For each (rank, device) and each time bin, the time in the bin during which at least
    one GPU activity of ``kind`` runs on that device, on any stream (a union over streams,
    so two overlapping kernels count once). Exact: coverage is computed from the interval
    union, not sampled, so ``busy_ns`` summed over the bins equals the union's length.

    Parameters
    ----------
    bins
        Number of bins spanning the aligned time range (ignored when ``bin_ns`` is given).
    bin_ns
        Bin width in ns instead of a bin count; the last bin ends at or after the range.
    kind
        ``"all"`` (compute, communication or memory work), ``"compute"``,
        ``"communication"``, ``"memory"``, or ``"overlap"`` (communication while some
        compute kernel runs). Synchronisation records are never work.
    align
        How ranks share the time axis. ``"start"``: one axis for all, from the earliest GPU
        activity of any rank (the trace clocks as recorded). ``"rank_start"``: each rank
        from its own first GPU activity. An int ``N``: each rank from the start of its
        ``ProfilerStep#N`` (the CPU-side span); ranks without that step are left out with
        a warning.
    ranks, iterations, time_range
        Scope the trace first (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        One row per (rank, device, bin), sorted that way:

        rank : int
        device : int
            Device index of the activities.
        bin : int
            Bin number, 0 upwards.
        bin_start_ns, bin_end_ns : int, ns
            The bin, relative to the row's ``origin_ns``; identical for every rank.
        origin_ns : int, ns
            Absolute time (trace clock) of relative time 0 for this rank.
        busy_ns : int, ns
            Time in the bin with at least one activity of ``kind`` running.
        busy_pct : float, %
            ``busy_ns`` as a share of the bin's width.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> hm = tv.utilization_heatmap(tv.load(tv.sample_path()), bins=50, kind="communication")
    >>> grid = hm.pivot(index="rank", columns="bin", values="busy_pct")
    """
    if kind not in HEATMAP_KINDS:
        raise OptionError.invalid("kind", kind, HEATMAP_KINDS)
    if bin_ns is None and (not isinstance(bins, (int, np.integer)) or bins < 1):
        raise OptionError(f"bins={bins!r} is not accepted; give a positive number of bins")
    if bin_ns is not None and (not isinstance(bin_ns, (int, np.integer)) or bin_ns < 1):
        raise OptionError(f"bin_ns={bin_ns!r} is not accepted; give a positive bin width in ns")
    if not (align in ("start", "rank_start") or isinstance(align, (int, np.integer))):
        raise OptionError.invalid("align", align, ("start", "rank_start", "<ProfilerStep number>"))
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)

    step_start: dict[int, int] = {}
    if not isinstance(align, str):
        its = trace.iterations
        its = its.loc[its["step"] == int(align)]
        if its.empty:
            raise TraceSelectionError.unknown("iteration", int(align), sorted(set(trace.iterations["step"].tolist())))
        step_start = dict(zip(its["rank"].tolist(), its["start_ns"].tolist(), strict=True))

    # Per rank, on the workers holding the ranks (trace.map_ranks): the extent of each
    # device's activities, then (once the common bins are known) each device's busy time per
    # bin. Only those small results come to this process.
    extents = trace.map_ranks(_heatmap_extents)
    idle = [r for r in trace.ranks if not extents[r]]
    missing_step = [r for r in trace.ranks if extents[r] and step_start and r not in step_start]
    groups = [(r, d, s0, lo_r, hi_r) for r in trace.ranks if r not in missing_step for d, s0, lo_r, hi_r in extents[r]]
    if idle:
        warn_no_gpu("utilization_heatmap", idle)
    if missing_step:
        warnings.warn(
            f"utilization_heatmap: rank(s) {missing_step} have no ProfilerStep#{align}; left out of the heatmap",
            TraceviewWarning,
            stacklevel=2,
        )
    if not groups:
        return empty(HEATMAP_COLUMNS)

    first = {r: min(g[2] for g in groups if g[0] == r) for r in {g[0] for g in groups}}
    if align == "start":
        t0 = min(first.values())
        origin = dict.fromkeys(first, t0)
    elif align == "rank_start":
        origin = first
    else:
        origin = {r: int(step_start[r]) for r in first}

    lo = min(g[3] - origin[g[0]] for g in groups)
    hi = max(g[4] - origin[g[0]] for g in groups)
    if bin_ns is not None:
        n_bins = max(1, -(-(hi - lo) // int(bin_ns)))
        rel_edges = lo + np.arange(n_bins + 1, dtype=np.int64) * int(bin_ns)
    else:
        n_bins = int(bins)
        span = max(hi - lo, n_bins)  # at least 1 ns per bin
        # lo + k * span // n_bins, without k * span overflowing int64 on long traces.
        q, rem = divmod(span, n_bins)
        k = np.arange(n_bins + 1, dtype=np.int64)
        rel_edges = lo + k * q + (k * rem) // n_bins

    binned = trace.map_ranks(_heatmap_bins, kind, rel_edges, origin)
    busy = np.empty((len(groups), n_bins), dtype=np.int64)
    for i, (r, d, *_) in enumerate(groups):
        busy[i] = binned[r][d]

    n = len(groups)
    width = np.diff(rel_edges)
    out = pd.DataFrame(
        {
            "rank": np.repeat(np.array([g[0] for g in groups], dtype=np.int64), n_bins),
            "device": np.repeat(np.array([g[1] for g in groups], dtype=np.int64), n_bins),
            "bin": np.tile(np.arange(n_bins, dtype=np.int64), n),
            "bin_start_ns": np.tile(rel_edges[:-1], n),
            "bin_end_ns": np.tile(rel_edges[1:], n),
            "origin_ns": np.repeat(np.array([origin[g[0]] for g in groups], dtype=np.int64), n_bins),
            "busy_ns": busy.ravel(),
            "busy_pct": (100.0 * busy / width[None, :]).ravel(),
        }
    )
    return out.astype(HEATMAP_COLUMNS)


def kernel_pace(
    trace: Trace,
    *,
    name: str,
    match: Literal["exact", "contains", "regex"] = "exact",
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Every run of one kernel (or GPU activity) over time, per rank: its start and duration.

    Plot ``dur_ns`` against ``t_ns`` per rank to see a kernel slow down, speed up, or
    differ between ranks; ``gap_ns`` is the pace at which it is launched.

    Parameters
    ----------
    name
        The activity's name: the full name (``match="exact"``), a substring
        (``"contains"``) or a regular expression searched in the name (``"regex"``).
    match
        How ``name`` is matched. A name that matches nothing raises
        :class:`TraceSelectionError` listing the activity names, close matches first.
    ranks, iterations, time_range
        Scope the trace first (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        One row per run, sorted by rank then start:

        rank : int
        name : str
            The activity's full name (several with ``contains``/``regex``).
        occurrence : int
            Run number of this name on this rank, 0 upwards, in start order.
        eid : int
            Event id of the run.
        step : int
            ProfilerStep of the run (by its launch); -1 if none.
        device, stream : int
            Where it ran.
        ts_ns : int, ns
            Start, absolute (trace clock).
        t_ns : int, ns
            Start relative to the trace's first event (``trace.t0_ns`` before scoping).
        dur_ns : int, ns
            Duration (clipped to ``time_range`` when given).
        gap_ns : int, ns
            Start minus the previous run's start on the same rank; -1 for the first.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> pace = tv.kernel_pace(trace, name="nccl", match="contains", ranks=0)
    >>> len(pace) > 0, bool((pace["dur_ns"] > 0).all())
    (True, True)
    """
    if match not in ("exact", "contains", "regex"):
        raise OptionError.invalid("match", match, ("exact", "contains", "regex"))
    if not isinstance(name, str) or not name:
        raise OptionError(f"name={name!r} is not accepted; give the kernel's name (a non-empty string)")
    t0 = trace.t0_ns
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    pattern = re.compile(name) if match == "regex" else None

    parts = []
    all_names: set[str] = set()
    idle = []
    for r in trace.ranks:
        acts = activities(trace, r, work_only=False)
        if len(acts) == 0:
            idle.append(r)
            continue
        ev = trace.rank_data(r).events
        names_col = ev["name"]
        codes = names_col.cat.codes.to_numpy()[acts.rows]
        cats = names_col.cat.categories
        present = np.unique(codes[codes >= 0])
        present_names = [str(cats[i]) for i in present]
        all_names.update(present_names)
        if match == "exact":
            hit = [int(i) for i, nm in zip(present, present_names, strict=True) if nm == name]
        elif match == "contains":
            hit = [int(i) for i, nm in zip(present, present_names, strict=True) if name in nm]
        else:
            assert pattern is not None
            hit = [int(i) for i, nm in zip(present, present_names, strict=True) if pattern.search(nm)]
        if not hit:
            continue
        keep = np.isin(codes, hit)
        rows = acts.rows[keep]
        start = acts.ts[keep]
        end = acts.end[keep]
        hit_codes = codes[keep]
        # Runs of each name numbered separately, in start order (activities are in start order).
        occurrence = np.empty(len(rows), dtype=np.int64)
        gap = np.full(len(rows), -1, dtype=np.int64)
        for c in np.unique(hit_codes):
            idx = np.flatnonzero(hit_codes == c)
            occurrence[idx] = np.arange(len(idx))
            gap[idx[1:]] = np.diff(start[idx])
        parts.append(
            pd.DataFrame(
                {
                    "rank": np.full(len(rows), r, dtype=np.int64),
                    "name": np.asarray(cats[hit_codes], dtype=object),
                    "occurrence": occurrence,
                    "eid": ev["eid"].to_numpy()[rows],
                    "step": ev["step"].to_numpy()[rows].astype(np.int64),
                    "device": ev["device"].to_numpy()[rows].astype(np.int64),
                    "stream": ev["stream"].to_numpy()[rows].astype(np.int64),
                    "ts_ns": start,
                    "t_ns": start - t0,
                    "dur_ns": end - start,
                    "gap_ns": gap,
                }
            )
        )
    if idle:
        warn_no_gpu("kernel_pace", idle)
    if not parts:
        if not all_names:
            return empty(PACE_COLUMNS)
        raise TraceSelectionError.unknown("kernel", name, sorted(all_names))
    out = pd.concat(parts, ignore_index=True)
    return out.astype(PACE_COLUMNS)
