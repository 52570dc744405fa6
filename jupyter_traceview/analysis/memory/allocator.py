"""Allocator health: ``memory_allocator_stats`` (calls, cache and fragmentation per
iteration) and ``memory_oom_events`` (the failed requests)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ...model.trace import Trace
from .._common import scoped
from ._records import (
    ALLOC,
    FREE,
    OOM,
    DeviceOption,
    Per,
    Want,
    capacity,
    check_per,
    finish,
    group_key,
    groups,
    rank_has_records,
    records,
    run,
)

__all__ = ["ALLOCATOR_COLUMNS", "OOM_COLUMNS", "memory_allocator_stats", "memory_oom_events"]

ALLOCATOR_COLUMNS = {
    "rank": "int64",
    "device_type": "category",
    "device": "int16",
    "step": "int32",
    "calls": "int64",
    "allocs": "int64",
    "frees": "int64",
    "alloc_bytes": "int64",
    "freed_bytes": "int64",
    "net_bytes": "int64",
    "start_allocated_bytes": "int64",
    "end_allocated_bytes": "int64",
    "end_reserved_bytes": "int64",
    "max_cached_bytes": "int64",
    "fragmentation_pct": "float64",
    "ooms": "int64",
}

OOM_COLUMNS = {
    "rank": "int64",
    "device_type": "category",
    "device": "int16",
    "eid": "int64",
    "ts_ns": "int64",
    "step": "int32",
    "operator_eid": "int64",
    "operator": "category",
    "request_bytes": "int64",
    "allocated_bytes": "int64",
    "reserved_bytes": "int64",
    "capacity_bytes": "int64",
}


def memory_allocator_stats(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    device: DeviceOption = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    per: Per = "iteration",
) -> pd.DataFrame:
    """Allocator activity and health per rank, device and iteration.

    Returns
    -------
    DataFrame
        ``rank``, ``device_type``, ``device``, ``step`` (as in :func:`memory_peaks`);
        ``calls`` (allocations plus frees), ``allocs``, ``frees``, ``alloc_bytes``,
        ``freed_bytes``, ``net_bytes``; ``start_allocated_bytes`` (in force before the
        group's first record), ``end_allocated_bytes`` and ``end_reserved_bytes`` (after
        its last: a leak shows as ``end_allocated_bytes`` growing from step to step);
        ``max_cached_bytes`` (largest reserved-minus-allocated); ``fragmentation_pct``
        (cached as % of reserved when reserved peaked; NaN where nothing is reserved);
        ``ooms`` (``[OutOfMemory]`` records).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())  # recorded without profile_memory=True: no rows
    >>> s = tv.memory_allocator_stats(trace)
    >>> len(s), s.columns.tolist()[:6]
    (0, ['rank', 'device_type', 'device', 'step', 'calls', 'allocs'])
    """
    check_per(per)
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return finish(run(scope, _rank_allocator, device, per=per), ALLOCATOR_COLUMNS)


def memory_oom_events(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    device: DeviceOption = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """The ``[OutOfMemory]`` records: failed allocation requests, with the operator that made them.

    Returns
    -------
    DataFrame
        ``rank``, ``device_type``, ``device``; ``eid``, ``ts_ns``, ``step``;
        ``operator_eid`` and ``operator`` (the innermost operator enclosing the request);
        ``request_bytes`` (the size asked for); ``allocated_bytes`` and ``reserved_bytes``
        (the allocator's totals when it failed); ``capacity_bytes`` (as in
        :func:`memory_peaks`).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())  # recorded without profile_memory=True: no rows
    >>> o = tv.memory_oom_events(trace)
    >>> len(o), o.columns.tolist()[:6]
    (0, ['rank', 'device_type', 'device', 'eid', 'ts_ns', 'step'])
    """
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return finish(run(scope, _rank_ooms, device), OOM_COLUMNS)


def _rank_allocator(trace: Trace, *, want: Want, per: str) -> pd.DataFrame | None:
    if not rank_has_records(trace):
        return None
    rec = records(trace, want)
    if not len(rec):
        return None
    (r,) = trace.ranks
    action, nbytes = rec.action, rec.nbytes
    allocated, reserved = rec.allocated, rec.reserved
    rows = []
    for g_dev, g_step, idx in groups(rec.dev, group_key(rec, per), np.arange(len(rec))):
        a = action[idx]
        b = nbytes[idx]
        mv = idx[a != OOM]
        first, last = (mv[0], mv[-1]) if len(mv) else (idx[0], idx[-1])
        cached = np.where(reserved[mv] > 0, np.maximum(reserved[mv] - allocated[mv], 0), 0)
        rat = mv[int(np.argmax(reserved[mv]))] if len(mv) else idx[0]
        start = int(allocated[first] - (nbytes[first] if action[first] != OOM else 0))
        rows.append(
            {
                "rank": r,
                "device_type": str(rec.dev_type[g_dev]),
                "device": int(rec.dev_index[g_dev]),
                "step": int(g_step),
                "calls": len(mv),
                "allocs": int((a == ALLOC).sum()),
                "frees": int((a == FREE).sum()),
                "alloc_bytes": int(b[a == ALLOC].sum()),
                "freed_bytes": int(-b[a == FREE].sum()),
                "net_bytes": int(b[a != OOM].sum()),
                "start_allocated_bytes": start,
                "end_allocated_bytes": int(allocated[last]),
                "end_reserved_bytes": int(reserved[last]),
                "max_cached_bytes": int(cached.max()) if len(cached) else 0,
                "fragmentation_pct": 100.0 * (reserved[rat] - allocated[rat]) / reserved[rat]
                if reserved[rat] > 0
                else np.nan,
                "ooms": int((a == OOM).sum()),
            }
        )
    return pd.DataFrame(rows)


def _rank_ooms(trace: Trace, *, want: Want) -> pd.DataFrame | None:
    if not rank_has_records(trace):
        return None
    rec = records(trace, want)
    rec = rec.take(rec.action == OOM)
    if not len(rec):
        return None
    (r,) = trace.ranks
    ev_eid = trace.rank_data(r).events["eid"].to_numpy()
    op_row = rec.op_row
    dtype = rec.device_type
    return pd.DataFrame(
        {
            "rank": np.full(len(rec), r, dtype=np.int64),
            "device_type": dtype,
            "device": rec.device,
            "eid": rec.eid,
            "ts_ns": rec.ts,
            "step": rec.step,
            "operator_eid": np.where(op_row >= 0, ev_eid[np.maximum(op_row, 0)], -1),
            "operator": rec.operator,
            "request_bytes": rec.nbytes,
            "allocated_bytes": rec.allocated,
            "reserved_bytes": rec.reserved,
            "capacity_bytes": [capacity(trace, t, int(d)) for t, d in zip(dtype, rec.device, strict=True)],
        }
    ).sort_values("ts_ns", kind="stable")
