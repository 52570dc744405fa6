"""``memory_peaks`` and ``memory_peak_holders``: the peak of allocated memory per rank,
device and iteration, and which operators' allocations hold memory then."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ...model.trace import Trace
from .._common import scoped
from ._records import (
    ALLOC,
    NO_OPERATOR,
    OOM,
    UNTRACKED,
    DeviceOption,
    Per,
    Want,
    capacity,
    check_per,
    finish,
    group_key,
    groups,
    match,
    op_name,
    rank_has_records,
    records,
    run,
    stack,
)

__all__ = ["HOLDER_COLUMNS", "PEAK_COLUMNS", "memory_peak_holders", "memory_peaks"]

PEAK_COLUMNS = {
    "rank": "int64",
    "device_type": "category",
    "device": "int16",
    "step": "int32",
    "peak_allocated_bytes": "int64",
    "peak_ts_ns": "int64",
    "peak_eid": "int64",
    "operator_eid": "int64",
    "operator": "category",
    "operator_stack": "object",
    "peak_reserved_bytes": "int64",
    "peak_reserved_ts_ns": "int64",
    "capacity_bytes": "int64",
    "capacity_pct": "float64",
    "live_allocations": "int64",
    "top_holder": "category",
    "top_holder_bytes": "int64",
}

HOLDER_COLUMNS = {
    "rank": "int64",
    "device_type": "category",
    "device": "int16",
    "step": "int32",
    "operator": "category",
    "bytes": "int64",
    "count": "int64",
    "share_pct": "float64",
}


def memory_peaks(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    device: DeviceOption = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    per: Per = "iteration",
) -> pd.DataFrame:
    """The peak of allocated memory per rank, device and iteration, and what holds memory then.

    The peak is the largest ``Total Allocated`` of the group's records (the first record
    reaching it); its operator is the innermost operator enclosing that allocation. The
    holders are the allocations live just after it (allocated at or before it in scope,
    not yet freed), grouped by the operator that made them: the largest is ``top_holder``;
    :func:`memory_peak_holders` lists them all.

    Parameters
    ----------
    per
        ``"iteration"``: one row per ProfilerStep (step -1: records outside any step);
        ``"rank"``: one row per rank and device over the whole scope (step -1).

    Returns
    -------
    DataFrame
        ``rank``, ``device_type``, ``device``, ``step``; ``peak_allocated_bytes``,
        ``peak_ts_ns`` (absolute ns), ``peak_eid`` (the allocation record that reached
        it), ``operator_eid`` and ``operator`` (enclosing it; -1 / ``(no operator)``);
        ``operator_stack`` (every operator and scope enclosing it, outermost first, as
        ``"aten::linear > aten::addmm > aten::empty"``);
        ``peak_reserved_bytes`` and ``peak_reserved_ts_ns`` (the reserved peak, which may
        come at another time); ``capacity_bytes`` (device memory from
        ``deviceProperties``' ``totalGlobalMem``; -1 if unknown, always for CPU);
        ``capacity_pct`` (peak reserved as % of capacity; NaN if unknown);
        ``live_allocations`` (allocations in scope live at the peak); ``top_holder`` and
        ``top_holder_bytes`` (the operator whose live allocations hold most).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())  # recorded without profile_memory=True: no rows
    >>> p = tv.memory_peaks(trace)
    >>> len(p), p.columns.tolist()[:6]
    (0, ['rank', 'device_type', 'device', 'step', 'peak_allocated_bytes', 'peak_ts_ns'])
    """
    check_per(per)
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return finish((p for p, _ in _peaks_and_holders(scope, device, per)), PEAK_COLUMNS)


def memory_peak_holders(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    device: DeviceOption = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    per: Per = "iteration",
) -> pd.DataFrame:
    """What holds allocated memory at each peak of :func:`memory_peaks`, by allocating operator.

    Returns
    -------
    DataFrame
        ``rank``, ``device_type``, ``device``, ``step`` (as in :func:`memory_peaks`);
        ``operator`` (the operator that made the live allocations; ``(allocated before the
        scope)`` for bytes the allocator counted before the scope's first record);
        ``bytes`` and ``count`` (live allocations; count -1 for the bytes allocated
        before the scope); ``share_pct`` (of the peak). The ``bytes`` of a peak's rows
        add up to its ``peak_allocated_bytes``. Sorted by peak, then bytes descending.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())  # recorded without profile_memory=True: no rows
    >>> h = tv.memory_peak_holders(trace)
    >>> len(h), h.columns.tolist()
    (0, ['rank', 'device_type', 'device', 'step', 'operator', 'bytes', 'count', 'share_pct'])
    """
    check_per(per)
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return finish((h for _, h in _peaks_and_holders(scope, device, per)), HOLDER_COLUMNS)


def _peaks_and_holders(
    trace: Trace, device: DeviceOption, per: str
) -> list[tuple[pd.DataFrame | None, pd.DataFrame | None]]:
    out: list[tuple[pd.DataFrame | None, pd.DataFrame | None]] = run(trace, _rank_peaks, device, per=per)
    return out


def _rank_peaks(trace: Trace, *, want: Want, per: str) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    if not rank_has_records(trace):
        return None, None
    rec = records(trace, want)
    if not len(rec):
        return None, None
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    free_of = match(rec)
    action, pos, dev = rec.action, rec.pos, rec.dev
    free_pos = np.where(free_of >= 0, pos[np.maximum(free_of, 0)], np.iinfo(np.int64).max)
    allocated, reserved, nbytes = rec.allocated, rec.reserved, rec.nbytes
    ev_eid = ev["eid"].to_numpy()
    # Holders are grouped by operator name: dense codes of the names the allocations have.
    is_alloc = action == ALLOC
    codes, holder = np.unique(rec.op_code, return_inverse=True)
    holder_names = op_name(rec.op_names, codes)
    n_holders = len(codes)
    peaks: list[dict[str, Any]] = []
    hold_cols: dict[str, list[Any]] = {
        c: [] for c in ("rank", "device_type", "device", "step", "operator", "bytes", "count", "peak")
    }
    for g_dev, g_step, idx in groups(dev, group_key(rec, per), np.flatnonzero(action != OOM)):
        at = idx[int(np.argmax(allocated[idx]))]
        rat = idx[int(np.argmax(reserved[idx]))]
        dtype, dindex = str(rec.dev_type[g_dev]), int(rec.dev_index[g_dev])
        # Allocations of the device live just after the peak: made at or before it, freed after.
        lo, hi = np.searchsorted(dev, [g_dev, g_dev + 1])  # records are sorted by device
        sl = slice(int(lo), int(hi))
        live_mask = is_alloc[sl] & (pos[sl] <= pos[at]) & (free_pos[sl] > pos[at])
        live = np.flatnonzero(live_mask) + int(lo)
        h_bytes = np.zeros(n_holders, dtype=np.int64)
        np.add.at(h_bytes, holder[live], nbytes[live])
        h_count = np.bincount(holder[live], minlength=n_holders)
        present = np.flatnonzero(h_count > 0)
        held = sorted(
            zip(holder_names[present].tolist(), h_bytes[present].tolist(), h_count[present].tolist(), strict=True),
            key=lambda t: (-t[1], t[0]),
        )
        peak = int(allocated[at])
        untracked = peak - int(h_bytes.sum())
        if untracked > 0:
            held.append((UNTRACKED, untracked, -1))
            held.sort(key=lambda t: (-t[1], t[0]))  # by bytes descending, then operator
        head = dict(rank=r, device_type=dtype, device=dindex, step=int(g_step))
        for c, v in head.items():
            hold_cols[c].extend([v] * len(held))
        hold_cols["operator"].extend(t[0] for t in held)
        hold_cols["bytes"].extend(t[1] for t in held)
        hold_cols["count"].extend(t[2] for t in held)
        hold_cols["peak"].extend([peak] * len(held))
        cap = capacity(trace, dtype, dindex)
        op_row = int(rec.op_row[at])
        peaks.append(
            {
                **head,
                "peak_allocated_bytes": peak,
                "peak_ts_ns": int(rec.ts[at]),
                "peak_eid": int(rec.eid[at]),
                "operator_eid": int(ev_eid[op_row]) if op_row >= 0 else -1,
                "operator": op_name(rec.op_names, rec.op_code[at : at + 1])[0],
                "operator_stack": stack(ev, int(rec.row[at])),
                "peak_reserved_bytes": int(reserved[rat]),
                "peak_reserved_ts_ns": int(rec.ts[rat]),
                "capacity_bytes": cap,
                "capacity_pct": 100.0 * int(reserved[rat]) / cap if cap > 0 else np.nan,
                "live_allocations": len(live),
                "top_holder": held[0][0] if held else NO_OPERATOR,
                "top_holder_bytes": int(held[0][1]) if held else 0,
            }
        )
    if not peaks:
        return None, None
    holders = pd.DataFrame({c: v for c, v in hold_cols.items() if c != "peak"})
    held_bytes = np.asarray(hold_cols["bytes"], dtype=np.int64)
    peak_of = np.asarray(hold_cols["peak"], dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        holders["share_pct"] = np.where(peak_of > 0, 100.0 * held_bytes / peak_of, np.nan)
    return pd.DataFrame(peaks), holders
