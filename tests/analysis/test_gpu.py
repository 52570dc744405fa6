"""analysis._gpu.activities: the numpy fast path selects what _common.gpu_activities selects."""

from __future__ import annotations

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis._common import WORK_CLASSES, gpu_activities
from jupyter_traceview.analysis._gpu import CLASSES, activities
from tests.conftest import KINETO_FOLDERS


@pytest.fixture(scope="module")
def alexnet() -> tv.Trace:
    return tv.load(KINETO_FOLDERS["hta_alexnet"], cache=False)  # has sync records


@pytest.mark.parametrize("which", ["dlrm", "alexnet"])
@pytest.mark.parametrize("window_ms", [None, (2, 9), (0, 100_000)])
@pytest.mark.parametrize("work_only", [False, True])
def test_same_rows_as_gpu_activities(
    request: pytest.FixtureRequest, which: str, window_ms: tuple[int, int] | None, work_only: bool
) -> None:
    trace = request.getfixturevalue(which)
    if window_ms is not None:
        t0 = trace.t0_ns
        trace = trace.select(time_range=(t0 + window_ms[0] * 1_000_000, t0 + window_ms[1] * 1_000_000))
    for r in trace.ranks:
        want = gpu_activities(trace, r, classes=WORK_CLASSES if work_only else None)
        got = activities(trace, r, work_only=work_only)
        assert len(got) == len(want)
        assert np.array_equal(got.ts, want["ts_ns"].to_numpy())
        assert np.array_equal(got.end, want["end_ns"].to_numpy())
        assert np.array_equal(got.stream, want["stream"].to_numpy())
        assert np.array_equal(got.launch_eid, want["launch_eid"].to_numpy())
        assert [CLASSES[c] for c in got.cls] == want["gpu_class"].astype(str).tolist()
        assert got.names[got.name].tolist() == want["name"].astype(str).tolist()
        if not work_only:
            assert np.array_equal(got.work().ts, activities(trace, r, work_only=True).ts)
