"""Tiny Kineto traces built in code, with answers known by construction.

Times are given in microseconds, as Kineto writes them.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

CPU_PID = 100
MAIN_TID = 100


def cpu_op(
    name: str, ts: float, dur: float, *, pid: int = CPU_PID, tid: int = MAIN_TID, cat: str = "cpu_op", **args: Any
) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {"External id": 1, **args},
    }


def annotation(name: str, ts: float, dur: float, **kw: Any) -> dict[str, Any]:
    return cpu_op(name, ts, dur, cat="user_annotation", **kw)


def step(n: int, ts: float, dur: float, **kw: Any) -> dict[str, Any]:
    return annotation(f"ProfilerStep#{n}", ts, dur, **kw)


def runtime(
    name: str, ts: float, dur: float, *, corr: int, pid: int = CPU_PID, tid: int = MAIN_TID, cat: str = "cuda_runtime"
) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {"cbid": 211, "correlation": corr},
    }


def kernel(
    name: str, ts: float, dur: float, *, corr: int, stream: int = 7, device: int = 0, cat: str = "kernel", **args: Any
) -> dict[str, Any]:
    a = {
        "queued": 0,
        "device": device,
        "context": 1,
        "stream": stream,
        "correlation": corr,
        "registers per thread": 32,
        "shared memory": 0,
        "blocks per SM": 1.0,
        "warps per SM": 4.0,
        "grid": [8, 1, 1],
        "block": [128, 1, 1],
        "est. achieved occupancy %": 50,
    }
    a.update(args)
    return {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": ts, "dur": dur, "args": a}


def memcpy(
    ts: float,
    dur: float,
    *,
    corr: int,
    kind: str = "HtoD",
    stream: int = 7,
    device: int = 0,
    nbytes: int = 1024,
    pageable: bool = False,
) -> dict[str, Any]:
    src = "Pageable" if pageable else "Pinned"
    name = f"Memcpy {kind} ({src} -> Device)"
    return {
        "ph": "X",
        "cat": "gpu_memcpy",
        "name": name,
        "pid": device,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {
            "device": device,
            "context": 1,
            "stream": stream,
            "correlation": corr,
            "bytes": nbytes,
            "memory bandwidth (GB/s)": nbytes / (dur * 1e3) if dur else 0.0,
        },
    }


def memset(ts: float, dur: float, *, corr: int, stream: int = 7, device: int = 0, nbytes: int = 512) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "gpu_memset",
        "name": "Memset (Device)",
        "pid": device,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {
            "device": device,
            "context": 1,
            "stream": stream,
            "correlation": corr,
            "bytes": nbytes,
            "memory bandwidth (GB/s)": 1.0,
        },
    }


def sync(
    name: str, ts: float, dur: float, *, corr: int, stream: int = 7, device: int = 0, **args: Any
) -> dict[str, Any]:
    """A cuda_sync record; ``wait_on_stream=`` and ``wait_on_cuda_event_record_corr_id=`` for event waits."""
    return {
        "ph": "X",
        "cat": "cuda_sync",
        "name": name,
        "pid": device,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {
            "cuda_sync_kind": name,
            "stream": stream,
            "correlation": corr,
            "device": device,
            "context": 1,
            **args,
        },
    }


def launch(
    name: str,
    cpu_ts: float,
    gpu_ts: float,
    dur: float,
    *,
    corr: int,
    stream: int = 7,
    device: int = 0,
    cpu_dur: float = 5,
    **kw: Any,
) -> list[dict[str, Any]]:
    """A cudaLaunchKernel call and the kernel it launched."""
    return [
        runtime("cudaLaunchKernel", cpu_ts, cpu_dur, corr=corr),
        kernel(name, gpu_ts, dur, corr=corr, stream=stream, device=device, **kw),
    ]


def mem(
    ts: float,
    nbytes: int,
    addr: int,
    *,
    total_allocated: int,
    total_reserved: int,
    device: int = 0,
    device_type: int = 1,
    pid: int = CPU_PID,
    tid: int = MAIN_TID,
) -> dict[str, Any]:
    """A ``[memory]`` record: ``nbytes`` > 0 allocates at ``addr``, < 0 frees it (device_type 0 = CPU, 1 = CUDA)."""
    return {
        "ph": "i",
        "cat": "cpu_instant_event",
        "s": "t",
        "name": "[memory]",
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "args": {
            "Total Reserved": total_reserved,
            "Total Allocated": total_allocated,
            "Bytes": nbytes,
            "Addr": addr,
            "Device Id": device,
            "Device Type": device_type,
        },
    }


def oom(
    ts: float,
    nbytes: int,
    *,
    total_allocated: int,
    total_reserved: int,
    device: int = 0,
    device_type: int = 1,
    pid: int = CPU_PID,
    tid: int = MAIN_TID,
) -> dict[str, Any]:
    """An ``[OutOfMemory]`` record: a failed request of ``nbytes``."""
    return {
        "ph": "i",
        "cat": "cpu_instant_event",
        "s": "t",
        "name": "[OutOfMemory]",
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "args": {
            "Device Type": device_type,
            "Device Id": device,
            "Bytes": nbytes,
            "Total Allocated": total_allocated,
            "Total Reserved": total_reserved,
        },
    }


def metadata(pid: int, *, name: str = "python3", labels: str | None = None) -> list[dict[str, Any]]:
    out = [{"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": name}}]
    if labels is not None:
        out.append({"name": "process_labels", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"labels": labels}})
    return out


def doc(
    events: list[dict[str, Any]],
    *,
    rank: int | None = None,
    world_size: int | None = None,
    base_time_ns: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    d: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU", "numSms": 80}]}
    if rank is not None:
        d["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world_size or rank + 1}
    if base_time_ns is not None:
        d["baseTimeNanoseconds"] = base_time_ns
    d.update(extra)
    d["traceEvents"] = events
    return d


def write(path: Path, content: Any, *, gz: bool | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(content).encode() if not isinstance(content, (bytes, str)) else content
    if isinstance(data, str):
        data = data.encode()
    if gz is None:
        gz = path.name.endswith(".gz")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path
