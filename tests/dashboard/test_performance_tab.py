"""The Performance tab shows op_performance's and mfu's numbers (one truth), and its charts."""

from __future__ import annotations

import warnings

import pytest

import jupyter_traceview as tv
from jupyter_traceview.dashboard.data import DashboardData
from tests.conftest import KINETO_FOLDERS


@pytest.fixture(scope="module")
def bert() -> tv.Trace:
    return tv.load(KINETO_FOLDERS["h100_bert_small"], cache=False)


def test_performance_tab_is_op_performance(bert: tv.Trace) -> None:
    out = DashboardData(bert).tab("performance")
    assert {c["id"] for c in out["charts"]} == {"roofline", "time_lost"}
    assert not any(c["empty"] for c in out["charts"]) and out["notes"] == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        perf = tv.op_performance(bert, by="shape")
        m = tv.mfu(bert)
    t = next(t for t in out["tables"] if t["id"] == "op_performance")
    keys = [c["key"] for c in t["columns"]]
    assert [r[keys.index("gpu_ns")] for r in t["rows"]] == perf["gpu_ns"].tolist()
    assert t["rows"][0][keys.index("pct_of_peak")] == pytest.approx(perf["pct_of_peak"].iloc[0])
    figs = {f["label"]: f["value"] for f in out["figures"]}
    assert figs["MFU"] == f"{m['mfu_pct'].median():.1f}%"
    modelled = perf[perf["status"] == "modelled"]
    assert figs["modelled GPU time"] == f"{100 * modelled['gpu_ns'].sum() / perf['gpu_ns'].sum():.1f}%"
    assert figs["of the roofline"] == f"{100 * modelled['ideal_ns'].sum() / modelled['gpu_ns'].sum():.1f}%"


def test_performance_tab_without_shapes_says_how_to_record_them() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_alexnet"], cache=False)  # recorded without shapes
    out = DashboardData(trace).tab("performance")
    assert any("record_shapes=True" in n for n in out["notes"])
    assert all(c["empty"] for c in out["charts"])
