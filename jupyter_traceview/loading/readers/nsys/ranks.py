"""The file's events split into ranks and each rank's tables.

Every (process, CUDA device) pair with GPU activity is one rank, numbered in the order
(device, pid); CPU-side events (CUDA API calls, NVTX ranges) go to the ranks whose device ran
work their thread launched (found by correlation id, per process).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ....model.classify import COPY_KINDS
from ....model.rank_data import RankData, RankMeta
from ....model.schema import (
    COMMS_COLUMNS,
    COMMS_SOURCES,
    GPU_ARGS_COLUMNS,
    KIND_CATEGORIES,
    KIND_CODE,
    EventKind,
    categorical,
)
from .. import derive
from .records import ACTIVITY_CODES, CODE, DEVICE_CODES, LAUNCH_CODES, WORK_CODES, ExportFile, Part

__all__ = ["split_ranks"]


def _link_keys(p: Part) -> np.ndarray:
    """Correlation ids made unique across processes (CUPTI numbers them per process)."""
    _, proc_code = np.unique(p.proc, return_inverse=True)
    return np.where(p.correlation >= 0, (proc_code.astype(np.int64) << 32) | (p.correlation & 0xFFFFFFFF), -1)


def split_ranks(path: Path, f: ExportFile, name_rank: int | None) -> list[RankData]:
    p = f.part
    device_side = np.isin(p.kind, DEVICE_CODES)
    work = np.isin(p.kind, WORK_CODES)
    is_sync = p.kind == CODE[EventKind.CUDA_SYNC]

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
    launch = np.isin(p.kind, LAUNCH_CODES) & (keys >= 0)
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


def _device_properties(f: ExportFile, pid: int, device: int) -> tuple[dict[str, Any], ...]:
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
    f: ExportFile,
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
    device_side = np.isin(kind, DEVICE_CODES)
    ts = ts_rows[sort] + f.base_time_ns
    dur = dur_rows[sort]
    dev = p.device[order]
    stream = p.stream[order]
    # Device events: pid is the device index and tid the stream, as PyTorch traces write them.
    ev_pid = np.where(device_side, dev, p.pid[order])
    ev_tid = np.where(device_side, stream, p.tid[order])
    launch = derive.launch_links(keys[order], np.isin(kind, LAUNCH_CODES), np.isin(kind, ACTIVITY_CODES))
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


def _gpu_args(p: Part, order: np.ndarray, kind: np.ndarray, dur: np.ndarray) -> pd.DataFrame:
    sel = np.flatnonzero(np.isin(kind, WORK_CODES))
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


def _comms(kind: np.ndarray, name_codes: np.ndarray, collective_of: dict[int, str]) -> pd.DataFrame:
    """NCCL's NVTX ranges of collectives (ncclAllReduce, ncclSend, ...): the collective, no sizes."""
    codes = np.fromiter(collective_of, dtype=np.int64, count=len(collective_of))
    eids = np.flatnonzero((kind == CODE[EventKind.USER_ANNOTATION]) & np.isin(name_codes, codes))
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
