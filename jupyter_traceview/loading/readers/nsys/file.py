"""One export read: :func:`parse_nsys`, the file's events and what it says about itself."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from ....errors import TraceFormatError
from ....model.collectives import normalize_collective
from ....model.rank_data import RankData
from ..common import DROPPED, WARNINGS_KEY
from ..files import NSYS_REPORT_SUFFIXES
from .database import (
    CUDA_TABLES,
    EXPORT_HINT,
    GRAPH,
    KERNEL,
    MEMCPY,
    MEMSET,
    NVTX,
    RUNTIME,
    SYNC,
    UNMAPPED_TABLES,
    Database,
    check_file,
    gpus_of,
    meta_table,
    session_duration,
    session_start,
    string_ids,
)
from .ranks import split_ranks
from .records import (
    DEVICE_CODES,
    ExportFile,
    Names,
    Part,
    concat_parts,
    read_graphs,
    read_kernels,
    read_memcpys,
    read_memsets,
    read_nvtx,
    read_runtime,
    read_syncs,
    take_rows,
)

__all__ = ["parse_nsys"]


#: NCCL's NVTX ranges of collectives (``ncclAllReduce``, ...), with or without a ``domain:`` prefix.
_NCCL_RANGE = re.compile(
    r"^(?:[^:]*:)?nccl(AllReduce|AllGather|ReduceScatter|Broadcast|Bcast|Reduce|Send|Recv|AllToAll|AlltoAll|Gather|Scatter)$"
)


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
    check_file(path)
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise TraceFormatError(path, f"cannot be opened as an SQLite database ({exc})", EXPORT_HINT) from None
    try:
        db = Database(con, path)
        f = _read_file(db, path, bad_events)
    except sqlite3.DatabaseError as exc:
        raise TraceFormatError(
            path,
            f"is a damaged SQLite database ({exc})",
            "The export or a copy of it was interrupted or corrupted; run `nsys export --type sqlite` again",
        ) from None
    finally:
        con.close()
    return split_ranks(path, f, name_rank)


def _read_file(db: Database, path: Path, bad_events: str) -> ExportFile:
    cuda = [t for t in CUDA_TABLES if db.has(t)]
    if not cuda and not db.has(NVTX):
        raise TraceFormatError(
            path,
            "is an Nsight Systems export with neither CUDA nor NVTX data (no CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS table)",
            "Profile with `nsys profile --trace=cuda,nvtx ...` and export the report again",
        )
    strings = string_ids(db)
    pool = Names()
    skipped: dict[str, int] = {}
    warnings: list[str] = []
    parts: list[Part] = []
    if db.has(KERNEL):
        parts.append(read_kernels(db, strings, pool))
    if db.has(MEMCPY):
        parts.append(read_memcpys(db, pool))
    if db.has(MEMSET):
        parts.append(read_memsets(db, pool))
    if db.has(GRAPH):
        parts.append(read_graphs(db, pool))
    if db.has(SYNC):
        parts.append(read_syncs(db, pool))
    if db.has(RUNTIME):
        parts.append(read_runtime(db, strings, pool))
    domains: dict[str, str] = {}
    if db.has(NVTX):
        nvtx, domains = read_nvtx(db, strings, pool, skipped)
        parts.append(nvtx)
    if not cuda:
        warnings.append(
            f"{path}: the Nsight export has no CUDA tables (no CUPTI_ACTIVITY_KIND_*): it was recorded without "
            "`--trace=cuda`, so it holds CPU-side NVTX ranges only and no GPU activity"
        )
    part = concat_parts(parts)

    # Activities without timestamps (CUPTI writes 0, 0 when it could not collect them).
    device_side = np.isin(part.kind, DEVICE_CODES)
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
        part = take_rows(part, np.flatnonzero(~drop))
    if len(part.ts) == 0:
        raise TraceFormatError(
            path,
            "holds no kernels, copies, CUDA API calls or NVTX ranges (its CUDA and NVTX tables are empty)",
            "Check that the profiled program ran GPU work while `nsys profile --trace=cuda,nvtx` was recording",
        )

    base, utc_text = session_start(db)
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
    gpus, cuda_devices = gpus_of(db)
    for table in UNMAPPED_TABLES:
        if db.has(table):
            n = db.count(table)
            if n:
                skipped[f"{table} rows (not mapped)"] = n
    export = meta_table(db, "META_DATA_EXPORT")
    missing = {}
    if not db.has("TARGET_INFO_GPU"):
        missing["TARGET_INFO_GPU"] = "no device properties (GPU name, SM count, memory)"
    if not db.has("TARGET_INFO_SESSION_START_TIME"):
        missing["TARGET_INFO_SESSION_START_TIME"] = "times are relative to the session start, not UTC"
    for t in (KERNEL, RUNTIME, NVTX):
        if not db.has(t):
            missing[t] = {
                KERNEL: "no kernels",
                RUNTIME: "no CUDA API calls (no launch links)",
                NVTX: "no NVTX ranges",
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
    return ExportFile(
        part=part,
        names=names,
        step_numbers=step_numbers,
        collectives=_collectives(names),
        base_time_ns=base,
        duration_ns=session_duration(db),
        process_names=process_names,
        thread_names=thread_names,
        gpus=gpus,
        cuda_devices=cuda_devices,
        extra={k: v for k, v in extra.items() if v is not None},
        skipped=skipped,
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
