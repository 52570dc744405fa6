"""An Nsight Systems SQLite export opened and checked: its tables and columns, and what it
says about itself (export version, session start and duration, GPUs).

Column names moved across Nsight versions: every table is read through ``PRAGMA table_info``
and each field is taken from the first of its known column names that exists, with a
documented default when none does (:class:`Database`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ....errors import TraceFormatError
from ..common import NotATraceError
from ..files import SQLITE_MAGIC

__all__ = [
    "CUDA_TABLES",
    "EXPORT_HINT",
    "GRAPH",
    "KERNEL",
    "MEMCPY",
    "MEMSET",
    "NVTX",
    "RUNTIME",
    "SYNC",
    "UNMAPPED_TABLES",
    "Database",
    "check_file",
    "gpus_of",
    "meta_table",
    "session_duration",
    "session_start",
    "string_ids",
]


#: Key of RankMeta.extra holding messages for the loader to show as warnings (a list of str).

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
GRAPH = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NVTX = "NVTX_EVENTS"
CUDA_TABLES = (KERNEL, MEMCPY, MEMSET, SYNC, RUNTIME, GRAPH)
#: Tables that only an Nsight Systems export has (any one of them identifies one).
_NSYS_MARKERS = frozenset(
    {
        "StringIds",
        "META_DATA_EXPORT",
        "META_DATA_CAPTURE",
        "TARGET_INFO_SESSION_START_TIME",
        "ANALYSIS_DETAILS",
        "ThreadNames",
        NVTX,
    }
)
#: Event tables of an export that this reader does not map (their rows are counted in meta.skipped).
UNMAPPED_TABLES = (
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

#: Rows fetched from SQLite at a time (bounds the Python objects alive while reading).
_CHUNK_ROWS = 1 << 17

EXPORT_HINT = (
    "Export the report with `nsys export --type sqlite -o report.sqlite report.nsys-rep` and load the .sqlite file"
)


def check_file(path: Path) -> None:
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
        raise NotATraceError(path, "is not an SQLite database (it does not start with 'SQLite format 3')", EXPORT_HINT)
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


class Database:
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


def string_ids(db: Database) -> dict[int, str]:
    if not db.has("StringIds") or not {"id", "value"} <= db.columns("StringIds"):
        return {}
    return {int(i): str(v) for i, v in db.con.execute("SELECT id, value FROM StringIds").fetchall() if v is not None}


def meta_table(db: Database, table: str) -> dict[str, str]:
    if not db.has(table) or not {"name", "value"} <= db.columns(table):
        return {}
    out: dict[str, str] = {}
    for k, v in db.con.execute(f'SELECT name, value FROM "{table}"').fetchall():
        out.setdefault(str(k), str(v))
    return out


def session_start(db: Database) -> tuple[int, str | None]:
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


def session_duration(db: Database) -> int | None:
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


def gpus_of(db: Database) -> tuple[list[dict[str, Any]], list[tuple[int, int, int]]]:
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
