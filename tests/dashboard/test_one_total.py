"""One total per quantity across the dashboard's tabs, one time origin on every axis.

Issue 38, point 6: the Kernels tab's card counted GPU activities under the label "kernels"
(the header's kernels are fewer); three kernel-time totals (the card, the donut, the
Performance tab) disagreed with nothing saying why; the threads chart counted from the
rank's first host event and the memory chart's axis named another origin; Fit stopped
short of the trace span tv.summary reports. Each test fails on the old texts.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview import format as fmt
from jupyter_traceview.dashboard.data import DashboardData
from tests.conftest import KINETO_FOLDERS


@functools.cache
def _data(name: str) -> DashboardData:
    return DashboardData(tv.load(KINETO_FOLDERS[name], cache=False, progress=False))


@functools.cache
def _tab(name: str, tab: str) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dict(_data(name).tab(tab))


def _figures(name: str, tab: str) -> dict[str, dict[str, str]]:
    return {f["label"]: f for f in _tab(name, tab)["figures"]}


def test_kernels_card_counts_what_it_says() -> None:
    d = _data("dlrm_8rank_v100")
    h = d.headline
    figs = _figures("dlrm_8rank_v100", "kernels")
    assert "kernels" not in figs  # the count is of GPU activities, and says so
    act = figs["GPU activities"]
    assert act["value"] == fmt.count(h["gpu_activities"]) == "2,244"
    # The header's kernels are named on the card, and the rest are the copies and sets.
    assert f"{h['kernels']:,} kernels + {h['gpu_activities'] - h['kernels']:,} copies and sets" in act["hint"]


def test_kernel_time_totals_are_one_figure_or_named() -> None:
    d = _data("dlrm_8rank_v100")
    figs = _figures("dlrm_8rank_v100", "kernels")
    by_kernel = d.frame("kernel_breakdown", top_k=None)
    activity = float(by_kernel["sum_ns"].sum())
    busy = float(d.frame("kernel_breakdown", by="type")["time_ns"].sum())
    card = figs["GPU activity time"]
    assert card["value"] == fmt.duration(activity) == "57.6 ms"
    # The donut's figure (GPU busy, overlaps once) differs: the card names it.
    assert fmt.duration(busy) == "55.9 ms"
    assert f"{fmt.duration(busy)} GPU busy (the donut" in card["hint"]
    donut = json.dumps(next(c for c in _tab("dlrm_8rank_v100", "kernels")["charts"] if c["id"] == "kernel_types"))
    assert "GPU busy time by kernel type" in donut
    # The Performance tab's GPU time under operators names the Kernels tab's total and the difference.
    perf = _figures("dlrm_8rank_v100", "performance")["modelled GPU time"]["hint"]
    under = float(d.frame("op_performance", by="shape")["gpu_ns"].sum())
    assert f"of {fmt.duration(under)} under operators" in perf
    assert under < activity
    assert f"the Kernels tab's {card['value']} GPU activity time less {fmt.duration(activity - under)}" in perf


def test_every_time_axis_counts_from_the_trace_origin() -> None:
    d = _data("dlrm_8rank_v100")
    threads = json.dumps(next(c for c in _tab("dlrm_8rank_v100", "operators")["charts"] if c["id"] == "threads"))
    assert "Time since the trace's origin" in threads and "first host event" not in threads
    from jupyter_traceview.charts import thread_activity_chart

    ta = d.frame("thread_activity", ranks=0)
    fig = thread_activity_chart(ta, t0_ns=d.t0_ns)
    unit_ns = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
    unit = re.search(r"\((\w+)\)$", fig.xaxis[0].axis_label).group(1)  # type: ignore[union-attr]
    left = fig.renderers[0].data_source.data["left"]
    # The first bin sits where the rank's first host event is on the timeline, not at 0.
    assert left[0] * unit_ns[unit] == pytest.approx(int(ta["start_ns"].min()) - d.t0_ns)
    assert int(ta["start_ns"].min()) > d.t0_ns  # rank 0 starts 5.5 ms after the origin
    from jupyter_traceview.charts import memory_timeline_chart

    bert = tv.load(KINETO_FOLDERS["h100_bert_small"], cache=False, progress=False)
    mem = memory_timeline_chart(tv.memory_timeline(bert, resample=50), origin_ns=bert.t0_ns)
    assert mem.xaxis[0].axis_label.startswith("Time since the trace's origin")


def test_median_step_says_how_it_relates_to_the_job_span() -> None:
    h = _data("dlrm_8rank_v100").headline
    items = {label: (value, hint) for label, value, hint in fmt.headline_items(h)}
    # 19.9 ms next to 19.7 ms: the step counts from its CPU start, the span GPU work only.
    assert items["median step"][0] == "19.9 ms" and items["job span"][0] == "19.7 ms"
    assert "can exceed the job span" in items["median step"][1]


def test_fit_covers_the_trace_span_the_summary_reports() -> None:
    d = _data("dlrm_8rank_v100")
    state = d.timeline_state()
    lo, hi = state["_span"]
    s = tv.summary(d.trace)
    # Every rank's first event to last (zero-length "Record Window End" markers included) lies in Fit.
    assert hi - lo >= int(s["trace_span_ns"].max()) == d.headline["trace_span_ns"] == 22_240_000
    assert hi == d.payload()["span_ns"] == 23_014_000  # the dashboard's span, the last marker at +23.0 ms
    assert state["x_range"] == [lo, hi]
