"""Cross-rank collectives in the timeline: one collective instance on every rank, and who arrived last.

Selecting a communication kernel (an NCCL all-reduce, say) in the timeline highlights the
same collective instance on every rank and marks the rank that started it last: the
straggler the others waited for. The timeline's front end asks with the ``_collective``
command (:mod:`~jupyter_traceview.views.timeline.protocol`) and draws the answer of
:func:`collective_instance`.

Instances are the ones :mod:`jupyter_traceview.model.collectives` matches for clock
alignment and the critical path: :func:`~jupyter_traceview.model.collectives.rank_collective_kernels`
gives every communication kernel its instance key (by sequence number where the trace
records one, else by order of the collective kind on each rank), and
:func:`~jupyter_traceview.model.collectives.match_instances` keeps the instances present on
at least two ranks, with each rank's first start and last end. Both run once per trace (kept
with it, like the timeline's index).

Arrival is the instance's first kernel start on a rank; the last arrival is the latest of
them (ties go to the higher rank, as the critical path counts them), and ``wait_ns`` how long
after the first rank it came: how long the earliest rank waited inside the collective.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pandas as pd

from ...errors import TraceSelectionError
from ...model.collectives import match_instances, rank_collective_kernels
from ...model.trace import Trace
from .coordinator import TimelineIndex
from .messages import CollectiveArrival, CollectiveInstance, CollectiveRank

__all__ = ["collective_instance"]


@dataclass(frozen=True)
class _Matched:
    """A trace's communication kernels by rank (eid -> instance key) and the matched instances."""

    keys: dict[int, pd.Series]
    instances: pd.DataFrame
    notes: tuple[str, ...]


def _matched(trace: Trace) -> _Matched:
    def compute() -> _Matched:
        kernels = trace.map_ranks(rank_collective_kernels)
        inst, notes = match_instances(kernels)
        keys = {r: pd.Series(k["key"].to_numpy(), index=k["eid"].to_numpy()) for r, k in kernels.items() if len(k)}
        return _Matched(keys=keys, instances=inst, notes=tuple(notes))

    got = trace._cached("timeline_collectives", compute)
    return got if isinstance(got, _Matched) else compute()


def collective_instance(index: TimelineIndex, rank: int, eid: int) -> CollectiveInstance:
    """The collective instance of communication kernel ``eid`` of ``rank``, on every rank (JSON-able).

    Returns ``{"found": False, "reason": ...}`` when the event is not a communication kernel
    or its instance was not matched on another rank; else ``found``, ``key`` (the instance
    key of :func:`~jupyter_traceview.model.collectives.rank_collective_kernels`),
    ``collective`` (``all_reduce``, ...), ``matched_by`` (``seq`` or ``order``), ``ranks``
    (per rank, by rank: ``rank``, ``start`` and ``end`` (ns relative to the index's
    ``t0_ns``: the rank's first kernel start and last kernel end of the instance), ``eid``
    (the kernel that starts first), ``kernels`` and ``row`` (its timeline row, None if not
    drawn)), ``last`` and ``first`` (``rank`` and ``start`` of the latest and earliest
    arrival), ``wait_ns`` (last start minus first start) and ``consistent`` (False when some
    rank starts the instance after another has ended it: clocks that disagree, or ranks that
    ran different sequences of a collective matched by order).
    """
    trace = index.trace
    rank, eid = int(rank), int(eid)
    if rank not in trace.ranks:
        raise TraceSelectionError.unknown("rank", rank, trace.ranks)
    m = _matched(trace)
    keys = m.keys.get(rank)
    if keys is None or eid not in keys.index:
        return CollectiveInstance(found=False, reason=f"event {eid} of rank {rank} is not a communication kernel")
    key = str(keys.loc[eid])
    rows = m.instances.loc[m.instances["key"] == key].sort_values("rank")
    if len(rows) < 2:
        why = "; ".join(m.notes) or "no other rank holds it"
        return CollectiveInstance(found=False, key=key, reason=f"this collective was not matched across ranks: {why}")
    t0 = index.t0_ns
    per_rank: list[CollectiveRank] = []
    for r, start, end, first_eid, n in zip(
        rows["rank"].tolist(),
        rows["start_ns"].tolist(),
        rows["end_ns"].tolist(),
        rows["start_eid"].tolist(),
        rows["kernels"].tolist(),
        strict=True,
    ):
        pos = index.position_of(int(r), int(first_eid))
        per_rank.append(
            CollectiveRank(
                rank=int(r),
                start=int(start) - t0,
                end=int(end) - t0,
                eid=int(first_eid),
                kernels=int(n),
                row=None if pos is None else index.row_at(pos),
            )
        )
    by_arrival = sorted(per_rank, key=lambda p: (p["start"], p["rank"]))
    first, last = by_arrival[0], by_arrival[-1]
    matched_by: Literal["seq", "order"] = "seq" if str(rows["matched_by"].iloc[0]) == "seq" else "order"
    return CollectiveInstance(
        found=True,
        key=key,
        collective=str(rows["collective"].iloc[0]),
        matched_by=matched_by,
        ranks=per_rank,
        first=CollectiveArrival(rank=first["rank"], start=first["start"]),
        last=CollectiveArrival(rank=last["rank"], start=last["start"]),
        wait_ns=last["start"] - first["start"],
        consistent=max(p["start"] for p in per_rank) <= min(p["end"] for p in per_rank),
    )
