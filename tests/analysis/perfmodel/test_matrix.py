"""matrix_shapes: exactly op_performance(by="shape")'s modelled matrix products with GPU time."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.perfmodel.matrix import matrix_shapes
from jupyter_traceview.analysis.perfmodel.performance import MATRIX_FAMILIES
from tests.conftest import DATA


@pytest.mark.parametrize(
    "path", [tv.sample_path(), DATA / "h100_bert_small", DATA / "hta_dlrm_2of128_ranks", DATA / "hta_alexnet"]
)
def test_matrix_shapes_are_op_performance_rows(path: object) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        trace = tv.load(path, progress=False)
        lo = trace.t0_ns
        hi = max(int((e["ts_ns"] + e["dur_ns"]).max()) for e in (trace.events(r) for r in trace.ranks))
        for window in (None, (lo + (hi - lo) // 4, lo + 3 * (hi - lo) // 4)):
            perf = tv.op_performance(trace, by="shape", time_range=window)
            keep = (perf["status"] == "modelled") & perf["family"].isin(MATRIX_FAMILIES) & (perf["gpu_ns"] > 0)
            want = perf[keep].reset_index(drop=True)
            got = matrix_shapes(trace, time_range=window)
            pd.testing.assert_frame_equal(got, want)
            if path != DATA / "hta_alexnet" and window is None:
                assert len(got) > 0  # the traces with GEMMs have rows to compare
