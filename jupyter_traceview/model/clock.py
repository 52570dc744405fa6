"""Clock alignment of rank traces from matched collectives.

Rank traces are recorded on different hosts whose clocks disagree (NTP keeps them within
tens of microseconds to milliseconds; kernels last microseconds). A synchronising
collective (all-reduce, all-gather, reduce-scatter, all-to-all, barrier) cannot finish on
one rank before the last rank has contributed, and NCCL finishes it on every rank within
a few microseconds of each other: the ends of one collective's kernels mark (nearly) the
same instant on every rank. :func:`clock_alignment` estimates each rank's clock offset
from those ends; :func:`align_clocks`, the one way to align clocks, shifts every timestamp
of each rank by it and returns the aligned trace (``tv.load`` keeps each file's clock).

The model: ``end[c, r] = T[c] + offset[r] + noise``, with ``offset[reference] = 0``.
It is fitted robustly (Tukey's median polish: alternately ``T[c] = median_r(end - offset)``
and ``offset[r] = median_c(end - T)``), so a few collectives whose ends do not coincide
(a slow rank finishing a ring step late, a mismatched pair) do not move the estimate.
Collectives of sub-groups are handled as long as the groups connect every rank to the
reference. The residuals ``end - T - offset`` say how well the ends agree after
alignment; a systematic per-rank lag (a rank always last in the ring) is
indistinguishable from a clock offset and ends up in it, so the estimate is accurate to
about NCCL's last-step latency (a few microseconds), not to the nanosecond.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..errors import OptionError, TraceSelectionError, TraceviewError, TraceviewWarning
from .collectives import SYNCHRONISING, match_instances, rank_collective_kernels
from .rank_data import RankData, replaced
from .trace import Trace

__all__ = ["CLOCK_OFFSET_KEY", "align_clocks", "clock_alignment"]

#: Key of ``RankMeta.extra`` recording the shift applied to a rank's times (ns subtracted).
CLOCK_OFFSET_KEY = "clock_offset_ns"

ALIGNMENT_COLUMNS = {
    "rank": "int64",
    "offset_ns": "int64",
    "reference": "bool",
    "collectives": "int64",
    "matched_by": "str",
    "residual_median_ns": "int64",
    "residual_max_ns": "int64",
    "violations": "int64",
}


def clock_alignment(
    trace: Trace,
    *,
    reference: int | None = None,
    collectives: Iterable[str] = SYNCHRONISING,
    min_collectives: int = 3,
) -> pd.DataFrame:
    """Each rank's clock offset, estimated from the ends of matched collectives.

    Collectives are matched across ranks by process group and sequence number where the
    trace records them, else by their order on each rank (see
    :mod:`jupyter_traceview.model.collectives`). Point-to-point transfers are used only when
    ``collectives`` names them and the trace numbers them (process group + sequence).

    Parameters
    ----------
    reference:
        The rank whose clock the others are aligned to (offset 0); default the lowest rank.
    collectives:
        Collective kinds whose ends are taken to coincide; default all-reduce, all-gather,
        reduce-scatter, all-to-all and barrier.
    min_collectives:
        Fewest matched collectives a rank needs for its offset to be estimated.

    Returns
    -------
    pandas.DataFrame
        One row per rank:

        rank : int
        offset_ns : int, ns
            How far this rank's clock is ahead of the reference's: subtract it from the
            rank's timestamps to put them on the reference's clock (what
            :func:`align_clocks` does). 0 for the reference.
        reference : bool
            True for the reference rank.
        collectives : int
            Matched collectives the estimate of this rank rests on.
        matched_by : str
            ``seq`` (process group + sequence number), ``order`` or ``seq+order``.
        residual_median_ns : int, ns
            Median over those collectives of ``|end - common end - offset|``: how closely
            this rank's collective ends agree with the others' after alignment.
        residual_max_ns : int, ns
            The largest such residual.
        violations : int
            Collectives in which, after alignment, this rank's kernel ends before another
            rank's kernel of the same collective has started: impossible for a real
            collective, so a sign of a wrong estimate or a wrong match (a
            :class:`TraceviewWarning` says so).

    Raises
    ------
    TraceviewError
        Fewer than two ranks, no matched collectives, a rank with fewer than
        ``min_collectives`` of them, or ranks not connected to the reference by any
        collective. The message says which ranks and why.
    TraceSelectionError
        ``reference`` is not a rank of the trace.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> offsets = tv.clock_alignment(tv.load(tv.sample_path()))
    >>> offsets.loc[offsets["rank"] == 0, "offset_ns"].item()
    0
    """
    fit = _fit(trace, reference=reference, collectives=tuple(collectives), min_collectives=min_collectives)
    return fit.table


def align_clocks(
    trace: Trace,
    offsets: pd.DataFrame | Mapping[int, int] | None = None,
    *,
    reference: int | None = None,
    collectives: Iterable[str] = SYNCHRONISING,
    min_collectives: int = 3,
) -> Trace:
    """The trace with every timestamp of each rank moved onto the reference rank's clock.

    ``offsets`` is a :func:`clock_alignment` result or a ``{rank: offset_ns}`` mapping
    (ranks not in it are not moved); None estimates them with :func:`clock_alignment`
    (the other keywords are passed to it). Each rank's ``ts_ns`` (and profiler window)
    becomes ``ts_ns - offset_ns``; the total shift applied to a rank is recorded in
    ``trace.meta(rank).extra["clock_offset_ns"]`` and in the ``clock_offset_ns`` column of
    ``trace.metadata``. Aligning an aligned trace again adds up the shifts. The trace's
    ``window`` (from ``select(time_range=...)``) is kept as it is, on the reference clock.

    Works on every engine: the shift runs where the ranks live.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> offsets = tv.clock_alignment(trace)
    >>> aligned = tv.align_clocks(trace, offsets)
    >>> aligned.ranks == trace.ranks
    True
    """
    if offsets is None:
        offsets = clock_alignment(trace, reference=reference, collectives=collectives, min_collectives=min_collectives)
    if isinstance(offsets, pd.DataFrame):
        missing = {"rank", "offset_ns"} - set(offsets.columns)
        if missing:
            raise TraceviewError(
                f"align_clocks: the offsets frame lacks column(s) {sorted(missing)}; "
                "pass a tv.clock_alignment() result or a {rank: offset_ns} mapping"
            )
        shift = {int(r): int(o) for r, o in zip(offsets["rank"], offsets["offset_ns"], strict=True)}
    else:
        shift = {int(r): int(o) for r, o in offsets.items()}
    for r in shift:
        if r not in trace.ranks:
            raise TraceSelectionError.unknown("rank", r, trace.ranks)
    return trace._rebuild(
        list(trace.ranks), shift_rank, window=trace.window, classifier=trace.classifier, offsets=shift
    )


def shift_rank(d: RankData, *, offsets: Mapping[int, int]) -> RankData:
    """A rank's tables with ``offsets[rank]`` ns subtracted from every time (a ``_rebuild`` transform)."""
    off = int(offsets.get(d.meta.rank, 0))
    extra = dict(d.meta.extra)
    extra[CLOCK_OFFSET_KEY] = int(extra.get(CLOCK_OFFSET_KEY, 0)) + off
    meta = dataclasses.replace(
        d.meta,
        extra=extra,
        profiler_start_ns=None if d.meta.profiler_start_ns is None else d.meta.profiler_start_ns - off,
        profiler_end_ns=None if d.meta.profiler_end_ns is None else d.meta.profiler_end_ns - off,
    )
    events = d.events
    if off:
        events = events.copy(deep=False)
        events["ts_ns"] = events["ts_ns"].to_numpy() - np.int64(off)
    return replaced(d, meta=meta, events=events)


# ---------------------------------------------------------------------- the fit
@dataclasses.dataclass
class _Fit:
    table: pd.DataFrame
    instances: pd.DataFrame


def _fit(trace: Trace, *, reference: int | None, collectives: tuple[str, ...], min_collectives: int) -> _Fit:
    ranks = list(trace.ranks)
    if reference is not None and reference not in ranks:
        raise TraceSelectionError.unknown("rank", reference, ranks)
    if len(ranks) < 2:
        raise TraceviewError(
            f"clock alignment needs at least two ranks; the trace has {len(ranks)} ({ranks}). "
            "Load the folder holding every rank's trace"
        )
    if min_collectives < 1:
        raise OptionError(f"min_collectives must be at least 1, got {min_collectives}")
    ref = ranks[0] if reference is None else int(reference)
    kernels = trace.map_ranks(rank_collective_kernels)
    inst, notes = match_instances(kernels, collectives=collectives)
    why = (" " + "; ".join(notes) + ".") if notes else ""
    if not len(inst):
        without = [r for r, k in kernels.items() if not len(k)]
        detail = f" Ranks without communication kernels: {without}." if without else ""
        raise TraceviewError(
            f"clock alignment: no collective ({', '.join(collectives)}) could be matched across ranks.{detail}{why} "
            "Without matched collectives the clocks cannot be aligned"
        )

    keys = sorted(inst["key"].unique())
    key_pos = {k: i for i, k in enumerate(keys)}
    rank_pos = {r: j for j, r in enumerate(ranks)}
    rows = inst["key"].map(key_pos).to_numpy()
    cols = inst["rank"].map(rank_pos).to_numpy()
    base = int(inst["end_ns"].min())
    ends = np.full((len(keys), len(ranks)), np.nan)
    starts = np.full((len(keys), len(ranks)), np.nan)
    ends[rows, cols] = (inst["end_ns"].to_numpy() - base).astype(np.float64)
    starts[rows, cols] = (inst["start_ns"].to_numpy() - base).astype(np.float64)
    present = ~np.isnan(ends)
    counts = present.sum(axis=0)

    few = [(r, int(counts[rank_pos[r]])) for r in ranks if counts[rank_pos[r]] < min_collectives]
    if few:
        listed = ", ".join(f"rank {r}: {c}" for r, c in few[:20])
        raise TraceviewError(
            f"clock alignment: too few matched collectives ({listed}; at least {min_collectives} needed).{why} "
            "Profile more iterations, or pass min_collectives= to accept a weaker estimate"
        )
    unreached = _unconnected(present, rank_pos[ref])
    if unreached:
        raise TraceviewError(
            f"clock alignment: ranks {[ranks[j] for j in unreached]} share no collective, directly or through "
            f"other ranks, with the reference rank {ref}; their offsets cannot be estimated. "
            "Pick a reference in their group with reference=, or align groups separately"
        )

    offset = _median_polish(ends, rank_pos[ref])
    common = np.nanmedian(ends - offset[None, :], axis=1)
    resid = ends - common[:, None] - offset[None, :]
    aligned_ends = ends - offset[None, :]
    aligned_starts = starts - offset[None, :]
    latest_start = np.nanmax(aligned_starts, axis=1)
    violates = present & (aligned_ends < latest_start[:, None])

    inverted = int(violates.any(axis=1).sum())
    if inverted:
        warnings.warn(
            f"clock alignment: after alignment, {inverted} of {len(keys)} matched collective(s) still end on some "
            "rank before another rank has started them. The ends do not agree (see residual_median_ns): "
            "collectives matched by order may be different ones on different ranks, or clocks drift within the trace",
            TraceviewWarning,
            stacklevel=4,
        )
    by = inst.groupby("rank")["matched_by"].agg(lambda s: "+".join(sorted(set(s))))
    rounded = np.rint(offset).astype(np.int64)
    table = pd.DataFrame(
        {
            "rank": np.asarray(ranks, dtype=np.int64),
            "offset_ns": rounded,
            "reference": [r == ref for r in ranks],
            "collectives": counts.astype(np.int64),
            "matched_by": [str(by.get(r, "")) for r in ranks],
            "residual_median_ns": _int_stat(np.nanmedian, np.abs(resid)),
            "residual_max_ns": _int_stat(np.nanmax, np.abs(resid)),
            "violations": violates.sum(axis=0).astype(np.int64),
        }
    )
    return _Fit(table=table.astype(ALIGNMENT_COLUMNS), instances=inst)


def _int_stat(fn: Any, values: np.ndarray) -> np.ndarray:
    out = np.zeros(values.shape[1], dtype=np.int64)
    for j in range(values.shape[1]):
        col = values[:, j]
        col = col[~np.isnan(col)]
        out[j] = round(float(fn(col))) if len(col) else 0
    return out


def _median_polish(ends: np.ndarray, ref: int, *, max_iter: int = 200) -> np.ndarray:
    """Offsets (float ns, ``offset[ref] == 0``) fitting ``ends[c, r] = T[c] + offset[r]`` robustly.

    Starts from the median difference to the reference over shared collectives (exact for
    two ranks, and for any number when the ends agree), then alternates medians until the
    offsets move by less than a tenth of a nanosecond.
    """
    n_ranks = ends.shape[1]
    offset = np.zeros(n_ranks)
    shared = ~np.isnan(ends[:, ref])
    for j in range(n_ranks):
        d = ends[shared, j] - ends[shared, ref]
        d = d[~np.isnan(d)]
        if len(d):
            offset[j] = float(np.median(d))
    for _ in range(max_iter):
        common = np.nanmedian(ends - offset[None, :], axis=1)
        new = np.nanmedian(ends - common[:, None], axis=0)
        new = new - new[ref]
        moved = float(np.max(np.abs(new - offset)))
        offset = new
        if moved < 0.1 or math.isnan(moved):
            break
    return offset


def _unconnected(present: np.ndarray, ref: int) -> list[int]:
    """Columns (ranks) not linked to ``ref`` through collectives they share."""
    n_ranks = present.shape[1]
    reached = np.zeros(n_ranks, dtype=bool)
    reached[ref] = True
    while True:
        rows = present[:, reached].any(axis=1)
        new = present[rows].any(axis=0) | reached
        if (new == reached).all():
            break
        reached = new
    return [j for j in range(n_ranks) if not reached[j]]
