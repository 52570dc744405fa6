"""Reader for Nsight Systems SQLite exports (``nsys export --type sqlite``).

The export is a database with one table per kind of record. This reader maps the CUDA and
NVTX tables onto the one trace schema (``docs/schema.md``); ``docs/nsys.md`` lists every
table and column used, and what is not read.

Ranks. Every (process, CUDA device) pair with GPU activity is one rank, numbered in the
order (device, pid): several GPUs driven by one process become one rank per device, and a
``torchrun`` job profiled as one report becomes one rank per worker. CPU-side events
(CUDA API calls, NVTX ranges) belong to threads; a thread goes to every rank whose device
ran work it launched (found by correlation id, per process), so a thread driving two GPUs
appears in both ranks. Threads that launched nothing go to the lowest rank of their
process; threads of processes without GPU activity go to the file's lowest rank. A file
without any GPU activity is one CPU-only rank.

Schemas. Column names moved across Nsight versions; every table is read through
``PRAGMA table_info`` and each field is taken from the first of its known column names
that exists (e.g. ``gridX``/``gridY``/``gridZ`` or a ``gridDim`` text column), with a
documented default when none does. Names are StringIds references or inline text.

Times. Export timestamps are ns since the session start; the session's UTC start
(``TARGET_INFO_SESSION_START_TIME.utcEpochNs``) is added to every time, so that ``ts_ns``
is ns since the Unix epoch as for PyTorch traces, and recorded as ``meta.base_time_ns``.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import TraceFormatError
from ...model.classify import COPY_KINDS
from ...model.collectives import normalize_collective
from ...model.rank_data import RankData, RankMeta
from ...model.schema import (
    COMMS_COLUMNS,
    COMMS_SOURCES,
    DEVICE_KINDS,
    GPU_ACTIVITY_KINDS,
    GPU_ARGS_COLUMNS,
    KIND_CATEGORIES,
    KIND_CODE,
    LAUNCH_KINDS,
    EventKind,
    categorical,
)
from . import derive
from .common import DROPPED, WARNINGS_KEY, NotATraceError
from .files import NSYS_REPORT_SUFFIXES, SQLITE_MAGIC

__all__ = ["WARNINGS_KEY", "parse_nsys"]

#: Key of RankMeta.extra holding messages for the loader to show as warnings (a list of str).

_KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
_MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
_MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
_SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
_RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
_GRAPH = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
_NVTX = "NVTX_EVENTS"
_CUDA_TABLES = (_KERNEL, _MEMCPY, _MEMSET, _SYNC, _RUNTIME, _GRAPH)
#: Tables that only an Nsight Systems export has (any one of them identifies one).
_NSYS_MARKERS = frozenset(
    {
        "StringIds",
        "META_DATA_EXPORT",
        "META_DATA_CAPTURE",
        "TARGET_INFO_SESSION_START_TIME",
        "ANALYSIS_DETAILS",
        "ThreadNames",
        _NVTX,
    }
)
#: Event tables of an export that this reader does not map (their rows are counted in meta.skipped).
_UNMAPPED_TABLES = (
    "OSRT_API",
    "CUDNN_EVENTS",
    "CUBLAS_EVENTS",
    "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
    "CUDA_GRAPH_NODE_EVENTS",
    "CUDA_GPU_MEMORY_USAGE_EVENTS",
    "CUDA_UM_CPU_PAGE_FAULT_EVENTS",
    "CUDA_UM_GPU_PAGE_FAULT_EVENTS",
    "MPI_P2P_EVENTS",
    "MPI_COLLECTIVES_EVENTS",
    "MPI_OTHER_EVENTS",
    "SCHED_EVENTS",
    "COMPOSITE_EVENTS",
    "GPU_METRICS",
    "NVTX_PAYLOAD_SCHEMAS",
)

# --------------------------------------------------------------------------------------
# Enumerations (used when the export lacks its ENUM_* tables; values as Nsight writes them)
# --------------------------------------------------------------------------------------
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
#: NCCL's NVTX ranges of collectives (``ncclAllReduce``, ...), with or without a ``domain:`` prefix.
_NCCL_RANGE = re.compile(
    r"^(?:[^:]*:)?nccl(AllReduce|AllGather|ReduceScatter|Broadcast|Bcast|Reduce|Send|Recv|AllToAll|AlltoAll|Gather|Scatter)$"
)

_CODE = {k: np.int8(KIND_CODE[k]) for k in EventKind}
_DEVICE_CODES = np.array(sorted(KIND_CODE[k] for k in DEVICE_KINDS), dtype=np.int8)
_ACTIVITY_CODES = np.array(sorted(KIND_CODE[k] for k in GPU_ACTIVITY_KINDS), dtype=np.int8)
_LAUNCH_CODES = np.array(sorted(KIND_CODE[k] for k in LAUNCH_KINDS), dtype=np.int8)
_WORK_CODES = np.array(
    sorted(KIND_CODE[k] for k in (EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET)), dtype=np.int8
)

#: Rows fetched from SQLite at a time (bounds the Python objects alive while reading).
_CHUNK_ROWS = 1 << 17

_EXPORT_HINT = (
    "Export the report with `nsys export --type sqlite -o report.sqlite report.nsys-rep` and load the .sqlite file"
)


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------
def parse_nsys(path: Path, *, name_rank: int | None = None, bad_events: str = "raise") -> list[RankData]:
    """Read one Nsight Systems SQLite export into one RankData per (process, GPU) pair.

    Ranks are numbered 0, 1, ... in (device, pid) order with ``rank_source="order"``
    (the loader renumbers them across the files of a folder); a file holding a single
    rank takes ``name_rank`` (the rank in its file name) when given.

    Raises :class:`NotATraceError` for a file that is not an Nsight export (not SQLite,
    or SQLite without Nsight's tables) and :class:`TraceFormatError` for a broken one.
    """
    path = Path(path)
    if path.name.lower().endswith(NSYS_REPORT_SUFFIXES):
        stem = path.name.rsplit(".", 1)[0]
        raise TraceFormatError(
            path,
            "is an Nsight Systems report in its binary format, which tv.load() cannot read",
            f"Export it to SQLite first: `nsys export --type sqlite -o {stem}.sqlite {path.name}`, "
            "then load the .sqlite file",
        )
    _check_file(path)
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise TraceFormatError(path, f"cannot be opened as an SQLite database ({exc})", _EXPORT_HINT) from None
    try:
        db = _Db(con, path)
        f = _read_file(db, path, bad_events)
    except sqlite3.DatabaseError as exc:
        raise TraceFormatError(
            path,
            f"is a damaged SQLite database ({exc})",
            "The export or a copy of it was interrupted or corrupted; run `nsys export --type sqlite` again",
        ) from None
    finally:
        con.close()
    return _split(path, f, name_rank)


def _check_file(path: Path) -> None:
    """Size, SQLite header and truncation checks, before SQLite sees the file."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(100)
    except PermissionError:
        raise TraceFormatError(path, "cannot be read (permission denied)", "Check the file's permissions") from None
    except IsADirectoryError:
        raise TraceFormatError(path, "is a folder, not a file", "Pass the folder itself to tv.load()") from None
    except OSError as exc:
        raise TraceFormatError(path, f"cannot be read ({exc.strerror or exc})", "Check the file and the disk") from None
    if size == 0:
        raise TraceFormatError(
            path, "is empty (0 bytes)", "The export was interrupted; run `nsys export --type sqlite` again"
        )
    if not head.startswith(SQLITE_MAGIC[: min(len(head), 16)]):
        raise NotATraceError(path, "is not an SQLite database (it does not start with 'SQLite format 3')", _EXPORT_HINT)
    if len(head) < 100:
        raise TraceFormatError(
            path,
            f"is truncated: only {len(head)} bytes, shorter than an SQLite header",
            "The export or a copy was interrupted; run `nsys export --type sqlite` again or copy the file again",
        )
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    page_count = int.from_bytes(head[28:32], "big")
    # The header's page count is valid when its "version-valid-for" equals the change counter.
    if page_count and head[92:96] == head[24:28] and size < page_size * page_count:
        raise TraceFormatError(
            path,
            f"is truncated: its SQLite header says {page_size * page_count:,} bytes, the file has {size:,}",
            "The export or a copy was interrupted; run `nsys export --type sqlite` again or copy the file again",
        )


class _Db:
    """The tables and columns of an export, looked up once."""

    def __init__(self, con: sqlite3.Connection, path: Path) -> None:
        self.con = con
        rows = con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
        self.tables: set[str] = {r[0] for r in rows}
        self._columns: dict[str, set[str]] = {}
        if not (self.tables & _NSYS_MARKERS or any(t.startswith("CUPTI_ACTIVITY_KIND_") for t in self.tables)):
            listed = ", ".join(sorted(self.tables)[:12]) or "none"
            raise NotATraceError(
                path,
                f"is an SQLite database but not an Nsight Systems export (its tables: {listed})",
                "Pass a file written by `nsys export --type sqlite`",
            )

    def columns(self, table: str) -> set[str]:
        if table not in self._columns:
            self._columns[table] = {r[1] for r in self.con.execute(f'PRAGMA table_info("{table}")').fetchall()}
        return self._columns[table]

    def has(self, table: str) -> bool:
        return table in self.tables

    def pick(self, table: str, candidates: Sequence[str]) -> str | None:
        cols = self.columns(table)
        return next((c for c in candidates if c in cols), None)

    def ints(self, table: str, fields: Sequence[tuple[Sequence[str], int]]) -> np.ndarray:
        """Integer columns of ``table`` as an (n, k) int64 array, fetched in chunks.

        Each field is the first of its candidate columns that exists, cast to INTEGER,
        with NULL (and a missing column) read as the field's default.
        """
        exprs = []
        for candidates, default in fields:
            col = self.pick(table, candidates)
            exprs.append(f'coalesce(CAST("{col}" AS INTEGER), {int(default)})' if col else str(int(default)))
        cur = self.con.execute(f'SELECT {", ".join(exprs)} FROM "{table}"')
        chunks = []
        while rows := cur.fetchmany(_CHUNK_ROWS):
            chunks.append(np.array(rows, dtype=np.int64).reshape(len(rows), len(fields)))
        return np.concatenate(chunks) if chunks else np.empty((0, len(fields)), dtype=np.int64)

    def values(self, table: str, candidates: Sequence[str]) -> list[Any]:
        """One column as stored (ids, text or NULL); NULLs when no candidate column exists."""
        col = self.pick(table, candidates)
        expr = f'"{col}"' if col else "NULL"
        return [r[0] for r in self.con.execute(f'SELECT {expr} FROM "{table}"').fetchall()]

    def enum(self, table: str, default: dict[int, str], *, column: str = "name") -> dict[int, str]:
        if not self.has(table) or not {"id", column} <= self.columns(table):
            return dict(default)
        out = dict(default)
        for i, v in self.con.execute(f'SELECT id, "{column}" FROM "{table}"').fetchall():
            if isinstance(i, int) and v is not None:
                out[i] = str(v)
        return out

    def count(self, table: str) -> int:
        return int(self.con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])


# --------------------------------------------------------------------------------------
# Reading the tables into file-level columns
# --------------------------------------------------------------------------------------
class _Names:
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
class _Part:
    """Rows of one table, as columns (a piece of the file's event table)."""

    ts: np.ndarray
    end: np.ndarray
    kind: np.ndarray
    name: np.ndarray  # codes into _Names
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
class _File:
    """Every event of the file (all ranks) plus what the export says about itself."""

    part: _Part
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


def _string_ids(db: _Db) -> dict[int, str]:
    if not db.has("StringIds") or not {"id", "value"} <= db.columns("StringIds"):
        return {}
    return {int(i): str(v) for i, v in db.con.execute("SELECT id, value FROM StringIds").fetchall() if v is not None}


def _name_codes(
    values: list[Any], strings: dict[int, str], pool: _Names, *, missing: str, clean: Any = None
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


def _labelled(pool: _Names, columns: np.ndarray, label: Any) -> np.ndarray:
    """Pool codes of names made from integer columns (one call of ``label`` per distinct row)."""
    if len(columns) == 0:
        return np.empty(0, dtype=np.int32)
    uniq, local = np.unique(columns, axis=0, return_inverse=True)
    return pool.lookup(local.reshape(-1), [label(*row) for row in uniq.tolist()])


def _triple(db: _Db, table: str, xyz: tuple[str, str, str], combined: Sequence[str]) -> np.ndarray:
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
    db: _Db, table: str, kind: EventKind, extra_fields: Sequence[tuple[Sequence[str], int]] = ()
) -> tuple[_Part, np.ndarray]:
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
    part = _Part(
        ts=a[:, 0].copy(),
        end=a[:, 1].copy(),
        kind=np.full(n, _CODE[kind], dtype=np.int8),
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


def _kernels(db: _Db, strings: dict[int, str], pool: _Names) -> _Part:
    extra: list[tuple[Sequence[str], int]] = [
        (("registersPerThread", "registers"), -1),
        (("staticSharedMemory",), -1),
        (("dynamicSharedMemory",), -1),
        (("sharedMemory", "sharedMemoryBytes"), -1),
    ]
    xyz = db.pick(_KERNEL, ("gridX",)) is not None and db.pick(_KERNEL, ("blockX",)) is not None
    if xyz:  # read with the other integer columns, in one pass
        extra += [((c,), -1) for c in ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")]
    part, a = _gpu_part(db, _KERNEL, EventKind.KERNEL, extra)
    raw = db.values(_KERNEL, ("demangledName", "name", "shortName", "mangledName"))
    part.name = _name_codes(raw, strings, pool, missing="(unnamed kernel)")
    if xyz:
        g, b = a[:, 4:7], a[:, 7:10]
    else:
        g = _triple(db, _KERNEL, ("gridX", "gridY", "gridZ"), ("gridDim", "grid"))
        b = _triple(db, _KERNEL, ("blockX", "blockY", "blockZ"), ("blockDim", "block"))
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


def _memcpys(db: _Db, pool: _Names) -> _Part:
    kinds = db.enum("ENUM_CUDA_MEMCPY_OPER", _DEFAULT_MEMCPY_KIND)
    mem = db.enum("ENUM_CUDA_MEM_KIND", _DEFAULT_MEM_KIND, column="label")
    has_src = db.pick(_MEMCPY, ("srcKind",)) is not None and db.pick(_MEMCPY, ("dstKind",)) is not None
    extra: list[tuple[Sequence[str], int]] = [
        (("bytes", "size"), -1),
        (("copyKind",), 0),
        (("srcKind",), -1),
        (("dstKind",), -1),
    ]
    part, a = _gpu_part(db, _MEMCPY, EventKind.GPU_MEMCPY, extra)
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


def _memsets(db: _Db, pool: _Names) -> _Part:
    mem = db.enum("ENUM_CUDA_MEM_KIND", _DEFAULT_MEM_KIND, column="label")
    has_kind = db.pick(_MEMSET, ("memKind", "memoryKind")) is not None
    extra: list[tuple[Sequence[str], int]] = [(("bytes", "size"), -1), (("memKind", "memoryKind"), -1)]
    part, a = _gpu_part(db, _MEMSET, EventKind.GPU_MEMSET, extra)
    part.name = _labelled(pool, a[:, 1:2], lambda k: f"Memset ({mem.get(k, 'Unknown')})" if has_kind else "Memset")
    part.args = {
        "bytes": a[:, 0].copy(),
        "copy_kind": np.full(len(a), COPY_KINDS.index("memset"), dtype=np.int8),
    }
    return part


def _syncs(db: _Db, pool: _Names) -> _Part:
    types = db.enum("ENUM_CUPTI_SYNC_TYPE", _DEFAULT_SYNC_TYPE)
    part, a = _gpu_part(db, _SYNC, EventKind.CUDA_SYNC, [(("syncType", "deprecatedSyncType"), 0)])
    part.name = _labelled(
        pool, a, lambda t: _SYNC_NAMES.get(types.get(t, "UNKNOWN").split("_TYPE_")[-1], "Unknown Sync")
    )
    return part


def _graphs(db: _Db, pool: _Names) -> _Part:
    part, a = _gpu_part(db, _GRAPH, EventKind.KERNEL, [(("graphId",), -1)])
    part.name = _labelled(pool, a, lambda g: f"CUDA Graph {g}" if g >= 0 else "CUDA Graph")
    return part


def _thread_fields(db: _Db, table: str) -> tuple[list[tuple[Sequence[str], int]], bool]:
    if db.pick(table, _GLOBAL_TID) is not None:
        return [(_GLOBAL_TID, 0), ((), 0)], True
    return [(_RAW_PID, 0), (_RAW_TID, 0)], False


def _cpu_ids(a: np.ndarray, b: np.ndarray, serialised: bool) -> tuple[np.ndarray, ...]:
    """(proc, pid, thread, tid) of CPU rows, from globalTid or from raw pid/tid columns."""
    if serialised:
        return a >> 24, _decode_pid(a), a.copy(), a & 0xFFFFFF
    return a.copy(), a.copy(), (a << 24) | (b & 0xFFFFFF), b.copy()


def _runtime(db: _Db, strings: dict[int, str], pool: _Names) -> _Part:
    ids, serialised = _thread_fields(db, _RUNTIME)
    fields: list[tuple[Sequence[str], int]] = [(_START, 0), (_END, 0), *ids, (_CORRELATION, -1), (("eventClass",), -1)]
    a = db.ints(_RUNTIME, fields)
    raw = db.values(_RUNTIME, ("nameId", "name"))
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
    return _Part(
        ts=a[:, 0].copy(),
        end=a[:, 1].copy(),
        kind=np.where(is_driver, _CODE[EventKind.CUDA_DRIVER], _CODE[EventKind.CUDA_RUNTIME]).astype(np.int8),
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


def _nvtx(db: _Db, strings: dict[int, str], pool: _Names, skipped: dict[str, int]) -> tuple[_Part, dict[str, str]]:
    event_types = dict(_DEFAULT_EVENT_TYPES)
    if db.has("ENUM_NSYS_EVENT_TYPE"):
        event_types.update({v: k for k, v in db.enum("ENUM_NSYS_EVENT_TYPE", {}).items() if v in event_types})
    ids, serialised = _thread_fields(db, _NVTX)
    fields: list[tuple[Sequence[str], int]] = [
        (_START, 0),
        (_END, -1),
        *ids,
        (("eventType",), -1),
        (("domainId",), 0),
        (("textId",), -1),
    ]
    a = db.ints(_NVTX, fields)
    start, end, etype, domain, text_id = a[:, 0], a[:, 1], a[:, 4], a[:, 5], a[:, 6]
    inline = db.values(_NVTX, ("text",))
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
    part = _Part(
        ts=ts,
        end=np.where(is_mark[rows_kept], ts, end[rows_kept]),
        kind=np.full(n, _CODE[EventKind.USER_ANNOTATION], dtype=np.int8),
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


def _part(columns: dict[str, np.ndarray]) -> _Part:
    c = columns
    return _Part(
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


def _concat_parts(parts: list[_Part]) -> _Part:
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


def _take(p: _Part, rows: np.ndarray) -> _Part:
    out = _part({name: getattr(p, name)[rows] for name in _PART_COLUMNS})
    out.args = {k: v[rows] for k, v in p.args.items()}
    return out


def _meta_table(db: _Db, table: str) -> dict[str, str]:
    if not db.has(table) or not {"name", "value"} <= db.columns(table):
        return {}
    out: dict[str, str] = {}
    for k, v in db.con.execute(f'SELECT name, value FROM "{table}"').fetchall():
        out.setdefault(str(k), str(v))
    return out


def _session(db: _Db) -> tuple[int, str | None]:
    """UTC time of the session start (ns since the epoch) and its text, or (0, None)."""
    t = "TARGET_INFO_SESSION_START_TIME"
    if not db.has(t) or "utcEpochNs" not in db.columns(t):
        return 0, None
    row = db.con.execute(
        f'SELECT utcEpochNs, {"utcTime" if "utcTime" in db.columns(t) else "NULL"} FROM "{t}" LIMIT 1'
    ).fetchone()
    if row is None or not isinstance(row[0], int):
        return 0, None
    return int(row[0]), row[1]


def _duration(db: _Db) -> int | None:
    t = "ANALYSIS_DETAILS"
    if db.has(t) and "duration" in db.columns(t):
        row = db.con.execute(f'SELECT duration FROM "{t}" LIMIT 1').fetchone()
        if row is not None and isinstance(row[0], int):
            return int(row[0])
    return None


#: TARGET_INFO_GPU column -> the deviceProperties key PyTorch traces use (or a key of its own).
_GPU_PROPERTIES = {
    "name": "name",
    "totalMemory": "totalGlobalMem",
    "computeMajor": "computeMajor",
    "computeMinor": "computeMinor",
    "maxThreadsPerBlock": "maxThreadsPerBlock",
    "maxRegistersPerBlock": "regsPerBlock",
    "maxRegistersPerSm": "regsPerMultiprocessor",
    "threadsPerWarp": "warpSize",
    "maxShmemPerBlock": "sharedMemPerBlock",
    "maxShmemPerSm": "sharedMemPerMultiprocessor",
    "maxShmemPerBlockOptin": "sharedMemPerBlockOptin",
    "smCount": "numSms",
    "maxWarpsPerSm": "maxWarpsPerSm",
    "maxBlocksPerSm": "maxBlocksPerSm",
    "l2CacheSize": "l2CacheSize",
    "memoryBandwidth": "memoryBandwidth",
    "clockRate": "clockRate",
    "busLocation": "busLocation",
    "uuid": "uuid",
    "chipName": "chipName",
    "cuDevice": "cuDevice",
    "id": "gpuId",
}


def _gpus(db: _Db) -> tuple[list[dict[str, Any]], list[tuple[int, int, int]]]:
    gpus: list[dict[str, Any]] = []
    t = "TARGET_INFO_GPU"
    if db.has(t):
        cols = [c for c in _GPU_PROPERTIES if c in db.columns(t)]
        if cols:
            listed = ", ".join(f'"{c}"' for c in cols)
            for row in db.con.execute(f"SELECT {listed} FROM {t}"):
                d = {_GPU_PROPERTIES[c]: v for c, v in zip(cols, row, strict=True) if v is not None}
                if "maxWarpsPerSm" in d and "warpSize" in d:
                    d["maxThreadsPerMultiprocessor"] = int(d["maxWarpsPerSm"]) * int(d["warpSize"])
                gpus.append(d)
    mapping: list[tuple[int, int, int]] = []
    t = "TARGET_INFO_CUDA_DEVICE"
    if db.has(t) and {"gpuId", "cudaId"} <= db.columns(t):
        pid_col = "pid" if "pid" in db.columns(t) else "-1"
        sms = "numMultiprocessors" if "numMultiprocessors" in db.columns(t) else "NULL"
        for gpu_id, cuda_id, pid, n_sm in db.con.execute(f"SELECT gpuId, cudaId, {pid_col}, {sms} FROM {t}"):
            if isinstance(gpu_id, int) and isinstance(cuda_id, int):
                mapping.append((int(pid) if isinstance(pid, int) else -1, cuda_id, gpu_id))
                if not any(g.get("gpuId") == gpu_id for g in gpus) and isinstance(n_sm, int) and n_sm > 0:
                    gpus.append({"gpuId": gpu_id, "numSms": n_sm})
    return gpus, mapping


def _read_file(db: _Db, path: Path, bad_events: str) -> _File:
    cuda = [t for t in _CUDA_TABLES if db.has(t)]
    if not cuda and not db.has(_NVTX):
        raise TraceFormatError(
            path,
            "is an Nsight Systems export with neither CUDA nor NVTX data (no CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS table)",
            "Profile with `nsys profile --trace=cuda,nvtx ...` and export the report again",
        )
    strings = _string_ids(db)
    pool = _Names()
    skipped: dict[str, int] = {}
    warnings: list[str] = []
    parts: list[_Part] = []
    if db.has(_KERNEL):
        parts.append(_kernels(db, strings, pool))
    if db.has(_MEMCPY):
        parts.append(_memcpys(db, pool))
    if db.has(_MEMSET):
        parts.append(_memsets(db, pool))
    if db.has(_GRAPH):
        parts.append(_graphs(db, pool))
    if db.has(_SYNC):
        parts.append(_syncs(db, pool))
    if db.has(_RUNTIME):
        parts.append(_runtime(db, strings, pool))
    domains: dict[str, str] = {}
    if db.has(_NVTX):
        nvtx, domains = _nvtx(db, strings, pool, skipped)
        parts.append(nvtx)
    if not cuda:
        warnings.append(
            f"{path}: the Nsight export has no CUDA tables (no CUPTI_ACTIVITY_KIND_*): it was recorded without "
            "`--trace=cuda`, so it holds CPU-side NVTX ranges only and no GPU activity"
        )
    part = _concat_parts(parts)

    # Activities without timestamps (CUPTI writes 0, 0 when it could not collect them).
    device_side = np.isin(part.kind, _DEVICE_CODES)
    no_time = device_side & (part.ts == 0) & (part.end == 0)
    if no_time.any():
        skipped["GPU activities without timestamps"] = int(no_time.sum())
    bad = (part.end < part.ts) & ~no_time
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        problem = (
            f"{int(bad.sum()):,} record(s) end before they start (first: {pool.values[int(part.name[first])]!r}, "
            f"start={int(part.ts[first])}, end={int(part.end[first])})"
        )
        if bad_events == "raise":
            raise TraceFormatError(path, problem, "Pass bad_events='drop' to tv.load() to drop them and read the rest")
        skipped[DROPPED] = int(bad.sum())
    drop = no_time | bad
    if drop.any():
        part = _take(part, np.flatnonzero(~drop))
    if len(part.ts) == 0:
        raise TraceFormatError(
            path,
            "holds no kernels, copies, CUDA API calls or NVTX ranges (its CUDA and NVTX tables are empty)",
            "Check that the profiled program ran GPU work while `nsys profile --trace=cuda,nvtx` was recording",
        )

    base, utc_text = _session(db)
    process_names: dict[int, str] = {}
    if db.has("PROCESSES") and {"globalPid", "name"} <= db.columns("PROCESSES"):
        for g, name in db.con.execute("SELECT globalPid, name FROM PROCESSES").fetchall():
            if isinstance(g, int) and name is not None:
                process_names.setdefault(int((g >> 24) & 0xFFFFFF), str(name))
    thread_names: dict[int, str] = {}
    if db.has("ThreadNames") and {"globalTid", "nameId"} <= db.columns("ThreadNames"):
        for g, name_id in db.con.execute("SELECT globalTid, nameId FROM ThreadNames").fetchall():
            if isinstance(g, int):
                thread_names[int(g)] = strings.get(name_id, str(name_id)) if isinstance(name_id, int) else str(name_id)
    gpus, cuda_devices = _gpus(db)
    for table in _UNMAPPED_TABLES:
        if db.has(table):
            n = db.count(table)
            if n:
                skipped[f"{table} rows (not mapped)"] = n
    export = _meta_table(db, "META_DATA_EXPORT")
    missing = {}
    if not db.has("TARGET_INFO_GPU"):
        missing["TARGET_INFO_GPU"] = "no device properties (GPU name, SM count, memory)"
    if not db.has("TARGET_INFO_SESSION_START_TIME"):
        missing["TARGET_INFO_SESSION_START_TIME"] = "times are relative to the session start, not UTC"
    for t in (_KERNEL, _RUNTIME, _NVTX):
        if not db.has(t):
            missing[t] = {
                _KERNEL: "no kernels",
                _RUNTIME: "no CUDA API calls (no launch links)",
                _NVTX: "no NVTX ranges",
            }[t]
    extra: dict[str, Any] = {
        "nsys_version": export.get("EXPORT_PRODUCT_VERSION"),
        "export_schema_version": export.get("EXPORT_SCHEMA_VERSION"),
        "session_start_utc": utc_text,
        "time_origin": "unix epoch" if base else "session start",
        "nvtx_domains": domains,
        "missing_tables": missing,
    }
    if warnings:
        extra[WARNINGS_KEY] = warnings
    names = pool.values
    step_numbers = {}
    for i, nm in enumerate(names):
        if nm.startswith("ProfilerStep#") and (m := re.match(r"ProfilerStep#(\d+)", nm)) is not None:
            step_numbers[i] = int(m.group(1))
    return _File(
        part=part,
        names=names,
        step_numbers=step_numbers,
        collectives=_collectives(names),
        base_time_ns=base,
        duration_ns=_duration(db),
        process_names=process_names,
        thread_names=thread_names,
        gpus=gpus,
        cuda_devices=cuda_devices,
        extra={k: v for k, v in extra.items() if v is not None},
        skipped=skipped,
    )


# --------------------------------------------------------------------------------------
# Ranks
# --------------------------------------------------------------------------------------
def _link_keys(p: _Part) -> np.ndarray:
    """Correlation ids made unique across processes (CUPTI numbers them per process)."""
    _, proc_code = np.unique(p.proc, return_inverse=True)
    return np.where(p.correlation >= 0, (proc_code.astype(np.int64) << 32) | (p.correlation & 0xFFFFFFFF), -1)


def _split(path: Path, f: _File, name_rank: int | None) -> list[RankData]:
    p = f.part
    device_side = np.isin(p.kind, _DEVICE_CODES)
    work = np.isin(p.kind, _WORK_CODES)
    is_sync = p.kind == _CODE[EventKind.CUDA_SYNC]

    # Sync records carry no device of their own (CUPTI's record has none): take the device
    # of their (process, context) from the other activities.
    if is_sync.any() and work.any():
        ctx = pd.DataFrame({"proc": p.proc[work], "context": p.context[work], "device": p.device[work]})
        ctx_device = ctx.drop_duplicates(["proc", "context"]).set_index(["proc", "context"])["device"]
        idx = pd.MultiIndex.from_arrays([p.proc[is_sync], p.context[is_sync]])
        found = ctx_device.reindex(idx).to_numpy()
        rows = np.flatnonzero(is_sync)
        ok = ~pd.isna(found)
        p.device[rows[ok]] = found[ok].astype(np.int64)

    # Ranks: one per (process, device) with work on it, in (device, pid) order.
    pairs = pd.DataFrame({"proc": p.proc[work], "pid": p.pid[work], "device": p.device[work]}).drop_duplicates()
    pairs = pairs.sort_values(["device", "pid", "proc"], kind="stable").reset_index(drop=True)
    n_ranks = max(len(pairs), 1)
    rank_of_pair = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(pairs["proc"], pairs["device"], strict=True))}
    lowest_of_proc: dict[int, int] = {}
    for i, a in enumerate(pairs["proc"].tolist()):
        lowest_of_proc.setdefault(int(a), i)

    # Device records go to their pair's rank; a pair without work (a sync record alone)
    # to its process's lowest rank.
    row_rank = np.full(len(p.ts), -1, dtype=np.int64)
    dev_rows = np.flatnonzero(device_side)
    if len(dev_rows):
        pair_codes, pair_of_row = np.unique(
            np.stack([p.proc[dev_rows], p.device[dev_rows]], axis=1), axis=0, return_inverse=True
        )
        per_pair = np.array(
            [rank_of_pair.get((int(a), int(b)), lowest_of_proc.get(int(a), 0)) for a, b in pair_codes.tolist()],
            dtype=np.int64,
        )
        row_rank[dev_rows] = per_pair[pair_of_row.reshape(-1)]

    # Threads: to every rank whose device ran work they launched (same process, same correlation id).
    keys = _link_keys(p)
    launch = np.isin(p.kind, _LAUNCH_CODES) & (keys >= 0)
    acts = device_side & (keys >= 0)
    assigned: dict[int, set[int]] = {}
    if launch.any() and acts.any():
        launches = pd.DataFrame({"key": keys[launch], "thread": p.thread[launch]}).drop_duplicates("key")
        activities = pd.DataFrame({"key": keys[acts], "rank": row_rank[acts]}).drop_duplicates()
        linked = launches.merge(activities, on="key")[["thread", "rank"]].drop_duplicates()
        for t, r in zip(linked["thread"].tolist(), linked["rank"].tolist(), strict=True):
            assigned.setdefault(int(t), set()).add(int(r))
    # Threads that launched nothing: the lowest rank of their process, else rank 0.
    cpu_rows = np.flatnonzero(~device_side)
    cpu_thread = p.thread[cpu_rows]
    threads, first = np.unique(cpu_thread, return_index=True)
    for t, q in zip(threads.tolist(), p.proc[cpu_rows[first]].tolist(), strict=True):
        if t not in assigned:
            assigned[t] = {lowest_of_proc.get(int(q), 0)}

    # Rows of each rank: its device records, and the CPU records of its threads.
    out: list[RankData] = []
    for r in range(n_ranks):
        mine = np.array(sorted(t for t, rs in assigned.items() if r in rs), dtype=np.int64)
        rows = np.concatenate((np.flatnonzero(row_rank == r), cpu_rows[np.isin(cpu_thread, mine)]))
        pid, device = (int(pairs.at[r, "pid"]), int(pairs.at[r, "device"])) if len(pairs) else (-1, -1)
        if n_ranks == 1 and name_rank is not None:
            rank, source = name_rank, "file name"
        else:
            rank, source = r, "order"
        out.append(_rank(path, f, rows, keys, rank, source, pid=pid, device=device, n_ranks=n_ranks))
    return out


def _device_properties(f: _File, pid: int, device: int) -> tuple[dict[str, Any], ...]:
    if device < 0:
        return ()
    gpu_id = next((g for p_, c, g in f.cuda_devices if c == device and p_ in (pid, -1)), None)
    match = None
    if gpu_id is not None:
        match = next((g for g in f.gpus if g.get("gpuId") == gpu_id), None)
    if match is None:
        match = next((g for g in f.gpus if g.get("cuDevice") == device), None)
    if match is None and len(f.gpus) == 1 and gpu_id is None:
        match = f.gpus[0]
    if match is None:
        return ()
    return ({"id": device, **{k: v for k, v in match.items() if k != "id"}},)


def _rank(
    path: Path,
    f: _File,
    rows: np.ndarray,
    keys: np.ndarray,
    rank: int,
    source: str,
    *,
    pid: int,
    device: int,
    n_ranks: int,
) -> RankData:
    p = f.part
    ts_rows = p.ts[rows]
    dur_rows = p.end[rows] - ts_rows
    sort = np.lexsort((-dur_rows, ts_rows))
    order = rows[sort]
    n = len(order)
    kind = p.kind[order]
    device_side = np.isin(kind, _DEVICE_CODES)
    ts = ts_rows[sort] + f.base_time_ns
    dur = dur_rows[sort]
    dev = p.device[order]
    stream = p.stream[order]
    # Device events: pid is the device index and tid the stream, as PyTorch traces write them.
    ev_pid = np.where(device_side, dev, p.pid[order])
    ev_tid = np.where(device_side, stream, p.tid[order])
    launch = derive.launch_links(keys[order], np.isin(kind, _LAUNCH_CODES), np.isin(kind, _ACTIVITY_CODES))
    lane_a = np.where(device_side, dev, p.thread[order] >> 24)
    lane_b = np.where(device_side, stream, p.thread[order])
    depth, parent = derive.nesting(ts, dur, lane_a, lane_b, device_side)
    parent[device_side] = -1
    name_codes = p.name[order]
    names = f.names
    step_numbers = f.step_numbers
    step = derive.steps(
        ts,
        dur,
        name_codes.astype(np.int64),
        kind,
        step_numbers,
        cpu_step_kinds=np.array([KIND_CODE[EventKind.USER_ANNOTATION], KIND_CODE[EventKind.CPU_OP]]),
        device_side=device_side,
        launch_eid=launch,
    )
    used, remap = np.unique(name_codes, return_inverse=True)
    events = pd.DataFrame(
        {
            "eid": np.arange(n, dtype=np.int64),
            "ts_ns": ts,
            "dur_ns": dur,
            "name": categorical(codes=remap.astype(np.int32), categories=[names[i] for i in used.tolist()]),
            "kind": categorical(codes=kind.astype(np.int8), categories=KIND_CATEGORIES),
            "pid": ev_pid.astype(np.int64),
            "tid": ev_tid.astype(np.int64),
            "device": np.where(device_side, dev, -1).astype(np.int16),
            "stream": np.where(device_side, stream, -1).astype(np.int64),
            "correlation": p.correlation[order].astype(np.int64),
            "external_id": np.full(n, -1, dtype=np.int64),
            "launch_eid": launch,
            "parent_eid": parent,
            "depth": depth.astype(np.int16),
            "step": step.astype(np.int32),
        }
    )
    gpu_args = _gpu_args(p, order, kind, dur)
    comms = _comms(kind, name_codes, f.collectives)

    cpu = ~device_side
    pids = set(p.pid[order][cpu].tolist())
    threads = set(p.thread[order][cpu].tolist())
    meta = RankMeta(
        rank=rank,
        path=str(path),
        rank_source=source,
        device_properties=_device_properties(f, pid, device),
        base_time_ns=f.base_time_ns,
        ts_precision="ns",
        profiler_start_ns=f.base_time_ns if f.duration_ns is not None else None,
        profiler_end_ns=f.base_time_ns + f.duration_ns if f.duration_ns is not None else None,
        process_names={q: nm for q, nm in f.process_names.items() if q in pids},
        thread_names=tuple(
            sorted(
                (int((g >> 24) & 0xFFFFFF), int(g & 0xFFFFFF), nm) for g, nm in f.thread_names.items() if g in threads
            )
        ),
        skipped=dict(f.skipped),
        extra={**f.extra, "pid": pid, "device": device, "ranks_in_file": n_ranks},
        source_format="nsys",
    )
    return RankData(meta=meta, events=events, gpu_args=gpu_args, comms=comms)


def _gpu_args(p: _Part, order: np.ndarray, kind: np.ndarray, dur: np.ndarray) -> pd.DataFrame:
    sel = np.flatnonzero(np.isin(kind, _WORK_CODES))
    src = order[sel]
    a = p.args

    def i32(key: str) -> np.ndarray:
        out: np.ndarray = np.clip(a[key][src], -1, np.iinfo(np.int32).max).astype(np.int32)
        return out

    nbytes = a["bytes"][src]
    d = dur[sel]
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where((nbytes >= 0) & (d > 0), nbytes / np.maximum(d, 1), np.nan).astype(np.float32)
    nan = np.full(len(sel), np.nan, dtype=np.float32)
    return pd.DataFrame(
        {
            "eid": sel.astype(np.int64),
            "grid_x": i32("grid_x"),
            "grid_y": i32("grid_y"),
            "grid_z": i32("grid_z"),
            "block_x": i32("block_x"),
            "block_y": i32("block_y"),
            "block_z": i32("block_z"),
            "registers_per_thread": i32("registers"),
            "shared_memory_bytes": a["shared_memory"][src].astype(np.int64),
            "blocks_per_sm": nan,
            "warps_per_sm": nan.copy(),
            "occupancy_pct": nan.copy(),
            "bytes": nbytes.astype(np.int64),
            "bandwidth_gbps": bw,
            "copy_kind": categorical(codes=a["copy_kind"][src].astype(np.int8), categories=COPY_KINDS),
            "pageable": a["pageable"][src].astype(bool),
            # Nsight's sync records name a CUDA event id, not the stream it was recorded on.
            "wait_on_stream": np.full(len(sel), -1, dtype=np.int64),
            "wait_on_record_correlation": np.full(len(sel), -1, dtype=np.int64),
        },
        columns=[c.name for c in GPU_ARGS_COLUMNS],
    )


def _collectives(names: list[str]) -> dict[int, str]:
    """Name code -> collective, for NCCL's NVTX ranges (ncclAllReduce, ...) and PyTorch's nccl:<collective>."""
    out: dict[int, str] = {}
    for i, nm in enumerate(names):
        if "nccl" not in nm:
            continue
        match = _NCCL_RANGE.match(nm)
        if match is not None:
            out[i] = normalize_collective(match.group(1).replace("Bcast", "Broadcast"))
        elif nm.startswith("nccl:"):
            out[i] = normalize_collective(nm.split(":", 1)[1])
    return out


def _comms(kind: np.ndarray, name_codes: np.ndarray, collective_of: dict[int, str]) -> pd.DataFrame:
    """NCCL's NVTX ranges of collectives (ncclAllReduce, ncclSend, ...): the collective, no sizes."""
    codes = np.fromiter(collective_of, dtype=np.int64, count=len(collective_of))
    eids = np.flatnonzero((kind == _CODE[EventKind.USER_ANNOTATION]) & np.isin(name_codes, codes))
    labels = [collective_of[int(c)] for c in name_codes[eids].tolist()]
    m = len(eids)
    return pd.DataFrame(
        {
            "eid": eids.astype(np.int64),
            "collective": categorical(labels),
            "dtype": categorical([None] * m),
            "in_nelems": np.full(m, -1, dtype=np.int64),
            "out_nelems": np.full(m, -1, dtype=np.int64),
            "elem_bytes": np.full(m, -1, dtype=np.int16),
            "group_size": np.full(m, -1, dtype=np.int32),
            "pg_name": categorical([None] * m),
            "pg_desc": categorical([None] * m),
            "seq": np.full(m, -1, dtype=np.int64),
            "source": categorical(["annotation"] * m, categories=COMMS_SOURCES),
        },
        columns=[c.name for c in COMMS_COLUMNS],
    )
