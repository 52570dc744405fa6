"""Memory: where allocator memory goes, when it peaks, and which operators hold it.

The model
---------
A trace recorded with ``profile_memory=True`` holds one record per allocator call in the
rank's ``memory`` table (``docs/schema.md``): an allocation (``bytes`` > 0) or a free
(``bytes`` < 0) of the block at ``addr`` on one device (``device_type``, ``device``: the
CUDA caching allocator of GPU 0, the CPU allocator, ...), with the allocator's totals after
the call (``total_allocated_bytes``, ``total_reserved_bytes``), and one record per failed
request (``[OutOfMemory]``). Every analysis here works per rank and per device:

* **Allocated** memory over time is the recorded ``Total Allocated`` series, a step
  function that changes at every record (no interpolation). It equals the bytes of the
  live allocations plus whatever was allocated before the profiler started: the tests
  check that the totals chain (each is the previous one plus the call's bytes) on real
  traces. A trace without totals (older PyTorch) gets them rebuilt from the bytes, from 0.
* **Reserved** memory is what the caching allocator holds from the device (allocated plus
  cached blocks); ``reserved - allocated`` is the cache, freed blocks kept for reuse.
  The CPU allocator reserves nothing (0).
* **Allocations are matched to their frees by address**: per device, a free of the block
  at ``addr`` closes the latest earlier allocation at that address. An allocation never
  freed in scope outlives the scope; a free without an allocation in scope releases
  memory allocated before it.
* **The operator of a record** is the innermost CPU operator (``cpu_op``) or
  ``record_function`` scope (``user_annotation``) enclosing it on its thread (the
  ``parent_eid`` chain; Python frames are skipped). A record outside any is attributed to
  ``(no operator)``.
* Iterations: a record belongs to the ProfilerStep containing it (the events' ``step``);
  ``-1`` means outside any step (or, for ``per="rank"``, the whole scope).

Scoping (``ranks``, ``iterations``, ``time_range``) narrows the records as
``Trace.select`` does; matching and holders then see only the records in scope.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model.schema import EventKind
from ..model.trace import Trace
from ._common import empty, scoped
from .launch import rows_of

__all__ = [
    "NO_OPERATOR",
    "UNTRACKED",
    "device_label",
    "has_memory_records",
    "memory_allocations",
    "memory_allocator_stats",
    "memory_by_operator",
    "memory_devices",
    "memory_oom_events",
    "memory_peak_holders",
    "memory_peaks",
    "memory_timeline",
]

#: Operator label of records that no operator or record_function scope encloses.
NO_OPERATOR = "(no operator)"
#: Holder label of the bytes live at a peak that were allocated before the scope's first record.
UNTRACKED = "(allocated before the scope)"

_OP_KINDS = (EventKind.CPU_OP.value, EventKind.USER_ANNOTATION.value)
_ALLOC, _FREE, _OOM = 0, 1, 2

TIMELINE_COLUMNS = {
    "rank": "int64",
    "device_type": "category",
    "device": "int16",
    "ts_ns": "int64",
    "allocated_bytes": "int64",
    "reserved_bytes": "int64",
    "cached_bytes": "int64",
}

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

DeviceOption = int | str | None
Per = Literal["iteration", "rank"]


# ---------------------------------------------------------------------- helpers
def device_label(device_type: str, device: int) -> str:
    """``CUDA:0``, ``CPU``: how a memory device is named in tables, charts and findings."""
    return str(device_type) if int(device) < 0 else f"{device_type}:{int(device)}"


def has_memory_records(trace: Trace) -> bool:
    """Whether any rank of the trace has memory records (was recorded with ``profile_memory=True``)."""
    return any(trace.map_ranks(_n_records).values())


def _n_records(trace: Trace) -> int:
    (r,) = trace.ranks
    return len(trace.rank_data(r).memory)


def memory_devices(trace: Trace) -> pd.DataFrame:
    """The allocators a trace has records of: columns ``rank``, ``device_type``, ``device``, ``label``."""
    parts = [p for p in trace.map_ranks(_rank_devices).values() if len(p)]
    if not parts:
        return empty({"rank": "int64", "device_type": "category", "device": "int16", "label": "object"})
    out = pd.concat(parts, ignore_index=True)
    out["device_type"] = out["device_type"].astype("category")
    return out


def _rank_devices(trace: Trace) -> pd.DataFrame:
    (r,) = trace.ranks
    mem = trace.rank_data(r).memory
    pairs = mem[["device_type", "device"]].drop_duplicates().astype({"device_type": str})
    pairs = pairs.sort_values(["device_type", "device"]).reset_index(drop=True)
    pairs.insert(0, "rank", r)
    pairs["label"] = [device_label(t, d) for t, d in zip(pairs["device_type"], pairs["device"], strict=True)]
    return pairs


def _device_filter(trace: Trace, device: DeviceOption) -> tuple[str | None, int | None] | None:
    """``device=`` as (type or None, index or None); None for all devices. Raises OptionError."""
    if device is None:
        return None
    devices = memory_devices(trace)
    known = sorted(set(devices["label"].tolist())) if len(devices) else []
    if isinstance(device, bool) or not isinstance(device, (int, np.integer, str)):
        raise OptionError(
            f"device={device!r} is not accepted; give a device index (0), a type ('cuda', 'cpu') or both ('cuda:0')"
        )
    want: tuple[str | None, int | None]
    if isinstance(device, (int, np.integer)):
        want = (None, int(device))
    else:
        text = device.strip()
        kind, _, idx = text.partition(":")
        if idx and not idx.strip().lstrip("-").isdigit():
            raise OptionError.invalid("device", device, known)
        want = (kind.strip().upper() or None, int(idx) if idx else None)
    hit = [
        lab
        for lab, t, d in zip(devices["label"], devices["device_type"].astype(str), devices["device"], strict=True)
        if (want[0] is None or t.upper() == want[0]) and (want[1] is None or int(d) == want[1])
    ]
    if not hit:
        raise OptionError(
            f"device={device!r} is not accepted: the trace has memory records of "
            f"{', '.join(repr(k) for k in known) if known else 'no device'}"
        )
    return want


def _check_per(per: str) -> None:
    if per not in ("iteration", "rank"):
        raise OptionError.invalid("per", per, ("iteration", "rank"))


def _name_of(ev: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Event names at ``rows`` (object array; NO_OPERATOR where a row is -1)."""
    names = np.asarray(ev["name"].cat.categories, dtype=object)
    codes = ev["name"].cat.codes.to_numpy()
    out = np.full(len(rows), NO_OPERATOR, dtype=object)
    ok = rows >= 0
    out[ok] = names[codes[rows[ok]]]
    return out


def _op_rows(
    ev: pd.DataFrame, start: np.ndarray, *, all_levels: bool = False, kinds: tuple[str, ...] = _OP_KINDS
) -> tuple[np.ndarray, np.ndarray]:
    """Walk the parent chains from event rows ``start`` up to the operators enclosing them.

    Returns (record index, operator row) pairs: the innermost operator of each record, or,
    with ``all_levels``, every enclosing operator (innermost first, outermost last).
    """
    kind_codes = ev["kind"].cat.codes.to_numpy()
    cats = list(ev["kind"].cat.categories)
    op_kind = np.zeros(len(cats) + 1, dtype=bool)
    for k in kinds:
        if k in cats:
            op_kind[cats.index(k)] = True
    is_op = op_kind[kind_codes] if len(kind_codes) else np.zeros(0, dtype=bool)
    parent = ev["parent_eid"].to_numpy()
    idx = np.arange(len(start))
    cur = rows_of(ev, parent[start]) if len(start) else np.empty(0, np.int64)
    out_i: list[np.ndarray] = []
    out_r: list[np.ndarray] = []
    live = cur >= 0
    idx, cur = idx[live], cur[live]
    while len(idx):
        hit = is_op[cur]
        out_i.append(idx[hit])
        out_r.append(cur[hit])
        if not all_levels:
            idx, cur = idx[~hit], cur[~hit]
        nxt = rows_of(ev, parent[cur])
        live = nxt >= 0
        idx, cur = idx[live], nxt[live]
    if not out_i:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(out_i), np.concatenate(out_r)


def _records(trace: Trace, want: tuple[str | None, int | None] | None) -> pd.DataFrame:
    """The rank's memory records in scope, joined with their events (one-rank trace).

    Columns: eid, row (in events), ts_ns, step, action (0 alloc, 1 free, 2 oom), device_type
    (str), device, addr, bytes, allocated, reserved, op_row (-1 if none), operator, pos (order
    within the device), dev (device group number).
    """
    (r,) = trace.ranks
    d = trace.rank_data(r)
    mem, ev = d.memory, d.events
    if want is not None and len(mem):
        types = mem["device_type"].astype(str).str.upper().to_numpy()
        keep = np.ones(len(mem), dtype=bool)
        if want[0] is not None:
            keep &= types == want[0]
        if want[1] is not None:
            keep &= mem["device"].to_numpy() == want[1]
        mem = mem.loc[keep]
    rows = rows_of(ev, mem["eid"].to_numpy())
    mem = mem.loc[rows >= 0]
    rows = rows[rows >= 0]
    if trace.window is not None and len(rows):
        ts = ev["ts_ns"].to_numpy()[rows]
        inside = (ts >= trace.window[0]) & (ts < trace.window[1])
        mem, rows = mem.loc[inside], rows[inside]
    action = mem["action"].cat.codes.to_numpy().astype(np.int8)
    out = pd.DataFrame(
        {
            "eid": mem["eid"].to_numpy(),
            "row": rows,
            "ts_ns": ev["ts_ns"].to_numpy()[rows],
            "step": ev["step"].to_numpy()[rows],
            "action": action,
            "device_type": mem["device_type"].astype(str).to_numpy(),
            "device": mem["device"].to_numpy(),
            "addr": mem["addr"].to_numpy(),
            "bytes": mem["bytes"].to_numpy(),
            "allocated": mem["total_allocated_bytes"].to_numpy(),
            "reserved": mem["total_reserved_bytes"].to_numpy(),
        }
    )
    rec, op = _op_rows(ev, rows)
    op_row = np.full(len(rows), -1, dtype=np.int64)
    op_row[rec] = op
    out["op_row"] = op_row
    out["operator"] = _name_of(ev, op_row)
    out["dev"] = out.groupby(["device_type", "device"], sort=True).ngroup().to_numpy() if len(out) else []
    out = out.sort_values(["dev", "row"], kind="stable").reset_index(drop=True)
    out["pos"] = out.groupby("dev").cumcount().to_numpy() if len(out) else []
    _fill_totals(out)
    return out


def _fill_totals(out: pd.DataFrame) -> None:
    """Rebuild absent totals (-1) from the bytes; OOM records carry the total in force."""
    for _, g in out.groupby("dev", sort=False):
        idx = g.index.to_numpy()
        alloc = g["allocated"].to_numpy()
        if (alloc < 0).any():
            moves = np.where(g["action"].to_numpy() == _OOM, 0, g["bytes"].to_numpy())
            out.loc[idx, "allocated"] = np.cumsum(moves)
        res = g["reserved"].to_numpy()
        if (res < 0).any():
            out.loc[idx, "reserved"] = np.maximum.accumulate(np.maximum(res, 0))


def _match(rec: pd.DataFrame) -> np.ndarray:
    """For every record, the index (in ``rec``) of its matching free (allocations) or -1."""
    n = len(rec)
    free_of = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return free_of
    action = rec["action"].to_numpy()
    moves = np.flatnonzero(action != _OOM)
    order = moves[
        np.lexsort((rec["pos"].to_numpy()[moves], rec["addr"].to_numpy()[moves], rec["dev"].to_numpy()[moves]))
    ]
    dev, addr, act = rec["dev"].to_numpy()[order], rec["addr"].to_numpy()[order], action[order]
    same = (dev[1:] == dev[:-1]) & (addr[1:] == addr[:-1]) & (addr[1:] >= 0)
    hit = same & (act[:-1] == _ALLOC) & (act[1:] == _FREE)
    free_of[order[:-1][hit]] = order[1:][hit]
    return free_of


def _capacity(trace: Trace, device_type: str, device: int) -> int:
    """Device memory from ``deviceProperties`` (totalGlobalMem) of a GPU; -1 if unknown."""
    if device < 0 or device_type.upper() == "CPU":
        return -1
    (r,) = trace.ranks
    for p in trace.meta(r).device_properties:
        if p.get("id") == device and isinstance(p.get("totalGlobalMem"), int):
            return int(p["totalGlobalMem"])
    return -1


def _finish(parts: Iterable[pd.DataFrame | None], columns: dict[str, Any]) -> pd.DataFrame:
    frames = [p for p in parts if p is not None and len(p)]
    if not frames:
        return empty(columns)
    out = pd.concat(frames, ignore_index=True)
    out = out[list(columns)]
    return out.astype(columns)


def _group_key(rec: pd.DataFrame, per: str) -> np.ndarray:
    return rec["step"].to_numpy() if per == "iteration" else np.full(len(rec), -1, dtype=np.int32)


def _run(trace: Trace, fn: Any, device: DeviceOption, **kw: Any) -> list[pd.DataFrame | None]:
    want = _device_filter(trace, device)
    return list(trace.map_ranks(fn, want=want, **kw).values())


# ---------------------------------------------------------------------- memory_timeline
def memory_timeline(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    device: DeviceOption = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    resample: int | None = None,
) -> pd.DataFrame:
    """Allocated and reserved memory over time, per rank and device (a step function).

    Parameters
    ----------
    device
        None (every device), a device index (``0``), a type (``"cuda"``, ``"cpu"``) or both
        (``"cuda:0"``). A device the trace has no records of raises :class:`OptionError`.
    resample
        None: one row per allocation or free (the value after it, in force until the next
        row). N (>= 2): N rows per rank and device on an even grid over the scope's time
        span, for plotting; each row carries the **maximum** of its bin [t, t + step), or
        the value in force at t when no record falls in it (before a series' first record:
        its first value), so peaks survive resampling.

    Returns
    -------
    DataFrame
        ``rank``; ``device_type`` (CPU, CUDA, ...); ``device`` (index, -1 for CPU);
        ``ts_ns`` (absolute ns); ``allocated_bytes`` (the allocator's ``Total Allocated``);
        ``reserved_bytes`` (``Total Reserved``: allocated plus cached; 0 for the CPU
        allocator); ``cached_bytes`` (reserved minus allocated, 0 where nothing is
        reserved). Rows are sorted by rank, device and time.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())     # recorded without profile_memory
    >>> tv.memory_timeline(trace).empty
    True
    """
    if resample is not None and (
        isinstance(resample, bool) or not isinstance(resample, (int, np.integer)) or resample < 2
    ):
        raise OptionError(f"resample={resample!r} is not accepted; give a number of points >= 2, or None")
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    out = _finish(_run(scope, _rank_timeline, device), TIMELINE_COLUMNS)
    if resample is None or out.empty:
        return out
    lo, hi = scope.window if scope.window is not None else (int(out["ts_ns"].min()), int(out["ts_ns"].max()) + 1)
    return _resample(out, lo, hi, int(resample))


def _rank_timeline(trace: Trace, *, want: tuple[str | None, int | None] | None) -> pd.DataFrame | None:
    rec = _records(trace, want)
    rec = rec.loc[rec["action"] != _OOM]
    if rec.empty:
        return None
    (r,) = trace.ranks
    allocated = rec["allocated"].to_numpy()
    reserved = rec["reserved"].to_numpy()
    return pd.DataFrame(
        {
            "rank": r,
            "device_type": rec["device_type"].to_numpy(),
            "device": rec["device"].to_numpy(),
            "ts_ns": rec["ts_ns"].to_numpy(),
            "allocated_bytes": allocated,
            "reserved_bytes": reserved,
            "cached_bytes": np.where(reserved > 0, np.maximum(reserved - allocated, 0), 0),
        }
    )


def _resample(series: pd.DataFrame, lo: int, hi: int, n: int) -> pd.DataFrame:
    grid = lo + ((np.arange(n, dtype=np.float64) * (hi - lo)) / n).astype(np.int64)
    parts = []
    for (r, t, d), g in series.groupby(["rank", "device_type", "device"], observed=True, sort=True):
        ts = g["ts_ns"].to_numpy()
        cols = {}
        for c in ("allocated_bytes", "reserved_bytes", "cached_bytes"):
            v = g[c].to_numpy()
            # Value in force at each grid point (before the first record: the first value).
            at = np.searchsorted(ts, grid, side="right") - 1
            value = v[np.maximum(at, 0)]
            # Maximum of the records inside each bin.
            bins = np.searchsorted(grid, ts, side="right") - 1
            inside = (bins >= 0) & (ts < hi)
            peak = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
            np.maximum.at(peak, bins[inside], v[inside])
            cols[c] = np.maximum(value, peak)
        parts.append(pd.DataFrame({"rank": r, "device_type": t, "device": d, "ts_ns": grid, **cols}))
    return _finish(parts, TIMELINE_COLUMNS)


# ---------------------------------------------------------------------- memory_allocations
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
    """
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return _finish(_run(scope, _rank_allocations, device), ALLOCATION_COLUMNS)


def _rank_allocations(trace: Trace, *, want: tuple[str | None, int | None] | None) -> pd.DataFrame | None:
    rec = _records(trace, want)
    if rec.empty:
        return None
    return _allocations_of(trace, rec)


def _allocations_of(trace: Trace, rec: pd.DataFrame) -> pd.DataFrame:
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    free_of = _match(rec)
    alloc = np.flatnonzero(rec["action"].to_numpy() == _ALLOC)
    f = free_of[alloc]
    freed = f >= 0
    ts = rec["ts_ns"].to_numpy()
    free_ts = np.where(freed, ts[np.maximum(f, 0)], -1)
    op_row = rec["op_row"].to_numpy()[alloc]
    # Temporaries: freed before the outermost CPU operator enclosing the allocation returned.
    rec_i, top_r = _op_rows(ev, rec["row"].to_numpy()[alloc], all_levels=True, kinds=(EventKind.CPU_OP.value,))
    top = np.full(len(alloc), -1, dtype=np.int64)
    if len(rec_i):
        last = pd.DataFrame({"i": rec_i, "r": top_r}).drop_duplicates("i", keep="last")
        top[last["i"].to_numpy()] = last["r"].to_numpy()
    ev_ts, ev_dur = ev["ts_ns"].to_numpy(), ev["dur_ns"].to_numpy()
    top_end = np.where(top >= 0, ev_ts[np.maximum(top, 0)] + ev_dur[np.maximum(top, 0)], -1)
    eids = ev["eid"].to_numpy()
    return pd.DataFrame(
        {
            "rank": r,
            "device_type": rec["device_type"].to_numpy()[alloc],
            "device": rec["device"].to_numpy()[alloc],
            "eid": rec["eid"].to_numpy()[alloc],
            "addr": rec["addr"].to_numpy()[alloc],
            "bytes": rec["bytes"].to_numpy()[alloc],
            "ts_ns": ts[alloc],
            "step": rec["step"].to_numpy()[alloc],
            "operator_eid": np.where(op_row >= 0, eids[np.maximum(op_row, 0)], -1),
            "operator": rec["operator"].to_numpy()[alloc],
            "free_eid": np.where(freed, rec["eid"].to_numpy()[np.maximum(f, 0)], -1),
            "free_ts_ns": free_ts,
            "lifetime_ns": np.where(freed, free_ts - ts[alloc], -1),
            "temporary": freed & (top >= 0) & (free_ts <= top_end),
        }
    )


# ---------------------------------------------------------------------- memory_by_operator
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
    """
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return _finish(_run(scope, _rank_by_operator, device), OPERATOR_COLUMNS)


def _rank_by_operator(trace: Trace, *, want: tuple[str | None, int | None] | None) -> pd.DataFrame | None:
    rec = _records(trace, want)
    rec = rec.loc[rec["action"] != _OOM].reset_index(drop=True)
    if rec.empty:
        return None
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    allocs = _allocations_of(trace, rec)
    is_alloc = rec["action"].to_numpy() == _ALLOC
    nbytes = rec["bytes"].to_numpy()
    base = pd.DataFrame(
        {
            "dev": rec["dev"].to_numpy(),
            "operator": rec["operator"].to_numpy(),
            "a": is_alloc.astype(np.int64),
            "ab": np.where(is_alloc, nbytes, 0),
            "f": (~is_alloc).astype(np.int64),
            "fb": np.where(is_alloc, 0, -nbytes),
        }
    )
    self_ = base.groupby(["dev", "operator"], sort=False).agg(
        self_allocs=("a", "sum"),
        self_alloc_bytes=("ab", "sum"),
        self_frees=("f", "sum"),
        self_freed_bytes=("fb", "sum"),
    )
    # Children included: every (record, enclosing operator name) pair, once per name.
    rec_i, op_r = _op_rows(ev, rec["row"].to_numpy(), all_levels=True)
    names = _name_of(ev, op_r)
    pairs = pd.DataFrame({"i": rec_i, "operator": names}).drop_duplicates()
    i = pairs["i"].to_numpy()
    outside = np.setdiff1d(np.arange(len(rec)), rec_i)  # records outside any operator
    i = np.concatenate([i, outside])
    op_names = np.concatenate([pairs["operator"].to_numpy(), np.full(len(outside), NO_OPERATOR, dtype=object)])
    incl = pd.DataFrame(
        {
            "dev": rec["dev"].to_numpy()[i],
            "operator": op_names,
            "a": base["a"].to_numpy()[i],
            "ab": base["ab"].to_numpy()[i],
            "f": base["f"].to_numpy()[i],
            "fb": base["fb"].to_numpy()[i],
            "mx": np.where(is_alloc, nbytes, 0)[i],
        }
    )
    total = incl.groupby(["dev", "operator"], sort=False).agg(
        allocs=("a", "sum"),
        alloc_bytes=("ab", "sum"),
        frees=("f", "sum"),
        freed_bytes=("fb", "sum"),
        max_alloc_bytes=("mx", "max"),
    )
    dev_of = rec.drop_duplicates("dev").set_index("dev")
    allocs["dev"] = rec["dev"].to_numpy()[is_alloc]
    allocs["tb"] = np.where(allocs["temporary"], allocs["bytes"], 0)
    allocs["ub"] = np.where(allocs["free_eid"] < 0, allocs["bytes"], 0)
    allocs["life"] = np.where(allocs["lifetime_ns"] >= 0, allocs["lifetime_ns"].astype(np.float64), np.nan)
    life = allocs.groupby(["dev", "operator"], sort=False, observed=True).agg(
        temporary_allocs=("temporary", "sum"),
        temporary_bytes=("tb", "sum"),
        unfreed_bytes=("ub", "sum"),
        median_lifetime_ns=("life", "median"),
    )
    out = total.join(self_, how="left").join(life, how="left").reset_index()
    for c in (
        "self_allocs",
        "self_alloc_bytes",
        "self_frees",
        "self_freed_bytes",
        "temporary_allocs",
        "temporary_bytes",
        "unfreed_bytes",
    ):
        out[c] = out[c].fillna(0).astype(np.int64)
    out["net_bytes"] = out["alloc_bytes"] - out["freed_bytes"]
    out["self_net_bytes"] = out["self_alloc_bytes"] - out["self_freed_bytes"]
    out["retained_bytes"] = out["self_alloc_bytes"] - out["temporary_bytes"]
    out["rank"] = r
    out["device_type"] = dev_of.loc[out["dev"], "device_type"].to_numpy()
    out["device"] = dev_of.loc[out["dev"], "device"].to_numpy()
    out = out.sort_values(["dev", "alloc_bytes", "operator"], ascending=[True, False, True], kind="stable")
    return out.reset_index(drop=True)


# ---------------------------------------------------------------------- peaks and holders
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
    """
    _check_per(per)
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return _finish((p for p, _ in _peaks_and_holders(scope, device, per)), PEAK_COLUMNS)


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
    """
    _check_per(per)
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return _finish((h for _, h in _peaks_and_holders(scope, device, per)), HOLDER_COLUMNS)


def _peaks_and_holders(
    trace: Trace, device: DeviceOption, per: str
) -> list[tuple[pd.DataFrame | None, pd.DataFrame | None]]:
    return _run(trace, _rank_peaks, device, per=per)  # type: ignore[return-value]


def _rank_peaks(
    trace: Trace, *, want: tuple[str | None, int | None] | None, per: str
) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    rec = _records(trace, want)
    if rec.empty:
        return None, None
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    free_of = _match(rec)
    action = rec["action"].to_numpy()
    pos, dev = rec["pos"].to_numpy(), rec["dev"].to_numpy()
    free_pos = np.where(free_of >= 0, pos[np.maximum(free_of, 0)], np.iinfo(np.int64).max)
    allocated, reserved = rec["allocated"].to_numpy(), rec["reserved"].to_numpy()
    ts, eids = rec["ts_ns"].to_numpy(), rec["eid"].to_numpy()
    ev_eid = ev["eid"].to_numpy()
    key = _group_key(rec, per)
    moves = action != _OOM
    peaks, holders = [], []
    for (g_dev, g_step), g in pd.DataFrame({"dev": dev, "step": key})[moves].groupby(["dev", "step"], sort=True):
        idx = g.index.to_numpy()
        at = idx[int(np.argmax(allocated[idx]))]
        rat = idx[int(np.argmax(reserved[idx]))]
        dtype, dindex = str(rec["device_type"].iat[at]), int(rec["device"].iat[at])
        live = np.flatnonzero((dev == g_dev) & (action == _ALLOC) & (pos <= pos[at]) & (free_pos > pos[at]))
        hold = (
            pd.DataFrame({"operator": rec["operator"].to_numpy()[live], "bytes": rec["bytes"].to_numpy()[live]})
            .groupby("operator")
            .agg(bytes=("bytes", "sum"), count=("bytes", "size"))
            .reset_index()
        )
        peak = int(allocated[at])
        untracked = peak - int(hold["bytes"].sum())
        if untracked > 0:
            hold = pd.concat([hold, pd.DataFrame({"operator": [UNTRACKED], "bytes": [untracked], "count": [-1]})])
        hold = hold.sort_values(["bytes", "operator"], ascending=[False, True], kind="stable").reset_index(drop=True)
        hold["share_pct"] = 100.0 * hold["bytes"] / peak if peak > 0 else np.nan
        head = dict(rank=r, device_type=dtype, device=dindex, step=int(g_step))
        holders.append(hold.assign(**head))
        cap = _capacity(trace, dtype, dindex)
        op_row = int(rec["op_row"].iat[at])
        peaks.append(
            {
                **head,
                "peak_allocated_bytes": peak,
                "peak_ts_ns": int(ts[at]),
                "peak_eid": int(eids[at]),
                "operator_eid": int(ev_eid[op_row]) if op_row >= 0 else -1,
                "operator": rec["operator"].iat[at],
                "operator_stack": _stack(ev, int(rec["row"].iat[at])),
                "peak_reserved_bytes": int(reserved[rat]),
                "peak_reserved_ts_ns": int(ts[rat]),
                "capacity_bytes": cap,
                "capacity_pct": 100.0 * int(reserved[rat]) / cap if cap > 0 else np.nan,
                "live_allocations": len(live),
                "top_holder": hold["operator"].iat[0] if len(hold) else NO_OPERATOR,
                "top_holder_bytes": int(hold["bytes"].iat[0]) if len(hold) else 0,
            }
        )
    return (pd.DataFrame(peaks) if peaks else None), (pd.concat(holders, ignore_index=True) if holders else None)


def _stack(ev: pd.DataFrame, row: int) -> str:
    """The operators and scopes enclosing an event row, outermost first: ``"a > b > c"``."""
    _, ops = _op_rows(ev, np.array([row], dtype=np.int64), all_levels=True)
    return " > ".join(reversed(_name_of(ev, ops).tolist())) if len(ops) else NO_OPERATOR


# ---------------------------------------------------------------------- allocator health
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
    """
    _check_per(per)
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return _finish(_run(scope, _rank_allocator, device, per=per), ALLOCATOR_COLUMNS)


def _rank_allocator(trace: Trace, *, want: tuple[str | None, int | None] | None, per: str) -> pd.DataFrame | None:
    rec = _records(trace, want)
    if rec.empty:
        return None
    (r,) = trace.ranks
    action = rec["action"].to_numpy()
    nbytes = rec["bytes"].to_numpy()
    allocated, reserved = rec["allocated"].to_numpy(), rec["reserved"].to_numpy()
    rows = []
    frame = pd.DataFrame({"dev": rec["dev"].to_numpy(), "step": _group_key(rec, per)})
    for (_, g_step), g in frame.groupby(["dev", "step"], sort=True):
        idx = g.index.to_numpy()
        a = action[idx]
        mv = idx[a != _OOM]
        first, last = (mv[0], mv[-1]) if len(mv) else (idx[0], idx[-1])
        cached = np.where(reserved[mv] > 0, np.maximum(reserved[mv] - allocated[mv], 0), 0)
        rat = mv[int(np.argmax(reserved[mv]))] if len(mv) else idx[0]
        start = int(allocated[first] - (nbytes[first] if action[first] != _OOM else 0))
        rows.append(
            {
                "rank": r,
                "device_type": str(rec["device_type"].iat[idx[0]]),
                "device": int(rec["device"].iat[idx[0]]),
                "step": int(g_step),
                "calls": len(mv),
                "allocs": int((a == _ALLOC).sum()),
                "frees": int((a == _FREE).sum()),
                "alloc_bytes": int(nbytes[idx][a == _ALLOC].sum()),
                "freed_bytes": int(-nbytes[idx][a == _FREE].sum()),
                "net_bytes": int(nbytes[idx][a != _OOM].sum()),
                "start_allocated_bytes": start,
                "end_allocated_bytes": int(allocated[last]),
                "end_reserved_bytes": int(reserved[last]),
                "max_cached_bytes": int(cached.max()) if len(cached) else 0,
                "fragmentation_pct": 100.0 * (reserved[rat] - allocated[rat]) / reserved[rat]
                if reserved[rat] > 0
                else np.nan,
                "ooms": int((a == _OOM).sum()),
            }
        )
    return pd.DataFrame(rows)


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
    """
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    return _finish(_run(scope, _rank_ooms, device), OOM_COLUMNS)


def _rank_ooms(trace: Trace, *, want: tuple[str | None, int | None] | None) -> pd.DataFrame | None:
    rec = _records(trace, want)
    rec = rec.loc[rec["action"] == _OOM]
    if rec.empty:
        return None
    (r,) = trace.ranks
    ev_eid = trace.rank_data(r).events["eid"].to_numpy()
    op_row = rec["op_row"].to_numpy()
    return pd.DataFrame(
        {
            "rank": r,
            "device_type": rec["device_type"].to_numpy(),
            "device": rec["device"].to_numpy(),
            "eid": rec["eid"].to_numpy(),
            "ts_ns": rec["ts_ns"].to_numpy(),
            "step": rec["step"].to_numpy(),
            "operator_eid": np.where(op_row >= 0, ev_eid[np.maximum(op_row, 0)], -1),
            "operator": rec["operator"].to_numpy(),
            "request_bytes": rec["bytes"].to_numpy(),
            "allocated_bytes": rec["allocated"].to_numpy(),
            "reserved_bytes": rec["reserved"].to_numpy(),
            "capacity_bytes": [
                _capacity(trace, t, int(d)) for t, d in zip(rec["device_type"], rec["device"], strict=True)
            ],
        }
    ).sort_values("ts_ns", kind="stable")
