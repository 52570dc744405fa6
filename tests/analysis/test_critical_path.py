"""Critical path: tiny traces whose critical path is known by construction, real traces for invariants."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis.critical_path import CRITICAL_PATH_CATEGORIES
from tests import kineto_builder as kb

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
COLUMNS = ["rank", "eid", "name", "kind", "category", "edge", "start_ns", "end_ns", "dur_ns", "from_rank"]


def load(tmp_path: Path, events: list[dict], *, rank: int | None = None, name: str = "trace.json") -> tv.Trace:
    return tv.load(kb.write(tmp_path / name, kb.doc(events, rank=rank)), cache=False)


def by_category(path: pd.DataFrame) -> dict[str, int]:
    sums = path.groupby("category")["dur_ns"].sum()
    return {c: int(v) for c, v in sums.items() if v}


def last_end(trace: tv.Trace, rank: int) -> int:
    """End of the rank's last event that can be on a path (markers and sync records cannot)."""
    ev = trace.events(rank)
    ev = ev.loc[~ev["kind"].isin(["other", "cpu_instant_event", "cuda_sync", "gpu_user_annotation"])]
    return int((ev["ts_ns"] + ev["dur_ns"]).max())


def check_tiling(path: pd.DataFrame) -> None:
    """Segments are in time order, touch end to start, and add up to the path's length."""
    assert list(path.columns) == COLUMNS
    assert (path["dur_ns"] >= 0).all()
    assert (path["end_ns"] - path["start_ns"] == path["dur_ns"]).all()
    assert (path["start_ns"].to_numpy()[1:] == path["end_ns"].to_numpy()[:-1]).all()
    assert int(path["dur_ns"].sum()) == int(path["end_ns"].iloc[-1] - path["start_ns"].iloc[0])


# ---------------------------------------------------------------------- one rank
def cpu_bound_events() -> list[dict]:
    """Ten ops, each launching a 2.5 us kernel; the CPU is the bottleneck."""
    events = []
    for i in range(10):
        base = 10 * i
        events.append(kb.cpu_op(f"aten::op{i}", base, 8))
        events.append(kb.runtime("cudaLaunchKernel", base + 2, 2, corr=i + 1))
        events.append(kb.kernel(f"small_kernel_{i}", base + 7, 2.5, corr=i + 1))
    return events


def test_cpu_bound_path_runs_through_cpu_ops_and_launches(tmp_path: Path) -> None:
    path = tv.critical_path(load(tmp_path, cpu_bound_events()), ranks=0)
    check_tiling(path)
    # From the first op's start (0) to the last kernel's end (99.5 us):
    # op self time 2+4 us for ops 0-8 and 2 us for op 9, launch calls 2 us each (0-8),
    # 2 us idle between ops, the last launch's 5 us delay, the last kernel's 2.5 us.
    assert by_category(path) == {
        "cpu": 56_000,
        "cpu_runtime": 18_000,
        "cpu_idle": 18_000,
        "launch_delay": 5_000,
        "gpu_compute": 2_500,
    }
    assert path["start_ns"].iloc[0] == path["start_ns"].min()
    assert path["name"].iloc[-1] == "small_kernel_9"
    assert path.loc[path["edge"] == "launch", "name"].tolist() == ["small_kernel_9"]
    cats = tv.critical_path(load(tmp_path, cpu_bound_events()), ranks=0, view="categories")
    assert cats["category"].tolist() == list(CRITICAL_PATH_CATEGORIES)
    assert int(cats["time_ns"].sum()) == 99_500
    assert cats["time_pct"].sum() == pytest.approx(100.0)


def gpu_bound_events() -> list[dict]:
    """Ten quick ops launch ten 20 us kernels that run back to back."""
    events = []
    for i in range(10):
        events.append(kb.cpu_op(f"aten::op{i}", 2 * i, 1.5))
        events.append(kb.runtime("cudaLaunchKernel", 2 * i + 0.2, 1, corr=i + 1))
        events.append(kb.kernel(f"gemm_{i}", 5 + 20 * i, 20, corr=i + 1))
    return events


def test_gpu_bound_path_runs_through_kernels(tmp_path: Path) -> None:
    path = tv.critical_path(load(tmp_path, gpu_bound_events()), ranks=0)
    check_tiling(path)
    assert by_category(path) == {"cpu": 200, "launch_delay": 4_800, "gpu_compute": 200_000}
    kernels = path.loc[path["category"] == "gpu_compute", "name"].tolist()
    assert kernels == [f"gemm_{i}" for i in range(10)]


def test_synchronisation_makes_the_cpu_wait_for_the_gpu(tmp_path: Path) -> None:
    events = [
        kb.cpu_op("aten::mm", 0, 4),
        kb.runtime("cudaLaunchKernel", 1, 2, corr=1),
        kb.kernel("gemm", 5, 50, corr=1),
        kb.runtime("cudaStreamSynchronize", 10, 47, corr=2),
        kb.sync("Stream Sync", 11, 45, corr=2),
        kb.cpu_op("aten::item", 60, 5),
    ]
    path = tv.critical_path(load(tmp_path, events), ranks=0)
    check_tiling(path)
    assert path["edge"].tolist() == ["self", "launch", "span", "sync", "idle", "span"]
    assert path["name"].tolist() == ["aten::mm", "gemm", "gemm", "cudaStreamSynchronize", "aten::item", "aten::item"]
    assert by_category(path) == {
        "cpu": 6_000,
        "launch_delay": 4_000,
        "gpu_compute": 50_000,
        "sync": 2_000,
        "cpu_idle": 3_000,
    }


def test_sync_on_another_stream_does_not_wait_for_this_one(tmp_path: Path) -> None:
    events = [
        kb.runtime("cudaLaunchKernel", 0, 1, corr=1),
        kb.kernel("long_on_7", 2, 100, corr=1, stream=7),
        kb.runtime("cudaStreamSynchronize", 10, 20, corr=2),
        kb.sync("Stream Sync", 11, 18, corr=2, stream=9),
        kb.cpu_op("aten::next", 40, 200),
    ]
    path = tv.critical_path(load(tmp_path, events), ranks=0)
    # The sync waited for stream 9 (idle), not for the kernel on stream 7: the CPU path wins.
    assert "gpu_compute" not in by_category(path)
    assert path["name"].iloc[-1] == "aten::next"


def test_stream_wait_event_records_link_streams(tmp_path: Path) -> None:
    events = [
        kb.runtime("cudaLaunchKernel", 0, 1, corr=1),
        kb.kernel("producer", 2, 40, corr=1, stream=7),
        kb.runtime("cudaEventRecord", 2, 1, corr=2),
        kb.runtime("cudaStreamWaitEvent", 4, 1, corr=3),
        kb.sync("Stream Wait Event", 5, 0, corr=3, stream=20, wait_on_stream=7, wait_on_cuda_event_record_corr_id=2),
        kb.runtime("cudaLaunchKernel", 6, 1, corr=4),
        kb.kernel("consumer", 43, 10, corr=4, stream=20),
    ]
    path = tv.critical_path(load(tmp_path, events), ranks=0)
    check_tiling(path)
    assert path["name"].tolist() == ["producer", "producer", "consumer", "consumer"]
    assert path["edge"].tolist() == ["launch", "span", "stream_wait", "span"]
    assert by_category(path) == {"launch_delay": 2_000, "gpu_compute": 50_000, "stream_wait": 1_000}


def test_unrecorded_stream_waits_are_inferred(tmp_path: Path) -> None:
    # No Stream Wait Event record: "consumer" starts 36 us after its launch, 1 us after
    # "producer" on another stream ends.
    events = [
        kb.runtime("cudaLaunchKernel", 0, 1, corr=1),
        kb.kernel("producer", 2, 40, corr=1, stream=7),
        kb.runtime("cudaLaunchKernel", 6, 1, corr=4),
        kb.kernel("consumer", 43, 10, corr=4, stream=20),
    ]
    path = tv.critical_path(load(tmp_path, events), ranks=0)
    assert path["edge"].tolist() == ["launch", "span", "inferred_wait", "span"]
    # A kernel that starts soon after its launch is not held by anything.
    events[-1] = kb.kernel("consumer", 15, 30, corr=4, stream=20)
    events[1] = kb.kernel("producer", 2, 12.5, corr=1, stream=7)
    path = tv.critical_path(load(tmp_path / "b", events), ranks=0)
    assert "inferred_wait" not in set(path["edge"])


def test_thread_fork_and_join_are_inferred(tmp_path: Path) -> None:
    # loss.backward() on the main thread (tid 100) blocks while the autograd thread (tid 200)
    # runs the backward ops, which launch the kernels.
    grad = {"tid": 200}
    events = [
        kb.cpu_op("aten::forward", 0, 10),
        kb.cpu_op("autograd::backward", 12, 100),
        kb.cpu_op("aten::ones_like", 13, 2),
        kb.cpu_op("MmBackward0", 40, 30, **grad),
        kb.runtime("cudaLaunchKernel", 45, 2, corr=1, tid=200),
        kb.kernel("gemm_backward", 50, 20, corr=1),
        kb.cpu_op("AddBackward0", 75, 30, **grad),
        kb.cpu_op("optimizer.step", 115, 10),
    ]
    path = tv.critical_path(load(tmp_path, events), ranks=0)
    check_tiling(path)
    # forward, idle, the fork to the autograd thread (28 us after backward() began),
    # MmBackward0 and its launch, idle, AddBackward0, the join back (backward() returns
    # 7 us after AddBackward0 ends), idle, the optimizer step.
    assert list(zip(path["name"], path["edge"], path["dur_ns"] // 1000, strict=True)) == [
        ("aten::forward", "span", 10),
        ("autograd::backward", "idle", 2),
        ("MmBackward0", "inferred_fork", 28),
        ("MmBackward0", "self", 5),
        ("cudaLaunchKernel", "span", 2),
        ("MmBackward0", "self", 23),
        ("AddBackward0", "idle", 5),
        ("AddBackward0", "span", 30),
        ("autograd::backward", "inferred_join", 7),
        ("optimizer.step", "idle", 3),
        ("optimizer.step", "span", 10),
    ]
    # Without the autograd thread's help, nothing is inferred: the main thread's own time.
    alone = tv.critical_path(
        load(
            tmp_path / "alone",
            [e for e in events if e["tid"] != 200 and e["cat"] != "kernel"] + [kb.kernel("k", 0, 1, corr=99)],
        ),
        ranks=0,
    )
    assert not alone["edge"].str.startswith("inferred").any()


def test_synchronous_copy_waits_for_its_own_copy(tmp_path: Path) -> None:
    events = [
        kb.runtime("cudaLaunchKernel", 0, 1, corr=1),
        kb.kernel("gemm", 2, 30, corr=1),
        kb.runtime("cudaMemcpy", 3, 40, corr=2),
        kb.memcpy(32, 10, corr=2, kind="DtoH"),
        kb.cpu_op("aten::after", 44, 3),
    ]
    path = tv.critical_path(load(tmp_path, events), ranks=0)
    check_tiling(path)
    assert path["name"].tolist() == [
        "gemm",
        "gemm",
        "Memcpy DtoH (Pinned -> Device)",
        "cudaMemcpy",
        "aten::after",
        "aten::after",
    ]
    assert path["edge"].tolist() == ["launch", "span", "span", "sync", "idle", "span"]


def test_cpu_only_trace_gives_an_empty_frame_and_a_warning(tmp_path: Path) -> None:
    trace = load(tmp_path, [kb.cpu_op("aten::add", 0, 5)])
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity") as caught:
        path = tv.critical_path(trace, ranks=0)
    assert list(path.columns) == COLUMNS and len(path) == 0
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity") as more:
        cats = tv.critical_path(trace, view="categories")
    # The warnings name the caller's line (not the library's, nor the removed-keyword wrapper's).
    assert all(Path(w.filename) == Path(__file__) for w in [*caught, *more]), [w.filename for w in caught]
    assert int(cats["time_ns"].sum()) == 0 and cats["time_pct"].isna().all()


def test_unknown_rank_and_view(tmp_path: Path) -> None:
    trace = load(tmp_path, gpu_bound_events())
    with pytest.raises(tv.TraceSelectionError, match="unknown rank 3"):
        tv.critical_path(trace, ranks=3)
    with pytest.raises(tv.OptionError, match=r"view=.* is not accepted"):
        tv.critical_path(trace, view="tree")  # type: ignore[arg-type]
    # rank= was replaced by ranks= (as every analysis takes its ranks): the error says so.
    with pytest.raises(tv.OptionError, match=r"rank= was removed; pass ranks=0"):
        tv.critical_path(trace, rank=0)  # type: ignore[call-arg]


def test_time_range_clips_the_path(tmp_path: Path) -> None:
    trace = load(tmp_path, gpu_bound_events())
    t0 = trace.t0_ns
    path = tv.critical_path(trace, ranks=0, time_range=(t0 + 30_000, t0 + 100_000))
    check_tiling(path)
    assert path["start_ns"].min() >= t0 + 30_000
    assert path["end_ns"].max() == t0 + 100_000


# ---------------------------------------------------------------------- across ranks
def write_two_ranks(folder: Path, *, seq: bool, skew_us: float = 0.0) -> Path:
    """Rank 0 reaches the all-reduce early; rank 1 computes on the CPU for 80 us first."""
    coll = {"Collective name": "allreduce", "Seq": 0, "Process Group Name": "0", "Group size": 2} if seq else {}
    rank0 = [
        kb.cpu_op("c10d::allreduce_", 0, 12),
        kb.runtime("cudaLaunchKernel", 8, 2, corr=1),
        kb.kernel(ALLREDUCE, 12, 88, corr=1, stream=20, **coll),
        kb.runtime("cudaLaunchKernel", 20, 2, corr=2),
        kb.kernel("after_allreduce", 101, 19, corr=2, stream=20),
    ]
    o = skew_us
    rank1 = [
        kb.cpu_op("aten::slow_cpu_work", 0 + o, 80),
        kb.cpu_op("c10d::allreduce_", 80 + o, 4),
        kb.runtime("cudaLaunchKernel", 81 + o, 2, corr=1),
        kb.kernel(ALLREDUCE, 85 + o, 15, corr=1, stream=20, **coll),
    ]
    kb.write(folder / "rank-0.json", kb.doc(rank0, rank=0, world_size=2))
    kb.write(folder / "rank-1.json", kb.doc(rank1, rank=1, world_size=2))
    return folder


@pytest.mark.parametrize("seq", [True, False], ids=["by-seq", "by-order"])
def test_cross_rank_path_goes_through_the_late_rank(tmp_path: Path, seq: bool) -> None:
    trace = tv.load(write_two_ranks(tmp_path, seq=seq), cache=False)
    path = tv.critical_path(trace)
    check_tiling(path)
    assert path["rank"].tolist() == [1, 1, 1, 0, 0, 0]
    assert path["edge"].tolist() == ["span", "self", "launch", "collective", "stream", "span"]
    jump = path.loc[path["edge"] == "collective"].iloc[0]
    assert (jump["rank"], jump["from_rank"], jump["dur_ns"]) == (0, 1, 15_000)
    assert by_category(path) == {
        "cpu": 81_000,
        "launch_delay": 4_000,
        "gpu_communication": 15_000,
        "gpu_gap": 1_000,
        "gpu_compute": 19_000,
    }
    # Rank 0 alone: the time its all-reduce waited for rank 1 is split off.
    mine = tv.critical_path(trace, ranks=0)
    check_tiling(mine)
    wait = mine.loc[mine["category"] == "wait_other_rank"].iloc[0]
    assert (wait["dur_ns"], wait["from_rank"], wait["edge"]) == (73_000, 1, "wait")
    assert by_category(mine)["gpu_communication"] == 15_000
    # ranks=[0] is ranks=0: the path within rank 0, its waits for rank 1 split off.
    pd.testing.assert_frame_equal(tv.critical_path(trace, ranks=[0]), mine)
    # A trace holding rank 0 only: no other rank to wait for.
    alone = tv.critical_path(trace.select(ranks=[0]))
    assert "wait_other_rank" not in by_category(alone) and set(alone["rank"]) == {0}
    # Both ranks named: the path across them, as with every rank.
    pd.testing.assert_frame_equal(tv.critical_path(trace, ranks=[0, 1]), path)


def test_skewed_clocks_warn_and_alignment_repairs_them(tmp_path: Path) -> None:
    straight = tv.critical_path(tv.load(write_two_ranks(tmp_path / "a", seq=True), cache=False))
    skewed = tv.load(write_two_ranks(tmp_path / "b", seq=True, skew_us=5_000), cache=False)
    with pytest.warns(tv.TraceviewWarning, match="clocks disagree") as caught:
        unaligned = tv.critical_path(skewed)
    assert all(Path(w.filename) == Path(__file__) for w in caught), [w.filename for w in caught]
    assert "collective" not in set(unaligned["edge"])  # the impossible collective is not followed
    aligned = tv.align_clocks(skewed, min_collectives=1)
    fixed = tv.critical_path(aligned)
    pd.testing.assert_frame_equal(
        fixed.drop(columns=["start_ns", "end_ns"]), straight.drop(columns=["start_ns", "end_ns"])
    )


# ---------------------------------------------------------------------- real traces
def test_dlrm_paths(dlrm: tv.Trace) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cross = tv.critical_path(dlrm)
    check_tiling(cross)
    # It ends at the trace's last event, on the rank that has it.
    ends = {r: last_end(dlrm, r) for r in dlrm.ranks}
    assert int(cross["end_ns"].iloc[-1]) == max(ends.values())
    # It crosses ranks through an all-to-all whose last rank to arrive was another one.
    jumps = cross.loc[cross["edge"] == "collective"]
    assert len(jumps) >= 1 and (jumps["from_rank"] != jumps["rank"]).all()
    assert set(cross["category"]) <= set(CRITICAL_PATH_CATEGORIES)
    for r in (0, 5):
        one = tv.critical_path(dlrm, ranks=r)
        check_tiling(one)
        assert set(one["rank"]) == {r}
        assert int(one["end_ns"].iloc[-1]) == ends[r]
        # The 8-rank all-to-alls keep rank r waiting for late ranks.
        assert by_category(one).get("wait_other_rank", 0) > 1_000_000
        cats = tv.critical_path(dlrm, ranks=r, view="categories")
        assert int(cats["time_ns"].sum()) == int(one["dur_ns"].sum())


def test_alexnet_path_uses_sync_and_stream_wait_records() -> None:
    from tests.conftest import KINETO_FOLDERS

    trace = tv.load(KINETO_FOLDERS["hta_alexnet"], cache=False)
    path = tv.critical_path(trace, ranks=0)
    check_tiling(path)
    edges = set(path["edge"])
    assert {"sync", "stream_wait", "launch", "stream", "span", "self"} <= edges
    assert "inferred_wait" not in edges  # the trace has Stream Wait Event records
    assert int(path["end_ns"].iloc[-1]) == last_end(trace, 0)


@pytest.mark.parametrize("folder", ["h100_bert_small", "hta_mi250_rocm", "hta_triton"])
def test_other_real_traces_tile(folder: str) -> None:
    from tests.conftest import KINETO_FOLDERS

    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    for r in trace.ranks:
        check_tiling(tv.critical_path(trace, ranks=r))
    check_tiling(tv.critical_path(trace))


def test_inconsistent_matches_are_not_followed() -> None:
    from tests.conftest import KINETO_FOLDERS

    # Two ranks sampled from a 128-rank job: matched by order, most of their collectives
    # cannot be the same ones (one starts after the other ended).
    trace = tv.load(KINETO_FOLDERS["hta_dlrm_2of128_ranks"], cache=False)
    with pytest.warns(tv.TraceviewWarning, match="6 of 10 matched collective"):
        path = tv.critical_path(trace)
    check_tiling(path)
    for r in trace.ranks:
        with pytest.warns(tv.TraceviewWarning, match="not followed across ranks"):
            check_tiling(tv.critical_path(trace, ranks=r))


def test_iterations_scope(dlrm: tv.Trace) -> None:
    steps = sorted(set(dlrm.iterations["step"]))
    path = tv.critical_path(dlrm, ranks=1, iterations=steps[-1])
    check_tiling(path)
    eids = set(dlrm.select(ranks=1, iterations=steps[-1]).events(1)["eid"])
    assert set(path["eid"]) <= eids


# ---------------------------------------------------------------------- properties
@st.composite
def random_rank(draw: st.DrawFn) -> list[dict]:
    events: list[dict] = []
    t = 0.0
    corr = 1
    for _ in range(draw(st.integers(1, 12))):
        dur = draw(st.integers(2, 40))
        events.append(kb.cpu_op("op", t, dur))
        n_launch = draw(st.integers(0, 3))
        for j in range(n_launch):
            lt = t + 1 + j * (dur - 1) / max(n_launch, 1) / 2
            stream = draw(st.sampled_from([7, 20]))
            events.append(kb.runtime("cudaLaunchKernel", lt, 0.5, corr=corr))
            events.append(
                kb.kernel("k", lt + draw(st.integers(1, 30)), draw(st.integers(0, 30)), corr=corr, stream=stream)
            )
            corr += 1
        if draw(st.booleans()):
            events.append(kb.runtime("cudaDeviceSynchronize", t + dur - 0.5, 0.25, corr=corr))
            corr += 1
        t += dur + draw(st.integers(0, 5))
    return events


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=random_rank())
def test_random_traces_give_a_tiling_path(tmp_path: Path, events: list[dict]) -> None:
    # Overlapping kernels on one stream and syncs that return early are allowed: the path
    # still covers its span exactly once.
    folder = tmp_path / f"h{abs(hash(str(events)))}"
    trace = load(folder, [*events, kb.kernel("anchor", 0, 0.001, corr=10_000, stream=99)])
    path = tv.critical_path(trace, ranks=0)
    check_tiling(path)
    ev = trace.events(0)
    assert int(path["end_ns"].iloc[-1]) == int((ev["ts_ns"] + ev["dur_ns"]).max())
    assert set(path["eid"]) <= set(ev["eid"])


# ---------------------------------------------------------------------- dask
def test_dask_engine_gives_the_same_paths(dask_client: object, dlrm: tv.Trace) -> None:
    trace = tv.load(tv.sample_path(), engine="dask", client=dask_client, cache=False)
    pd.testing.assert_frame_equal(tv.critical_path(trace), tv.critical_path(dlrm))
    pd.testing.assert_frame_equal(tv.critical_path(trace, ranks=2), tv.critical_path(dlrm, ranks=2))
    np.testing.assert_array_equal(
        tv.critical_path(trace, view="categories")["time_ns"], tv.critical_path(dlrm, view="categories")["time_ns"]
    )


def test_a_waiting_background_thread_is_never_the_spine(tmp_path: Path) -> None:
    # A progress bar's monitor thread (tid 300) waits in threading.wait for the whole step
    # (0-1000 us), ending last; the main thread (tid 100) launches two kernels: aten::mm at
    # 0-20 (kernel 30-230) and aten::add at 300-320 (kernel 330-430). The path ends at the
    # last kernel's end, 430 us, and runs on the main thread and the GPU only.
    bg = {"tid": 300, "cat": "python_function"}
    events = [
        *kb.metadata(kb.CPU_PID, name="python3", labels="CPU"),
        {"ph": "M", "name": "thread_name", "ts": 0, "pid": kb.CPU_PID, "tid": 300, "args": {"name": "tqdm monitor"}},
        kb.cpu_op("threading.py(320): wait", 0, 1000, **bg),
        kb.cpu_op("<built-in method acquire of _thread.lock object at 0x7f00>", 1, 998, **bg),
        kb.cpu_op("aten::mm", 0, 20),
        kb.runtime("cudaLaunchKernel", 5, 5, corr=1),
        kb.kernel("gemm_kernel", 30, 200, corr=1),
        kb.cpu_op("aten::add", 300, 20),
        kb.runtime("cudaLaunchKernel", 305, 5, corr=2),
        kb.kernel("add_kernel", 330, 100, corr=2),
    ]
    trace = load(tmp_path, events)
    path = tv.critical_path(trace, ranks=0)
    check_tiling(path)
    ev = trace.events(0).set_index("eid")
    kernel_end = ev.loc[ev["name"] == "add_kernel"]
    assert path["end_ns"].iloc[-1] == int((kernel_end["ts_ns"] + kernel_end["dur_ns"]).iloc[0])
    on_cpu = path.loc[ev.loc[path["eid"], "device"].to_numpy() < 0, "eid"]
    assert set(ev.loc[on_cpu, "tid"]) == {kb.MAIN_TID}
    (spine,) = path.attrs["spine"]
    assert (spine["rank"], spine["tid"], spine["launches"]) == (0, kb.MAIN_TID, 2)
    assert "tid 300 (tqdm monitor): waits only" in spine["reason"]
    assert tv.critical_path(trace, ranks=0, view="categories").attrs["spine"] == [spine]
    # The same trace read as one job (the path across ranks) says the same.
    assert tv.critical_path(trace).attrs["spine"] == [spine]
