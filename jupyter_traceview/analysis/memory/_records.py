"""The memory records of one rank as numpy arrays, and what every memory analysis shares:
the device option, matching allocations to frees, the operators enclosing a record."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ...errors import OptionError
from ...model.schema import EventKind
from ...model.text import as_text
from ...model.trace import Trace
from .. import _chains
from .._common import empty
from ..launch import rows_of

#: Operator label of records that no operator or record_function scope encloses.
NO_OPERATOR = "(no operator)"
#: Holder label of the bytes live at a peak that were allocated before the scope's first record.
UNTRACKED = "(allocated before the scope)"

OP_KINDS = (EventKind.CPU_OP.value, EventKind.USER_ANNOTATION.value)
ALLOC, FREE, OOM = 0, 1, 2

DeviceOption = int | str | None
Per = Literal["iteration", "rank"]
Want = tuple[str | None, int | None] | None


# ---------------------------------------------------------------------- devices
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


def device_filter(trace: Trace, device: DeviceOption) -> Want:
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
        for lab, t, d in zip(devices["label"], as_text(devices["device_type"]), devices["device"], strict=True)
        if (want[0] is None or t.upper() == want[0]) and (want[1] is None or int(d) == want[1])
    ]
    if not hit:
        raise OptionError(
            f"device={device!r} is not accepted: the trace has memory records of "
            f"{', '.join(repr(k) for k in known) if known else 'no device'}"
        )
    return want


def check_per(per: str) -> None:
    if per not in ("iteration", "rank"):
        raise OptionError.invalid("per", per, ("iteration", "rank"))


def capacity(trace: Trace, device_type: str, device: int) -> int:
    """Device memory from ``deviceProperties`` (totalGlobalMem) of a GPU; -1 if unknown."""
    if device < 0 or device_type.upper() == "CPU":
        return -1
    (r,) = trace.ranks
    p = trace.meta(r).device_props(device)
    if p is not None and isinstance(p.get("totalGlobalMem"), int):
        return int(p["totalGlobalMem"])
    return -1


# ---------------------------------------------------------------------- operators
def name_of(ev: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Event names at ``rows`` (object array; NO_OPERATOR where a row is -1)."""
    names = np.asarray(ev["name"].cat.categories, dtype=object)
    codes = ev["name"].cat.codes.to_numpy()
    out = np.full(len(rows), NO_OPERATOR, dtype=object)
    ok = rows >= 0
    out[ok] = names[codes[rows[ok]]]
    return out


#: Levels that :func:`op_rows` walks one at a time before it jumps (``_chains``): the
#: operators of a trace nest a few dozen deep, hostile ones (identical ranges) as deep as
#: they are many, where a walk level by level costs records x depth.
WALK_LEVELS = 64


def op_rows(
    ev: pd.DataFrame,
    start: np.ndarray,
    *,
    all_levels: bool = False,
    outermost: bool = False,
    kinds: tuple[str, ...] = OP_KINDS,
) -> tuple[np.ndarray, np.ndarray]:
    """Walk the parent chains from event rows ``start`` up to the operators enclosing them.

    Returns (record index, operator row) pairs: the innermost operator of each record
    (nearest levels first), with ``outermost`` the outermost one (in record order), or, with
    ``all_levels``, every enclosing operator (innermost first, outermost last). Past
    :data:`WALK_LEVELS` levels the innermost and outermost are found by pointer jumping
    (``_chains``: the same pairs in the same order).
    """
    kind_codes = ev["kind"].cat.codes.to_numpy()
    cats = ev["kind"].cat.categories.tolist()
    op_kind = np.zeros(len(cats) + 1, dtype=bool)
    op_kind[: len(cats)] = [c in kinds for c in cats]
    is_op = op_kind[kind_codes] if len(kind_codes) else np.zeros(0, dtype=bool)
    parent = ev["parent_eid"].to_numpy()
    eid = ev["eid"].to_numpy()
    n = len(eid)
    full = bool(n) and int(eid[-1]) == n - 1  # the rank's whole table: eid is the row

    def rows(eids: np.ndarray) -> np.ndarray:
        if full:
            return np.where((eids >= 0) & (eids < n), eids, -1)
        return rows_of(ev, eids)

    idx = np.arange(len(start))
    cur = rows(parent[start]) if len(start) else np.empty(0, np.int64)
    out_i: list[np.ndarray] = []
    out_r: list[np.ndarray] = []
    live = cur >= 0
    idx, cur = idx[live], cur[live]
    # outermost: the operator found last so far, per record (pairs emitted at the end).
    found = np.full(len(start), -1, dtype=np.int64) if outermost else None
    level = 0
    while len(idx):
        if level == WALK_LEVELS and not all_levels:
            i, r = _jump(rows(parent), is_op, idx, cur, outermost)
            if found is not None:
                found[i] = r
            else:
                out_i.append(i)
                out_r.append(r)
            break
        hit = is_op[cur]
        if found is not None:
            found[idx[hit]] = cur[hit]
        else:
            out_i.append(idx[hit])
            out_r.append(cur[hit])
            if not all_levels:
                idx, cur = idx[~hit], cur[~hit]
        nxt = rows(parent[cur])
        live = nxt >= 0
        idx, cur = idx[live], nxt[live]
        level += 1
    if found is not None:
        got = np.flatnonzero(found >= 0)
        out_i.insert(0, got)
        out_r.insert(0, found[got])
    if not out_i:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(out_i), np.concatenate(out_r)


def _jump(
    prow: np.ndarray, is_op: np.ndarray, idx: np.ndarray, cur: np.ndarray, outermost: bool
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`op_rows`' pairs of the records ``idx`` still walking at rows ``cur``, by pointer
    jumping over the rows' parent chains (``prow``: parent row, -1): (record, innermost or
    outermost operator at or above ``cur``), innermost ones in the walk's order."""
    pick = _chains.outermost_marked if outermost else _chains.nearest_marked
    op = pick(prow, is_op)[cur]
    hit = op >= 0
    idx, cur, op = idx[hit], cur[hit], op[hit]
    if outermost:  # the caller keeps them per record
        return idx, op
    depth = _chains.depths(prow)
    order = np.lexsort((idx, depth[cur] - depth[op]))  # by level, then record: the walk's order
    return idx[order], op[order]


def stack(ev: pd.DataFrame, row: int) -> str:
    """The operators and scopes enclosing an event row, outermost first: ``"a > b > c"``."""
    _, ops = op_rows(ev, np.array([row], dtype=np.int64), all_levels=True)
    return " > ".join(reversed(name_of(ev, ops).tolist())) if len(ops) else NO_OPERATOR


# ---------------------------------------------------------------------- the records
@dataclass
class Records:
    """One rank's memory records in scope, joined with their events, as numpy arrays.

    Sorted by device group, then time (event row). ``dev`` numbers the (device type,
    device) pairs in sorted order (``dev_type``/``dev_index`` name them); ``pos`` is the
    order within the device; ``op_row`` the innermost operator's event row (-1 if none) and
    ``op_code`` its name's code (-1 if none) into ``op_names``.
    """

    eid: np.ndarray
    row: np.ndarray
    ts: np.ndarray
    step: np.ndarray
    action: np.ndarray
    device: np.ndarray
    addr: np.ndarray
    nbytes: np.ndarray
    allocated: np.ndarray
    reserved: np.ndarray
    op_row: np.ndarray
    op_code: np.ndarray
    dev: np.ndarray
    pos: np.ndarray
    dev_type: np.ndarray  # per device group: type (str)
    dev_index: np.ndarray  # per device group: index
    op_names: np.ndarray  # the events' name categories (object)

    def __len__(self) -> int:
        return len(self.eid)

    def take(self, idx: np.ndarray) -> Records:
        """The records at ``idx`` (positions or a mask), in that order; ``pos`` kept."""
        per_record = [
            "eid",
            "row",
            "ts",
            "step",
            "action",
            "device",
            "addr",
            "nbytes",
            "allocated",
            "reserved",
            "op_row",
            "op_code",
            "dev",
            "pos",
        ]
        kw: dict[str, Any] = {f: getattr(self, f)[idx] for f in per_record}
        return Records(**kw, dev_type=self.dev_type, dev_index=self.dev_index, op_names=self.op_names)

    @property
    def device_type(self) -> np.ndarray:
        """Device type (str) of every record."""
        out: np.ndarray = self.dev_type[self.dev]
        return out

    @property
    def operator(self) -> np.ndarray:
        """Innermost operator's name of every record (object; NO_OPERATOR if none)."""
        return op_name(self.op_names, self.op_code)


def op_name(names: np.ndarray, codes: np.ndarray) -> np.ndarray:
    out = np.full(len(codes), NO_OPERATOR, dtype=object)
    ok = codes >= 0
    out[ok] = names[codes[ok]]
    return out


def records(trace: Trace, want: Want) -> Records:
    """The rank's memory records in scope (one-rank trace), see :class:`Records`."""
    (r,) = trace.ranks
    d = trace.rank_data(r)
    mem, ev = d.memory, d.events
    types_col = mem["device_type"]
    if isinstance(types_col.dtype, pd.CategoricalDtype):
        type_names = np.asarray(as_text(types_col.cat.categories), dtype=object)
        type_codes = types_col.cat.codes.to_numpy().astype(np.int64)
    else:
        type_names, inv = np.unique(as_text(types_col).to_numpy(dtype=object), return_inverse=True)
        type_codes = inv.astype(np.int64)
    keep = np.ones(len(mem), dtype=bool)
    if want is not None and len(mem):
        if want[0] is not None:
            upper = np.array([str(t).upper() == want[0] for t in type_names], dtype=bool)
            keep &= upper[type_codes] if len(type_names) else False
        if want[1] is not None:
            keep &= mem["device"].to_numpy() == want[1]
    rows = rows_of(ev, mem["eid"].to_numpy())
    keep &= rows >= 0
    ev_ts = ev["ts_ns"].to_numpy()
    if trace.window is not None and len(rows):
        ts = ev_ts[np.maximum(rows, 0)]
        keep &= (ts >= trace.window[0]) & (ts < trace.window[1])
    sel = np.flatnonzero(keep)
    rows = rows[sel]
    type_codes = type_codes[sel]
    device = mem["device"].to_numpy()[sel]
    # Device groups: (type name, index) pairs in sorted order, as a groupby(sort=True) numbers them.
    type_rank = np.argsort(np.argsort(as_text(type_names), kind="stable"), kind="stable")
    tr = type_rank[type_codes] if len(type_codes) else np.empty(0, np.int64)
    order = np.lexsort((rows, device, tr))  # by group, then time (event row)
    tr_s, dv_s = tr[order], device[order]
    new = np.ones(len(order), dtype=bool)
    if len(order):
        new[1:] = (tr_s[1:] != tr_s[:-1]) | (dv_s[1:] != dv_s[:-1])
    dev = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    pos = np.arange(len(order)) - np.repeat(starts, np.diff(np.append(starts, len(order))))
    sel, rows = sel[order], rows[order]
    action = mem["action"].cat.codes.to_numpy().astype(np.int8)[sel]
    nbytes = mem["bytes"].to_numpy()[sel]
    allocated = mem["total_allocated_bytes"].to_numpy()[sel].copy()
    reserved = mem["total_reserved_bytes"].to_numpy()[sel].copy()
    _fill_totals(dev, starts, action, nbytes, allocated, reserved)
    rec_i, op = op_rows(ev, rows)
    op_row = np.full(len(rows), -1, dtype=np.int64)
    op_row[rec_i] = op
    name_codes = ev["name"].cat.codes.to_numpy()
    op_code = np.where(op_row >= 0, name_codes[np.maximum(op_row, 0)], -1).astype(np.int64)
    return Records(
        eid=mem["eid"].to_numpy()[sel],
        row=rows,
        ts=ev_ts[rows],
        step=ev["step"].to_numpy()[rows],
        action=action,
        device=dv_s,
        addr=mem["addr"].to_numpy()[sel],
        nbytes=nbytes,
        allocated=allocated,
        reserved=reserved,
        op_row=op_row,
        op_code=op_code,
        dev=dev,
        pos=pos,
        dev_type=as_text(type_names[type_codes[order][starts]]) if len(starts) else np.empty(0, object),
        dev_index=dv_s[starts],
        op_names=np.asarray(ev["name"].cat.categories, dtype=object),
    )


def _fill_totals(
    dev: np.ndarray,
    starts: np.ndarray,
    action: np.ndarray,
    nbytes: np.ndarray,
    allocated: np.ndarray,
    reserved: np.ndarray,
) -> None:
    """Rebuild absent totals (-1) from the bytes; OOM records carry the total in force (in place)."""
    bounds = np.append(starts, len(dev))
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if (allocated[a:b] < 0).any():
            moves = np.where(action[a:b] == OOM, 0, nbytes[a:b])
            allocated[a:b] = np.cumsum(moves)
        if (reserved[a:b] < 0).any():
            reserved[a:b] = np.maximum.accumulate(np.maximum(reserved[a:b], 0))


def match(rec: Records) -> np.ndarray:
    """For every record, the index (in ``rec``) of its matching free (allocations) or -1."""
    n = len(rec)
    free_of = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return free_of
    moves = np.flatnonzero(rec.action != OOM)
    order = moves[np.lexsort((rec.pos[moves], rec.addr[moves], rec.dev[moves]))]
    dev, addr, act = rec.dev[order], rec.addr[order], rec.action[order]
    same = (dev[1:] == dev[:-1]) & (addr[1:] == addr[:-1]) & (addr[1:] >= 0)
    hit = same & (act[:-1] == ALLOC) & (act[1:] == FREE)
    free_of[order[:-1][hit]] = order[1:][hit]
    return free_of


# ---------------------------------------------------------------------- running and finishing
def finish(parts: Iterable[pd.DataFrame | None], columns: dict[str, Any]) -> pd.DataFrame:
    frames = [p for p in parts if p is not None and len(p)]
    if not frames:
        return empty(columns)
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    out = out[list(columns)]
    return out.astype(columns).reset_index(drop=True)


def group_key(rec: Records, per: str) -> np.ndarray:
    return rec.step if per == "iteration" else np.full(len(rec), -1, dtype=np.int32)


def groups(dev: np.ndarray, key: np.ndarray, members: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """(dev, key, record indices) of the groups of ``members`` (positions, in order), sorted."""
    if not len(members):
        return []
    d, k = dev[members], key[members]
    order = np.lexsort((k, d))  # stable: members keep their order within a group
    d, k, m = d[order], k[order], members[order]
    new = np.ones(len(m), dtype=bool)
    new[1:] = (d[1:] != d[:-1]) | (k[1:] != k[:-1])
    starts = np.flatnonzero(new)
    return [
        (int(d[a]), int(k[a]), m[a:b]) for a, b in zip(starts.tolist(), [*starts[1:].tolist(), len(m)], strict=True)
    ]


def run(trace: Trace, fn: Any, device: DeviceOption, **kw: Any) -> list[Any]:
    want = device_filter(trace, device)
    return list(trace.map_ranks(fn, want=want, **kw).values())


def rank_has_records(trace: Trace) -> bool:
    (r,) = trace.ranks
    return len(trace.rank_data(r).memory) > 0
