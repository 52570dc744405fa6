"""summary(): headline figures, with answers known by construction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import summary
from tests import kineto_builder as kb


def test_busy_and_span_by_construction(tmp_path: Path) -> None:
    events = [
        kb.step(1, 0, 1000),
        *kb.launch("gemm", 10, 100, 50, corr=1, stream=7),  # [100, 150)
        *kb.launch("gemm", 20, 120, 50, corr=2, stream=8),  # [120, 170) overlaps on another stream
        kb.memcpy(200, 20, corr=3),  # [200, 220)
        kb.sync("Stream Sync", 230, 100, corr=4),  # not work: excluded
        *kb.launch("ncclKernel_AllReduce", 30, 300, 10, corr=5),  # [300, 310)
    ]
    trace = tv.load(kb.write(tmp_path / "r.json", kb.doc(events)), cache=False)
    row = summary(trace).iloc[0]
    assert row["gpu_span_ns"] == (310 - 100) * 1000
    assert row["gpu_busy_ns"] == (70 + 20 + 10) * 1000
    assert row["gpu_busy_pct"] == pytest.approx(100 * 100 / 210)
    assert row["kernels"] == 3 and row["gpu_activities"] == 5 and row["iterations"] == 1


def test_cpu_only_gives_nan_busy() -> None:
    from tests.conftest import KINETO_FOLDERS

    row = summary(tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)).iloc[0]
    assert row["gpu_busy_ns"] == 0 and np.isnan(row["gpu_busy_pct"])


def test_time_range_clips(dlrm: tv.Trace) -> None:
    full = summary(dlrm, ranks=[0]).iloc[0]
    t0 = dlrm.t0_ns
    part = summary(dlrm, ranks=[0], time_range=(t0, t0 + 10_000_000)).iloc[0]
    rest = summary(dlrm, ranks=[0], time_range=(t0 + 10_000_000, t0 + 100_000_000)).iloc[0]
    assert part["gpu_busy_ns"] + rest["gpu_busy_ns"] == full["gpu_busy_ns"]


def test_gpu_activities_by_class(dlrm: tv.Trace) -> None:
    from jupyter_traceview.analysis._common import gpu_activities

    comm = gpu_activities(dlrm, 0, classes=["communication"])
    assert len(comm) > 0 and (comm["gpu_class"] == "communication").all()
