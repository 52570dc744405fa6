"""What fixing a finding would save: the what-if its fix implies, per finding rule (one table).

:func:`findings` gives every finding ``saving_ns`` (a step's saving on the rank that saves
most among the finding's ranks: the median over its steps), ``saving_pct`` (of that rank's
median measured step) and ``change`` (what the saving assumed). A rule whose fix has no
sound change here gets 0 and "". The replay without a change is computed once per trace,
each change's replay once per trace and only for the rules that fired.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...model.trace import Trace
from .changes import (
    BalanceStraggler,
    Change,
    FuseKernels,
    GraphLaunch,
    OverlapCommunication,
    RemoveDataLoading,
    RemovePython,
    RemoveSyncs,
    ScaleKernels,
    describe_all,
)

__all__ = ["RULE_CHANGES", "finding_savings", "rule_changes"]

#: Finding rule id -> the change(s) its fix implies (given the rule thresholds as a dict:
#: ``tiny_kernels`` fuses the kernels under its own ``tiny_kernel_ns``). Rules not listed
#: (``slow_iteration``, ``pageable_copies``, the memory rules, ...) have no sound change: 0, "".
RULE_CHANGES: dict[str, Callable[[dict[str, Any]], tuple[Change, ...]]] = {
    "launch_bound": lambda r: (GraphLaunch(whole_step=True),),
    "blocking_sync": lambda r: (RemoveSyncs(),),
    "host_sync_lines": lambda r: (RemoveSyncs(),),
    "dataloader_stall": lambda r: (RemoveDataLoading(),),
    "python_overhead": lambda r: (RemovePython(),),
    "exposed_communication": lambda r: (OverlapCommunication(),),
    "low_overlap_collective": lambda r: (OverlapCommunication(),),
    "collective_wait": lambda r: (BalanceStraggler(),),
    "straggler": lambda r: (BalanceStraggler(),),
    "load_imbalance": lambda r: (BalanceStraggler(),),
    "tiny_kernels": lambda r: (FuseKernels(shorter_than_ns=int(r.get("tiny_kernel_ns", 10_000))),),
    "gemm_below_peak": lambda r: (ScaleKernels(family="gemm", to_roofline=True),),
    "fp32_matmul": lambda r: (ScaleKernels(family="gemm", to_roofline=True),),
}


def rule_changes(rule_id: str, thresholds: dict[str, Any] | None = None) -> tuple[Change, ...]:
    """The changes the fix of ``rule_id`` implies (empty: none)."""
    make = RULE_CHANGES.get(rule_id)
    return make(thresholds or {}) if make is not None else ()


def finding_savings(
    trace: Trace, found: Sequence[tuple[str, Sequence[int]]], thresholds: dict[str, Any]
) -> list[tuple[int, float, str]]:
    """``(saving_ns, saving_pct, change)`` for each ``(rule id, ranks)`` of ``found``.

    ``saving_ns``: per rank, the median over its steps of the replay's saving; the largest
    over the finding's ranks (every rank when it names none), never below 0.
    ``saving_pct``: that saving over the same rank's median measured step, in %.
    """
    from . import WHAT_IF_COLUMNS, what_if

    out: list[tuple[int, float, str]] = []
    per_change: dict[tuple[Change, ...], pd.DataFrame] = {}
    for rule_id, ranks in found:
        changes = rule_changes(rule_id, thresholds)
        if not changes:
            out.append((0, 0.0, ""))
            continue
        if changes not in per_change:
            try:
                rows = what_if(trace, *changes)
            except Exception:  # noqa: BLE001 - a replay that fails leaves the finding without a saving
                rows = pd.DataFrame({c: pd.Series([], dtype=d) for c, d in WHAT_IF_COLUMNS.items()})
            per_change[changes] = rows.groupby("rank").agg(
                saving_ns=("saving_ns", "median"), measured_ns=("measured_ns", "median")
            )
        by_rank = per_change[changes]
        mine = by_rank.loc[by_rank.index.isin(list(ranks))] if len(ranks) else by_rank
        if not len(mine):
            out.append((0, 0.0, describe_all(changes)))
            continue
        best = mine.sort_values(["saving_ns"], ascending=False, kind="stable").iloc[0]
        saving = max(int(np.floor(best["saving_ns"])), 0)
        measured = float(best["measured_ns"])
        pct = saving / measured * 100.0 if measured > 0 else 0.0
        out.append((saving, pct, describe_all(changes)))
    return out
