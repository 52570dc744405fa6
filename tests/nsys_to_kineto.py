"""Write the rows of an Nsight Systems SQLite export as PyTorch profiler (Kineto) JSON traces.

Independent of the reader under test: plain SQL over the export, so that loading the
export and loading the JSON written here must give the same intervals. One JSON file per
(process, device) pair, ranks in (device, pid) order; CPU-side rows (CUDA API calls, NVTX
ranges) go to their process's rank, which is right for exports where each process drives
one GPU (as the test exports do).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

_SYNC = {1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync", 4: "Context Sync"}


def _us(ns: int) -> float:
    return float(f"{ns // 1000}.{ns % 1000:03d}")


def convert(sqlite_path: Path, out_dir: Path) -> list[Path]:
    con = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    strings = dict(con.execute("SELECT id, value FROM StringIds"))
    (base,) = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
    copy = {i: n.rsplit("_", 1)[-1] for i, n in con.execute("SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER")}
    mem = dict(con.execute("SELECT id, label FROM ENUM_CUDA_MEM_KIND"))

    def short(kind: int) -> str:
        t = copy.get(kind, "UNKNOWN")
        return f"{t[0]}to{t[3]}" if len(t) == 4 and t[1:3] == "TO" else t.capitalize()

    gpu: list[tuple[int, int, dict[str, Any]]] = []  # (pid, device, event)
    tables = {r for (r,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def rows(query: str) -> list[tuple[Any, ...]]:
        table = query.rsplit(" FROM ", 1)[1].split()[0]
        return con.execute(query).fetchall() if table in tables else []

    def add(cat: str, name: str, start: int, end: int, device: int, stream: int, corr: int, g: int) -> None:
        args = {"device": device, "stream": stream, "correlation": corr}
        event = {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": _us(start)}
        event |= {"dur": _us(end - start), "args": args}
        gpu.append(((g >> 24) & 0xFFFFFF, device, event))

    q = "SELECT start, end, deviceId, streamId, correlationId, globalPid, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL"
    for s, e, d, st, c, g, n in rows(q):
        add("kernel", strings[n], s, e, d, st, c, g)
    q = "SELECT start, end, deviceId, streamId, correlationId, globalPid, copyKind, srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY"
    for s, e, d, st, c, g, k, src, dst in rows(q):
        add("gpu_memcpy", f"Memcpy {short(k)} ({mem[src]} -> {mem[dst]})", s, e, d, st, c, g)
    q = "SELECT start, end, deviceId, streamId, correlationId, globalPid, memKind FROM CUPTI_ACTIVITY_KIND_MEMSET"
    for s, e, d, st, c, g, k in rows(q):
        add("gpu_memset", f"Memset ({mem[k]})", s, e, d, st, c, g)
    # Sync records carry no device in CUPTI: take the device of the same process and context.
    ctx_device = dict(
        ((g, ctx), d)
        for g, ctx, d in rows("SELECT DISTINCT globalPid, contextId, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL")
    )
    q = "SELECT start, end, contextId, streamId, correlationId, globalPid, syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
    for s, e, ctx, st, c, g, t in rows(q):
        add("cuda_sync", _SYNC.get(t, "Unknown Sync"), s, e, ctx_device[(g, ctx)], st, c, g)

    pairs = sorted({(d, p) for p, d, _ in gpu})
    rank_of = {(p, d): r for r, (d, p) in enumerate(pairs)}
    rank_of_pid = {p: r for (p, _), r in sorted(rank_of.items(), key=lambda x: -x[1])}
    events: dict[int, list[dict[str, Any]]] = {r: [] for r in range(len(pairs))}
    for p, d, ev in gpu:
        events[rank_of[(p, d)]].append(ev)

    def cpu(cat: str, name: str, start: int, end: int, gtid: int, args: dict[str, Any]) -> None:
        pid, tid = (gtid >> 24) & 0xFFFFFF, gtid & 0xFFFFFF
        if pid in rank_of_pid:
            ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": _us(start)}
            events[rank_of_pid[pid]].append(ev | {"dur": _us(end - start), "args": args})

    q = "SELECT start, end, eventClass, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"
    for s, e, cls, t, c, n in rows(q):
        name = re.sub(r"_v\d{4,5}$", "", strings[n])
        cpu("cuda_driver" if cls == 1 else "cuda_runtime", name, s, e, t, {"correlation": c})
    q = "SELECT start, end, globalTid, text, textId FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NOT NULL"
    for s, e, t, text, text_id in rows(q):
        cpu("user_annotation", text if text is not None else strings[text_id], s, e, t, {})
    con.close()

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for r, evs in events.items():
        doc = {
            "schemaVersion": 1,
            "distributedInfo": {"backend": "nccl", "rank": r, "world_size": len(pairs)},
            "baseTimeNanoseconds": base,
            "traceEvents": evs,
        }
        path = out_dir / f"rank{r}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths
