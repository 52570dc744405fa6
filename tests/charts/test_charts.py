"""Chart builders (jupyter_traceview/charts): the right data in the right glyphs, units in labels, hover everywhere."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from bokeh.embed import json_item
from bokeh.models import AnnularWedge, GlyphRenderer, HBar, HoverTool, Rect, Scatter, TapTool, VBar

import jupyter_traceview as tv
from jupyter_traceview import charts
from jupyter_traceview.charts._style import LINK_TAG, duration_text, time_unit
from jupyter_traceview.dashboard.data import timeline_overview
from jupyter_traceview.views import colors as palette
from tests.conftest import DATA

#: Every builder with the analysis whose frame it draws.
BUILDERS: dict[str, Callable[[tv.Trace], pd.DataFrame]] = {
    "temporal_breakdown_chart": lambda t: tv.temporal_breakdown(t),
    "comm_comp_overlap_chart": lambda t: tv.comm_comp_overlap(t),
    "idle_breakdown_chart": lambda t: tv.idle_time_breakdown(t),
    "concurrency_chart": lambda t: tv.concurrency(t),
    "nccl_bandwidth_chart": lambda t: tv.nccl_summary(t),
    "stragglers_chart": lambda t: tv.stragglers(t),
    "compare_chart": lambda t: tv.compare(t, t).causes,
    "efficiency_chart": lambda t: tv.efficiency(t),
    "iteration_chart": lambda t: tv.iteration_stats(t),
    "kernel_type_chart": lambda t: tv.kernel_breakdown(t, by="type"),
    "top_kernels_chart": lambda t: tv.kernel_breakdown(t, top_k=None),
    "kernel_duration_chart": lambda t: tv.kernel_duration_distribution(t),
    "utilization_heatmap_chart": lambda t: tv.utilization_heatmap(t, bins=100),
    "queue_length_chart": lambda t: tv.queue_length(t),
    "memory_bandwidth_chart": lambda t: tv.memory_bandwidth(t),
    "timeline_overview_chart": lambda t: timeline_overview(t, bins=100),
    "call_tree_chart": lambda t: tv.call_tree(t, ranks=0),
    "thread_activity_chart": lambda t: tv.thread_activity(t, ranks=0),
    # The DLRM set has no memory records: the H100 BERT trace does.
    "memory_timeline_chart": lambda t: tv.memory_timeline(_bert(), resample=200),
    "roofline_chart": lambda t: tv.op_performance(t, by="shape"),
    "time_lost_chart": lambda t: tv.op_performance(t, by="shape"),
}


def _bert() -> tv.Trace:
    return tv.load(DATA / "h100_bert_small", cache=False)


#: Charts whose rows link to the timeline, and their target.
LINKS = {
    "temporal_breakdown_chart": "rank",
    "comm_comp_overlap_chart": "rank",
    "idle_breakdown_chart": "rank",
    "concurrency_chart": "rank",
    "stragglers_chart": "rank",
    "iteration_chart": "iteration",
    "kernel_duration_chart": "kernel",
    "utilization_heatmap_chart": "heatmap",
    "timeline_overview_chart": "rank",
    "call_tree_chart": "event",
    "roofline_chart": "kernel",
    "time_lost_chart": "kernel",
}

UNIT = r"\((ns|us|ms|s)\)"


@pytest.fixture(scope="module")
def frames(dlrm: tv.Trace) -> dict[str, pd.DataFrame]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return {name: fn(dlrm) for name, fn in BUILDERS.items()}


def renderers(fig: Any, glyph: type | None = None) -> list[GlyphRenderer]:
    out = list(fig.select(GlyphRenderer))
    return [r for r in out if glyph is None or isinstance(r.glyph, glyph)]


def test_every_analysis_has_a_builder() -> None:
    assert set(BUILDERS) == {n for n in charts.__all__ if n.endswith("_chart")}


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_builder_draws_with_hover_and_links(name: str, theme: str, frames: dict[str, pd.DataFrame]) -> None:
    fig = getattr(charts, name)(frames[name], theme=theme)
    assert "traceview-empty" not in (fig.tags or []), f"{name} has data on the DLRM set"
    assert fig.select(HoverTool), f"{name} has a hover tool"
    assert renderers(fig)
    tagged = [r.data_source for r in renderers(fig) if r.data_source.tags]
    if name in LINKS:
        assert {t for s in tagged for t in s.tags} == {f"{LINK_TAG}:{LINKS[name]}"}
        assert fig.select(TapTool), "a click selects a row"
        assert all(any(k.startswith("link_") for k in s.data) for s in tagged)
    else:
        assert not tagged
    item = json_item(fig, theme=charts.bokeh_theme(theme))  # type: ignore[arg-type]
    assert item["doc"]["roots"]


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_empty_frame_gives_an_empty_chart(name: str, frames: dict[str, pd.DataFrame]) -> None:
    fig = getattr(charts, name)(frames[name].iloc[0:0])
    assert "traceview-empty" in fig.tags
    json_item(fig)


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match=r"lacks column.*compute_ns"):
        charts.temporal_breakdown_chart(pd.DataFrame({"rank": [0]}))


def test_temporal_breakdown_bars_are_the_frame(frames: dict[str, pd.DataFrame]) -> None:
    df = frames["temporal_breakdown_chart"]
    fig = charts.temporal_breakdown_chart(df)
    unit, scale = time_unit(df["span_ns"])
    assert unit == "ms" and fig.yaxis[0].axis_label == "GPU time (ms)" and fig.xaxis[0].axis_label == "Rank"
    bars = renderers(fig, VBar)
    src = bars[0].data_source.data
    assert list(src["x"]) == [str(r) for r in df["rank"]]
    np.testing.assert_allclose(src["compute"], df["compute_ns"] / scale)
    np.testing.assert_allclose(src["idle"], df["idle_ns"] / scale)
    assert list(src["compute_txt"]) == duration_text(df["compute_ns"])
    # Stacked bottom up: compute (in the timeline's compute colour), non-compute, idle.
    for theme in ("light", "dark"):
        first = charts.temporal_breakdown_chart(df, theme=theme).renderers[0].glyph  # type: ignore[arg-type]
        assert first.fill_color == palette.kind_color("compute", theme)  # type: ignore[arg-type]


def test_heatmap_cells_are_the_bins(frames: dict[str, pd.DataFrame]) -> None:
    df = frames["utilization_heatmap_chart"]
    fig = charts.utilization_heatmap_chart(df, kind="all")
    (cells,) = renderers(fig, Rect)
    src = cells.data_source.data
    assert len(src["x"]) == len(df) == 8 * 100
    np.testing.assert_allclose(src["busy"], df["busy_pct"])
    assert list(src["link_bin"]) == df["bin"].tolist() and list(src["link_rank"]) == df["rank"].tolist()
    assert fig.xaxis[0].axis_label.endswith("(ms)")
    _, scale = time_unit(df["bin_end_ns"])
    np.testing.assert_allclose(src["w"], (df["bin_end_ns"] - df["bin_start_ns"]) / scale)
    with pytest.raises(ValueError, match="kinds are"):
        charts.utilization_heatmap_chart(df, kind="nope")


def test_kernel_donut_angles_are_shares(frames: dict[str, pd.DataFrame]) -> None:
    df = frames["kernel_type_chart"]
    fig = charts.kernel_type_chart(df)
    (wedges,) = renderers(fig, AnnularWedge)
    src = wedges.data_source.data
    by_type = df.groupby("kernel_type")["time_ns"].sum()
    got = dict(zip(src["type"], src["angle"], strict=True))
    for kind, t in by_type.items():
        assert got[str(kind)] == pytest.approx(2 * np.pi * t / by_type.sum())


def test_top_kernels_are_the_largest(frames: dict[str, pd.DataFrame]) -> None:
    df = frames["top_kernels_chart"]
    fig = charts.top_kernels_chart(df, top_k=5)
    (bars,) = renderers(fig, HBar)
    totals = df.groupby("name")["sum_ns"].sum().sort_values(ascending=False)
    unit, scale = time_unit(totals.head(5))
    assert fig.xaxis[0].axis_label == f"Total GPU time ({unit})"
    np.testing.assert_allclose(sorted(bars.data_source.data["value"], reverse=True), totals.head(5) / scale)


def test_kernel_durations_whiskers_span_the_ranks(frames: dict[str, pd.DataFrame]) -> None:
    df = frames["kernel_duration_chart"]
    fig = charts.kernel_duration_chart(df)
    bars = next(r for r in renderers(fig, HBar))
    src = bars.data_source.data
    assert fig.xaxis[0].axis_label.startswith("Mean kernel duration (")
    _, scale = time_unit(df["mean_ns"])
    for name, lo, hi in zip(src["name"], src["lo"], src["hi"], strict=True):
        means = df.loc[df["name"].astype(str) == name, "mean_ns"]
        if len(means):
            assert lo == pytest.approx(means.min() / scale) and hi == pytest.approx(means.max() / scale)
    dots = renderers(fig, Scatter)[0].data_source.data
    assert len(dots["x"]) == len(df)


def test_nccl_bandwidth_against_message_size(frames: dict[str, pd.DataFrame]) -> None:
    df = frames["nccl_bandwidth_chart"]
    fig = charts.nccl_bandwidth_chart(df)
    assert "Message size" in fig.xaxis[0].axis_label and fig.yaxis[0].axis_label == "Bus bandwidth (GB/s)"
    points = pd.concat([pd.DataFrame(dict(r.data_source.data)) for r in renderers(fig, Scatter)])
    assert sorted(points["y"]) == pytest.approx(sorted(df["busbw_gbps"]))
    assert sorted(points["x"]) == pytest.approx(sorted(df["size_bucket_bytes"]))


def test_iteration_bars_per_step_and_rank(frames: dict[str, pd.DataFrame]) -> None:
    df = frames["iteration_chart"]
    fig = charts.iteration_chart(df)
    src = renderers(fig, VBar)[0].data_source.data
    assert list(src["link_step"]) == df["step"].tolist() and list(src["link_rank"]) == df["rank"].tolist()
    assert fig.yaxis[0].axis_label == "Duration (ms)"
    assert list(src["dur_txt"]) == duration_text(df["duration_ns"])


def test_efficiency_waterfall_multiplies_out(frames: dict[str, pd.DataFrame]) -> None:
    df = frames["efficiency_chart"]
    fig = charts.efficiency_chart(df)
    src = renderers(fig, VBar)[0].data_source.data
    r = df.iloc[0]
    pe = r["load_balance_pct"] * r["communication_efficiency_pct"] * r["orchestration_efficiency_pct"] / 1e4
    assert pe == pytest.approx(r["parallel_efficiency_pct"], rel=1e-6)
    assert src["top"][-1] == pytest.approx(r["parallel_efficiency_pct"])
    assert src["top"][0] == pytest.approx(100)


def test_compare_waterfall_lands_on_the_new_step() -> None:
    # Causes of tv.compare: they add up to the change, so the waterfall ends on the new step.
    df = pd.DataFrame(
        {
            "cause": ["operator aten::mm", "exposed communication", "host: syncs", "data loading"],
            "status": ["faster", "slower", "same", "same"],
            "base_ns": [5_000_000.0, 2_000_000.0, 300_000.0, 100_000.0],
            "new_ns": [3_000_000.0, 2_500_000.0, 310_000.0, 100_000.0],
            "delta_ns": [-2_000_000.0, 500_000.0, 10_000.0, 0.0],
            "within_noise": [False, False, True, True],
        }
    )
    fig = charts.compare_chart(df)
    src = renderers(fig, VBar)[0].data_source.data
    names = list(src["name"])
    assert "operator aten::mm" in names and "exposed communication" in names and "data loading" not in names
    assert names.index("operator aten::mm") < names.index("exposed communication"), "largest change first"
    assert fig.yaxis[0].axis_label.endswith("(ms)")
    steps = dict(zip(names, np.subtract(src["top"], src["bottom"]), strict=True))
    assert abs(steps["operator aten::mm"]) == pytest.approx(2.0) and abs(
        steps["exposed communication"]
    ) == pytest.approx(0.5)
    assert src["top"][0] == pytest.approx(7.4) and src["top"][-1] == pytest.approx(5.91)
    # The last cause ends where the new step's bar ends: the rows add up.
    assert src["bottom"][-2] == pytest.approx(5.91) or src["top"][-2] == pytest.approx(5.91)
    assert "(within noise)" in src["status"][names.index("host: syncs")]


def test_time_units_and_texts() -> None:
    assert time_unit([500]) == ("ns", 1.0)
    assert time_unit([1_500]) == ("us", 1e3)
    assert time_unit([2_000_000_000]) == ("s", 1e9)
    assert duration_text([850, 12_300, 4_560_000, np.nan]) == ["850 ns", "12.3 us", "4.56 ms", "–"]


def test_memory_curve_is_the_timeline_and_peaks_link_to_their_operator() -> None:
    trace = _bert()
    tl = tv.memory_timeline(trace)
    peaks = tv.memory_peaks(trace, per="rank")
    fig = charts.memory_timeline_chart(tl, peaks=peaks, origin_ns=trace.t0_ns)
    assert "(MiB)" in fig.yaxis[0].axis_label
    steps = [r for r in renderers(fig) if type(r.glyph).__name__ == "Step"]
    cuda = tl.loc[tl["device_type"] == "CUDA"]
    solid = [r for r in steps if r.glyph.line_dash == [] and len(r.data_source.data["y"]) == len(cuda)]
    assert len(solid) == 1
    np.testing.assert_allclose(solid[0].data_source.data["y"], cuda["allocated_bytes"] / 2**20)
    np.testing.assert_allclose(solid[0].data_source.data["x"], (cuda["ts_ns"] - trace.t0_ns) / 1e6)
    (dots,) = renderers(fig, Scatter)
    src = dots.data_source
    assert src.tags == [f"{LINK_TAG}:event"]
    assert sorted(src.data["y"] * 2**20) == sorted(peaks["peak_allocated_bytes"].astype(float))
    assert list(src.data["link_eid"]) == peaks["operator_eid"].tolist()
    # The device: following the link reveals its memory counter lane on the timeline.
    assert list(src.data["link_device_type"]) == peaks["device_type"].astype(str).tolist()
    assert list(src.data["link_device"]) == peaks["device"].tolist()
    assert list(src.data["op"]) == peaks["operator"].astype(str).tolist()
