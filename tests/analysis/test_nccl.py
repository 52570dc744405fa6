"""nccl_summary() and collective_calls(): metadata matching, message sizes, bandwidths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis.nccl import _collective_from_kernel, busbw_factor, size_bucket
from tests import job_builder as jb
from tests import kineto_builder as kb
from tests.conftest import KINETO_FOLDERS


@pytest.mark.parametrize("meta_on", ["kernel", "record_param_comms", "annotation"])
def test_all_reduce_bandwidth_by_construction(tmp_path: Path, meta_on: str) -> None:
    # 2^20 floats (4 MiB) all-reduced over 8 ranks in 1 ms.
    gpu = [jb.allreduce(100, 1000, nelems=1 << 20, meta_on=meta_on)]
    trace = jb.load_job(tmp_path, {0: gpu}, [(1, 0, 2000)], world_size=8)
    row = tv.nccl_summary(trace).iloc[0]
    assert row["collective"] == "all_reduce" and row["group_size"] == 8
    assert row["size_bucket_bytes"] == 4 << 20 and row["size_bucket"] == "4 MiB-8 MiB"
    assert row["count"] == 1 and row["total_ns"] == 1_000_000 and row["bytes_total"] == 4 << 20
    assert row["algbw_gbps"] == pytest.approx(4.194304)  # 4,194,304 B / 1,000,000 ns
    assert row["busbw_gbps"] == pytest.approx(4.194304 * 2 * 7 / 8)
    call = tv.collective_calls(trace).iloc[0]
    assert call["meta_source"] == meta_on and call["msg_bytes"] == 4 << 20


def test_message_sizes_and_factors_per_collective(tmp_path: Path) -> None:
    nccl = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"

    def coll(ts: float, name: str, kind: str, i: int, o: int, **kw: object) -> jb.Gpu:
        return jb.Gpu(name, ts, 100, stream=20, collective=kind, in_nelems=i, out_nelems=o, **kw)  # type: ignore[arg-type]

    gpu = [
        coll(100, "ncclDevKernel_AllGather_RING_LL", "allgather", 1024, 8192, meta_on="record_param_comms"),
        coll(300, "ncclDevKernel_AllGather_RING_LL", "allgather", 1024, -1, meta_on="annotation"),
        coll(500, "ncclDevKernel_ReduceScatter_RING_LL", "reduce_scatter", 8192, 1024),
        coll(700, nccl, "all_to_all", 8192, 8192),
        coll(900, nccl, "send", 8192, -1),
        coll(1100, "ncclDevKernel_Broadcast_RING_LL", "broadcast", 8192, 8192),
        coll(1300, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "allreduce", 8192, 8192, group_size=4),
        jb.Gpu("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 1500, 100, stream=20),
    ]
    trace = jb.load_job(tmp_path, {0: gpu}, [(1, 0, 2000)], world_size=8)
    calls = tv.collective_calls(trace)
    assert calls["collective"].tolist() == [
        "all_gather",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "send",
        "broadcast",
        "all_reduce",
        "all_gather",
    ]
    # The whole array for the gathers/scatters, the input otherwise; unknown without metadata.
    assert calls["msg_bytes"].tolist() == [32768] * 7 + [-1]
    assert calls["group_size"].tolist() == [8] * 6 + [4, 8]
    assert calls["meta_source"].iloc[-1] == "kernel name"
    s = tv.nccl_summary(trace).set_index(["collective", "group_size", "size_bucket_bytes"])
    algbw = 32768 / 100_000
    assert s.loc[("all_gather", 8, 32768), "count"] == 2
    assert s.loc[("all_gather", 8, 32768), "busbw_gbps"] == pytest.approx(algbw * 7 / 8)
    assert s.loc[("reduce_scatter", 8, 32768), "busbw_gbps"] == pytest.approx(algbw * 7 / 8)
    assert s.loc[("all_to_all", 8, 32768), "busbw_gbps"] == pytest.approx(algbw * 7 / 8)
    assert s.loc[("send", 8, 32768), "busbw_gbps"] == pytest.approx(algbw)
    assert s.loc[("broadcast", 8, 32768), "busbw_gbps"] == pytest.approx(algbw)
    assert s.loc[("all_reduce", 4, 32768), "busbw_gbps"] == pytest.approx(algbw * 2 * 3 / 4)
    unknown = s.loc[("all_gather", 8, -1)]
    assert unknown["size_bucket"] == "unknown" and unknown["bytes_total"] == -1
    assert np.isnan(unknown["algbw_gbps"]) and np.isnan(unknown["busbw_gbps"])


def test_kernels_of_one_call_are_one_call(tmp_path: Path) -> None:
    meta = {"Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": 1000, "Out msg nelems": 1000}
    events = [
        kb.step(1, 0, 1000),
        kb.cpu_op("c10d::allreduce_", 10, 20),
        kb.cpu_op("record_param_comms", 11, 10, **meta, **{"Group size": 2}),
        kb.runtime("cudaLaunchKernel", 12, 1, corr=1),
        kb.runtime("cudaLaunchKernel", 14, 1, corr=2),
        kb.kernel("ncclKernel_AllReduce_RING_LL_Sum_bf16", 100, 100, corr=1, stream=20),
        kb.kernel("ncclKernel_AllReduce_RING_LL_Sum_bf16", 150, 150, corr=2, stream=21),
    ]
    trace = tv.load(kb.write(tmp_path / "r.json", kb.doc(events, rank=0, world_size=2)), cache=False)
    call = tv.collective_calls(trace)
    assert len(call) == 1
    assert call.iloc[0]["kernels"] == 2 and call.iloc[0]["dur_ns"] == 200_000
    assert call.iloc[0]["msg_bytes"] == 2000 and call.iloc[0]["meta_source"] == "record_param_comms"
    row = tv.nccl_summary(trace).iloc[0]
    assert row["busbw_gbps"] == pytest.approx(2000 / 200_000 * 2 * 1 / 2)


def test_per_rank_and_job(tmp_path: Path) -> None:
    ranks, steps = jb.straggler_job(ranks=4, slow_rank=1, steps=2)
    trace = jb.load_job(tmp_path, ranks, steps)
    job = tv.nccl_summary(trace)
    per = tv.nccl_summary(trace, per="rank")
    assert len(job) == 1 and job.iloc[0]["count"] == 4 * 2 and "rank" not in job.columns
    assert per["rank"].tolist() == [0, 1, 2, 3] and (per["count"] == 2).all()
    assert per["total_ns"].sum() == job.iloc[0]["total_ns"]
    # The slow rank arrives last and waits least: its all-reduces are the shortest.
    assert per.set_index("rank")["total_ns"].idxmin() == 1


def test_dlrm_collectives(dlrm: tv.Trace) -> None:
    calls = tv.collective_calls(dlrm)
    # Every NCCL kernel sits under an nccl:* annotation: SendRecv kernels are all_to_all.
    assert len(calls) == 64 and (calls["meta_source"] == "annotation").all()
    assert calls["collective"].value_counts().to_dict() == {"all_to_all": 40, "all_reduce": 24}
    assert (calls["group_size"] == 8).all() and (calls["msg_bytes"] > 0).all()
    s = tv.nccl_summary(dlrm)
    assert s["count"].sum() == 64
    ev = dlrm.events()
    assert s["total_ns"].sum() == ev.loc[ev["gpu_class"] == "communication", "dur_ns"].sum()
    big = s[(s["collective"] == "all_reduce") & (s["size_bucket_bytes"] == 1 << 20)].iloc[0]
    assert big["busbw_gbps"] == pytest.approx(big["algbw_gbps"] * 2 * 7 / 8)


def test_kernel_name_parsing() -> None:
    assert (
        _collective_from_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long)") == "all_reduce"
    )
    assert _collective_from_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)") == "all_gather"
    assert _collective_from_kernel("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)") == "send_recv"
    assert _collective_from_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)") == "send_recv"
    assert _collective_from_kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL") == "reduce_scatter"
    assert _collective_from_kernel("ncclDevKernel_Broadcast_RING_LL") == "broadcast"
    assert _collective_from_kernel("deep_ep::intranode::dispatch<8>(int*)") == "deep_ep::intranode::dispatch"


def test_busbw_factors() -> None:
    assert busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    assert busbw_factor("all_gather", 8) == busbw_factor("reduce_scatter", 8) == pytest.approx(0.875)
    assert busbw_factor("all_to_all", 2) == pytest.approx(0.5)
    assert busbw_factor("send", -1) == busbw_factor("broadcast", 64) == 1.0
    assert np.isnan(busbw_factor("all_reduce", -1)) and np.isnan(busbw_factor("barrier", 8))


@given(st.integers(1, 2**62))
def test_size_buckets(size: int) -> None:
    b = int(size_bucket(np.array([size]))[0])
    assert b <= size < 2 * b and b & (b - 1) == 0


def test_size_bucket_edges() -> None:
    assert size_bucket(np.array([-1, 0, 1, 2, 3, 4, 1023, 1024, 2**53 + 1, 2**62 - 1])).tolist() == [
        -1,
        0,
        1,
        2,
        2,
        4,
        512,
        1024,
        2**53,
        2**61,
    ]


def test_cpu_only_and_no_collectives(dlrm: tv.Trace, tmp_path: Path) -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        assert tv.nccl_summary(trace).empty
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        assert tv.collective_calls(trace).empty
    single = jb.load_job(tmp_path, {0: [jb.compute(10, 10)]}, [(1, 0, 100)])
    out = tv.nccl_summary(single, per="rank")
    assert out.empty and list(out.columns)[:2] == ["rank", "collective"]
    with pytest.raises(tv.OptionError):
        tv.nccl_summary(dlrm, per="step")  # type: ignore[arg-type]
