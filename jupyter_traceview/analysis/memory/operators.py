"""``memory_allocations`` and ``memory_by_operator``: allocations matched to their frees,
and allocations and frees per operator (self and children included)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ...model.schema import EventKind
from ...model.trace import Trace
from .._common import scoped
from ._records import (
    ALLOC,
    OOM,
    DeviceOption,
    Records,
    Want,
    finish,
    match,
    op_name,
    op_rows,
    rank_has_records,
    records,
    run,
)

__all__ = ["ALLOCATION_COLUMNS", "OPERATOR_COLUMNS", "memory_allocations", "memory_by_operator"]

ALLOCATION_COLUMNS = {
    "rank": "int64",
    "device_type": "category",
    "device": "int16",
    "eid": "int64",
    "addr": "int64",
    "bytes": "int64",
    "ts_ns": "int64",
    "step": "int32",
    "operator_eid": "int64",
    "operator": "category",
    "free_eid": "int64",
    "free_ts_ns": "int64",
    "lifetime_ns": "int64",
    "temporary": "bool",
}

OPERATOR_COLUMNS = {
    "rank": "int64",
    "device_type": "category",
    "device": "int16",
    "operator": "category",
    "allocs": "int64",
    "alloc_bytes": "int64",
    "frees": "int64",
    "freed_bytes": "int64",
    "net_bytes": "int64",
    "max_alloc_bytes": "int64",
    "self_allocs": "int64",
    "self_alloc_bytes": "int64",
    "self_frees": "int64",
    "self_freed_bytes": "int64",
    "self_net_bytes": "int64",
    "temporary_allocs": "int64",
    "temporary_bytes": "int64",
    "retained_bytes": "int64",
    "unfreed_bytes": "int64",
    "median_lifetime_ns": "float64",
}


def memory_allocations(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    device: DeviceOption = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Every allocation in scope, matched to its free by address: who made it, how long it lived.

    Returns
    -------
    DataFrame
        ``rank``, ``device_type``, ``device``; ``eid`` (the allocation record), ``addr``,
        ``bytes``, ``ts_ns``, ``step``; ``operator_eid`` and ``operator`` (the innermost
        operator or record_function scope enclosing the allocation; -1 and
        ``(no operator)`` if none); ``free_eid``, ``free_ts_ns`` (-1 if not freed in
        scope); ``lifetime_ns`` (free minus allocation time, ns; -1 if not freed in scope);
        ``temporary`` (freed before the outermost CPU operator call enclosing the
        allocation returned, e.g. a workspace inside ``aten::linear``: short-lived; False
        for allocations that outlive it, such as activations kept for the backward pass).
        Sorted by rank, device and time.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())  # recorded without profile_memory=True: no rows
    >>> a = tv.memory_allocations(trace)
    >>> len(a), a.columns.tolist()[:6]
    (0, ['rank', 'device_type', 'device', 'eid', 'addr', 'bytes'])
    """
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return finish(run(scope, _rank_allocations, device), ALLOCATION_COLUMNS)


def memory_by_operator(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    device: DeviceOption = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Allocations and frees made while each operator ran, per rank, device and operator name.

    *Self* columns count the records whose innermost operator is this one; the others
    count every record under a call of this name (children included; a record under
    nested calls of one name counts once). The self columns of all rows, ``(no operator)``
    included, add up to the scope's totals.

    Returns
    -------
    DataFrame
        ``rank``, ``device_type``, ``device``, ``operator``;
        ``allocs``, ``alloc_bytes``, ``frees``, ``freed_bytes``, ``net_bytes``
        (allocated minus freed) and ``max_alloc_bytes`` (the largest single allocation),
        children included; ``self_allocs``, ``self_alloc_bytes``, ``self_frees``,
        ``self_freed_bytes``, ``self_net_bytes``; lifetimes of the self allocations:
        ``temporary_allocs`` and ``temporary_bytes`` (freed before the outermost CPU
        operator call around them returned, see :func:`memory_allocations`), ``retained_bytes`` (the rest: outlived the call),
        ``unfreed_bytes`` (never freed in scope) and ``median_lifetime_ns`` (of those
        freed in scope; NaN if none). Sorted by rank, device, then ``alloc_bytes``
        descending.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())  # recorded without profile_memory=True: no rows
    >>> m = tv.memory_by_operator(trace)
    >>> len(m), m.columns.tolist()[:6]
    (0, ['rank', 'device_type', 'device', 'operator', 'allocs', 'alloc_bytes'])
    """
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return finish(run(scope, _rank_by_operator, device), OPERATOR_COLUMNS)


def _rank_allocations(trace: Trace, *, want: Want) -> pd.DataFrame | None:
    if not rank_has_records(trace):
        return None
    rec = records(trace, want)
    if not len(rec):
        return None
    (r,) = trace.ranks
    a = _allocations_of(trace, rec)
    eids = trace.rank_data(r).events["eid"].to_numpy()
    alloc = a["alloc"]
    op_row = rec.op_row[alloc]
    return pd.DataFrame(
        {
            "rank": np.full(len(alloc), r, dtype=np.int64),
            "device_type": rec.device_type[alloc],
            "device": rec.device[alloc],
            "eid": rec.eid[alloc],
            "addr": rec.addr[alloc],
            "bytes": rec.nbytes[alloc],
            "ts_ns": rec.ts[alloc],
            "step": rec.step[alloc],
            "operator_eid": np.where(op_row >= 0, eids[np.maximum(op_row, 0)], -1),
            "operator": rec.operator[alloc],
            "free_eid": np.where(a["freed"], rec.eid[np.maximum(a["free"], 0)], -1),
            "free_ts_ns": a["free_ts"],
            "lifetime_ns": a["lifetime"],
            "temporary": a["temporary"],
        }
    )


def _allocations_of(trace: Trace, rec: Records) -> dict[str, np.ndarray]:
    """Per allocation of ``rec``: its index (``alloc``), its free's index (``free``, -1),
    ``freed``, ``free_ts`` and ``lifetime`` (-1 if not freed) and ``temporary``."""
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    free_of = match(rec)
    alloc = np.flatnonzero(rec.action == ALLOC)
    f = free_of[alloc]
    freed = f >= 0
    ts = rec.ts
    free_ts = np.where(freed, ts[np.maximum(f, 0)], -1)
    # Temporaries: freed before the outermost CPU operator enclosing the allocation returned.
    rec_i, top_r = op_rows(ev, rec.row[alloc], outermost=True, kinds=(EventKind.CPU_OP.value,))
    top = np.full(len(alloc), -1, dtype=np.int64)
    top[rec_i] = top_r
    ev_ts, ev_dur = ev["ts_ns"].to_numpy(), ev["dur_ns"].to_numpy()
    top_end = np.where(top >= 0, ev_ts[np.maximum(top, 0)] + ev_dur[np.maximum(top, 0)], -1)
    return {
        "alloc": alloc,
        "free": f,
        "freed": freed,
        "free_ts": free_ts,
        "lifetime": np.where(freed, free_ts - ts[alloc], -1),
        "temporary": freed & (top >= 0) & (free_ts <= top_end),
    }


def _rank_by_operator(trace: Trace, *, want: Want) -> pd.DataFrame | None:
    if not rank_has_records(trace):
        return None
    rec = records(trace, want)
    rec = rec.take(rec.action != OOM)
    if not len(rec):
        return None
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    n_names = len(rec.op_names) + 1
    is_alloc = rec.action == ALLOC
    nbytes = rec.nbytes
    ab = np.where(is_alloc, nbytes, 0)
    fb = np.where(is_alloc, 0, -nbytes)
    # Groups are (device, operator name): key = dev * n_names + name code + 1 (0: no operator).
    self_key = rec.dev * n_names + rec.op_code + 1
    # Children included: every (record, enclosing operator name) pair, once per name.
    rec_i, op_r = op_rows(ev, rec.row, all_levels=True)
    name_codes = ev["name"].cat.codes.to_numpy().astype(np.int64)
    pair = np.sort(rec_i * n_names + name_codes[op_r] + 1)  # unique by sorting (numpy 2's hash unique is slower here)
    pair = pair[np.concatenate(([True], pair[1:] != pair[:-1]))] if len(pair) else pair
    i, code1 = pair // n_names, pair % n_names
    inside = np.zeros(len(rec), dtype=bool)
    inside[rec_i] = True
    outside = np.flatnonzero(~inside)  # records outside any operator
    i = np.concatenate([i, outside])
    incl_key = rec.dev[i] * n_names + np.concatenate([code1, np.zeros(len(outside), dtype=np.int64)])
    keys, g = np.unique(incl_key, return_inverse=True)
    n = len(keys)

    def total(group: np.ndarray, values: np.ndarray) -> np.ndarray:
        out = np.zeros(n, dtype=np.int64)
        np.add.at(out, group, values.astype(np.int64))  # exact (integer) sums
        return out

    mx = np.zeros(n, dtype=np.int64)
    np.maximum.at(mx, g, ab[i])
    sg = np.searchsorted(keys, self_key)  # every self group is an included group
    allocs = _allocations_of(trace, rec)
    al = allocs["alloc"]
    ag = sg[al]
    temporary = allocs["temporary"]
    life = np.where(allocs["lifetime"] >= 0, allocs["lifetime"].astype(np.float64), np.nan)
    self_ab = total(sg, ab)
    temp_b = total(ag, np.where(temporary, nbytes[al], 0))
    dev = keys // n_names
    code = keys % n_names - 1
    out = pd.DataFrame(
        {
            "rank": np.full(n, r, dtype=np.int64),
            "device_type": rec.dev_type[dev],
            "device": rec.dev_index[dev],
            "operator": op_name(rec.op_names, code),
            "allocs": np.bincount(g[is_alloc[i]], minlength=n),
            "alloc_bytes": total(g, ab[i]),
            "frees": np.bincount(g[~is_alloc[i]], minlength=n),
            "freed_bytes": total(g, fb[i]),
            "max_alloc_bytes": mx,
            "self_allocs": np.bincount(sg[is_alloc], minlength=n),
            "self_alloc_bytes": self_ab,
            "self_frees": np.bincount(sg[~is_alloc], minlength=n),
            "self_freed_bytes": total(sg, fb),
            "temporary_allocs": np.bincount(ag[temporary], minlength=n),
            "temporary_bytes": temp_b,
            "unfreed_bytes": total(ag, np.where(allocs["free"] < 0, nbytes[al], 0)),
            "median_lifetime_ns": _group_median(ag, life, n),
            "dev": dev,
        }
    )
    out["net_bytes"] = out["alloc_bytes"] - out["freed_bytes"]
    out["self_net_bytes"] = out["self_alloc_bytes"] - out["self_freed_bytes"]
    out["retained_bytes"] = out["self_alloc_bytes"] - out["temporary_bytes"]
    out = out.sort_values(["dev", "alloc_bytes", "operator"], ascending=[True, False, True], kind="stable")
    return out.reset_index(drop=True)


def _group_median(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Median of the non-NaN ``values`` of each of ``n`` groups (NaN for a group without any)."""
    ok = ~np.isnan(values)
    g, v = group[ok], values[ok]
    order = np.lexsort((v, g))
    g, v = g[order], v[order]
    count = np.bincount(g, minlength=n)
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    out = np.full(n, np.nan)
    has = count > 0
    lo = start[has] + (count[has] - 1) // 2
    hi = start[has] + count[has] // 2
    out[has] = (v[lo] + v[hi]) / 2
    return out
