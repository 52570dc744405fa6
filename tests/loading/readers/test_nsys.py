"""Nsight Systems SQLite exports: real exports against direct SQL, tiny exports built in code."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import summary
from jupyter_traceview.analysis._common import WORK_CLASSES, class_union, gpu_activities
from jupyter_traceview.model import intervals as iv
from tests import kineto_builder as kb
from tests import nsys_builder as nb
from tests.conftest import DATA
from tests.nsys_to_kineto import convert

NSYS = DATA / "nsys_sqlite"
MFU = NSYS / "mfu_2gpu_nccl.sqlite"
RTX = NSYS / "rtx3080_two_kernels.sqlite"
EXPORTS = [MFU, RTX]
CUDA_TABLES = tuple(f"CUPTI_ACTIVITY_KIND_{t}" for t in ("KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION", "RUNTIME"))


def sql(path: Path, query: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def mfu() -> tv.Trace:
    return tv.load(MFU, cache=False)


# --------------------------------------------------------------------------------------
# Real exports against direct SQL
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_counts_match_sql(path: Path) -> None:
    trace = tv.load(path, cache=False)
    ev = trace.events()
    # One rank per (process, device), in (device, pid) order.
    pairs = sql(path, "SELECT DISTINCT deviceId, (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert [(trace.meta(r).extra["device"], trace.meta(r).extra["pid"]) for r in trace.ranks] == sorted(pairs)
    for r in trace.ranks:
        meta = trace.meta(r)
        mine = ev[ev["rank"] == r]
        (n_kernels,) = sql(
            path,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
            f"WHERE deviceId = {meta.extra['device']} AND (globalPid >> 24) & 16777215 = {meta.extra['pid']}",
        )[0]
        assert (mine["kind"] == "kernel").sum() == n_kernels
        assert set(mine.loc[mine["kind"] == "kernel", "device"]) == {meta.extra["device"]}
        assert meta.source_format == "nsys" and meta.ts_precision == "ns"
    # NCCL kernels: the classifier finds exactly the kernels SQL names nccl*.
    (n_nccl,) = sql(
        path,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName "
        "WHERE s.value LIKE 'nccl%'",
    )[0]
    kernels = ev[ev["kind"] == "kernel"]
    assert (kernels["gpu_class"] == "communication").sum() == n_nccl
    assert kernels.loc[kernels["gpu_class"] == "communication", "name"].astype(str).str.startswith("nccl").all()
    # Every row of every mapped table is an event of exactly one rank (no thread drives two GPUs here).
    tables = {t for (t,) in sql(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    expected = {
        "kernel": "CUPTI_ACTIVITY_KIND_KERNEL",
        "gpu_memcpy": "CUPTI_ACTIVITY_KIND_MEMCPY",
        "gpu_memset": "CUPTI_ACTIVITY_KIND_MEMSET",
        "cuda_sync": "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    }
    for kind, table in expected.items():
        want = sql(path, f'SELECT count(*) FROM "{table}"')[0][0] if table in tables else 0
        assert (ev["kind"] == kind).sum() == want, kind
    api = sql(path, "SELECT eventClass, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1")
    assert (ev["kind"] == "cuda_runtime").sum() == dict(api).get(0, 0)
    assert (ev["kind"] == "cuda_driver").sum() == dict(api).get(1, 0)
    n_nvtx = sql(path, "SELECT count(*) FROM NVTX_EVENTS")[0][0] if "NVTX_EVENTS" in tables else 0
    assert (ev["kind"] == "user_annotation").sum() == n_nvtx
    for r in trace.ranks:
        e = trace.events(r)
        assert e["ts_ns"].is_monotonic_increasing and (e["dur_ns"] >= 0).all()
        assert (e["eid"].to_numpy() == np.arange(len(e))).all()


def test_launch_links_match_sql(mfu: tv.Trace) -> None:
    # Correlation ids are per process: join on (process, correlation id).
    (unlinked,) = sql(
        MFU,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
        "ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24) "
        "WHERE r.correlationId IS NULL",
    )[0]
    ev = mfu.events()
    kernels = ev[ev["kind"] == "kernel"]
    assert (kernels["launch_eid"] == -1).sum() == unlinked
    for r in mfu.ranks:
        e = mfu.events(r)
        linked = e[(e["kind"] == "kernel") & (e["launch_eid"] >= 0)]
        calls = e.loc[linked["launch_eid"]]
        assert (calls["correlation"].to_numpy() == linked["correlation"].to_numpy()).all()
        assert calls["kind"].isin(["cuda_runtime", "cuda_driver"]).all()
        assert set(calls["name"].astype(str)) <= {"cudaLaunchKernel", "cuLaunchKernelEx", "cuLaunchKernel"}
        # The rank's CPU events are its own process's (each worker drives one GPU).
        cpu = e[e["device"] < 0]
        assert set(cpu["pid"]) == {mfu.meta(r).extra["pid"]}


def test_times_gpu_args_and_copies_match_sql(mfu: tv.Trace) -> None:
    ((base,),) = sql(MFU, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
    rows = sql(
        MFU,
        "SELECT k.start, k.end, s.value, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, "
        "staticSharedMemory + dynamicSharedMemory FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName WHERE deviceId = 1 ORDER BY k.start LIMIT 50",
    )
    r = next(r for r in mfu.ranks if mfu.meta(r).extra["device"] == 1)
    assert mfu.meta(r).base_time_ns == base
    ev = mfu.events(r)
    args = mfu.gpu_args(r).set_index("eid")
    k = ev[ev["kind"] == "kernel"].head(50)
    got = k[["ts_ns", "dur_ns"]].to_numpy()
    assert (got[:, 0] == np.array([x[0] + base for x in rows])).all()
    assert (got[:, 1] == np.array([x[1] - x[0] for x in rows])).all()
    assert k["name"].astype(str).tolist() == [x[2] for x in rows]
    cols = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread"]
    cols += ["shared_memory_bytes"]
    assert args.loc[k["eid"], cols].to_numpy().tolist() == [list(x[3:]) for x in rows]
    # Copies: kinds and pageability from the enum tables, bytes and bandwidth from the rows.
    kinds = dict(sql(MFU, "SELECT copyKind, count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1"))
    all_args = mfu.gpu_args()
    assert (all_args["copy_kind"] == "DtoD").sum() == kinds[8]
    assert (all_args["copy_kind"] == "HtoD").sum() == kinds[1]
    assert all_args.loc[all_args["copy_kind"] == "HtoD", "pageable"].all()  # srcKind 0: pageable
    assert not all_args.loc[all_args["copy_kind"] == "DtoD", "pageable"].any()
    names = set(mfu.events()["name"].astype(str))
    assert {"Memcpy HtoD (Pageable -> Device)", "Memcpy DtoD (Device -> Device)", "Memset (Device)"} <= names
    copies = ev[ev["kind"] == "gpu_memcpy"].merge(args, left_on="eid", right_index=True)
    assert np.allclose(copies["bandwidth_gbps"], copies["bytes"] / copies["dur_ns"], rtol=1e-6)
    (total_bytes,) = sql(MFU, "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY")[0]
    assert all_args.loc[all_args["copy_kind"].isin(["HtoD", "DtoD"]), "bytes"].sum() == total_bytes


def test_syncs_take_their_contexts_device(mfu: tv.Trace) -> None:
    # Nsight writes deviceId 0 on every sync record; the context says where it ran.
    counts = dict(
        sql(
            MFU,
            "SELECT (globalPid >> 24) & 16777215, count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION GROUP BY 1",
        )
    )
    for r in mfu.ranks:
        e = mfu.events(r)
        syncs = e[e["kind"] == "cuda_sync"]
        assert len(syncs) == counts[mfu.meta(r).extra["pid"]]
        assert set(syncs["device"]) == {mfu.meta(r).extra["device"]}
        assert set(syncs["name"].astype(str)) <= {"Event Sync", "Stream Wait Event", "Stream Sync"}
        assert (syncs["gpu_class"] == "other").all()


def test_metadata_of_real_exports(mfu: tv.Trace) -> None:
    rtx = tv.load(RTX, cache=False)
    meta = rtx.meta(0)
    (props,) = meta.device_properties
    assert props["id"] == 0 and props["name"] == "NVIDIA GeForce RTX 3080" and props["numSms"] == 68
    assert props["computeMajor"] == 8 and props["maxThreadsPerMultiprocessor"] == 1536
    assert rtx.metadata.loc[0, "device_name"] == "NVIDIA GeForce RTX 3080"
    assert meta.extra["nsys_version"].startswith("2026.1")
    assert meta.profiler_start_ns == meta.base_time_ns
    assert meta.profiler_end_ns == meta.base_time_ns + 1871570402
    assert meta.process_names == {91186: "/home/rich-wsl/nsys-tui/.venv-gpu/bin/python"}
    # The trimmed export has no TARGET_INFO_GPU: no device properties, and it says why.
    for r in mfu.ranks:
        assert mfu.meta(r).device_properties == ()
        assert "TARGET_INFO_GPU" in mfu.meta(r).extra["missing_tables"]
        names = dict(((p, t), n) for p, t, n in mfu.meta(r).thread_names)
        assert "pt_nccl_watchdg" in names.values()
    # NCCL's NVTX ranges of collectives become comms rows.
    comms = mfu.comms()
    assert set(comms["collective"]) == {"send", "recv", "all_to_all"}
    (sends,) = sql(
        MFU, "SELECT count(*) FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId WHERE s.value = 'ncclSend'"
    )[0]
    assert (comms["collective"] == "send").sum() == sends


def test_same_intervals_as_through_the_kineto_path(tmp_path: Path) -> None:
    """Rows written as Kineto JSON (plain SQL, not the reader) give the same GPU time."""
    for path in EXPORTS:
        folder = tmp_path / path.stem
        convert(path, folder)
        nsys = tv.load(path, cache=False)
        kineto = tv.load(folder, cache=False)
        assert nsys.ranks == kineto.ranks
        cols = ["kernels", "gpu_activities", "gpu_span_ns", "gpu_busy_ns", "trace_span_ns", "events"]
        pd.testing.assert_frame_equal(summary(nsys)[cols], summary(kineto)[cols])
        for r in nsys.ranks:
            a, b = gpu_activities(nsys, r), gpu_activities(kineto, r)
            for classes in (WORK_CLASSES, ["compute"], ["communication"], ["memory"], ["other"]):
                ua, ub = class_union(a, classes), class_union(b, classes)
                assert (ua[0] == ub[0]).all() and (ua[1] == ub[1]).all()
            # The temporal breakdown: idle = span - busy, compute, non-compute.
            busy = iv.length(*class_union(a, WORK_CLASSES))
            compute = iv.length(*class_union(a, ["compute"]))
            assert busy == iv.length(*class_union(b, WORK_CLASSES)) and compute == iv.length(
                *class_union(b, ["compute"])
            )
            assert 0 < compute <= busy
            ea, eb = nsys.events(r), kineto.events(r)
            acts = ea["kind"].isin(["kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"])
            assert (ea.loc[acts, "launch_eid"] >= 0).sum() == (
                eb.loc[eb["kind"].isin(["kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"]), "launch_eid"] >= 0
            ).sum()


# --------------------------------------------------------------------------------------
# Tiny exports built in code
# --------------------------------------------------------------------------------------
def small_export() -> nb.Export:
    x = nb.Export()
    x.range("ProfilerStep#3", 0, 1000)
    x.range("forward", 10, 400)
    x.launch("gemm_kernel(float*)", 20, 100, 50, corr=1, grid=(64, 2, 1), block=(256, 1, 1), static_smem=1024)
    x.launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 40, 160, 30, corr=2, stream=9)
    x.call("cudaMemcpyAsync_v3020", 60, 70, corr=3)
    x.memcpy(200, 220, corr=3, kind=nb.MEMCPY_DTOH, src=nb.MEM_DEVICE, dst=nb.MEM_PAGEABLE, nbytes=4000)
    x.call("cudaMemsetAsync_v3020", 80, 85, corr=4)
    x.memset(230, 240, corr=4, nbytes=100)
    x.call("cudaStreamSynchronize_v3020", 420, 600, corr=5)
    x.sync(425, 595, corr=5, sync_type=nb.SYNC_STREAM)
    x.call("cuLaunchKernelEx", 450, 455, corr=6, driver=True)
    x.kernel("triton_fused(int)", 500, 520, corr=6, dynamic_smem=2048, static_smem=16)
    x.range("marker", 300, None, event_type=nb.NVTX_MARK)
    return x


def test_small_export_by_construction(tmp_path: Path) -> None:
    trace = tv.load(small_export().write(tmp_path / "a.sqlite"), cache=False)
    assert trace.ranks == (0,)
    ev = trace.events(0)
    base = nb.SESSION_UTC_NS
    by_name = ev.set_index(ev["name"].astype(str))
    assert by_name.loc["gemm_kernel(float*)", "ts_ns"] == base + 100
    assert by_name.loc["gemm_kernel(float*)", "dur_ns"] == 50
    assert by_name.loc["marker", "dur_ns"] == 0 and by_name.loc["marker", "kind"] == "user_annotation"
    assert by_name.loc["cuLaunchKernelEx", "kind"] == "cuda_driver"
    assert by_name.loc["cudaMemcpyAsync", "kind"] == "cuda_runtime"  # version suffix removed
    assert by_name.loc["Memcpy DtoH (Device -> Pageable)", "kind"] == "gpu_memcpy"
    assert by_name.loc["Stream Sync", "kind"] == "cuda_sync"
    classes = ev.dropna(subset=["gpu_class"]).set_index("name")["gpu_class"].astype(str).to_dict()
    assert classes["ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"] == "communication"
    assert classes["gemm_kernel(float*)"] == "compute" and classes["Memset (Device)"] == "memory"
    # Launch links, nesting under NVTX ranges, iterations from ProfilerStep ranges.
    gemm = by_name.loc["gemm_kernel(float*)"]
    assert ev.loc[gemm["launch_eid"], "name"] == "cudaLaunchKernel"
    call = ev.loc[gemm["launch_eid"]]
    assert ev.loc[call["parent_eid"], "name"] == "forward" and call["depth"] == 2
    assert by_name.loc["triton_fused(int)", "launch_eid"] == ev.index[ev["name"] == "cuLaunchKernelEx"][0]
    assert trace.iterations["step"].tolist() == [3]
    assert (ev.loc[ev["device"] >= 0, "step"] == 3).all()
    # Kernel, copy and set arguments.
    args = trace.gpu_args(0).set_index("eid")
    g = args.loc[gemm["eid"]]
    assert (g["grid_x"], g["grid_y"], g["block_x"], g["shared_memory_bytes"]) == (64, 2, 256, 1024)
    assert args.loc[by_name.loc["triton_fused(int)", "eid"], "shared_memory_bytes"] == 2064
    cp = args.loc[by_name.loc["Memcpy DtoH (Device -> Pageable)", "eid"]]
    assert (cp["copy_kind"], cp["bytes"], bool(cp["pageable"])) == ("DtoH", 4000, True)
    assert cp["bandwidth_gbps"] == pytest.approx(4000 / 20)
    assert args.loc[by_name.loc["Memset (Device)", "eid"], "copy_kind"] == "memset"
    assert trace.meta(0).device_properties[0]["name"] == "Test GPU"
    assert summary(trace).loc[0, "gpu_busy_ns"] == 50 + 30 + 20 + 10 + 20


@pytest.mark.parametrize("schema", ["old", "minimal"])
def test_schema_variants_read_the_same(tmp_path: Path, schema: str) -> None:
    x = small_export()
    new = tv.load(x.write(tmp_path / "new.sqlite"), cache=False)
    other = tv.load(x.write(tmp_path / f"{schema}.sqlite", schema=schema), cache=False)
    a, b = new.events(0), other.events(0)
    if schema == "old":
        # Inline names, gridDim/blockDim text, sharedMemory, raw pid/tid, no enums: same tables.
        pd.testing.assert_frame_equal(a, b)
        pd.testing.assert_frame_equal(new.gpu_args(0), other.gpu_args(0))
        return
    # Minimal: no session start (times relative), no eventClass, no srcKind/dstKind, no launch args.
    assert other.meta(0).base_time_ns == 0 and other.meta(0).extra["time_origin"] == "session start"
    assert (a["ts_ns"].to_numpy() - nb.SESSION_UTC_NS == b["ts_ns"].to_numpy()).all()
    assert a["kind"].tolist() == b["kind"].tolist()
    assert (a["launch_eid"] == b["launch_eid"]).all() and (a["parent_eid"] == b["parent_eid"]).all()
    assert "cuLaunchKernelEx" in set(b.loc[b["kind"] == "cuda_driver", "name"].astype(str))
    assert "Memcpy DtoH" in set(b["name"].astype(str))
    assert (other.gpu_args(0)["grid_x"] == -1).all()
    assert summary(new)["gpu_busy_ns"].tolist() == summary(other)["gpu_busy_ns"].tolist()


def test_missing_optional_tables(tmp_path: Path) -> None:
    x = small_export()
    p = x.write(tmp_path / "a.sqlite", omit=("TARGET_INFO_GPU", "PROCESSES", "ThreadNames", "ENUM_CUDA_MEMCPY_OPER"))
    trace = tv.load(p, cache=False)
    meta = trace.meta(0)
    assert meta.device_properties == () and "TARGET_INFO_GPU" in meta.extra["missing_tables"]
    assert meta.process_names == {} and meta.thread_names == ()
    assert "Memcpy DtoH (Device -> Pageable)" in set(trace.events(0)["name"].astype(str))  # built-in enum
    # No CUDA tables at all: a CPU-only rank of NVTX ranges, with a warning saying why.
    p = x.write(tmp_path / "nvtx_only.sqlite", omit=CUDA_TABLES)
    with pytest.warns(tv.TraceviewWarning, match=r"no CUDA tables .*--trace=cuda"):
        trace = tv.load(p, cache=False)
    ev = trace.events(0)
    assert set(ev["kind"]) == {"user_annotation"} and len(ev) == 3
    assert summary(trace).loc[0, "gpu_busy_ns"] == 0
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        assert tv.nvtx_gpu_projection(trace).empty


def test_several_gpus_in_one_process(tmp_path: Path) -> None:
    """One thread launches on two GPUs; a worker thread launches nothing; another process has no GPU."""
    x = nb.Export()
    x.threads[(nb.PID, 7)] = "dataloader"
    x.processes[99] = "launcher"
    x.range("step", 0, 1000)
    x.launch("k0", 10, 100, 50, corr=1, device=0, stream=7, context=1)
    x.launch("k1", 20, 100, 60, corr=2, device=1, stream=13, context=2)
    x.call("cudaStreamSynchronize_v3020", 30, 300, corr=3)
    x.sync(31, 299, corr=3, context=2, stream=13)  # device 1, by its context
    x.range("load batch", 5, 500, tid=7)
    x.range("launcher work", 0, 50, pid=99, tid=99)
    x.launch("k_other", 40, 400, 10, corr=1, pid=nb.PID + 1, tid=nb.PID + 1, device=0, stream=7, context=1)
    trace = tv.load(x.write(tmp_path / "multi.sqlite"), cache=False)
    # Ranks by (device, pid): (0, 4242), (0, 4243), (1, 4242).
    assert trace.ranks == (0, 1, 2)
    assert [(trace.meta(r).extra["device"], trace.meta(r).extra["pid"]) for r in trace.ranks] == [
        (0, nb.PID),
        (0, nb.PID + 1),
        (1, nb.PID),
    ]
    e0, e1, e2 = (trace.events(r) for r in trace.ranks)
    names = [set(e["name"].astype(str)) for e in (e0, e1, e2)]
    # The main thread drives both GPUs: it is in both of its process's ranks.
    assert {"step", "cudaLaunchKernel", "k0"} <= names[0] and "k1" not in names[0]
    assert {"step", "cudaLaunchKernel", "k1", "Stream Sync"} <= names[2] and "k0" not in names[2]
    # The dataloader thread launched nothing: its process's lowest rank. The launcher process: rank 0.
    assert "load batch" in names[0] and "load batch" not in names[2]
    assert "launcher work" in names[0] and "launcher work" not in names[1] | names[2]
    # Correlation id 1 is used by two processes: each kernel links to its own process's call.
    for e, kernel in ((e0, "k0"), (e1, "k_other"), (e2, "k1")):
        k = e[e["name"] == kernel].iloc[0]
        call = e.loc[k["launch_eid"]]
        assert call["name"] == "cudaLaunchKernel" and call["correlation"] == k["correlation"]
        assert call["pid"] == (nb.PID + 1 if kernel == "k_other" else nb.PID)
    assert e2.loc[e2["name"] == "Stream Sync", "device"].tolist() == [1]


def test_nvtx_kinds_domains_and_open_ranges(tmp_path: Path) -> None:
    x = nb.Export()
    x.domain(3, "NCCL")
    x.range("outer", 0, 100)
    x.range("ncclAllReduce", 10, 20, domain=3)
    x.range("async work", 30, 250, event_type=nb.NVTX_STARTEND)
    x.range("still open", 40, None)
    x.range(None, 50, 60)
    x.launch("k", 12, 30, 5, corr=1)
    trace = tv.load(x.write(tmp_path / "n.sqlite"), cache=False)
    ev = trace.events(0)
    names = ev["name"].astype(str).tolist()
    assert "NCCL:ncclAllReduce" in names and "async work" in names and "(unnamed NVTX range)" in names
    assert "still open" not in names
    meta = trace.meta(0)
    assert meta.skipped["NVTX ranges without an end"] == 1
    assert meta.extra["nvtx_domains"] == {"3": "NCCL"}
    comms = trace.comms(0)
    assert comms["collective"].tolist() == ["all_reduce"] and comms["source"].tolist() == ["annotation"]
    assert ev.loc[comms["eid"][0], "name"] == "NCCL:ncclAllReduce"


def test_bad_timestamps(tmp_path: Path) -> None:
    x = small_export()
    x.kernel("backwards", 900, 800, corr=99)
    x.kernel("untimed", 0, 0, corr=98)
    p = x.write(tmp_path / "bad.sqlite")
    with pytest.raises(
        tv.TraceFormatError, match=r"1 record\(s\) end before they start .*backwards.*bad_events='drop'"
    ):
        tv.load(p, cache=False)
    with pytest.warns(tv.TraceviewWarning, match="dropped"):
        trace = tv.load(p, cache=False, bad_events="drop")
    names = set(trace.events(0)["name"].astype(str))
    assert "backwards" not in names and "untimed" not in names
    assert trace.meta(0).skipped["GPU activities without timestamps"] == 1


# --------------------------------------------------------------------------------------
# Folders, ranks, cache and process pool
# --------------------------------------------------------------------------------------
def test_folder_of_per_rank_exports(tmp_path: Path) -> None:
    x = small_export()
    for r in (0, 1):
        x.write(tmp_path / "named" / f"rank{r}.sqlite")
    trace = tv.load(tmp_path / "named", cache=False)
    assert trace.ranks == (0, 1) and {trace.meta(r).rank_source for r in trace.ranks} == {"file name"}
    # No rank in the names: file order. Several ranks in one file: consecutive numbers.
    (tmp_path / "order").mkdir()
    shutil.copy(MFU, tmp_path / "order" / "a_node.sqlite")
    x.write(tmp_path / "order" / "b_node.sqlite")
    trace = tv.load(tmp_path / "order", cache=False)
    assert trace.ranks == (0, 1, 2)
    assert [Path(trace.meta(r).path).name for r in trace.ranks] == ["a_node.sqlite"] * 2 + ["b_node.sqlite"]
    assert {trace.meta(r).rank_source for r in trace.ranks} == {"order"}
    # Named files keep their ranks; unnamed ones take the free numbers; ranks= selects.
    x.write(tmp_path / "order" / "rank0.sqlite")
    trace = tv.load(tmp_path / "order", cache=False)
    assert trace.ranks == (0, 1, 2, 3)
    assert Path(trace.meta(0).path).name == "rank0.sqlite"
    assert tv.load(tmp_path / "order", ranks=[3], cache=False).meta(3).path == trace.meta(3).path
    # Mixed with Kineto traces in one folder.
    kb.write(tmp_path / "order" / "rank9.json", kb.doc([*kb.launch("k", 10, 20, 30, corr=1)], rank=9))
    assert tv.load(tmp_path / "order", cache=False).ranks == (0, 1, 2, 3, 9)


def test_rank_selection_and_parallel_heuristic(mfu: tv.Trace) -> None:
    from jupyter_traceview.loading import plan
    from jupyter_traceview.loading.readers.files import TraceFile

    one = tv.load(MFU, ranks=[1], cache=False)
    assert one.ranks == (1,)
    pd.testing.assert_frame_equal(one.events(1), mfu.events(1))
    with pytest.raises(tv.TraceFormatError, match=r"no rank among \[5\]"):
        tv.load(MFU, ranks=[5], cache=False)
    # SQLite exports read about 4x slower per byte than JSON: the pool starts earlier for them.
    sizes = [TraceFile(Path(n), 10, 0, None) for n in ("a.sqlite", "b.json", "c.json.gz")]
    assert plan.estimated_json_bytes(sizes) == 40 + 10 + 100


def test_report_beside_its_export_is_ignored(tmp_path: Path) -> None:
    small_export().write(tmp_path / "report1.sqlite")
    (tmp_path / "report1.nsys-rep").write_bytes(b"\x00binary report")
    assert tv.load(tmp_path, cache=False).ranks == (0,)
    (tmp_path / "report2.nsys-rep").write_bytes(b"\x00binary report")
    with pytest.raises(tv.TraceFormatError, match=r"report2\.nsys-rep.*nsys export --type sqlite"):
        tv.load(tmp_path, cache=False)


def test_cache_and_process_pool(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(MFU, folder / "node0.sqlite")
    small_export().write(folder / "node1.sqlite")
    serial = tv.load(folder, cache=False, engine="serial")
    pooled = tv.load(folder, cache=tmp_path / "cache", engine="process")
    cached = tv.load(folder, cache=tmp_path / "cache", engine="serial")
    assert serial.ranks == pooled.ranks == cached.ranks == (0, 1, 2)
    for other in (pooled, cached):
        for r in serial.ranks:
            pd.testing.assert_frame_equal(serial.events(r), other.events(r))
            pd.testing.assert_frame_equal(serial.gpu_args(r), other.gpu_args(r))
            pd.testing.assert_frame_equal(serial.comms(r), other.comms(r))
            assert serial.meta(r) == other.meta(r)


def test_dask_engine(tmp_path: Path, dask_client: object) -> None:
    client = dask_client
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(MFU, folder / "node0.sqlite")
    small_export().write(folder / "node1.sqlite")
    small_export().write(folder / "node2.sqlite", omit=CUDA_TABLES)  # NVTX only: a warning
    with pytest.warns(tv.TraceviewWarning, match="no CUDA tables"):
        serial = tv.load(folder, cache=False, engine="serial")
    with pytest.warns(tv.TraceviewWarning, match=r"no CUDA tables.*\(rank 3\)"):
        dask = tv.load(folder, cache=False, engine="dask", client=client)
    assert dask.ranks == serial.ranks == (0, 1, 2, 3)
    for r in serial.ranks:
        assert dask.meta(r) == serial.meta(r)
        pd.testing.assert_frame_equal(dask.events(r), serial.events(r))
    pd.testing.assert_frame_equal(summary(dask), summary(serial))
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        pd.testing.assert_frame_equal(tv.nvtx_gpu_projection(dask), tv.nvtx_gpu_projection(serial))
    picked = tv.load(folder, cache=False, engine="dask", client=client, ranks=[1])  # rank 3 not loaded: no warning
    assert picked.ranks == (1,) and picked.meta(1).path.endswith("node0.sqlite")


# --------------------------------------------------------------------------------------
# Bad files
# --------------------------------------------------------------------------------------
def check(exc: pytest.ExceptionInfo[tv.TraceFormatError], path: Path, *words: str) -> None:
    msg = str(exc.value)
    assert str(path) in msg, msg
    for w in words:
        assert w in msg, msg
    assert exc.value.hint, "every error says what to do"


def test_not_a_database(tmp_path: Path) -> None:
    p = tmp_path / "report.sqlite"
    p.write_text("this is a text file, not a database" * 10)
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "not an SQLite database", "nsys export --type sqlite")


def test_wrong_schema(tmp_path: Path) -> None:
    p = tmp_path / "other.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    con.execute("INSERT INTO users VALUES (1, 'x')")
    con.commit()
    con.close()
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "not an Nsight Systems export", "users")
    # In a folder next to a good export it is skipped with a warning.
    small_export().write(tmp_path / "good.sqlite")
    with pytest.warns(tv.TraceviewWarning, match=r"not traces: other\.sqlite"):
        assert tv.load(tmp_path, cache=False).ranks == (0,)


def test_truncated_export(tmp_path: Path) -> None:
    data = MFU.read_bytes()
    p = tmp_path / "cut.sqlite"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "truncated", f"{len(data):,}", f"{len(data) // 2:,}")
    p.write_bytes(data[:60])
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "truncated")


def test_damaged_export(tmp_path: Path) -> None:
    data = bytearray(RTX.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page : page * 8] = b"\xff" * (page * 7)  # the size is right, the pages are garbage
    p = tmp_path / "damaged.sqlite"
    p.write_bytes(bytes(data))
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "damaged SQLite database")


def test_empty_and_eventless_exports(tmp_path: Path) -> None:
    p = tmp_path / "empty.sqlite"
    p.write_bytes(b"")
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "empty (0 bytes)")
    x = nb.Export()
    p = x.write(tmp_path / "no_cuda_no_nvtx.sqlite", omit=("NVTX_EVENTS", *CUDA_TABLES))
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "neither CUDA nor NVTX", "--trace=cuda,nvtx")
    p = x.write(tmp_path / "no_rows.sqlite")
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "holds no kernels")


def test_nsys_rep_says_how_to_export(tmp_path: Path) -> None:
    p = tmp_path / "profile.nsys-rep"
    p.write_bytes(b"\x00\x01binary")
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "binary format", "nsys export --type sqlite -o profile.sqlite profile.nsys-rep")


def test_sqlite_content_under_another_name_is_read(tmp_path: Path) -> None:
    p = small_export().write(tmp_path / "a.sqlite")
    q = tmp_path / "trace.db"
    shutil.copy(p, q)
    assert tv.load(q, cache=False).meta(0).source_format == "nsys"
