"""The export's CUDA and NVTX tables read into event columns: one :class:`Part` per table
(kernels, copies, memsets, syncs, graphs, CUDA API calls, NVTX ranges), names pooled.

Names are StringIds references or inline text; enumerations come from the export's ENUM_*
tables, or the defaults here (values as Nsight writes them) where it lacks them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ....model.classify import COPY_KINDS
from ....model.schema import (
    DEVICE_KINDS,
    GPU_ACTIVITY_KINDS,
    KIND_CODE,
    LAUNCH_KINDS,
    EventKind,
)
from .database import GRAPH, KERNEL, MEMCPY, MEMSET, NVTX, RUNTIME, SYNC, Database

__all__ = [
    "ACTIVITY_CODES",
    "CODE",
    "DEVICE_CODES",
    "LAUNCH_CODES",
    "WORK_CODES",
    "ExportFile",
    "Names",
    "Part",
    "concat_parts",
    "read_graphs",
    "read_kernels",
    "read_memcpys",
    "read_memsets",
    "read_nvtx",
    "read_runtime",
    "read_syncs",
    "take_rows",
]


_DEFAULT_MEMCPY_KIND = {
    0: "CUDA_MEMCPY_KIND_UNKNOWN",
    1: "CUDA_MEMCPY_KIND_HTOD",
    2: "CUDA_MEMCPY_KIND_DTOH",
    3: "CUDA_MEMCPY_KIND_HTOA",
    4: "CUDA_MEMCPY_KIND_ATOH",
    5: "CUDA_MEMCPY_KIND_ATOA",
    6: "CUDA_MEMCPY_KIND_ATOD",
    7: "CUDA_MEMCPY_KIND_DTOA",
    8: "CUDA_MEMCPY_KIND_DTOD",
    9: "CUDA_MEMCPY_KIND_HTOH",
    10: "CUDA_MEMCPY_KIND_PTOP",
    11: "CUDA_MEMCPY_KIND_UVM_HTOD",
    12: "CUDA_MEMCPY_KIND_UVM_DTOH",
    13: "CUDA_MEMCPY_KIND_UVM_DTOD",
}
_DEFAULT_MEM_KIND = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
    6: "Managed Static",
    7: "Unknown",
}
_DEFAULT_SYNC_TYPE = {
    0: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN",
    1: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE",
    2: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT",
    3: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE",
    4: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE",
}
#: Sync record names as PyTorch's profiler (Kineto) writes them.
_SYNC_NAMES = {
    "EVENT_SYNCHRONIZE": "Event Sync",
    "STREAM_WAIT_EVENT": "Stream Wait Event",
    "STREAM_SYNCHRONIZE": "Stream Sync",
    "CONTEXT_SYNCHRONIZE": "Context Sync",
}
_DEFAULT_EVENT_TYPES = {
    "NvtxMark": 34,
    "NvtxPushPopRange": 59,
    "NvtxStartEndRange": 60,
    "NvtxtMark": 65,
    "NvtxtPushPopRange": 70,
    "NvtxtStartEndRange": 71,
    "NvtxDomainCreate": 75,
}
_NVTX_RANGE_TYPES = ("NvtxPushPopRange", "NvtxStartEndRange", "NvtxtPushPopRange", "NvtxtStartEndRange")
_NVTX_MARK_TYPES = ("NvtxMark", "NvtxtMark")

#: ``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel`` (the names PyTorch traces use).
_API_VERSION_SUFFIX = re.compile(r"_v\d{4,5}$")

CODE = {k: np.int8(KIND_CODE[k]) for k in EventKind}
DEVICE_CODES = np.array(sorted(KIND_CODE[k] for k in DEVICE_KINDS), dtype=np.int8)
ACTIVITY_CODES = np.array(sorted(KIND_CODE[k] for k in GPU_ACTIVITY_KINDS), dtype=np.int8)
LAUNCH_CODES = np.array(sorted(KIND_CODE[k] for k in LAUNCH_KINDS), dtype=np.int8)
WORK_CODES = np.array(
    sorted(KIND_CODE[k] for k in (EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET)), dtype=np.int8
)


class Names:
    """A pool of event names: string -> code."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def code(self, name: str) -> int:
        return self.index.setdefault(name, len(self.index))

    def codes(self, names: Sequence[str]) -> np.ndarray:
        local, uniques = pd.factorize(np.asarray(names, dtype=object))
        return self.lookup(local, [str(u) for u in uniques])

    def lookup(self, local: np.ndarray, labels: Sequence[str]) -> np.ndarray:
        """Pool codes of rows given as codes into ``labels``."""
        lut = np.array([self.code(x) for x in labels], dtype=np.int32)
        return lut[local] if len(local) else np.empty(0, dtype=np.int32)

    @property
    def values(self) -> list[str]:
        return list(self.index)


@dataclass
class Part:
    """Rows of one table, as columns (a piece of the file's event table)."""

    ts: np.ndarray
    end: np.ndarray
    kind: np.ndarray
    name: np.ndarray  # codes into Names
    #: Process key (globalPid >> 24, or globalTid >> 24): links launches to activities.
    proc: np.ndarray
    pid: np.ndarray
    #: Thread key (globalTid) of CPU events; -1 for device events.
    thread: np.ndarray
    tid: np.ndarray
    device: np.ndarray
    context: np.ndarray
    stream: np.ndarray
    correlation: np.ndarray
    args: dict[str, np.ndarray] = field(default_factory=dict)


_ARG_DEFAULTS: dict[str, tuple[Any, type]] = {
    "grid_x": (-1, np.int64),
    "grid_y": (-1, np.int64),
    "grid_z": (-1, np.int64),
    "block_x": (-1, np.int64),
    "block_y": (-1, np.int64),
    "block_z": (-1, np.int64),
    "registers": (-1, np.int64),
    "shared_memory": (-1, np.int64),
    "bytes": (-1, np.int64),
    "copy_kind": (-1, np.int8),
    "pageable": (False, bool),
}


@dataclass
class ExportFile:
    """Every event of the file (all ranks) plus what the export says about itself."""

    part: Part
    names: list[str]
    base_time_ns: int
    duration_ns: int | None
    process_names: dict[int, str]
    thread_names: dict[int, str]  # globalTid -> name
    gpus: list[dict[str, Any]]
    cuda_devices: list[tuple[int, int, int]]  # (pid, cudaId, gpuId)
    extra: dict[str, Any]
    skipped: dict[str, int]
    #: Name code -> N of the ``ProfilerStep#N`` names.
    step_numbers: dict[int, int] = field(default_factory=dict)
    #: Name code -> collective of the NCCL range names.
    collectives: dict[int, str] = field(default_factory=dict)


def _decode_pid(g: np.ndarray) -> np.ndarray:
    """The OS process id in a serialised globalPid/globalTid (bits 24-47)."""
    return (g >> 24) & 0xFFFFFF


def _name_codes(
    values: list[Any], strings: dict[int, str], pool: Names, *, missing: str, clean: Any = None
) -> np.ndarray:
    """Pool codes of a column holding StringIds ids, inline text or NULLs (``clean`` edits each name)."""
    try:
        ids = np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        local, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
        keys: list[Any] = list(uniques)
    else:
        uniq, local = np.unique(ids, return_inverse=True)
        keys = uniq.tolist()
    labels = []
    for v in keys:
        if v is None or (isinstance(v, float) and v != v):
            label = missing
        elif isinstance(v, int):
            label = strings.get(v, f"{missing} (string id {v})")
        else:
            label = str(v)
        labels.append(clean(label) if clean is not None else label)
    return pool.lookup(np.asarray(local).reshape(-1), labels)


def _labelled(pool: Names, columns: np.ndarray, label: Any) -> np.ndarray:
    """Pool codes of names made from integer columns (one call of ``label`` per distinct row)."""
    if len(columns) == 0:
        return np.empty(0, dtype=np.int32)
    uniq, local = np.unique(columns, axis=0, return_inverse=True)
    return pool.lookup(local.reshape(-1), [label(*row) for row in uniq.tolist()])


def _triple(db: Database, table: str, xyz: tuple[str, str, str], combined: Sequence[str]) -> np.ndarray:
    """A 3-vector per row (n x 3): from x/y/z columns, else from one text column ('(128, 1, 1)', '128,1,1')."""
    if db.pick(table, (xyz[0],)) is not None or db.pick(table, combined) is None:
        return db.ints(table, [((xyz[0],), -1), ((xyz[1],), -1), ((xyz[2],), -1)])
    rows = []
    for v in db.values(table, combined):
        nums = [int(x) for x in re.findall(r"-?\d+", str(v))] if v is not None else []
        rows.append([*nums, 1, 1, 1][:3] if nums else [-1, -1, -1])
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


#: Candidate column names per field, newest first.
_START = ("start", "startTime", "timestamp")
_END = ("end", "endTime", "stop")
_DEVICE = ("deviceId", "device")
_CONTEXT = ("contextId", "context")
_STREAM = ("streamId", "stream")
_CORRELATION = ("correlationId", "correlation")
_GLOBAL_PID = ("globalPid",)
_RAW_PID = ("processId", "pid")
_GLOBAL_TID = ("globalTid",)
_RAW_TID = ("threadId", "tid")


def _gpu_part(
    db: Database, table: str, kind: EventKind, extra_fields: Sequence[tuple[Sequence[str], int]] = ()
) -> tuple[Part, np.ndarray]:
    """The common columns of a GPU activity table (names left to the caller), and the extra fields."""
    has_gpid = db.pick(table, _GLOBAL_PID) is not None
    fields: list[tuple[Sequence[str], int]] = [
        (_START, 0),
        (_END, 0),
        (_DEVICE, 0),
        (_CONTEXT, -1),
        (_STREAM, 0),
        (_CORRELATION, -1),
        (_GLOBAL_PID, -1) if has_gpid else (_RAW_PID, -1),
        *extra_fields,
    ]
    a = db.ints(table, fields)
    n = len(a)
    gp = a[:, 6]
    if has_gpid:
        proc = np.where(gp >= 0, gp >> 24, -1)
        pid = np.where(gp >= 0, _decode_pid(gp), -1)
    else:
        proc = pid = gp
    part = Part(
        ts=a[:, 0].copy(),
        end=a[:, 1].copy(),
        kind=np.full(n, CODE[kind], dtype=np.int8),
        name=np.zeros(n, dtype=np.int32),
        proc=proc,
        pid=pid,
        thread=np.full(n, -1, dtype=np.int64),
        tid=np.full(n, -1, dtype=np.int64),
        device=a[:, 2].copy(),
        context=a[:, 3].copy(),
        stream=a[:, 4].copy(),
        correlation=a[:, 5].copy(),
    )
    return part, a[:, 7:]


def read_kernels(db: Database, strings: dict[int, str], pool: Names) -> Part:
    extra: list[tuple[Sequence[str], int]] = [
        (("registersPerThread", "registers"), -1),
        (("staticSharedMemory",), -1),
        (("dynamicSharedMemory",), -1),
        (("sharedMemory", "sharedMemoryBytes"), -1),
    ]
    xyz = db.pick(KERNEL, ("gridX",)) is not None and db.pick(KERNEL, ("blockX",)) is not None
    if xyz:  # read with the other integer columns, in one pass
        extra += [((c,), -1) for c in ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")]
    part, a = _gpu_part(db, KERNEL, EventKind.KERNEL, extra)
    raw = db.values(KERNEL, ("demangledName", "name", "shortName", "mangledName"))
    part.name = _name_codes(raw, strings, pool, missing="(unnamed kernel)")
    if xyz:
        g, b = a[:, 4:7], a[:, 7:10]
    else:
        g = _triple(db, KERNEL, ("gridX", "gridY", "gridZ"), ("gridDim", "grid"))
        b = _triple(db, KERNEL, ("blockX", "blockY", "blockZ"), ("blockDim", "block"))
    regs, static, dynamic, combined = a[:, :4].T
    smem = np.where((static >= 0) | (dynamic >= 0), np.maximum(static, 0) + np.maximum(dynamic, 0), combined)
    part.args = {
        "grid_x": g[:, 0].copy(),
        "grid_y": g[:, 1].copy(),
        "grid_z": g[:, 2].copy(),
        "block_x": b[:, 0].copy(),
        "block_y": b[:, 1].copy(),
        "block_z": b[:, 2].copy(),
        "registers": regs.copy(),
        "shared_memory": smem,
    }
    return part


def _short_copy_kind(enum_name: str) -> str:
    """CUDA_MEMCPY_KIND_HTOD -> HtoD (UVM kinds keep their direction)."""
    tail = enum_name.rsplit("_", 1)[-1].upper()
    if len(tail) == 4 and tail[1:3] == "TO":
        return f"{tail[0]}to{tail[3]}"
    return tail.capitalize() or "Unknown"


def read_memcpys(db: Database, pool: Names) -> Part:
    kinds = db.enum("ENUM_CUDA_MEMCPY_OPER", _DEFAULT_MEMCPY_KIND)
    mem = db.enum("ENUM_CUDA_MEM_KIND", _DEFAULT_MEM_KIND, column="label")
    has_src = db.pick(MEMCPY, ("srcKind",)) is not None and db.pick(MEMCPY, ("dstKind",)) is not None
    extra: list[tuple[Sequence[str], int]] = [
        (("bytes", "size"), -1),
        (("copyKind",), 0),
        (("srcKind",), -1),
        (("dstKind",), -1),
    ]
    part, a = _gpu_part(db, MEMCPY, EventKind.GPU_MEMCPY, extra)
    nbytes, copy_kind, src, dst = a.T

    def label(ck: int, s: int, d: int) -> str:
        short = _short_copy_kind(kinds.get(ck, "UNKNOWN"))
        if not has_src:
            return f"Memcpy {short}"
        return f"Memcpy {short} ({mem.get(s, 'Unknown')} -> {mem.get(d, 'Unknown')})"

    part.name = _labelled(pool, a[:, 1:4], label)
    code = {k: i for i, k in enumerate(COPY_KINDS)}
    short_codes = np.array(
        [code.get(_short_copy_kind(kinds.get(ck, "UNKNOWN")), -1) for ck in range(max(kinds) + 1)], dtype=np.int8
    )
    in_range = (copy_kind >= 0) & (copy_kind < len(short_codes))
    pageable_kinds = [k for k, v in mem.items() if v.lower() == "pageable"]
    part.args = {
        "bytes": nbytes.copy(),
        "copy_kind": np.where(in_range, short_codes[np.where(in_range, copy_kind, 0)], -1).astype(np.int8),
        "pageable": np.isin(src, pageable_kinds) | np.isin(dst, pageable_kinds),
    }
    return part


def read_memsets(db: Database, pool: Names) -> Part:
    mem = db.enum("ENUM_CUDA_MEM_KIND", _DEFAULT_MEM_KIND, column="label")
    has_kind = db.pick(MEMSET, ("memKind", "memoryKind")) is not None
    extra: list[tuple[Sequence[str], int]] = [(("bytes", "size"), -1), (("memKind", "memoryKind"), -1)]
    part, a = _gpu_part(db, MEMSET, EventKind.GPU_MEMSET, extra)
    part.name = _labelled(pool, a[:, 1:2], lambda k: f"Memset ({mem.get(k, 'Unknown')})" if has_kind else "Memset")
    part.args = {
        "bytes": a[:, 0].copy(),
        "copy_kind": np.full(len(a), COPY_KINDS.index("memset"), dtype=np.int8),
    }
    return part


def read_syncs(db: Database, pool: Names) -> Part:
    types = db.enum("ENUM_CUPTI_SYNC_TYPE", _DEFAULT_SYNC_TYPE)
    part, a = _gpu_part(db, SYNC, EventKind.CUDA_SYNC, [(("syncType", "deprecatedSyncType"), 0)])
    part.name = _labelled(
        pool, a, lambda t: _SYNC_NAMES.get(types.get(t, "UNKNOWN").split("_TYPE_")[-1], "Unknown Sync")
    )
    return part


def read_graphs(db: Database, pool: Names) -> Part:
    part, a = _gpu_part(db, GRAPH, EventKind.KERNEL, [(("graphId",), -1)])
    part.name = _labelled(pool, a, lambda g: f"CUDA Graph {g}" if g >= 0 else "CUDA Graph")
    return part


def _thread_fields(db: Database, table: str) -> tuple[list[tuple[Sequence[str], int]], bool]:
    if db.pick(table, _GLOBAL_TID) is not None:
        return [(_GLOBAL_TID, 0), ((), 0)], True
    return [(_RAW_PID, 0), (_RAW_TID, 0)], False


def _cpu_ids(a: np.ndarray, b: np.ndarray, serialised: bool) -> tuple[np.ndarray, ...]:
    """(proc, pid, thread, tid) of CPU rows, from globalTid or from raw pid/tid columns."""
    if serialised:
        return a >> 24, _decode_pid(a), a.copy(), a & 0xFFFFFF
    return a.copy(), a.copy(), (a << 24) | (b & 0xFFFFFF), b.copy()


def read_runtime(db: Database, strings: dict[int, str], pool: Names) -> Part:
    ids, serialised = _thread_fields(db, RUNTIME)
    fields: list[tuple[Sequence[str], int]] = [(_START, 0), (_END, 0), *ids, (_CORRELATION, -1), (("eventClass",), -1)]
    a = db.ints(RUNTIME, fields)
    raw = db.values(RUNTIME, ("nameId", "name"))
    name = _name_codes(
        raw, strings, pool, missing="(unnamed CUDA call)", clean=lambda x: _API_VERSION_SUFFIX.sub("", x)
    )
    names = pool.values
    driver_names = np.array([x.startswith("cu") and not x.startswith("cuda") for x in names], dtype=bool)
    event_class = a[:, 5]
    # eventClass: 0 CUDA runtime, 1 CUDA driver (ENUM_NSYS_EVENT_CLASS); else judge by the name.
    is_driver = np.where(event_class >= 0, event_class == 1, driver_names[name] if len(name) else False)
    proc, pid, thread, tid = _cpu_ids(a[:, 2], a[:, 3], serialised)
    n = len(a)
    return Part(
        ts=a[:, 0].copy(),
        end=a[:, 1].copy(),
        kind=np.where(is_driver, CODE[EventKind.CUDA_DRIVER], CODE[EventKind.CUDA_RUNTIME]).astype(np.int8),
        name=name,
        proc=proc,
        pid=pid,
        thread=thread,
        tid=tid,
        device=np.full(n, -1, dtype=np.int64),
        context=np.full(n, -1, dtype=np.int64),
        stream=np.full(n, -1, dtype=np.int64),
        correlation=a[:, 4].copy(),
    )


def read_nvtx(
    db: Database, strings: dict[int, str], pool: Names, skipped: dict[str, int]
) -> tuple[Part, dict[str, str]]:
    event_types = dict(_DEFAULT_EVENT_TYPES)
    if db.has("ENUM_NSYS_EVENT_TYPE"):
        event_types.update({v: k for k, v in db.enum("ENUM_NSYS_EVENT_TYPE", {}).items() if v in event_types})
    ids, serialised = _thread_fields(db, NVTX)
    fields: list[tuple[Sequence[str], int]] = [
        (_START, 0),
        (_END, -1),
        *ids,
        (("eventType",), -1),
        (("domainId",), 0),
        (("textId",), -1),
    ]
    a = db.ints(NVTX, fields)
    start, end, etype, domain, text_id = a[:, 0], a[:, 1], a[:, 4], a[:, 5], a[:, 6]
    inline = db.values(NVTX, ("text",))
    texts = [t if t is not None else strings.get(i) for t, i in zip(inline, text_id.tolist(), strict=True)]

    # Domain names come from NvtxDomainCreate records (their text is the domain's name).
    is_domain = etype == event_types["NvtxDomainCreate"]
    domains: dict[int, str] = {}
    for i, d in zip(np.flatnonzero(is_domain).tolist(), domain[is_domain].tolist(), strict=True):
        text = texts[i]
        if text:
            domains[int(d)] = text

    range_types = [event_types[t] for t in _NVTX_RANGE_TYPES]
    mark_types = [event_types[t] for t in _NVTX_MARK_TYPES]
    unknown_type = etype < 0
    is_range = np.isin(etype, range_types) | (unknown_type & (end >= 0))
    is_mark = np.isin(etype, mark_types) | (unknown_type & (end < 0))
    open_ranges = is_range & (end < 0)
    if open_ranges.any():
        skipped["NVTX ranges without an end"] = int(open_ranges.sum())
    other = ~(is_range | is_mark | is_domain)
    if other.any():
        skipped["NVTX records other than ranges and marks"] = int(other.sum())
    rows_kept = np.flatnonzero((is_range & ~open_ranges) | is_mark)
    kept_domain = domain[rows_kept].tolist()
    names = []
    for i, d in zip(rows_kept.tolist(), kept_domain, strict=True):
        label = texts[i] or "(unnamed NVTX range)"
        dom = domains.get(d) if d != 0 else None
        names.append(f"{dom}:{label}" if dom else label)
    proc, pid, thread, tid = (x[rows_kept] for x in _cpu_ids(a[:, 2], a[:, 3], serialised))
    ts = start[rows_kept]
    n = len(rows_kept)
    part = Part(
        ts=ts,
        end=np.where(is_mark[rows_kept], ts, end[rows_kept]),
        kind=np.full(n, CODE[EventKind.USER_ANNOTATION], dtype=np.int8),
        name=pool.codes(names),
        proc=proc,
        pid=pid,
        thread=thread,
        tid=tid,
        device=np.full(n, -1, dtype=np.int64),
        context=np.full(n, -1, dtype=np.int64),
        stream=np.full(n, -1, dtype=np.int64),
        correlation=np.full(n, -1, dtype=np.int64),
    )
    return part, {str(k): v for k, v in sorted(domains.items())}


_PART_COLUMNS = (
    "ts",
    "end",
    "kind",
    "name",
    "proc",
    "pid",
    "thread",
    "tid",
    "device",
    "context",
    "stream",
    "correlation",
)


def _part(columns: dict[str, np.ndarray]) -> Part:
    c = columns
    return Part(
        ts=c["ts"],
        end=c["end"],
        kind=c["kind"],
        name=c["name"],
        proc=c["proc"],
        pid=c["pid"],
        thread=c["thread"],
        tid=c["tid"],
        device=c["device"],
        context=c["context"],
        stream=c["stream"],
        correlation=c["correlation"],
    )


def concat_parts(parts: list[Part]) -> Part:
    n = sum(len(q.ts) for q in parts)
    columns: dict[str, np.ndarray] = {}
    for name in _PART_COLUMNS:
        empty = np.empty(0, dtype=np.int8 if name == "kind" else np.int64)
        columns[name] = np.concatenate([getattr(q, name) for q in parts]) if parts else empty
    out = _part(columns)
    for key, (default, dtype) in _ARG_DEFAULTS.items():
        col: np.ndarray = np.full(n, default, dtype=dtype)
        pos = 0
        for q in parts:
            m = len(q.ts)
            if key in q.args:
                col[pos : pos + m] = q.args[key]
            pos += m
        out.args[key] = col
    return out


def take_rows(p: Part, rows: np.ndarray) -> Part:
    out = _part({name: getattr(p, name)[rows] for name in _PART_COLUMNS})
    out.args = {k: v[rows] for k, v in p.args.items()}
    return out
