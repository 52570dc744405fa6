"""One tiny trace per reader rule, with the answer known by construction."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb


def load_one(tmp_path: Path, content: object, name: str = "trace.json", **kw: object) -> tv.Trace:
    path = kb.write(tmp_path / name, content)
    return tv.load(path, cache=False, **kw)


def basic_events() -> list[dict]:
    return [
        kb.step(3, 1000, 60),
        kb.cpu_op("aten::mm", 1010, 20),
        *kb.launch("gemm_kernel", 1015, 1040, 30, corr=11),
        kb.cpu_op("aten::add", 1040, 10),
        *kb.launch("add_kernel", 1042, 1075, 5, corr=12),
    ]


def test_object_form(tmp_path: Path) -> None:
    trace = load_one(tmp_path, kb.doc(basic_events(), rank=2, world_size=4))
    assert trace.ranks == (2,)
    meta = trace.meta(2)
    assert meta.rank_source == "distributedInfo"
    assert meta.world_size == 4
    assert meta.backend == "nccl"
    assert meta.device_properties[0]["name"] == "Test GPU"
    ev = trace.events(2)
    assert len(ev) == 7
    assert ev["ts_ns"].is_monotonic_increasing
    assert ev["eid"].tolist() == list(range(7))


def test_bare_event_array(tmp_path: Path) -> None:
    trace = load_one(tmp_path, basic_events(), name="rank-5.json")
    assert trace.ranks == (5,)
    assert trace.meta(5).rank_source == "file name"
    assert (trace.events(5)["kind"] == "kernel").sum() == 2


def test_rank_defaults_to_zero(tmp_path: Path) -> None:
    trace = load_one(tmp_path, kb.doc(basic_events()), name="trace.json")
    assert trace.ranks == (0,)
    assert trace.meta(0).rank_source == "default"


def test_capitalised_2021_categories(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 30},
        {
            "ph": "X",
            "cat": "Runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 12,
            "dur": 4,
            "args": {"correlation": 5},
        },
        {
            "ph": "X",
            "cat": "Kernel",
            "name": "sgemm",
            "pid": 0,
            "tid": "stream 7",
            "ts": 20,
            "dur": 8,
            "args": {"correlation": 5, "stream": 7, "device": 0},
        },
        {
            "ph": "X",
            "cat": "Memcpy",
            "name": "Memcpy HtoD (Pageable -> Device)",
            "pid": 0,
            "tid": "stream 7",
            "ts": 30,
            "dur": 2,
            "args": {"correlation": 6, "stream": 7, "device": 0, "bytes": 64},
        },
        {
            "ph": "X",
            "cat": "Memset",
            "name": "Memset (Device)",
            "pid": 0,
            "tid": "stream 7",
            "ts": 33,
            "dur": 1,
            "args": {"correlation": 7, "stream": 7, "device": 0},
        },
        {"ph": "X", "cat": "Python", "name": "train.py(10): step", "pid": 1, "tid": 1, "ts": 5, "dur": 50},
    ]
    trace = load_one(tmp_path, events)
    ev = trace.events(0).set_index("name")
    assert ev.loc["aten::mm", "kind"] == "cpu_op"
    assert ev.loc["cudaLaunchKernel", "kind"] == "cuda_runtime"
    assert ev.loc["sgemm", "kind"] == "kernel"
    assert ev.loc["sgemm", "gpu_class"] == "compute"
    assert ev.loc["sgemm", "stream"] == 7
    assert ev.loc["Memcpy HtoD (Pageable -> Device)", "kind"] == "gpu_memcpy"
    assert ev.loc["Memset (Device)", "gpu_class"] == "memory"
    assert ev.loc["train.py(10): step", "kind"] == "python_function"
    # The launch link survives the old format; the string tid became its number.
    assert ev.loc["sgemm", "tid"] == 7
    args = trace.gpu_args(0)
    copy = args.loc[args["copy_kind"] == "HtoD"].iloc[0]
    assert bool(copy["pageable"]) is True


def test_float_microseconds_become_exact_nanoseconds(tmp_path: Path) -> None:
    events = [
        kb.cpu_op("a", 1419247332972.313, 22.51),
        kb.cpu_op("b", 1419247333291.708, 0.001),
        kb.kernel("k", 1419247333430.849, 3.136, corr=1),
    ]
    trace = load_one(tmp_path, kb.doc(events, base_time_ns=1751410836000000000))
    ev = trace.events(0).set_index("name")
    assert ev.loc["a", "ts_ns"] == 1751410836000000000 + 1419247332972313
    assert ev.loc["a", "dur_ns"] == 22510
    assert ev.loc["b", "dur_ns"] == 1
    assert ev.loc["k", "ts_ns"] == 1751410836000000000 + 1419247333430849
    assert ev.loc["k", "dur_ns"] == 3136
    assert trace.meta(0).ts_precision == "ns"
    assert trace.meta(0).base_time_ns == 1751410836000000000


def test_integer_microsecond_epoch_timestamps_are_exact(tmp_path: Path) -> None:
    events = [kb.cpu_op("a", 1694128201426674, 14455)]
    trace = load_one(tmp_path, kb.doc(events))
    ev = trace.events(0)
    assert ev["ts_ns"].iloc[0] == 1694128201426674000
    assert ev["dur_ns"].iloc[0] == 14455000
    assert trace.meta(0).ts_precision == "us"


def test_rocm_string_streams_and_hip_runtime(tmp_path: Path) -> None:
    events = [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "hipLaunchKernel",
            "pid": 9,
            "tid": 9,
            "ts": 10.5,
            "dur": 3.25,
            "args": {"stream": "0x0", "correlation": 117, "kernel": "k", "grid": "[1,1,1]"},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "void rocm_kernel<float>()",
            "pid": 2,
            "tid": 0,
            "ts": 20.0,
            "dur": 6.0,
            "args": {"device": 2, "stream": 0, "correlation": 117, "kind": "Dispatch Kernel"},
        },
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD (Host -> Device)",
            "pid": 2,
            "tid": 0,
            "ts": 27.0,
            "dur": 2.0,
            "args": {"device": 2, "stream": 0, "correlation": 118, "kind": "HtoD"},
        },
    ]
    trace = load_one(tmp_path, kb.doc(events))
    ev = trace.events(0).set_index("name")
    k = ev.loc["void rocm_kernel<float>()"]
    assert (k["device"], k["stream"], k["gpu_class"]) == (2, 0, "compute")
    assert ev.loc["hipLaunchKernel", "stream"] == -1  # a CPU call: its stream arg is not a lane
    assert k["launch_eid"] == ev.loc["hipLaunchKernel", "eid"]


def test_mtia_device_events(tmp_path: Path) -> None:
    events = [
        {
            "ph": "X",
            "cat": "mtia_runtime",
            "name": "runFunction - job_prep_and_submit_for_execution",
            "pid": 1,
            "tid": 1,
            "ts": 10,
            "dur": 5,
            "args": {"correlation": 3},
        },
        {
            "ph": "X",
            "cat": "mtia_ccp_events",
            "name": "pe_exe",
            "pid": 3,
            "tid": 4,
            "ts": 20,
            "dur": 9,
            "args": {"device": 3, "stream": 4, "correlation": 3},
        },
        {
            "ph": "X",
            "cat": "mtia_ccp_events",
            "name": "dma_copy",
            "pid": 3,
            "tid": 4,
            "ts": 30,
            "dur": 9,
            "args": {"device": 3, "stream": 4, "correlation": 4},
        },
    ]
    trace = load_one(tmp_path, kb.doc(events))
    ev = trace.events(0).set_index("name")
    assert ev.loc["pe_exe", "kind"] == "kernel"
    assert ev.loc["pe_exe", "gpu_class"] == "compute"
    assert ev.loc["dma_copy", "gpu_class"] == "memory"
    assert ev.loc["pe_exe", "launch_eid"] == ev.loc["runFunction - job_prep_and_submit_for_execution", "eid"]


def test_trace_without_gpu_events(tmp_path: Path) -> None:
    events = [kb.step(1, 0, 100), kb.cpu_op("aten::add", 10, 5)]
    trace = load_one(tmp_path, kb.doc(events, rank=0))
    ev = trace.events(0)
    assert ev["gpu_class"].isna().all()
    assert (ev["device"] == -1).all()
    assert len(trace.gpu_args(0)) == 0


def test_launch_links_nesting_and_steps(tmp_path: Path) -> None:
    trace = load_one(tmp_path, kb.doc(basic_events(), rank=0))
    ev = trace.events(0).set_index("name")
    step_eid = ev.loc["ProfilerStep#3", "eid"]
    mm = ev.loc["aten::mm"]
    assert mm["parent_eid"] == step_eid and mm["depth"] == 1
    launches = trace.events(0).query("name == 'cudaLaunchKernel'")
    assert launches["depth"].tolist() == [2, 2]
    assert launches["parent_eid"].tolist() == [mm["eid"], ev.loc["aten::add", "eid"]]
    k = ev.loc["gemm_kernel"]
    assert k["launch_eid"] == launches["eid"].iloc[0]
    assert k["parent_eid"] == -1 and k["depth"] == 0
    # The second kernel runs after the step's CPU span ended: it belongs by its launch.
    assert ev.loc["add_kernel", "ts_ns"] > (1000 + 60) * 1000
    assert ev.loc["add_kernel", "step"] == 3
    assert (trace.events(0)["step"] == 3).all()
    its = trace.iterations
    assert its[["rank", "step", "start_ns", "end_ns", "dur_ns"]].values.tolist() == [
        [0, 3, 1_000_000, 1_060_000, 60_000]
    ]
    assert its["gpu_start_ns"].iloc[0] == 1_040_000 and its["gpu_end_ns"].iloc[0] == 1_080_000


def test_instant_and_zero_length_events_nest(tmp_path: Path) -> None:
    events = [
        kb.cpu_op("outer", 0, 100),
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "pid": kb.CPU_PID,
            "tid": kb.MAIN_TID,
            "ts": 50,
            "s": "t",
            "args": {"Bytes": 10},
        },
        kb.cpu_op("zero", 60, 0),
        kb.cpu_op("after", 100, 10),
    ]
    trace = load_one(tmp_path, kb.doc(events))
    ev = trace.events(0).set_index("name")
    assert ev.loc["[memory]", "kind"] == "cpu_instant_event"
    assert ev.loc["[memory]", "dur_ns"] == 0
    assert ev.loc["[memory]", "depth"] == 1 and ev.loc["zero", "depth"] == 1
    assert ev.loc["after", "depth"] == 0  # touches the end of "outer": not inside it


def test_begin_end_pairs(tmp_path: Path) -> None:
    events = [
        {"ph": "B", "cat": "user_annotation", "name": "outer", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "B", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 12},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 15},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 30},
    ]
    trace = load_one(tmp_path, kb.doc(events))
    ev = trace.events(0).set_index("name")
    assert ev.loc["outer", "dur_ns"] == 20_000
    assert ev.loc["inner", "dur_ns"] == 3_000
    assert ev.loc["inner", "parent_eid"] == ev.loc["outer", "eid"]


def test_gpu_args_and_copy_kinds(tmp_path: Path) -> None:
    events = [
        kb.kernel("k", 10, 5, corr=1, grid=[40, 2, 1], block=[256, 1, 1]),
        kb.memcpy(20, 2, corr=2, kind="DtoH", nbytes=4096),
        kb.memcpy(30, 2, corr=3, kind="PtoP", nbytes=8, pageable=True),
        kb.memset(40, 1, corr=4),
    ]
    trace = load_one(tmp_path, kb.doc(events))
    args = trace.gpu_args(0)
    assert len(args) == 4
    k = args.iloc[0]
    assert (k["grid_x"], k["grid_y"], k["grid_z"], k["block_x"]) == (40, 2, 1, 256)
    assert k["registers_per_thread"] == 32 and k["occupancy_pct"] == 50
    assert args["copy_kind"].astype(object).tolist()[1:] == ["DtoH", "PtoP", "memset"]
    assert args["bytes"].tolist()[1:] == [4096, 8, 512]
    assert args["pageable"].tolist() == [False, False, True, False]


def test_stream_wait_event_arguments_in_gpu_args(tmp_path: Path) -> None:
    events = [
        kb.kernel("k", 10, 5, corr=1, stream=7),
        kb.sync("Stream Wait Event", 12, 0, corr=3, stream=20, wait_on_stream=7, wait_on_cuda_event_record_corr_id=2),
        kb.sync("Stream Sync", 16, 2, corr=4, stream=7),
    ]
    trace = load_one(tmp_path, kb.doc(events))
    ev = trace.events(0).set_index("eid")
    args = trace.gpu_args(0).set_index("eid")
    # The kernel and the wait record have rows; the plain Stream Sync (no awaited event) has none.
    assert sorted(ev.loc[args.index, "name"].astype(str)) == ["Stream Wait Event", "k"]
    wait = args.loc[ev.index[ev["name"] == "Stream Wait Event"][0]]
    assert (wait["wait_on_stream"], wait["wait_on_record_correlation"]) == (7, 2)
    assert wait["grid_x"] == -1 and np.isnan(wait["occupancy_pct"]) and not wait["pageable"]
    kernel = args.loc[ev.index[ev["name"] == "k"][0]]
    assert (kernel["wait_on_stream"], kernel["wait_on_record_correlation"]) == (-1, -1)


def test_comms_metadata_from_record_param_comms_and_annotations(tmp_path: Path) -> None:
    events = [
        kb.cpu_op(
            "record_param_comms",
            10,
            5,
            **{
                "Collective name": "_allgather_base",
                "dtype": "BFloat16",
                "In msg nelems": 1024,
                "Out msg nelems": 8192,
                "Group size": 8,
                "Process Group Name": "0",
                "Process Group Description": "default_pg",
                "Seq": 17,
            },
        ),
        kb.annotation("nccl:all_reduce", 20, 5, **{"Input Dims": [[394241]], "Input type": ["float"]}),
        kb.kernel(
            "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
            30,
            50,
            corr=9,
            **{
                "Collective name": "_allgather_base",
                "dtype": "BFloat16",
                "In msg nelems": 1024,
                "Out msg nelems": 8192,
                "Group size": 8,
            },
        ),
    ]
    trace = load_one(tmp_path, kb.doc(events))
    comms = trace.comms(0)
    assert comms["collective"].astype(object).tolist() == ["all_gather", "all_reduce", "all_gather"]
    assert comms["source"].astype(object).tolist() == ["record_param_comms", "annotation", "kernel"]
    first = comms.iloc[0]
    assert (first["in_nelems"], first["out_nelems"], first["group_size"], first["seq"]) == (1024, 8192, 8, 17)
    assert first["elem_bytes"] == 2 and first["pg_name"] == "0" and first["pg_desc"] == "default_pg"
    assert comms.iloc[1]["in_nelems"] == 394241 and comms.iloc[1]["elem_bytes"] == 4
    ev = trace.events(0)
    assert ev.loc[ev["kind"] == "kernel", "gpu_class"].tolist() == ["communication"]


def test_kineto_markers_and_metadata(tmp_path: Path) -> None:
    events = [
        *kb.metadata(100, name="python3", labels="CPU"),
        *kb.metadata(0, name="python3", labels="GPU 0"),
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": 100, "tid": 100, "args": {"name": "main thread"}},
        {
            "ph": "X",
            "cat": "Trace",
            "ts": 5,
            "dur": 200,
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "name": "PyTorch Profiler (0)",
            "args": {"Op count": 0},
        },
        {
            "name": "Iteration Start: PyTorch Profiler",
            "ph": "i",
            "s": "g",
            "pid": "Traces",
            "tid": "Trace PyTorch Profiler",
            "ts": 5,
        },
        {"ph": "s", "id": 11, "pid": 100, "tid": 100, "ts": 12, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 11, "pid": 0, "tid": 7, "ts": 40, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        *basic_events(),
    ]
    trace = load_one(tmp_path, kb.doc(events))
    meta = trace.meta(0)
    assert meta.profiler_start_ns == 5_000 and meta.profiler_end_ns == 205_000
    assert meta.process_labels == {100: "CPU", 0: "GPU 0"}
    assert meta.thread_names == ((100, 100, "main thread"),)
    assert meta.skipped == {"flow events": 2, "profiler markers": 2}
    assert len(trace.events(0)) == 7


def test_several_ranks_in_one_file_by_process_name(tmp_path: Path) -> None:
    events = []
    for r in (0, 1):
        cpu = 1000 + r
        events += kb.metadata(cpu, name=f"rank {r}", labels="CPU")
        events += kb.metadata(r, name=f"rank {r} GPU", labels=f"GPU {r}")
        events += [
            kb.step(1, 0, 100, pid=cpu, tid=cpu),
            kb.runtime("cudaLaunchKernel", 10, 5, corr=50, pid=cpu, tid=cpu),  # same correlation on both ranks
            kb.kernel("k", 20 + r, 10, corr=50, device=r, stream=7),
        ]
    trace = load_one(tmp_path, kb.doc(events))
    assert trace.ranks == (0, 1)
    for r in (0, 1):
        ev = trace.events(r).set_index("name")
        assert ev.loc["k", "device"] == r
        assert ev.loc["k", "launch_eid"] == ev.loc["cudaLaunchKernel", "eid"]
        assert trace.meta(r).rank_source == "process name"


def test_several_ranks_in_one_file_by_pid_map(tmp_path: Path) -> None:
    events = [kb.cpu_op("a", 0, 10, pid=7, tid=7), kb.cpu_op("b", 0, 10, pid=8, tid=8)]
    trace = load_one(tmp_path, kb.doc(events), pid_map={7: 3, 8: 4})
    assert trace.ranks == (3, 4)
    assert trace.events(4)["name"].tolist() == ["b"]
    with pytest.raises(tv.TraceFormatError, match=r"processes \[8\] have no rank.*pid_map"):
        load_one(tmp_path, kb.doc(events), name="again.json", pid_map={7: 3})


def test_odd_args_are_dropped_and_the_event_kept(tmp_path: Path) -> None:
    events = basic_events()
    events[1]["args"]["correlation"] = "not a number"  # one odd argument
    with pytest.warns(tv.TraceviewWarning, match="1 events had unreadable args"):
        trace = load_one(tmp_path, kb.doc(events))
    assert len(trace.events(0)) == len(events)
    assert trace.meta(0).skipped["events kept without their unreadable args"] == 1


def test_unreadable_events_raise_or_drop(tmp_path: Path) -> None:
    events = basic_events()
    events[1]["ts"] = "yesterday"
    with pytest.raises(tv.TraceFormatError, match=r"1 malformed event: 1 unreadable.*bad_events=.drop."):
        load_one(tmp_path, kb.doc(events))
    with pytest.warns(tv.TraceviewWarning, match="1 malformed events were dropped"):
        trace = load_one(tmp_path, kb.doc(events), name="b.json", bad_events="drop")
    assert len(trace.events(0)) == len(events) - 1


def test_numeric_strings_are_coerced(tmp_path: Path) -> None:
    events = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": "12", "tid": "34", "ts": "100", "dur": "5"}]
    trace = load_one(tmp_path, events)
    row = trace.events(0).iloc[0]
    assert (row["pid"], row["tid"], row["ts_ns"], row["dur_ns"]) == (12, 34, 100_000, 5_000)


def test_classifier_patterns(tmp_path: Path) -> None:
    events = [
        kb.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 0, 10, corr=1),
        kb.kernel("void deep_ep::intranode::dispatch<8, 768>()", 20, 10, corr=2),
        kb.kernel("my_a2a_kernel", 40, 10, corr=3),
        kb.kernel("Memcpy DtoD (Device -> Device)", 60, 10, corr=4),
        kb.sync("Stream Sync", 80, 10, corr=5),
        kb.kernel("volta_sgemm_128x64_nn", 100, 10, corr=6),
    ]
    path = kb.write(tmp_path / "t.json", kb.doc(events))
    trace = tv.load(path, cache=False)
    classes = trace.events(0).set_index("name")["gpu_class"].astype(object).to_dict()
    assert classes == {
        "ncclKernel_AllReduce_RING_LL_Sum_float": "communication",
        "void deep_ep::intranode::dispatch<8, 768>()": "communication",
        "my_a2a_kernel": "compute",
        "Memcpy DtoD (Device -> Device)": "memory",
        "Stream Sync": "other",
        "volta_sgemm_128x64_nn": "compute",
    }
    custom = trace.with_classifier(tv.Classifier().extend(communication=[r"^my_a2a"]))
    assert custom.events(0).set_index("name").loc["my_a2a_kernel", "gpu_class"] == "communication"
    assert trace.events(0).set_index("name").loc["my_a2a_kernel", "gpu_class"] == "compute"  # unchanged


def test_classifier_rejects_bad_patterns() -> None:
    with pytest.raises(ValueError, match="bad regular expression"):
        tv.Classifier(communication=("(",))
    with pytest.raises(TypeError, match="sequence of patterns"):
        tv.Classifier(memory="^Memcpy")  # type: ignore[arg-type]


def test_json_with_bom_and_whitespace(tmp_path: Path) -> None:
    content = b"\xef\xbb\xbf \n" + json.dumps(kb.doc(basic_events())).encode()
    trace = load_one(tmp_path, content)
    assert len(trace.events(0)) == 7


def test_eids_are_positions_and_links_point_inside(tmp_path: Path) -> None:
    trace = load_one(tmp_path, kb.doc(basic_events()))
    ev = trace.events(0)
    n = len(ev)
    for col in ("launch_eid", "parent_eid"):
        v = ev[col].to_numpy()
        assert ((v == -1) | ((v >= 0) & (v < n))).all()
    assert np.array_equal(ev["eid"].to_numpy(), np.arange(n))


def test_chunked_decoding_gives_the_same_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Big files are decoded in chunks; the result must not depend on where chunks fall."""
    from jupyter_traceview.loading.readers.kineto import decode

    events = [*kb.metadata(100, labels="CPU")]
    for i in range(40):
        t = i * 100
        events += [
            kb.step(i, t, 90),
            kb.cpu_op("aten::mm", t + 5, 30),
            *kb.launch("gemm", t + 8, t + 40, 20, corr=i + 1),
        ]
    events.insert(25, {"ph": "B", "cat": "user_annotation", "name": "span", "pid": 100, "tid": 100, "ts": 1000})
    events.insert(90, {"ph": "E", "pid": 100, "tid": 100, "ts": 2500})
    events.append(kb.memcpy(5000, 3, corr=999))
    events.append(
        {
            "ph": "X",
            "cat": "Trace",
            "ts": 0,
            "dur": 9000,
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "name": "PyTorch Profiler (0)",
        }
    )
    path = kb.write(tmp_path / "rank-0.json", kb.doc(events, rank=0))
    whole = tv.load(path, cache=False)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1)
    monkeypatch.setattr(decode, "CHUNK_EVENTS", 7)
    chunked = tv.load(path, cache=False)
    pd_testing = __import__("pandas").testing
    pd_testing.assert_frame_equal(whole.events(0), chunked.events(0))
    pd_testing.assert_frame_equal(whole.gpu_args(0), chunked.gpu_args(0))
    pd_testing.assert_frame_equal(whole.comms(0), chunked.comms(0))
    assert whole.meta(0) == chunked.meta(0)
    assert chunked.events(0).set_index("name").loc["span", "dur_ns"] == 1_500_000


def test_chunked_decoding_reports_bad_events_over_all_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_traceview.loading.readers.kineto import decode

    events = [kb.cpu_op(f"op{i}", i * 10, 5) for i in range(30)]
    events[3]["dur"] = -1
    events[25]["dur"] = -2
    events[17]["ts"] = "soon"
    path = kb.write(tmp_path / "rank-0.json", kb.doc(events))
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1)
    monkeypatch.setattr(decode, "CHUNK_EVENTS", 4)
    with pytest.raises(
        tv.TraceFormatError,
        match=r"3 malformed events: 2 with a negative 'dur' \(first: event #3\).*1 unreadable \(first: event #17",
    ):
        tv.load(path, cache=False)
    with pytest.warns(tv.TraceviewWarning, match="3 malformed events were dropped"):
        trace = tv.load(path, cache=False, bad_events="drop")
    assert len(trace.events(0)) == 27


def _merged_events() -> list[dict]:
    events: list[dict] = []
    for r in (0, 1):
        cpu = 1000 + r
        events += kb.metadata(cpu, name=f"rank {r}", labels="CPU")
        events += [kb.step(1, 0, 100, pid=cpu, tid=cpu), kb.cpu_op(f"op{r}", 10, 5, pid=cpu, tid=cpu)]
    # Global instant events of a file merged from several ranks: no process, maybe a rank.
    instant = {"ph": "i", "s": "g", "cat": "cpu_instant_event", "tid": ""}
    events += [
        {**instant, "pid": "", "ts": 50, "name": "to rank 1", "args": {"rank": 1}},
        {**instant, "pid": "", "ts": 60, "name": "no rank"},
        {**instant, "pid": "global", "ts": 70, "name": "to rank 0", "args": {"rank": "0"}},
    ]
    return events


def test_merged_ranks_with_processless_instant_events_load_by_default(tmp_path: Path) -> None:
    trace = load_one(tmp_path, kb.doc(_merged_events()))
    assert trace.ranks == (0, 1)
    assert trace.events(0)["name"].tolist() == ["ProfilerStep#1", "op0", "to rank 0"]
    assert trace.events(1)["name"].tolist() == ["ProfilerStep#1", "op1", "to rank 1"]
    assert trace.meta(0).skipped["instant events without a process or rank"] == 1


def test_pid_map_keys_are_pids_as_written(tmp_path: Path) -> None:
    events = [
        kb.cpu_op("a", 0, 10, pid="p7", tid=7),
        kb.cpu_op("b", 0, 10, pid=8, tid=8),
        kb.cpu_op("c", 0, 10, pid="9", tid=9),
        kb.cpu_op("d", 0, 10, pid="host", tid=9),
    ]
    trace = load_one(tmp_path, kb.doc(events), pid_map={"p7": 3, 8: 4, "9": 5, "host": 6})
    assert trace.ranks == (3, 4, 5, 6)
    assert [trace.events(r)["name"].tolist() for r in trace.ranks] == [["a"], ["b"], ["c"], ["d"]]
    with pytest.raises(tv.TraceFormatError, match=r"processes \['host', 'p7', '9'\] have no rank.*pid_map"):
        load_one(tmp_path, kb.doc(events), name="again.json", pid_map={8: 4})
    with pytest.raises(ValueError, match="pid_map values must be ranks"):
        load_one(tmp_path, kb.doc(events), name="again2.json", pid_map={8: -1})


def test_epoch_microsecond_timestamps_keep_every_nanosecond(tmp_path: Path) -> None:
    # A float64 holds 1694128201545123.457 only to ~0.25 us: the digits are read from the text.
    events = [kb.cpu_op("a", 0, 10), kb.cpu_op("b", 0, 10), kb.cpu_op("c", 0, 10)]
    text = json.dumps(kb.doc(events))
    for ts in ("1694128201545123.457", "1694128201545123.4566", "1694128201545124"):
        text = text.replace('"ts": 0,', f'"ts": {ts},', 1)
    path = tmp_path / "trace.json"
    path.write_text(text)
    ev = tv.load(path, cache=False).events(0)
    assert ev["ts_ns"].tolist() == [1694128201545123457, 1694128201545123457, 1694128201545124000]
