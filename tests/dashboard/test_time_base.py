"""One time base: a heatmap cell's times, the timeline it opens and show_range all count from trace.t0_ns.

(The issue's walk: a heatmap cell labelled 7.78-7.87 ms opened a timeline window at
8.82-8.92 ms, because the heatmap counted from the first GPU activity and the timeline from
the first event.)
"""

from __future__ import annotations

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview import charts
from jupyter_traceview import format as fmt
from jupyter_traceview.dashboard.data import DashboardData
from jupyter_traceview.views.timeline.index import TimelineIndex


def _source(fig: object) -> dict:
    for r in fig.renderers:  # type: ignore[attr-defined]
        data = r.data_source.data
        if "link_bin" in data:
            return dict(data)
    raise AssertionError("no linked source in the heatmap")


@pytest.mark.parametrize("kind", ["all", "communication"])
def test_heatmap_cell_opens_the_timeline_where_its_label_says(dlrm: tv.Trace, kind: str) -> None:
    data = DashboardData(dlrm)
    assert data.t0_ns == dlrm.t0_ns == TimelineIndex.of(dlrm).t0_ns
    hm = data.frame("utilization_heatmap", bins=data.heatmap_bins, kind=kind)
    fig = charts.utilization_heatmap_chart(hm, kind=kind, t0_ns=data.t0_ns)
    src = _source(fig)
    _, scale = charts._style.time_unit(hm["bin_end_ns"] + (hm["origin_ns"] - data.t0_ns))
    busy = np.flatnonzero(np.asarray(src["busy"]) > 0)
    for i in busy[:: max(len(busy) // 7, 1)]:
        lo = (src["x"][i] - src["w"][i] / 2) * scale  # ns since the trace's origin, as drawn
        hi = (src["x"][i] + src["w"][i] / 2) * scale
        # Column by column: a row as a Series would be float64 and round the absolute ns.
        row = hm.loc[(hm["rank"] == src["link_rank"][i]) & (hm["bin"] == src["link_bin"][i])]
        origin = int(row["origin_ns"].iloc[0])
        rel_lo = origin + int(row["bin_start_ns"].iloc[0]) - data.t0_ns
        rel_hi = origin + int(row["bin_end_ns"].iloc[0]) - data.t0_ns
        assert lo == pytest.approx(rel_lo, abs=1) and hi == pytest.approx(rel_hi, abs=1)
        # The hover labels the cell with those times...
        assert src["from_txt"][i] == fmt.time(rel_lo) and src["to_txt"][i] == fmt.time(rel_hi)
        # ... and a click opens the timeline on a window holding exactly that cell.
        link = data.link(
            {"target": "heatmap", "rank": int(src["link_rank"][i]), "bin": int(src["link_bin"][i]), "heatmap": kind}
        )
        a, b = link["x_range"]
        assert a <= rel_lo and b >= rel_hi
        assert b - a <= (rel_hi - rel_lo) * 1.1 + 1000  # the cell plus a small margin


def test_show_range_lands_on_a_relative_time(dlrm: tv.Trace) -> None:
    """A time shown as +a (since the trace's origin) is t0_ns + a for timeline.show_range."""
    pytest.importorskip("anywidget")
    timeline = tv.Timeline(dlrm)
    a, b = 7_780_000, 7_870_000
    timeline.show_range(dlrm.t0_ns + a, dlrm.t0_ns + b)
    assert timeline.x_range == [float(a), float(b)]
    assert timeline.t0_ns == dlrm.t0_ns


def test_selection_keeps_the_origin(dlrm: tv.Trace) -> None:
    part = dlrm.select(time_range=(dlrm.t0_ns + 5_000_000, dlrm.t0_ns + 9_000_000))
    assert part.t0_ns == dlrm.t0_ns
    assert DashboardData(part).t0_ns == dlrm.t0_ns
