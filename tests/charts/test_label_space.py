"""Charts at any output width (issue 38, point 5): label space bounded, legends outside the
plot, category names that cannot overprint, tables with short names and the full ones on hover.

On the DLRM sample "Top 15 kernels" and "Time lost to low efficiency" gave ~30 px of bars to
labels of up to 64 characters of kernel name plus the shapes; each assertion fails on that.
"""

from __future__ import annotations

import functools
import warnings

import pytest
from bokeh.models import CategoricalAxis, Legend

import jupyter_traceview as tv
from jupyter_traceview import charts
from jupyter_traceview.dashboard.data import DashboardData
from jupyter_traceview.format import label_names, middle_ellipsis, short_names
from tests.conftest import KINETO_FOLDERS

#: Label characters a bar chart may spend (the "N. " rank prefix and a "[k]" suffix aside).
LABEL_CHARS = 20


@functools.cache
def _dlrm() -> tv.Trace:
    return tv.load(KINETO_FOLDERS["dlrm_8rank_v100"], cache=False, progress=False)


def _factors(fig: object) -> list[str]:
    return [str(f) for f in fig.y_range.factors]  # type: ignore[attr-defined]


def test_middle_ellipsis_keeps_both_ends() -> None:
    assert middle_ellipsis("abcdefghij", 5) == "ab…ij"
    assert middle_ellipsis("abc", 5) == "abc"
    names = [f"void ns::kernel_template<float, {i}, ns::Policy<{i}>>(int)" for i in range(3)]
    labels = label_names(names, 20)
    assert len(set(labels)) == 3 and all(len(x) <= 20 for x in labels)
    # The ends, where the instances differ, stay; the start names the kernel.
    assert all(x.startswith("kernel_te") for x in labels)


def test_top_kernels_labels_are_bounded_and_full_on_hover() -> None:
    df = tv.kernel_breakdown(_dlrm(), top_k=None)
    fig = charts.top_kernels_chart(df)
    labels = _factors(fig)
    assert len(labels) == 15
    for label in labels:
        body = label.split(". ", 1)[1].rsplit(" [", 1)[0]
        assert len(body) <= LABEL_CHARS, label
    assert max(len(s) for s in short_names(df["name"].astype(str))) > 2 * LABEL_CHARS  # names were long
    src = fig.renderers[0].data_source.data
    assert all(len(n) > len(label) - 4 for n, label in zip(src["name"], src["y"], strict=True))  # full on hover


def test_time_lost_labels_bounded_legend_outside() -> None:
    perf = tv.op_performance(_dlrm(), by="shape")
    fig = charts.time_lost_chart(perf)
    assert all(len(x) <= LABEL_CHARS + 4 for x in _factors(fig))
    data = fig.renderers[0].data_source.data
    assert any(len(f) > LABEL_CHARS for f in data["full"])  # the operator and its shapes, whole, on hover
    legends = [x for x in fig.above if isinstance(x, Legend)]
    assert legends and not [x for x in fig.center if isinstance(x, Legend)]


def test_roofline_legend_outside_the_plot() -> None:
    fig = charts.roofline_chart(tv.op_performance(_dlrm(), by="shape"))
    assert not [x for x in fig.center if isinstance(x, Legend)]


def test_efficiency_categories_cannot_overprint() -> None:
    fig = charts.efficiency_chart(tv.efficiency(_dlrm()))
    axis = next(a for a in fig.below if isinstance(a, CategoricalAxis))
    assert isinstance(axis.major_label_orientation, float) and axis.major_label_orientation > 0


def test_kernel_tables_show_short_names_with_the_full_one() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tab = DashboardData(_dlrm()).tab("kernels")
    t = next(x for x in tab["tables"] if x["id"] == "kernels")
    j = [c["key"] for c in t["columns"]].index("name")
    assert t["columns"][j]["format"] == "name"
    full = t["full"]["name"]
    cells = [r[j] for r in t["rows"]]
    assert len(full) == len(cells) and len(set(cells)) == len(cells)
    assert max(len(c) for c in cells) <= 48 + 4 < max(len(f) for f in full)
    assert full[0] in set(tv.kernel_breakdown(_dlrm(), top_k=None)["name"].astype(str))


@pytest.mark.parametrize("chart", ["top_kernels_chart", "kernel_duration_chart"])
def test_kernel_charts_share_the_label_rule(chart: str) -> None:
    t = _dlrm()
    df = tv.kernel_breakdown(t, top_k=None) if chart == "top_kernels_chart" else tv.kernel_duration_distribution(t)
    fig = getattr(charts, chart)(df)
    rng = fig.y_range if hasattr(fig.y_range, "factors") else fig.x_range
    for label in [str(f) for f in rng.factors]:
        assert len(label.split(". ", 1)[-1].rsplit(" [", 1)[0]) <= LABEL_CHARS, label


def test_tick_labels_never_overprint() -> None:
    from bokeh.models import NoOverlap

    t = _dlrm()
    for fig in [
        charts.top_kernels_chart(tv.kernel_breakdown(t, top_k=None)),
        charts.time_lost_chart(tv.op_performance(t, by="shape")),
        charts.efficiency_chart(tv.efficiency(t)),
    ]:
        for axis in [*fig.xaxis, *fig.yaxis]:
            assert isinstance(axis.major_label_policy, NoOverlap)


def test_donut_keeps_over_half_the_chart() -> None:
    fig = charts.kernel_type_chart(tv.kernel_breakdown(_dlrm(), by="type"))
    assert fig.frame_width / fig.width > 0.5


def _all_charts(t: tv.Trace) -> list[object]:
    perf = tv.op_performance(t, by="shape")
    return [
        charts.top_kernels_chart(tv.kernel_breakdown(t, top_k=None)),
        charts.kernel_type_chart(tv.kernel_breakdown(t, by="type")),
        charts.kernel_duration_chart(tv.kernel_duration_distribution(t)),
        charts.time_lost_chart(perf),
        charts.roofline_chart(perf),
        charts.efficiency_chart(tv.efficiency(t)),
    ]


def test_every_chart_fits_a_narrow_output() -> None:
    """A 368 px output (an 800 px window, the file browser open): no chart is wider.

    The minimum widths were 440-556 px (the longest title line at 64 characters).
    """
    from bokeh.models.annotations import Title

    from jupyter_traceview.charts._style import MIN_WIDTH, TITLE_CHAR_PX

    assert MIN_WIDTH <= 340
    for fig in _all_charts(_dlrm()):
        fixed = fig.sizing_mode == "fixed"  # type: ignore[attr-defined]
        width = fig.width if fixed else fig.min_width  # type: ignore[attr-defined]
        assert width <= MIN_WIDTH, (fig, width)
        if fixed:  # the donut: a square plot area over half the chart
            assert fig.frame_width / fig.width > 0.5  # type: ignore[attr-defined]
        titles = [str(x.text) for x in fig.above if isinstance(x, Title)] + [fig.title.text if fig.title else ""]  # type: ignore[attr-defined]
        for line in titles:
            assert TITLE_CHAR_PX * len(line) + 24 <= MIN_WIDTH, line  # a title line is never cut


def test_long_titles_wrap_whole() -> None:
    from bokeh.models.annotations import Title

    from jupyter_traceview.charts._style import TITLE_LINE_CHARS, new_figure

    title = "Host call tree (rank 0): width = inclusive time; click a box to see its first call on the timeline"
    fig = new_figure(title=title, height=200, tooltips=None)
    lines = [str(x.text) for x in reversed(fig.above) if isinstance(x, Title)]
    assert len(lines) > 1 and " ".join(lines) == title
    assert all(len(x) <= TITLE_LINE_CHARS for x in lines)
    assert fig.height == 200 + 18 * (len(lines) - 1)


def test_category_labels_shorten_in_the_dashboard() -> None:
    """Category axes carry the formatter the dashboard bounds to the chart's width (labels whole here)."""
    from bokeh.models import CategoricalAxis, CustomJSTickFormatter

    from jupyter_traceview.charts._style import FIT_LABELS_TAG

    t = _dlrm()
    for fig in [
        charts.top_kernels_chart(tv.kernel_breakdown(t, top_k=None)),
        charts.time_lost_chart(tv.op_performance(t, by="shape")),
        charts.efficiency_chart(tv.efficiency(t)),
    ]:
        axes = [a for a in [*fig.xaxis, *fig.yaxis] if isinstance(a, CategoricalAxis)]
        assert axes
        for a in axes:
            assert isinstance(a.formatter, CustomJSTickFormatter) and FIT_LABELS_TAG in a.formatter.tags
            assert a.formatter.args == {"chars": 0}
