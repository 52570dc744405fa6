"""tv.what_if: each change on a hand-built trace whose saving is worked out by hand (times in us).

The expected savings are written from the replay's rules (docs/semantics.md, *What-if
replay*): a dependency that bound its point keeps its recorded length; one that did not is
at most the rank's median binding length of its kind (0 where no such edge binds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.whatif import WHAT_IF_COLUMNS
from tests import kineto_builder as kb
from tests.analysis.tiny import ALLREDUCE, GEMM, RELU, US, load

DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _saving_us(trace: tv.Trace, *changes: Any, rank: int = 0) -> float:
    out = tv.what_if(trace, *changes, ranks=rank)
    assert len(out) == 1
    row = out.iloc[0]
    assert row["replayed_ns"] == row["measured_ns"]
    return float(row["saving_ns"]) / US


def _sync_trace(tmp_path: Path) -> tv.Trace:
    """Step [0,200): a gemm [20,120) waited for by cudaStreamSynchronize [20,125), then aten::add [130,140).

    Measured: max(step end 200, GPU end 120) - 0 = 200.
    """
    return load(
        tmp_path / "sync.json",
        [
            kb.step(1, 0, 200),
            *kb.launch(GEMM, 10, 20, 100, corr=1),
            kb.runtime("cudaStreamSynchronize", 20, 105, corr=2),
            kb.sync("Stream Sync", 120, 5, corr=2),
            kb.cpu_op("aten::add", 130, 10),
        ],
    )


def test_the_replay_without_a_change_is_the_trace(tmp_path: Path) -> None:
    out = tv.what_if(_sync_trace(tmp_path))
    assert list(out.columns) == list(WHAT_IF_COLUMNS)
    assert out.dtypes.astype(str).to_dict() == WHAT_IF_COLUMNS
    assert out[["rank", "step", "measured_ns", "replayed_ns", "predicted_ns", "saving_ns"]].values.tolist() == [
        [0, 1, 200 * US, 200 * US, 200 * US, 0]
    ]


def test_remove_syncs(tmp_path: Path) -> None:
    # The sync takes no time: it ends at 20; aten::add 5 us later [25,35); the step's own
    # 60 us after it -> 95; the gemm still ends at 120: the step is 120, saving 80.
    trace = _sync_trace(tmp_path)
    assert _saving_us(trace, tv.changes.RemoveSyncs()) == 80
    out = tv.what_if(trace, tv.changes.RemoveSyncs())
    assert out["saving_pct"].iloc[0] == pytest.approx(40.0)


def test_scale_kernels(tmp_path: Path) -> None:
    # The gemm takes 50: ends at 70; the sync returns 5 later (75); aten::add [80,90); step
    # end 150: saving 50. A pattern that matches nothing saves nothing.
    trace = _sync_trace(tmp_path)
    assert _saving_us(trace, tv.changes.ScaleKernels(pattern="sgemm", factor=0.5)) == 50
    assert _saving_us(trace, tv.changes.ScaleKernels(family="gemm", factor=0.5)) == 50
    assert _saving_us(trace, tv.changes.ScaleKernels(pattern="no_such_kernel", factor=0.5)) == 0
    # Combined with RemoveSyncs: the gemm's end (70) bounds the step (the host ends at 95).
    assert _saving_us(trace, tv.changes.RemoveSyncs(), tv.changes.ScaleKernels(pattern="sgemm", factor=0.5)) == 105


def _cpu_trace(tmp_path: Path) -> tv.Trace:
    """A CPU-only step [0,200): aten::linear [10,70) holding aten::addmm [20,60) holding
    aten::mm [24,56); then aten::relu [80,90). No GPU kernel anywhere."""
    return load(
        tmp_path / "cpu.json",
        [
            kb.step(1, 0, 200),
            kb.cpu_op("aten::linear", 10, 60),
            kb.cpu_op("aten::addmm", 20, 40),
            kb.cpu_op("aten::mm", 24, 32),
            kb.cpu_op("aten::relu", 80, 10),
        ],
    )


def test_scale_kernels_on_a_cpu_only_rank_scales_operators(tmp_path: Path) -> None:
    trace = _cpu_trace(tmp_path)
    # Outermost match aten::addmm at 0.5: its 40 (own 4 + mm 32 + own 4) -> 2 + 16 + 2 = 20;
    # the nested aten::mm is not scaled again (else 2 + 8 + 2 = 12, saving 28). aten::linear
    # ends 20 earlier, aten::relu and the step's end follow: saving 20.
    assert _saving_us(trace, tv.changes.ScaleKernels(pattern=r"aten::(addmm|mm)$", factor=0.5)) == 20
    # Only the inner aten::mm: 32 -> 16, saving 16; removed outright (factor 0): 32.
    assert _saving_us(trace, tv.changes.ScaleKernels(pattern=r"aten::mm$", factor=0.5)) == 16
    assert _saving_us(trace, tv.changes.ScaleKernels(pattern=r"aten::mm$", factor=0.0)) == 32
    # aten::addmm removed: its 40 go, aten::mm with it.
    assert _saving_us(trace, tv.changes.ScaleKernels(pattern="aten::addmm", factor=0.0)) == 40
    # The step annotation is not an operator: scaling "every kernel" scales the operators
    # only (aten::linear 60 -> 30 and aten::relu 10 -> 5): saving 35.
    assert _saving_us(trace, tv.changes.ScaleKernels(factor=0.5)) == 35


def test_scale_kernels_leaves_operators_alone_where_the_rank_has_kernels(tmp_path: Path) -> None:
    # The sync trace has a GPU kernel: its aten::add [130,140) is not scaled.
    trace = _sync_trace(tmp_path)
    assert _saving_us(trace, tv.changes.ScaleKernels(pattern="aten::add", factor=0.0)) == 0


def test_remove_data_loading(tmp_path: Path) -> None:
    # Step [0,100): the DataLoader's next() [5,45), aten::add [50,60). Without the data
    # loading: next() is [5,5), aten::add [10,20), the step ends 40 later at 60: saving 40.
    trace = load(
        tmp_path / "dl.json",
        [kb.step(1, 0, 100), kb.annotation(DATALOADER, 5, 40), kb.cpu_op("aten::add", 50, 10)],
    )
    assert _saving_us(trace, tv.changes.RemoveDataLoading()) == 40
    assert _saving_us(trace, tv.changes.RemoveSyncs()) == 0


def test_remove_python(tmp_path: Path) -> None:
    # Step [0,100): aten::mm [10,30), aten::add [50,60). The step's own time around them
    # (10 + 20 + 40) goes: the step is 20 + 10 = 30, saving 70; with a 1 us floor: 67.
    trace = load(
        tmp_path / "py.json",
        [kb.step(1, 0, 100), kb.cpu_op("aten::mm", 10, 20), kb.cpu_op("aten::add", 50, 10)],
    )
    assert _saving_us(trace, tv.changes.RemovePython()) == 70
    assert _saving_us(trace, tv.changes.RemovePython(floor_ns=1 * US)) == 67


def _overlap_trace(tmp_path: Path) -> tv.Trace:
    """Gemm A [10,50) on stream 7; allreduce [50,90) on stream 9 after it; relu B [90,130) on
    stream 7 after the allreduce (unrecorded waits: inferred); cudaDeviceSynchronize [10,135);
    the step [0,140)."""
    return load(
        tmp_path / "overlap.json",
        [
            kb.step(1, 0, 140),
            *kb.launch(GEMM, 1, 10, 40, corr=1, cpu_dur=1),
            *kb.launch(ALLREDUCE, 3, 50, 40, corr=2, stream=9, cpu_dur=1),
            *kb.launch(RELU, 5, 90, 40, corr=3, cpu_dur=1),
            kb.runtime("cudaDeviceSynchronize", 10, 125, corr=4),
        ],
    )


def test_overlap_communication(tmp_path: Path) -> None:
    # B no longer waits for the allreduce's end: it starts when A ends (50), ends at 90 as
    # the allreduce does; the sync returns 5 later (95), the step ends 5 later (100): saving 40.
    trace = _overlap_trace(tmp_path)
    assert _saving_us(trace, tv.changes.OverlapCommunication()) == 40


def _launch_trace(tmp_path: Path) -> tv.Trace:
    """Step [0,52): three 5 us launches at 10, 20, 30 of 4 us relu kernels 5 us later
    ([15,19), [25,29), [35,39): each held by its launch, which starts after the kernel before
    it ended); cudaDeviceSynchronize [36,42) (3 us after the last kernel ends). Measured: 52.

    Binding medians: launch 5, span 4.5 (5, 5, 5, 4, 4, 4), stream none (0)."""
    return load(
        tmp_path / "launch.json",
        [
            kb.step(1, 0, 52),
            *kb.launch(RELU, 10, 15, 4, corr=1, cpu_dur=5),
            *kb.launch(RELU, 20, 25, 4, corr=2, cpu_dur=5),
            *kb.launch(RELU, 30, 35, 4, corr=3, cpu_dur=5),
            kb.runtime("cudaDeviceSynchronize", 36, 6, corr=4),
        ],
    )


def test_graph_launch(tmp_path: Path) -> None:
    # The whole step captured: launch calls take no time and kernels no launch latency: the
    # launches are at 10, 15 and 20 (the 5 us between the calls stay), the sync starts 1 us
    # later (21); the kernels run [10,14), [15,19), [20,24); the sync returns 3 us after (27;
    # unheld it would take min(6, 4.5) us: 25.5); the step ends 10 later, 37: saving 15.
    trace = _launch_trace(tmp_path)
    assert _saving_us(trace, tv.changes.GraphLaunch(whole_step=True)) == 15
    # Nothing here is launched by a graph: graph launches made free change nothing.
    assert _saving_us(trace, tv.changes.GraphLaunch()) == 0


def test_graph_launch_frees_graph_captured_work_only(tmp_path: Path) -> None:
    # The trace of _launch_trace with its 2nd launch a graph replay: cudaGraphLaunch [20,25)
    # and its kernel [25,29) share correlation 2 (how Kineto links a graph's kernels to the
    # call). Only that call takes no time: call 1 [10,15), call 2 [20,20), call 3 [25,30);
    # the sync starts 1 us later (31); kernel 2 runs [20,24), kernel 3 [30,34); the sync
    # returns 3 us after it (37; unheld: 31 + 4.5), the step ends 10 later, 47: saving 5.
    trace = load(
        tmp_path / "graph.json",
        [
            kb.step(1, 0, 52),
            *kb.launch(RELU, 10, 15, 4, corr=1, cpu_dur=5),
            kb.runtime("cudaGraphLaunch", 20, 5, corr=2),
            kb.kernel(RELU, 25, 4, corr=2),
            *kb.launch(RELU, 30, 35, 4, corr=3, cpu_dur=5),
            kb.runtime("cudaDeviceSynchronize", 36, 6, corr=4),
        ],
    )
    assert _saving_us(trace, tv.changes.GraphLaunch()) == 5
    # Every launch free (the whole step one graph): as on _launch_trace.
    assert _saving_us(trace, tv.changes.GraphLaunch(whole_step=True)) == 15


def test_fuse_kernels(tmp_path: Path) -> None:
    # The 2nd and 3rd relu fuse into the 1st: their launches take no time (at 20 and 25, the
    # gaps between the calls stay; the sync starts at 26), the fused kernel runs [15,27); the
    # sync waits for it (27 + 3 = 30) and for its own median time (26 + 4.5 = 30.5): it ends
    # at 30.5, the step 10 later at 40.5: saving 11.5. The same by sequence (relu, relu: every
    # pair, so all three) and by duration (all under 5 us); none under 3 us: nothing fused.
    trace = _launch_trace(tmp_path)
    assert _saving_us(trace, tv.changes.FuseKernels(pattern="relu")) == 11.5
    assert _saving_us(trace, tv.changes.FuseKernels(sequence=("relu", "relu"))) == 11.5
    assert _saving_us(trace, tv.changes.FuseKernels(shorter_than_ns=5 * US)) == 11.5
    assert _saving_us(trace, tv.changes.FuseKernels(shorter_than_ns=3 * US)) == 0


def _two_ranks(tmp_path: Path) -> tv.Trace:
    """Two ranks: a gemm of 100 us (rank 0) or 50 us (rank 1) from 10, then an allreduce that
    ends at 130 on both (20 us after rank 0 arrives at 110); cudaDeviceSynchronize [5,135);
    the steps [0,140)."""
    folder = tmp_path / "two"
    folder.mkdir()
    for rank, gemm_us in ((0, 100), (1, 50)):
        events = [
            kb.step(1, 0, 140),
            *kb.launch(GEMM, 1, 10, gemm_us, corr=1, cpu_dur=1),
            *kb.launch(ALLREDUCE, 3, 10 + gemm_us, 120 - gemm_us, corr=2, stream=9, cpu_dur=1),
            kb.runtime("cudaDeviceSynchronize", 5, 130, corr=3),
        ]
        kb.write(folder / f"rank{rank}.json", kb.doc(events, rank=rank, world_size=2))
    return tv.load(folder, cache=False)


def test_balance_straggler_propagates_through_the_collective(tmp_path: Path) -> None:
    # Rank 0 arrives at the allreduce 50 us after rank 1 (110 vs 60): it is the straggler.
    # Balanced, its work since its step began (0 to 110, host and GPU alike) shrinks by its
    # lateness, to 60/110 of each edge: its gemm ends at 60, the allreduce (last arrival 60)
    # ends 20 later (80) on both ranks; the syncs return at 85 and the steps end at 90:
    # 50 us saved on both ranks.
    trace = _two_ranks(tmp_path)
    out = tv.what_if(trace, tv.changes.BalanceStraggler())
    assert (out["measured_ns"] == out["replayed_ns"]).all()
    assert out["saving_ns"].tolist() == [50 * US, 50 * US]
    # Rank 1's own gemm made faster changes nothing: it waits for rank 0 anyway.
    faster_1 = tv.what_if(trace, tv.changes.ScaleKernels(pattern="sgemm", factor=0.5), ranks=1)
    # Both gemms halve: rank 0 arrives at 60, the allreduce ends at 80, the steps at 90.
    assert faster_1["saving_ns"].tolist() == [50 * US]
    # Rank 1 is never late: balancing it changes nothing.
    assert _saving_us(trace, tv.changes.BalanceStraggler(rank=1)) == 0


def test_balance_straggler_on_the_host_bound_dlrm_straggler(dlrm: tv.Trace) -> None:
    # Labelled before the rule ran (from tv.stragglers and the steps alone): rank 7 is the
    # straggler (last into 5 of 8 collectives) and held the others up 1.31 ms in all (its
    # lateness over the second-last, summed); its own step is the shortest (12.5 ms against
    # 13.0-19.9 ms: its lateness began before its step did, on the host). An expert expects
    # balancing it to save every rank something, at most those 1.31 ms per step (it cannot
    # save more than it held up) and less where another rank (5, 4, 2/6) becomes the last
    # arrival: about 0.3-1.3 ms, 2-7 % of a step. (The replay gave 0.35-0.79 ms.)
    late = tv.stragglers(dlrm, by="rank").set_index("rank")["lateness_ns"]
    assert int(late.idxmax()) == 7
    out = tv.what_if(dlrm, tv.changes.BalanceStraggler())
    assert (out["saving_ns"] >= 300_000).all()
    assert (out["saving_ns"] <= late.max()).all()
    # The one rank named: the same change as its saving.
    named = tv.what_if(dlrm, tv.changes.BalanceStraggler(rank=7))
    assert named["saving_ns"].tolist() == out["saving_ns"].tolist()


def test_rows_are_selected_after_the_replay(tmp_path: Path) -> None:
    trace = _two_ranks(tmp_path)
    assert tv.what_if(trace, ranks=[1])["rank"].tolist() == [1]
    assert tv.what_if(trace, iterations=[2]).empty
    with pytest.raises(tv.TraceSelectionError):
        tv.what_if(trace, ranks=5)
    with pytest.raises(tv.OptionError, match="not a change"):
        tv.what_if(trace, "RemoveSyncs")  # type: ignore[arg-type]


def test_a_trace_without_steps_is_one_row(tmp_path: Path) -> None:
    trace = load(tmp_path / "nostep.json", [kb.cpu_op("aten::mm", 10, 20), kb.cpu_op("aten::add", 50, 10)])
    out = tv.what_if(trace, tv.changes.RemovePython())
    assert out[["rank", "step", "measured_ns"]].values.tolist() == [[0, -1, 50 * US]]
    # Top-level gaps are the thread's idle time: 20 us of it removed.
    assert out["saving_ns"].tolist() == [20 * US]


def test_changes_describe_themselves_and_check_their_options() -> None:
    ch = tv.changes
    every = [
        ch.RemoveSyncs(),
        ch.RemoveDataLoading(),
        ch.RemovePython(),
        ch.ScaleKernels(family="gemm", factor=0.5),
        ch.ScaleKernels(to_roofline=True),
        ch.OverlapCommunication(),
        ch.BalanceStraggler(),
        ch.GraphLaunch(),
        ch.FuseKernels(pattern="relu"),
    ]
    texts = [c.describe() for c in every]
    assert all(isinstance(t, str) and t for t in texts)
    assert len(set(texts)) == len(texts)
    assert "0.5x" in every[3].describe()
    with pytest.raises(tv.OptionError):
        ch.FuseKernels()
    with pytest.raises(tv.OptionError):
        ch.FuseKernels(sequence=("a",))
    with pytest.raises(tv.OptionError):
        ch.ScaleKernels(factor=-1)
    with pytest.raises(tv.OptionError):
        ch.ScaleKernels(pattern="(")
    with pytest.raises(tv.OptionError):
        ch.RemovePython(floor_ns=-1)
    hash(every[0])  # frozen: usable as keys


def test_the_replay_compiled_and_in_python_agree() -> None:
    from jupyter_traceview.analysis import loops
    from jupyter_traceview.analysis.whatif import replay

    rng = np.random.default_rng(0)
    n = 400
    # A random DAG: edges from lower to higher node ids.
    a = rng.integers(0, n, 2000)
    b = rng.integers(0, n, 2000)
    src, dst = np.minimum(a, b), np.maximum(a, b)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    w = rng.integers(0, 100, len(src))
    t = rng.integers(0, 1000, n)
    csr = replay._csr(dst, src, w, n)
    base = np.where(np.bincount(dst, minlength=n) > 0, np.iinfo(np.int64).min, t)
    py = np.empty(n, dtype=np.int64)
    assert replay.replay_python(*csr, base, py) == n
    # By hand: in node order (a topological order here).
    want = base.copy()
    for v in range(n):
        m = dst == v
        if m.any():
            want[v] = max(want[v], int((want[src[m]] + w[m]).max()))
    assert np.array_equal(py, want)
    if loops.native is not None and hasattr(loops.native, "replay"):
        c = np.empty(n, dtype=np.int64)
        assert loops.native.replay(*csr, base, c) == n
        assert np.array_equal(c, py)


def test_a_cycle_is_broken_not_looped() -> None:
    from jupyter_traceview.analysis.whatif.replay import longest_times

    # 0 -> 1 -> 2 -> 1 (the edge 2 -> 1 does not bind: dropped).
    t = np.array([0, 10, 20], dtype=np.int64)
    dst = np.array([1, 2, 1])
    src = np.array([0, 1, 2])
    w = np.array([10, 10, 0])
    binding = np.array([True, True, False])
    assert longest_times(t, dst, src, w, binding).tolist() == [0, 10, 20]


def test_rows_frame_is_empty_with_columns_for_an_empty_trace(tmp_path: Path) -> None:
    trace = load(tmp_path / "empty.json", [kb.step(1, 0, 100)])
    out = tv.what_if(trace)
    assert list(out.columns) == list(WHAT_IF_COLUMNS)
    assert isinstance(out, pd.DataFrame)


def test_dask_engine_gives_the_same_replay(dask_client: object, dlrm: tv.Trace) -> None:
    # With engine="dask" each rank's share of the graph is built on the worker holding it.
    trace = tv.load(tv.sample_path(), engine="dask", client=dask_client, cache=False)
    for changes in ((), (tv.changes.BalanceStraggler(),), (tv.changes.RemoveSyncs(), tv.changes.GraphLaunch())):
        pd.testing.assert_frame_equal(tv.what_if(trace, *changes), tv.what_if(dlrm, *changes))
