"""Edit real GPU traces to inject ONE cause each, for the diagnosis benchmark.

Deterministic (no randomness, no clock)::

    python scripts/record_diagnosis/edit_traces.py              # every edited scenario
    python scripts/record_diagnosis/edit_traces.py --only gpu_copy_bound

Bases (real recordings, see each scenario's SOURCES.md):

* ``tests/data/h200_cuda/matmul``: 3 steps of matrix products on an H200, recorded by this
  project; every step ends in ``cudaDeviceSynchronize``, so the GPU is idle between steps.
* ``tests/data/h100_bert_small``: one inference step of HF bert-small on an H100 (TraceLens,
  MIT, Advanced Micro Devices, Inc.).
* ``jupyter_traceview/samples/dlrm_8rank_v100``: one DLRM training step on 8 V100s (param,
  MIT, Facebook, Inc. and its affiliates).

Edits keep the trace physically consistent: inserting GPU time moves every later GPU event
and extends the host's next synchronisation by the same amount (the host waits for it), and
moves every host event after that sync. What each edit injects, with the amounts, is written
to the scenario's ``facts.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "diagnosis" / "scenarios"
MATMUL = ROOT / "tests" / "data" / "h200_cuda" / "matmul" / "matmul.pt.trace.json.gz"
BERT = ROOT / "tests" / "data" / "h100_bert_small" / "gaunernst_bert-small-uncased__1016001.json.gz"
TRAIN = ROOT / "tests" / "data" / "h200_cuda" / "train" / "train.pt.trace.json.gz"
MI250 = ROOT / "tests" / "data" / "hta_mi250_rocm" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
DLRM = ROOT / "jupyter_traceview" / "samples" / "dlrm_8rank_v100"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
SYNCS = {"cudaDeviceSynchronize", "cudaStreamSynchronize"}
Event = dict[str, Any]


def _load(path: Path) -> dict[str, Any]:
    with gzip.open(path) as f:
        return json.load(f)


def _fresh(folder: Path) -> None:
    """Create ``folder`` or remove the traces it holds; its ``expected.toml`` (the labels) stays."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json.gz"):
        old.unlink()


def _write(data: dict[str, Any], path: Path) -> None:
    """Gzipped compact JSON, byte-identical from run to run (no timestamp in the gzip header)."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(json.dumps(data, separators=(",", ":")).encode())


def _fix_gpu_steps(ev: list[Event]) -> None:
    """Widen each GPU-side ProfilerStep range to cover the GPU work its step launched (injected work included)."""
    launched: dict[int, str] = {}
    for step in _steps(ev):
        for e in ev:
            if (
                e.get("cat") in ("cuda_runtime", "cuda_driver")
                and step["ts"] <= e["ts"] <= step["ts"] + step["dur"]
                and "correlation" in e.get("args", {})
            ):
                launched[e["args"]["correlation"]] = step["name"]
    spans: dict[str, list[float]] = {}
    for e in ev:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("args", {}).get("correlation") in launched:
            a, b = spans.setdefault(launched[e["args"]["correlation"]], [e["ts"], e["ts"] + e["dur"]])
            spans[launched[e["args"]["correlation"]]] = [min(a, e["ts"]), max(b, e["ts"] + e["dur"])]
    for e in ev:
        if e.get("cat") == "gpu_user_annotation" and e["name"] in spans:
            a, b = spans[e["name"]]
            if a < e["ts"] or b > e["ts"] + e["dur"]:  # only ever widened
                a, b = min(a, e["ts"]), max(b, e["ts"] + e["dur"])
                e["ts"], e["dur"] = a, b - a


def _save(data: dict[str, Any], folder: Path, name: str, facts: dict[str, Any], source: str) -> None:
    _fix_gpu_steps(data["traceEvents"])
    _fresh(folder)
    _write(data, folder / name)
    (folder / "facts.json").write_text(json.dumps(facts, indent=1) + "\n")
    (folder / "SOURCES.md").write_text(source)
    print(f"wrote {folder / name}: {facts}")


def _gpu_pids(ev: list[Event]) -> set[Any]:
    return {e["pid"] for e in ev if e.get("cat") in GPU_CATS}


def _is_gpu(e: Event, gpu_pids: set[Any]) -> bool:
    return e.get("pid") in gpu_pids and e.get("ph") != "M"


def _shift(ev: list[Event], t: float, d: float, which: Callable[[Event], bool]) -> None:
    """Move events selected by ``which`` that start at or after ``t`` by ``d``; stretch those spanning ``t``."""
    for e in ev:
        if e.get("ph") == "M" or "ts" not in e or not which(e):
            continue
        if e["ts"] >= t:
            e["ts"] += d
        elif e.get("ph") == "X" and e["ts"] + e.get("dur", 0) >= t:
            e["dur"] += d


def insert_host_time(ev: list[Event], t: float, d: float) -> None:
    """Make room for ``d`` us of host time at ``t`` (the GPU must be idle at ``t``): everything later moves."""
    _shift(ev, t, d, lambda e: True)


def insert_gpu_time(ev: list[Event], t_gpu: float, d: float) -> None:
    """Insert ``d`` us of GPU work at ``t_gpu``; the host's next sync waits ``d`` longer."""
    pids = _gpu_pids(ev)
    syncs = [e for e in ev if e.get("cat") == "cuda_runtime" and e["name"] in SYNCS and e["ts"] + e["dur"] >= t_gpu]
    sync = min(syncs, key=lambda e: e["ts"] + e["dur"])
    t_host = sync["ts"] + sync["dur"]
    _shift(ev, t_gpu, d, lambda e: _is_gpu(e, pids))
    _shift(ev, t_host, d, lambda e: not _is_gpu(e, pids))


class Ids:
    """Fresh correlation and External ids above those of the trace."""

    def __init__(self, ev: list[Event]) -> None:
        args = [e.get("args", {}) for e in ev]
        self.corr = max([a.get("correlation", 0) for a in args] + [0]) + 1_000_000
        self.ext = max([a.get("External id", 0) for a in args] + [0]) + 1_000_000

    def next(self) -> tuple[int, int]:
        self.corr += 1
        self.ext += 1
        return self.corr, self.ext


def _host(
    name: str,
    ts: float,
    dur: float,
    like: Event,
    cat: str = "cpu_op",
    *,
    correlation: int | None = None,
    ext: int | None = None,
) -> Event:
    """A host event on ``like``'s thread."""
    args: dict[str, int] = {}
    if correlation is not None:
        args["correlation"] = correlation
    if ext is not None:
        args["External id"] = ext
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": like["pid"],
        "tid": like["tid"],
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def _launch_with_gpu(
    ev: list[Event],
    ids: Ids,
    *,
    host_like: Event,
    gpu_like: Event,
    ops: list[str],
    runtime: str,
    t: float,
    gpu_name: str,
    gpu_cat: str,
    gpu_dur: float,
    gpu_args: dict[str, Any],
    host_dur: float = 20.0,
    blocking: bool = False,
) -> float:
    """Add host ops (nested), a runtime call and its GPU activity starting right after it; return GPU end.

    ``blocking``: the runtime call lasts as long as its GPU activity (a pageable copy); the GPU
    must then be idle at ``t``.
    """
    corr, ext = ids.next()
    if blocking:
        host_dur = gpu_dur + 10 + 2 * len(ops)
    insert_host_time(ev, t, host_dur + 5)
    for depth, op in enumerate(ops):
        ev.append(_host(op, t + depth, host_dur - 2 * depth, host_like, ext=ext))
    rt_ts = t + len(ops)
    rt_dur = host_dur - 2 * len(ops)
    ev.append(_host(runtime, rt_ts, rt_dur, host_like, cat="cuda_runtime", correlation=corr, ext=ext))
    if blocking:
        g_ts = rt_ts + 3
    else:
        g_ts = rt_ts + rt_dur + 2
        insert_gpu_time(ev, g_ts, gpu_dur + 1)
    args = {
        "External id": ext,
        "device": gpu_like["args"]["device"],
        "context": gpu_like["args"].get("context", 1),
        "stream": gpu_like["args"]["stream"],
        "correlation": corr,
        **gpu_args,
    }
    ev.append(
        {
            "ph": "X",
            "cat": gpu_cat,
            "name": gpu_name,
            "pid": gpu_like["pid"],
            "tid": gpu_like["tid"],
            "ts": g_ts,
            "dur": gpu_dur,
            "args": args,
        }
    )
    ev.append(
        {
            "ph": "s",
            "id": corr,
            "pid": host_like["pid"],
            "tid": host_like["tid"],
            "ts": rt_ts,
            "cat": "ac2g",
            "name": "ac2g",
        }
    )
    ev.append(
        {
            "ph": "f",
            "id": corr,
            "pid": gpu_like["pid"],
            "tid": gpu_like["tid"],
            "ts": g_ts,
            "cat": "ac2g",
            "name": "ac2g",
            "bp": "e",
        }
    )
    return g_ts + gpu_dur


def _steps(ev: list[Event]) -> list[Event]:
    return sorted(
        (e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep")),
        key=lambda e: e["ts"],
    )


def _first_op(ev: list[Event], step: Event) -> Event:
    return min(
        (e for e in ev if e.get("cat") == "cpu_op" and step["ts"] <= e["ts"] <= step["ts"] + step["dur"]),
        key=lambda e: e["ts"],
    )


def _kernel(ev: list[Event]) -> Event:
    return next(e for e in ev if e.get("cat") == "kernel")


MATMUL_SOURCE = (
    "Edited from `tests/data/h200_cuda/matmul` (recorded by this project on an NVIDIA H200, "
    "see tests/data/h200_cuda/README.md) by `scripts/record_diagnosis/edit_traces.py`. No third-party data.\n"
)
TRAIN_SOURCE = MATMUL_SOURCE.replace("matmul", "train")
MI250_SOURCE = (
    "Edited from `tests/data/hta_mi250_rocm/mi250_minitoy_train_ROCm6_2_kineto.json.gz` by "
    "`scripts/record_diagnosis/edit_traces.py`. The original: a toy model trained on an AMD MI250 with ROCm 6.2, "
    "from facebookresearch/HolisticTraceAnalysis `tests/data/amd_trace/`, MIT License, Copyright (c) Meta "
    "Platforms, Inc. and affiliates. The MIT text is `tests/data/LICENSE-MIT.txt`; it applies to this derived "
    "file too.\n"
)
BERT_SOURCE = (
    "Edited from `tests/data/h100_bert_small/gaunernst_bert-small-uncased__1016001.json.gz` by "
    "`scripts/record_diagnosis/edit_traces.py`. The original: HF bert-small inference on an H100, "
    "PyTorch 2.6.0+cu124, from AMD-AGI/TraceLens `tests/traces/h100/`, MIT License, Copyright (c) "
    "Advanced Micro Devices, Inc. The MIT text is `tests/data/LICENSE-MIT.txt`; it applies to this "
    "derived file too.\n"
)
DLRM_SOURCE = (
    "Edited from the bundled sample `jupyter_traceview/samples/dlrm_8rank_v100` by "
    "`scripts/record_diagnosis/edit_traces.py`. The original: one DLRM training step on 8 V100s, "
    "from facebookresearch/param `et_replay/tests/inputs/dlrm_kineto.tar.gz`, MIT License, "
    "Copyright (c) Facebook, Inc. and its affiliates. The MIT text is "
    "`jupyter_traceview/samples/LICENSE-MIT.txt`; it applies to these derived files too.\n"
)


def copy_bound(out: Path) -> None:
    """Each step first copies ~3.1 GB host-to-device from pinned memory: copies fill ~90% of the span."""
    data = _load(MATMUL)
    ev = data["traceEvents"]
    ids, k = Ids(ev), _kernel(ev)
    gbps = 50.0  # PCIe Gen5 x16 pinned HtoD, realistic
    step_gpu_us = 6_900.0
    d = 9 * step_gpu_us  # 62.1 ms of copy per step against ~6.9 ms of compute
    nbytes = int(d * 1e-6 * gbps * 1e9)
    total = 0.0
    for step in _steps(ev):
        op = _first_op(ev, step)
        _launch_with_gpu(
            ev,
            ids,
            host_like=op,
            gpu_like=k,
            ops=["aten::to", "aten::_to_copy", "aten::copy_"],
            runtime="cudaMemcpyAsync",
            t=max(op["ts"] - 30, step["ts"] + 0.5),
            gpu_name="Memcpy HtoD (Pinned -> Device)",
            gpu_cat="gpu_memcpy",
            gpu_dur=d,
            gpu_args={"bytes": nbytes, "memory bandwidth (GB/s)": gbps},
        )
        total += d
    facts = {
        "base": "h200_cuda/matmul",
        "injected": "one pinned HtoD memcpy at the start of each of the 3 steps",
        "copy_ms_per_step": d / 1e3,
        "copy_ms_total": total / 1e3,
        "bytes_per_copy": nbytes,
        "gbps": gbps,
        "compute_ms_per_step": step_gpu_us / 1e3,
    }
    _save(data, out / "gpu_copy_bound", "copy_bound.pt.trace.json.gz", facts, MATMUL_SOURCE)


def softmax_dominant(out: Path) -> None:
    """Each step runs one fp32 softmax kernel taking 47% of the GPU time (an unfused attention softmax)."""
    data = _load(MATMUL)
    ev = data["traceEvents"]
    ids, k = Ids(ev), _kernel(ev)
    busy_per_step = 6_877.0  # the base's kernels per step (20.63 ms busy over 3 steps)
    d = busy_per_step * 0.47 / 0.53
    name = (
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
        "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"
    )
    for step in _steps(ev):
        op = _first_op(ev, step)
        _launch_with_gpu(
            ev,
            ids,
            host_like=op,
            gpu_like=k,
            ops=["aten::softmax", "aten::_softmax"],
            runtime="cudaLaunchKernel",
            t=max(op["ts"] - 30, step["ts"] + 0.5),
            gpu_name=name,
            gpu_cat="kernel",
            gpu_dur=d,
            gpu_args={
                "grid": [65536, 1, 1],
                "block": [1024, 1, 1],
                "registers per thread": 32,
                "shared memory": 0,
                "blocks per SM": 496.5,
                "warps per SM": 15888.0,
                "est. achieved occupancy %": 100,
            },
        )
    facts = {
        "base": "h200_cuda/matmul",
        "injected": "one cunn_SoftMaxForward kernel per step",
        "softmax_ms_per_step": d / 1e3,
        "softmax_ms_total": 3 * d / 1e3,
        "softmax_share_of_gpu_busy_pct": 47.0,
    }
    _save(data, out / "gpu_softmax_dominant", "softmax.pt.trace.json.gz", facts, MATMUL_SOURCE)


def host_gap_after_item(out: Path) -> None:
    """After each step's sync, loss.item() then 30 ms of host work before the next step: the GPU waits."""
    data = _load(MATMUL)
    ev = data["traceEvents"]
    ids, k = Ids(ev), _kernel(ev)
    gap = 30_000.0
    steps = _steps(ev)
    for step in steps[:-1]:
        sync = max(
            (
                e
                for e in ev
                if e.get("cat") == "cuda_runtime"
                and e["name"] in SYNCS
                and step["ts"] <= e["ts"] <= step["ts"] + step["dur"]
            ),
            key=lambda e: e["ts"],
        )
        t = sync["ts"] + sync["dur"] + 1
        _launch_with_gpu(
            ev,
            ids,
            host_like=sync,
            gpu_like=k,
            ops=["aten::item", "aten::_local_scalar_dense"],
            runtime="cudaMemcpyAsync",
            t=t,
            gpu_name="Memcpy DtoH (Device -> Pageable)",
            gpu_cat="gpu_memcpy",
            gpu_dur=1.5,
            gpu_args={"bytes": 4, "memory bandwidth (GB/s)": 0.003},
        )
        ev.append(_host("cudaStreamSynchronize", t + 20, 4, sync, cat="cuda_runtime", correlation=ids.next()[0]))
        t2 = t + 40
        insert_host_time(ev, t2, gap)
        ev.append(_host("log_metrics", t2, gap - 5, sync, cat="user_annotation"))
    facts = {
        "base": "h200_cuda/matmul",
        "injected": "after the sync ending steps 1 and 2: aten::item (DtoH 4 bytes) "
        "then a 30 ms user_annotation log_metrics of host work before the next step's launches",
        "host_gap_ms_per_step": gap / 1e3,
        "gpu_idle_injected_ms_total": 2 * gap / 1e3,
    }
    _save(data, out / "gpu_host_gap_after_item", "host_gap.pt.trace.json.gz", facts, MATMUL_SOURCE)


def _bert() -> tuple[dict[str, Any], list[Event]]:
    data = _load(BERT)
    return data, data["traceEvents"]


def _launches(ev: list[Event]) -> list[Event]:
    return sorted(
        (
            e
            for e in ev
            if e.get("cat") in ("cuda_runtime", "cuda_driver")
            and e["name"].startswith(
                ("cudaLaunchKernel", "cuLaunchKernel", "hipLaunchKernel", "hipExtModuleLaunchKernel")
            )
        ),
        key=lambda e: e["ts"],
    )


def _capture(ev: list[Event], first: int, api: str, instantiate: float) -> int:
    """Put launches ``first``.. between {api}StreamBeginCapture and EndCapture; drop their GPU activity."""
    pids = _gpu_pids(ev)
    launches = _launches(ev)
    begin, end = launches[first]["ts"] - 1, launches[-1]["ts"] + launches[-1]["dur"] + 1
    captured = {
        e["args"]["correlation"]
        for e in ev
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and begin <= e["ts"] <= end
        and "correlation" in e.get("args", {})
    }
    ev[:] = [
        e
        for e in ev
        if not (
            _is_gpu(e, pids)
            and (e.get("args", {}).get("correlation") in captured or (e.get("ph") == "f" and e.get("id") in captured))
        )
    ]
    ev[:] = [e for e in ev if not (e.get("ph") == "s" and e.get("id") in captured)]
    like = launches[first]
    ids = Ids(ev)
    insert_host_time(ev, begin, 15)
    ev.append(_host(f"{api}StreamBeginCapture", begin, 10, like, cat="cuda_runtime", correlation=ids.next()[0]))
    end += 15
    insert_host_time(ev, end, 20 + instantiate + 5)
    ev.append(_host(f"{api}StreamEndCapture", end, 15, like, cat="cuda_runtime", correlation=ids.next()[0]))
    ev.append(
        _host(
            f"{api}GraphInstantiateWithFlags",
            end + 20,
            instantiate,
            like,
            cat="cuda_runtime",
            correlation=ids.next()[0],
        )
    )
    return len(captured)


def graph_capture(out: Path) -> None:
    """bert-small's forward captured into a CUDA graph: launches between Begin/EndCapture run nothing."""
    data, ev = _bert()
    captured = _capture(ev, 4, "cuda", 1_800.0)
    facts = {
        "base": "h100_bert_small",
        "injected": "cudaStreamBeginCapture before the 5th launch, cudaStreamEndCapture "
        "after the last, then cudaGraphInstantiateWithFlags (1.8 ms); the GPU activity of the launches in between "
        "removed (a capture records launches, it runs nothing)",
        "captured_launches": captured,
    }
    _save(data, out / "gpu_graph_capture", "capture.pt.trace.json.gz", facts, BERT_SOURCE)


def graph_replay(out: Path) -> None:
    """bert-small's forward replayed from a CUDA graph: one cudaGraphLaunch, kernels back to back."""
    data, ev = _bert()
    pids = _gpu_pids(ev)
    launches = _launches(ev)
    t0, t1 = launches[0]["ts"], launches[-1]["ts"] + launches[-1]["dur"]
    in_region = [
        e
        for e in ev
        if e.get("ph") == "X"
        and not _is_gpu(e, pids)
        and e.get("cat") in ("cpu_op", "python_function", "cuda_runtime", "cuda_driver", "cpu_instant_event")
        and t0 <= e["ts"] <= t1
    ]
    corrs = {e["args"]["correlation"] for e in in_region if "correlation" in e.get("args", {})}
    drop = {id(e) for e in in_region}
    ev[:] = [e for e in ev if id(e) not in drop and not (e.get("ph") in ("s", "f") and e.get("id") in corrs)]
    ev[:] = [e for e in ev if not (e.get("ph") == "i" and t0 <= e.get("ts", 0) <= t1 and not _is_gpu(e, pids))]
    ids = Ids(ev)
    corr, ext = ids.next()
    like = launches[0]
    launch = _host("cudaGraphLaunch", t0, 12, like, cat="cuda_runtime", correlation=corr, ext=ext)
    ev.append(launch)
    ev.append({"ph": "s", "id": corr, "pid": like["pid"], "tid": like["tid"], "ts": t0, "cat": "ac2g", "name": "ac2g"})
    gpu = sorted(
        (
            e
            for e in ev
            if _is_gpu(e, pids)
            and e.get("ph") == "X"
            and e.get("cat") in ("kernel", "gpu_memset")
            and e.get("args", {}).get("correlation") in corrs
        ),
        key=lambda e: e["ts"],
    )
    t = t0 + 15
    for e in gpu:
        e["ts"], e["args"]["correlation"] = t, corr
        t += e["dur"] + 1.0
    ev.append(
        {
            "ph": "f",
            "id": corr,
            "pid": gpu[0]["pid"],
            "tid": gpu[0]["tid"],
            "ts": gpu[0]["ts"],
            "cat": "ac2g",
            "name": "ac2g",
            "bp": "e",
        }
    )
    # The host no longer spends t1 - t0 launching: what followed the launches moves up to just after the replay.
    later = t1 - (t0 + 20)
    for e in ev:
        if e.get("ph") != "M" and "ts" in e and e["ts"] > t1:
            e["ts"] = max(e["ts"] - later, t + 1 if _is_gpu(e, pids) else t0 + 20)
        elif e.get("ph") == "X" and e["ts"] < t0 and e["ts"] + e["dur"] > t1 and not _is_gpu(e, pids):
            e["dur"] -= later
    for e in ev:  # the step annotation on the GPU follows its kernels
        if e.get("cat") == "gpu_user_annotation":
            e["ts"], e["dur"] = gpu[0]["ts"], t - gpu[0]["ts"]
    facts = {
        "base": "h100_bert_small",
        "injected": "every launch of the step replaced by one cudaGraphLaunch; its "
        "kernels and memsets packed back to back (1 us apart); the host ops of the forward removed",
        "replayed_gpu_activities": len(gpu),
        "replay_gpu_ms": (t - gpu[0]["ts"]) / 1e3,
    }
    _save(data, out / "gpu_graph_replay", "replay.pt.trace.json.gz", facts, BERT_SOURCE)


def kv_cache(out: Path) -> None:
    """bert-small inference after a server pre-allocated a 64 GiB KV cache on the 80 GB H100."""
    data, ev = _bert()
    gib = 64 * 2**30
    mems = [e for e in ev if e.get("name") == "[memory]"]
    first = min(e["ts"] for e in ev if e.get("ph") in ("X", "i") and "ts" in e and e.get("cat") != "Trace")
    like = next(e for e in ev if e.get("cat") == "cpu_op")
    dev = next((e["args"].get("Device Id") for e in mems if e["args"].get("Device Type") == 1), 0)
    for e in mems:
        if e["args"].get("Device Type") == 1 and e["args"].get("Device Id") == dev:
            e["args"]["Total Allocated"] = e["args"].get("Total Allocated", 0) + gib
            e["args"]["Total Reserved"] = e["args"].get("Total Reserved", 0) + gib
    base_alloc = (
        min((e["args"].get("Total Allocated", 0) for e in mems if e["args"].get("Device Type") == 1), default=gib) - gib
    )
    base_res = (
        min((e["args"].get("Total Reserved", 0) for e in mems if e["args"].get("Device Type") == 1), default=gib) - gib
    )
    t = first - 2_000
    ev.append(_host("kv_cache.allocate", t, 1_000, like, cat="user_annotation"))
    ev.append(_host("aten::empty", t + 10, 900, like))
    ev.append(
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": "[memory]",
            "pid": like["pid"],
            "tid": like["tid"],
            "ts": t + 20,
            "args": {
                "Addr": 0x7F0000000000,
                "Bytes": gib,
                "Total Allocated": max(base_alloc, 0) + gib,
                "Total Reserved": max(base_res, 0) + gib,
                "Device Type": 1,
                "Device Id": dev,
            },
        }
    )
    facts = {
        "base": "h100_bert_small",
        "injected": "a 64 GiB allocation (kv_cache.allocate / aten::empty) before the "
        "step, held to the end: every later [memory] event on the GPU carries 64 GiB more allocated and reserved",
        "kv_cache_bytes": gib,
        "device_memory_bytes": 80 * 10**9,
    }
    _save(data, out / "gpu_kv_cache_inference", "kv_cache.pt.trace.json.gz", facts, BERT_SOURCE)


def deepep_alltoall(out: Path) -> None:
    """DLRM's all-to-all kernels renamed to an expert-parallel library's (deep_ep) on their own stream."""
    folder = out / "gpu_deepep_alltoall"
    _fresh(folder)
    renamed = 0
    for path in sorted(DLRM.glob("*.json.gz")):
        data = _load(path)
        ev = data["traceEvents"]
        n = 0
        for e in ev:
            if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel_SendRecv"):
                kind = "dispatch" if n % 2 == 0 else "combine"
                e["name"] = f"void deep_ep::internode::{kind}<8, 128, 4096>(void*, int const*, int, int, int, bool)"
                e["args"]["stream"] = 99
                e["tid"] = 99
                n += 1
            elif e.get("name") == "nccl:all_to_all":
                e["name"] = "deep_ep::Buffer::internode_dispatch"
            elif e.get("name") == "record_param_comms":
                e.setdefault("args", {})["Collective name"] = "all_to_all"
        renamed += n
        _write(data, folder / path.name)
    facts = {
        "base": "dlrm_8rank_v100",
        "injected": "every ncclKernel_SendRecv kernel (the all-to-all) renamed "
        "deep_ep::internode::dispatch/combine and moved to stream 99; nccl:all_to_all ops renamed "
        "deep_ep::Buffer::internode_dispatch; record_param_comms ops marked Collective name all_to_all",
        "renamed_kernels": renamed,
    }
    (folder / "facts.json").write_text(json.dumps(facts, indent=1) + "\n")
    (folder / "SOURCES.md").write_text(DLRM_SOURCE)
    print(f"wrote {folder}: {facts}")


def delayed_rank(out: Path, *, late: int = 5, delay_us: float = 20_000.0) -> None:
    """Rank 5 of the DLRM job starts its step 20 ms late; the others wait in their first collective."""
    folder = out / "gpu_delayed_rank"
    _fresh(folder)
    for path in sorted(DLRM.glob("*.json.gz")):
        data = _load(path)
        ev = data["traceEvents"]
        rank = data["distributedInfo"]["rank"]
        if rank == late:
            step = _steps(ev)[0]
            insert_host_time(ev, _first_op(ev, step)["ts"] - 1, delay_us)
        else:
            first = min(
                (e for e in ev if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel")),
                key=lambda e: e["ts"],
            )
            insert_gpu_time(ev, first["ts"] + first["dur"] - 0.5, delay_us)
        _write(data, folder / path.name)
    facts = {
        "base": "dlrm_8rank_v100",
        "injected": f"rank {late}: {delay_us / 1e3:.0f} ms of host time before the "
        "first operator of its step (everything after moves); every other rank: its first NCCL kernel "
        f"(the first all-to-all) lasts {delay_us / 1e3:.0f} ms longer (waiting for rank {late}) and everything "
        "on its GPU after it, and its host after the next sync, moves by as much",
        "late_rank": late,
        "delay_ms": delay_us / 1e3,
    }
    (folder / "facts.json").write_text(json.dumps(facts, indent=1) + "\n")
    (folder / "SOURCES.md").write_text(DLRM_SOURCE)
    print(f"wrote {folder}: {facts}")


def hip_graph_capture(out: Path) -> None:
    """The MI250 training step captured into a HIP graph after its first two launches (hipStreamBeginCapture...)."""
    data = _load(MI250)
    ev = data["traceEvents"]
    captured = _capture(ev, 2, "hip", 2_500.0)
    facts = {
        "base": "hta_mi250_rocm",
        "injected": "hipStreamBeginCapture before the 3rd launch of the training step (the only step with GPU work), "
        "hipStreamEndCapture after the last launch, then hipGraphInstantiateWithFlags (2.5 ms); the GPU activity of the launches in between removed",
        "captured_calls": captured,
    }
    _save(data, out / "hip_graph_capture", "hip_capture.json.gz", facts, MI250_SOURCE)


def pageable_copies(out: Path) -> None:
    """Each step first copies 64 MiB host-to-device from pageable memory at 8 GB/s (the host blocks)."""
    data = _load(MATMUL)
    ev = data["traceEvents"]
    ids, k = Ids(ev), _kernel(ev)
    nbytes, gbps = 64 * 2**20, 8.0
    d = nbytes / (gbps * 1e9) * 1e6
    for step in _steps(ev):
        op = _first_op(ev, step)
        _launch_with_gpu(
            ev,
            ids,
            host_like=op,
            gpu_like=k,
            ops=["aten::to", "aten::_to_copy", "aten::copy_"],
            runtime="cudaMemcpyAsync",
            t=max(op["ts"] - 30, step["ts"] + 0.5),
            gpu_name="Memcpy HtoD (Pageable -> Device)",
            gpu_cat="gpu_memcpy",
            gpu_dur=d,
            gpu_args={"bytes": nbytes, "memory bandwidth (GB/s)": gbps},
            blocking=True,
        )
    facts = {
        "base": "h200_cuda/matmul",
        "injected": "one 64 MiB pageable HtoD cudaMemcpyAsync at the start of each of the 3 steps; the host call "
        "lasts as long as the copy",
        "copy_ms_per_step": d / 1e3,
        "copy_ms_total": 3 * d / 1e3,
        "bytes_per_copy": nbytes,
        "gbps": gbps,
    }
    _save(data, out / "gpu_pageable_copies", "pageable.pt.trace.json.gz", facts, MATMUL_SOURCE)


def unrecognised(out: Path) -> None:
    """The bf16 matrix products renamed to a custom library's kernel under a custom op (no known name)."""
    data = _load(MATMUL)
    ev = data["traceEvents"]
    renamed, ms = 0, 0.0
    for e in ev:
        if e.get("cat") == "kernel" and e["name"].startswith("nvjet_sm90_tst"):
            e["name"] = "fused_moe_gate_up_sm90<128, 4>"
            renamed += 1
            ms += e["dur"] / 1e3
        elif e.get("cat") == "cpu_op" and e["name"] == "aten::mm":
            e["name"] = "mylib::fused_moe_gate_up"
    facts = {
        "base": "h200_cuda/matmul",
        "injected": "the 8192^3 bf16 products' kernels (nvjet_sm90_tst...) renamed fused_moe_gate_up_sm90<128, 4> and "
        "every aten::mm op renamed mylib::fused_moe_gate_up (a custom extension's op and kernel)",
        "renamed_kernels": renamed,
        "renamed_kernel_ms": ms,
    }
    _save(data, out / "gpu_unrecognised_kernels", "custom.pt.trace.json.gz", facts, MATMUL_SOURCE)


def dataloader_gpu(out: Path) -> None:
    """The H200 transformer training: each step first waits 100 ms in the DataLoader (GPU idle)."""
    data = _load(TRAIN)
    ev = data["traceEvents"]
    d = 100_000.0
    like = next(e for e in ev if e.get("cat") == "cpu_op")
    for step in _steps(ev):
        t = max(_first_op(ev, step)["ts"] - 2, step["ts"] + 0.5)
        insert_host_time(ev, t, d + 2)
        ev.append(
            _host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, d, like, cat="user_annotation")
        )
    facts = {
        "base": "h200_cuda/train",
        "injected": "100 ms of host time in an enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ range "
        "before the first operator of each of the 3 steps (everything after moves; the GPU is idle meanwhile)",
        "dataloader_ms_total": 3 * d / 1e3,
        "dataloader_ms_inside_gpu_span": 2 * d / 1e3,
    }
    _save(data, out / "gpu_dataloader_stall", "dataloader.pt.trace.json.gz", facts, TRAIN_SOURCE)


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "gpu_copy_bound": copy_bound,
    "gpu_softmax_dominant": softmax_dominant,
    "gpu_host_gap_after_item": host_gap_after_item,
    "gpu_graph_capture": graph_capture,
    "gpu_graph_replay": graph_replay,
    "gpu_kv_cache_inference": kv_cache,
    "gpu_deepep_alltoall": deepep_alltoall,
    "gpu_delayed_rank": delayed_rank,
    "hip_graph_capture": hip_graph_capture,
    "gpu_pageable_copies": pageable_copies,
    "gpu_unrecognised_kernels": unrecognised,
    "gpu_dataloader_stall": dataloader_gpu,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--only", nargs="*", choices=list(SCENARIOS), default=list(SCENARIOS))
    args = p.parse_args()
    for name in args.only:
        SCENARIOS[name](args.out)


if __name__ == "__main__":
    main()
