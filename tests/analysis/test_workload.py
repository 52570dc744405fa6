"""tv.workload: one verdict per rank on tiny traces whose answer is known by construction."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb

GEMM = "volta_sgemm_128x64_nn"


def verdict(tmp: Path, events: list[dict[str, Any]]) -> pd.Series:
    kb.write(tmp / "trace.json", kb.doc(events))
    trace = tv.load(tmp / "trace.json", cache=False, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        w = tv.workload(trace)
    assert list(w.columns) == [
        "rank",
        "workload",
        "evidence",
        "has_backward",
        "has_optimizer",
        "graph_capture",
        "graph_replay",
    ]
    assert len(w) == 1
    return w.iloc[0]


def forward(t: float, corr: int) -> list[dict[str, Any]]:
    """An aten::mm operator launching a 50 us GEMM."""
    return [kb.cpu_op("aten::mm", t, 10), *kb.launch(GEMM, t + 1, t + 20, 50, corr=corr)]


def training_events() -> list[dict[str, Any]]:
    """Two steps, each a forward GEMM, its backward (autograd's evaluate_function wrapping
    MmBackward0, which launches a GEMM) and an optimizer step: 2 backward wrappers + 2
    MmBackward0 = 4 backward operators, 2 optimizer steps."""
    ev: list[dict[str, Any]] = []
    for i in range(2):
        t = 1000 * i
        ev += [kb.step(i + 1, t, 900), *forward(t + 10, corr=3 * i + 1)]
        ev.append(kb.cpu_op("autograd::engine::evaluate_function: MmBackward0", t + 100, 100))
        ev.append(kb.cpu_op("MmBackward0", t + 105, 90))
        ev += kb.launch(GEMM, t + 110, t + 120, 60, corr=3 * i + 2)
        ev.append(kb.cpu_op("Optimizer.step#SGD.step", t + 300, 50))
        ev += kb.launch("multi_tensor_apply_kernel", t + 310, t + 320, 10, corr=3 * i + 3)
    return ev


def test_training(tmp_path: Path) -> None:
    row = verdict(tmp_path, training_events())
    assert row["workload"] == "training"
    assert bool(row["has_backward"]) and bool(row["has_optimizer"])
    assert not row["graph_capture"] and not row["graph_replay"]
    assert "4 backward operators" in row["evidence"] and "2 optimizer steps" in row["evidence"]
    assert "Optimizer.step#SGD.step" in row["evidence"]


def test_inference(tmp_path: Path) -> None:
    """Forward GEMMs under prefill/decode annotations, no backward, no optimizer."""
    ev = [kb.annotation("prefill", 0, 100), *forward(10, corr=1)]
    ev += [kb.annotation("decode_step", 200, 100), *forward(210, corr=2), *forward(260, corr=3)]
    row = verdict(tmp_path, ev)
    assert row["workload"] == "inference"
    assert not row["has_backward"] and not row["has_optimizer"]
    assert "no backward operators" in row["evidence"]
    assert "1 prefill annotations" in row["evidence"] and "1 decode annotations" in row["evidence"]


def capture_events() -> list[dict[str, Any]]:
    """A server capturing one graph: BeginCapture, 3 launches (recorded, not run: the
    kernels of a capture run only at the warm-up before it), EndCapture, Instantiate, and
    one warm-up GEMM that ran. No graph launch."""
    ev = [*forward(0, corr=1)]
    ev.append(kb.runtime("cudaStreamBeginCapture", 100, 5, corr=10))
    ev += [kb.runtime("cudaLaunchKernel", 110 + 10 * i, 5, corr=11 + i) for i in range(3)]
    ev.append(kb.runtime("cudaStreamEndCapture", 150, 5, corr=20))
    ev.append(kb.runtime("cudaGraphInstantiate", 160, 300, corr=21))
    return ev


def test_graph_capture(tmp_path: Path) -> None:
    row = verdict(tmp_path, capture_events())
    assert row["workload"] == "graph_capture"
    assert bool(row["graph_capture"]) and not row["graph_replay"]
    assert "1 stream capture begin and 1 end calls, 1 graph instantiations" in row["evidence"]


def test_graph_capture_takes_precedence_over_replay_and_training(tmp_path: Path) -> None:
    """Capture, replay and training at once: the capture decides (precedence), the flags say all."""
    ev = training_events() + capture_events()[2:]
    ev.append(kb.runtime("cudaGraphLaunch", 2000, 5, corr=99))
    row = verdict(tmp_path, ev)
    assert row["workload"] == "graph_capture"
    assert bool(row["graph_replay"]) and bool(row["has_backward"])


def test_graph_replay(tmp_path: Path) -> None:
    """Three cudaGraphLaunch calls, each running a GEMM (the graph's one kernel): replay."""
    ev: list[dict[str, Any]] = []
    for i in range(3):
        ev.append(kb.runtime("cudaGraphLaunch", 100 * i, 5, corr=i + 1))
        ev.append(kb.kernel(GEMM, 100 * i + 10, 50, corr=i + 1))
    row = verdict(tmp_path, ev)
    assert row["workload"] == "graph_replay"
    assert bool(row["graph_replay"]) and not row["graph_capture"]
    assert "3 graph launches (cudaGraphLaunch)" in row["evidence"]


def test_hip_capture(tmp_path: Path) -> None:
    ev = [*forward(0, corr=1), kb.runtime("hipStreamBeginCapture", 100, 5, corr=5)]
    assert verdict(tmp_path, ev)["workload"] == "graph_capture"


def test_cpu_only(tmp_path: Path) -> None:
    """Operators only, one step: no GPU work."""
    ev = [kb.step(1, 0, 100), kb.cpu_op("aten::mm", 10, 80)]
    row = verdict(tmp_path, ev)
    assert row["workload"] == "cpu_only"
    assert "0 GPU activities" in row["evidence"]


def test_data_loading_bound(tmp_path: Path) -> None:
    """Per 1000 us step: 700 us in the DataLoader's next(), then a 100 us operator and its
    GEMM. The main thread waits on data for 70% of its iterations (>= 50%): data-loading
    bound, although the step trains (backward present)."""
    ev: list[dict[str, Any]] = []
    for i in range(2):
        t = 1000 * i
        ev += [
            kb.step(i + 1, t, 1000),
            kb.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, 700),
        ]
        ev += [kb.cpu_op("MmBackward0", t + 750, 100), *kb.launch(GEMM, t + 760, t + 770, 50, corr=i + 1)]
    row = verdict(tmp_path, ev)
    assert row["workload"] == "data_loading_bound"
    assert bool(row["has_backward"])
    assert "waits on the DataLoader for 70% of its iterations" in row["evidence"]


def test_under_half_data_loading_is_not_bound(tmp_path: Path) -> None:
    """The same loop with 300 of 1000 us in the DataLoader (30% < 50%): training."""
    ev: list[dict[str, Any]] = []
    for i in range(2):
        t = 1000 * i
        ev += [
            kb.step(i + 1, t, 1000),
            kb.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, 300),
        ]
        ev += [kb.cpu_op("MmBackward0", t + 350, 100), *kb.launch(GEMM, t + 360, t + 370, 50, corr=i + 1)]
    assert verdict(tmp_path, ev)["workload"] == "training"


def test_sample_and_ranks_scope() -> None:
    trace = tv.load(tv.sample_path())
    w = tv.workload(trace)
    assert list(w["rank"]) == sorted(trace.ranks)
    assert set(w["workload"]) <= {
        "training",
        "inference",
        "graph_capture",
        "graph_replay",
        "cpu_only",
        "data_loading_bound",
    }
    one = tv.workload(trace, ranks=trace.ranks[0])
    assert list(one["rank"]) == [trace.ranks[0]]
    with pytest.raises(tv.TraceSelectionError, match="unknown rank 10000"):
        tv.workload(trace, ranks=[10_000])
