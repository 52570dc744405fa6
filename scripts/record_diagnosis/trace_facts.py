"""Raw facts of Kineto traces, computed from the JSON events alone (not with jupyter_traceview).

The diagnosis benchmark's labels are written from these numbers and from what the recording
or editing scripts injected, never from the product's findings::

    python scripts/record_diagnosis/trace_facts.py path/to/trace.json.gz [more files or folders]

Per file: the GPU span (first to last kernel/memcpy/memset), the union of GPU busy time,
the idle time inside the span, time per GPU category, communication kernels (NCCL, RCCL,
deep_ep names) and the part of them no other kernel overlaps, host syncs, ProfilerSteps,
and markers of the workload (backward ops, optimizer steps, graph capture or replay).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
COMM = ("nccl", "rccl", "deep_ep", "all_to_all", "alltoall")
SYNCS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy", "hipDeviceSynchronize")


def _union(iv: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _length(iv: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in iv)


def _minus(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Length of union(a) not covered by union(b)."""
    total, j = 0.0, 0
    b = _union(b)
    for s, e in _union(a):
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                total += b[k][0] - cur
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            total += e - cur
    return total


def facts(path: Path) -> dict[str, Any]:
    with gzip.open(path) if path.suffix == ".gz" else open(path, "rb") as f:
        data = json.load(f)
    ev = data["traceEvents"] if isinstance(data, dict) else data
    xs = [e for e in ev if e.get("ph") == "X" and "dur" in e]
    gpu = [e for e in xs if e.get("cat") in GPU_CATS]
    out: dict[str, Any] = {"file": str(path), "events": len(ev)}
    if gpu:
        t0 = min(e["ts"] for e in gpu)
        t1 = max(e["ts"] + e["dur"] for e in gpu)
        busy = _union([(e["ts"], e["ts"] + e["dur"]) for e in gpu])
        comm = [(e["ts"], e["ts"] + e["dur"]) for e in gpu if any(c in e["name"].lower() for c in COMM)]
        other = [
            (e["ts"], e["ts"] + e["dur"])
            for e in gpu
            if e.get("cat") in ("kernel", "Kernel") and not any(c in e["name"].lower() for c in COMM)
        ]
        out.update(
            gpu_span_ms=(t1 - t0) / 1e3,
            gpu_busy_ms=_length(busy) / 1e3,
            gpu_idle_ms=(t1 - t0 - _length(busy)) / 1e3,
            comm_kernel_ms=_length(_union(comm)) / 1e3,
            comm_not_overlapped_ms=_minus(comm, other) / 1e3,
        )
        for cat in sorted({e["cat"] for e in gpu}):
            out[f"{cat}_sum_ms"] = sum(e["dur"] for e in gpu if e["cat"] == cat) / 1e3
        kern: dict[str, float] = {}
        for e in gpu:
            if e.get("cat") in ("kernel", "Kernel"):
                kern[e["name"][:60]] = kern.get(e["name"][:60], 0.0) + e["dur"] / 1e3
        out["top_kernels_ms"] = sorted(kern.items(), key=lambda kv: -kv[1])[:5]
        out["streams"] = sorted({str(e.get("args", {}).get("stream")) for e in gpu})
    runtime = [e for e in xs if e.get("cat") in ("cuda_runtime", "Runtime", "cuda_driver")]
    out["host_sync_ms"] = (
        sum(
            e["dur"]
            for e in runtime
            if e["name"] in SYNCS or (e["name"].startswith("cudaMemcpy") and "Async" not in e["name"])
        )
        / 1e3
    )
    out["runtime_top"] = sorted(
        {n: sum(e["dur"] for e in runtime if e["name"] == n) / 1e3 for n in {e["name"] for e in runtime}}.items(),
        key=lambda kv: -kv[1],
    )[:5]
    names = {e.get("name", "") for e in xs}
    out["steps"] = sorted({n for n in names if n.startswith("ProfilerStep")})
    out["backward_ops"] = sum(1 for n in names if "backward" in n.lower())
    out["optimizer"] = sorted(n for n in names if n.startswith("Optimizer.") or "optimizer" in n.lower())[:3]
    out["capture"] = sorted(n for n in names if "Capture" in n or "GraphInstantiate" in n or "GraphLaunch" in n)
    out["dataloader_ms"] = sum(e["dur"] for e in xs if "DataLoader" in e.get("name", "")) / 1e3
    out["device"] = [d.get("name") for d in data.get("deviceProperties", [])] if isinstance(data, dict) else []
    out["distributed"] = data.get("distributedInfo") if isinstance(data, dict) else None
    return out


def sqlite_facts(path: Path) -> list[dict[str, Any]]:
    """Per device of an Nsight Systems SQLite export: span, busy, idle, NCCL kernels, top kernels by name."""
    import sqlite3
    from collections import Counter

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    names = dict(con.execute("SELECT id, value FROM StringIds"))
    out = []
    for (dev,) in con.execute("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY deviceId").fetchall():
        q = "SELECT start, end, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = ?"
        kernels = [(a / 1e3, b / 1e3, names.get(n, "?")) for a, b, n in con.execute(q, (dev,))]
        other = [
            (a / 1e3, b / 1e3)
            for table in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
            for a, b in con.execute(f"SELECT start, end FROM {table} WHERE deviceId = ?", (dev,))
        ]
        every = [(a, b) for a, b, _ in kernels] + other
        t0, t1 = min(a for a, _ in every), max(b for _, b in every)
        busy = _union(every)
        comm = [(a, b) for a, b, n in kernels if "nccl" in n.lower()]
        rest = [(a, b) for a, b, n in kernels if "nccl" not in n.lower()]
        by_name: Counter[str] = Counter()
        for a, b, n in kernels:
            by_name[n] += (b - a) / 1e3
        out.append(
            {
                "file": str(path),
                "device": dev,
                "gpu_span_ms": (t1 - t0) / 1e3,
                "gpu_busy_ms": _length(busy) / 1e3,
                "gpu_idle_ms": (t1 - t0 - _length(busy)) / 1e3,
                "comm_kernel_ms": _length(_union(comm)) / 1e3,
                "comm_not_overlapped_ms": _minus(comm, rest) / 1e3,
                "copy_ms": sum(b - a for a, b in other) / 1e3,
                "top_kernels_ms": by_name.most_common(8),
            }
        )
    return out


def main() -> None:
    for arg in sys.argv[1:]:
        p = Path(arg)
        if p.suffix == ".sqlite":
            for row in sqlite_facts(p):
                print(json.dumps(row, default=str))
            continue
        files = sorted(q for q in p.rglob("*") if q.name.endswith((".json", ".json.gz"))) if p.is_dir() else [p]
        for f in files:
            if f.name in {"facts.json"} or "key_averages" in f.name:
                continue
            print(json.dumps(facts(f), default=str))


if __name__ == "__main__":
    main()
