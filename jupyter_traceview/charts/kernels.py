"""Kernels: time per kernel type (donut), the top kernels (bars), durations across ranks (whiskers)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, FactorRange
from bokeh.models.annotations import Legend, LegendItem, Whisker
from bokeh.transform import cumsum

from ..format import label_names
from ..model.text import as_text
from ..views.colors import Theme, palette
from ._style import (
    FONT,
    MIN_WIDTH,
    add_hover,
    duration_text,
    empty_chart,
    kind_colors,
    linkable,
    mix,
    new_figure,
    pct_text,
    require,
    text_color,
    time_unit,
)

__all__ = ["kernel_duration_chart", "kernel_type_chart", "top_kernels_chart"]


def _type_color(kernel_type: str, colors: dict[str, str]) -> tuple[str, str | None]:
    """Colour and hatch of a kernel type: plain kinds in their colour, overlaps hatched in a blend."""
    t = str(kernel_type)
    if t in colors:
        return colors[t], None
    if " overlapping " in t:
        a, b = t.split(" overlapping ", 1)
        return mix(colors.get(a, colors["other"]), colors.get(b, colors["other"]), 0.5), "/"
    return colors["other"], None


#: Height of a row of the donut's legend, which is under the donut (one type a row): right
#: of it, the longest type ("compute overlapping communication") made the chart 470 px
#: wide, wider than a narrow output.
DONUT_LEGEND_ROW_PX = 20


def kernel_type_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int = 300) -> Any:
    """A donut of GPU time per kernel type, summed over ranks.

    ``df`` is ``kernel_breakdown(trace, by="type")``: one row per (rank, kernel_type) with
    ``time_ns``. Overlap types ("compute overlapping communication") are hatched.
    """
    # Short: a title wider than the chart would widen it (new_figure's min_width).
    title = "GPU busy time by kernel type (all ranks)"
    require(df, ["kernel_type", "time_ns"], "kernel_type_chart")
    g = df.groupby("kernel_type", observed=True, sort=False)["time_ns"].sum()
    g = g[g > 0].sort_values(ascending=False)
    if g.empty:
        return empty_chart(title, "No kernels in this trace")
    colors = kind_colors(theme)
    total = float(g.sum())
    fills, hatches = zip(*(_type_color(t, colors) for t in g.index), strict=True)
    source = ColumnDataSource(
        {
            "type": [str(t) for t in g.index],
            "value": g.to_numpy().astype(np.float64),
            "angle": g.to_numpy() / total * 2 * math.pi,
            "color": list(fills),
            "hatch": [h or " " for h in hatches],
            "time_txt": duration_text(g.to_numpy()),
            "pct_txt": pct_text(100 * g.to_numpy() / total),
        }
    )
    fig = new_figure(title=title, height=height, tooltips=None, x_range=(-1.1, 1.1), y_range=(-1.1, 1.1))
    r = fig.annular_wedge(
        x=0,
        y=0,
        inner_radius=0.5,
        outer_radius=0.95,
        start_angle=cumsum("angle", include_zero=True),
        end_angle=cumsum("angle"),
        fill_color="color",
        hatch_pattern="hatch",
        hatch_color=text_color(theme),
        hatch_alpha=0.35,
        line_color=None,
        source=source,
    )
    fig.text(
        x=[0],
        y=[0],
        text=[duration_text([total])[0]],
        text_align="center",
        text_baseline="middle",
        text_font_size="14px",
        text_font=value(FONT),
        text_color=text_color(theme),
    )
    legend = Legend(
        items=[LegendItem(label=str(t), renderers=[r], index=i) for i, t in enumerate(g.index)],
        location="center",
    )
    fig.add_layout(legend, "below")
    add_hover(fig, [("type", "@type"), ("busy", "@time_txt (@pct_txt; streams running at once count once)")], [r])
    fig.axis.visible = False
    fig.grid.visible = False
    # A circle stays a circle: a square frame, not stretched with the container, as wide as
    # the narrowest chart (the legend's longest type fits under it).
    fig.sizing_mode = "fixed"
    fig.frame_width = fig.frame_height = height - 50
    fig.width = MIN_WIDTH
    fig.height = height + DONUT_LEGEND_ROW_PX * len(g) + 10
    return fig


def _top(df: pd.DataFrame, top_k: int) -> pd.DataFrame:
    """Kernels summed over ranks, the ``top_k`` longest first (``others`` rows kept last)."""
    g = (
        df.assign(name=as_text(df["name"]), kernel_type=as_text(df["kernel_type"]))
        .groupby(["name", "kernel_type"], sort=False)
        .agg(sum_ns=("sum_ns", "sum"), count=("count", "sum"), ranks=("rank", "nunique"))
        .reset_index()
    )
    others = g.loc[g["name"] == "others"]
    g = g.loc[g["name"] != "others"].sort_values("sum_ns", ascending=False).head(top_k)
    return pd.concat([g, others], ignore_index=True)


def top_kernels_chart(df: pd.DataFrame, *, theme: Theme = "light", top_k: int = 15, height: int | None = None) -> Any:
    """Horizontal bars: the ``top_k`` kernels by total time over all ranks, coloured by type.

    ``df`` is :func:`jupyter_traceview.kernel_breakdown`'s per-kernel result (``by="kernel"``).
    """
    title = f"Top {top_k} kernels by total GPU time (all ranks)"
    require(df, ["rank", "kernel_type", "name", "count", "sum_ns"], "top_kernels_chart")
    if df.empty:
        return empty_chart(title, "No kernels in this trace")
    top = _top(df, top_k)
    colors = kind_colors(theme)
    short = label_names(as_text(top["name"]))
    labels = [
        f"{i + 1}. {s}" if n != "others" else "others" for i, (n, s) in enumerate(zip(top["name"], short, strict=True))
    ]
    unit, scale = time_unit(top["sum_ns"])
    total = float(df["sum_ns"].sum())
    source = ColumnDataSource(
        {
            "y": labels,
            "name": top["name"].tolist(),
            "type": top["kernel_type"].tolist(),
            "value": top["sum_ns"].to_numpy() / scale,
            "color": [_type_color(t, colors)[0] for t in top["kernel_type"]],
            "time_txt": duration_text(top["sum_ns"]),
            "pct_txt": pct_text(100 * top["sum_ns"].to_numpy() / max(total, 1)),
            "count": top["count"].to_numpy(),
            "mean_txt": duration_text(top["sum_ns"].to_numpy() / np.maximum(top["count"].to_numpy(), 1)),
        }
    )
    h = height or max(220, 60 + 22 * len(labels))
    fig = new_figure(
        title=title,
        height=h,
        tooltips=None,
        y_range=FactorRange(factors=list(reversed(labels))),
        x_label=f"Total GPU time ({unit})",
    )
    r = fig.hbar(y="y", right="value", height=0.75, fill_color="color", line_color=None, source=source)
    add_hover(
        fig,
        [
            ("kernel", "@name"),
            ("type", "@type"),
            ("total", "@time_txt (@pct_txt of kernel time)"),
            ("launches", "@count"),
            ("mean", "@mean_txt"),
        ],
        [r],
    )
    fig.x_range.start = 0
    fig.ygrid.visible = False
    fig.yaxis.major_label_text_font_size = "10px"  # with 20-character names: the bars keep over half of a 440 px chart
    return fig


def kernel_duration_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int | None = None) -> Any:
    """Mean duration of each top kernel: a bar (mean over ranks), whiskers (min-max of the rank means), dots per rank.

    ``df`` is :func:`jupyter_traceview.kernel_duration_distribution`'s result. Outlier ranks
    (``outlier``) are drawn larger and outlined. Clicking a rank's dot opens that rank in
    the timeline with the kernel highlighted.
    """
    title = "Kernel duration across ranks: mean, min-max of the rank means, one dot per rank"
    require(df, ["name", "kernel_type", "rank", "mean_ns"], "kernel_duration_chart")
    if df.empty:
        return empty_chart(title, "No kernels in this trace")
    colors = kind_colors(theme)
    d = df.assign(name=as_text(df["name"]), kernel_type=as_text(df["kernel_type"]))
    order = d.groupby("name", sort=False)["sum_ns"].sum().sort_values(ascending=False).index.tolist()
    labels = {n: f"{i + 1}. {s}" for i, (n, s) in enumerate(zip(order, label_names(order), strict=True))}
    agg = d.groupby("name", sort=False).agg(
        kernel_type=("kernel_type", "first"),
        mean=("mean_ns", "mean"),
        lo=("mean_ns", "min"),
        hi=("mean_ns", "max"),
        ranks=("rank", "nunique"),
    )
    agg = agg.reindex(order)
    unit, scale = time_unit(agg["hi"])
    bars = ColumnDataSource(
        {
            "y": [labels[n] for n in agg.index],
            "name": list(agg.index),
            "type": agg["kernel_type"].tolist(),
            "mean": agg["mean"].to_numpy() / scale,
            "lo": agg["lo"].to_numpy() / scale,
            "hi": agg["hi"].to_numpy() / scale,
            "color": [_type_color(t, colors)[0] for t in agg["kernel_type"]],
            "mean_txt": duration_text(agg["mean"]),
            "lo_txt": duration_text(agg["lo"]),
            "hi_txt": duration_text(agg["hi"]),
            "ranks": agg["ranks"].to_numpy(),
        }
    )
    outlier = d["outlier"].to_numpy(dtype=bool) if "outlier" in d else np.zeros(len(d), dtype=bool)
    dots = ColumnDataSource(
        {
            "y": [labels[n] for n in d["name"]],
            "x": d["mean_ns"].to_numpy() / scale,
            "link_rank": d["rank"].to_numpy(),
            "link_name": d["name"].tolist(),
            "mean_txt": duration_text(d["mean_ns"]),
            "count": d["count"].to_numpy() if "count" in d else np.zeros(len(d), dtype=np.int64),
            "dev_txt": pct_text(d["deviation_pct"]) if "deviation_pct" in d else ["-"] * len(d),
            "fill": np.where(outlier, palette()["highlight"][theme], text_color(theme)).tolist(),
            "size": np.where(outlier, 9, 5),
            "line": np.where(outlier, 2, 0.5),
            "outlier": np.where(outlier, "yes", "no"),
        }
    )
    h = height or max(220, 60 + 24 * len(agg))
    fig = new_figure(
        title=title,
        height=h,
        tooltips=None,
        y_range=FactorRange(factors=[labels[n] for n in reversed(agg.index)]),
        x_label=f"Mean kernel duration ({unit})",
    )
    rb = fig.hbar(y="y", right="mean", height=0.7, fill_color="color", fill_alpha=0.55, line_color=None, source=bars)
    fig.add_layout(
        Whisker(
            source=bars,
            base="y",
            lower="lo",
            upper="hi",
            dimension="width",
            line_color=text_color(theme),
            line_alpha=0.8,
        )
    )
    rd = fig.scatter(
        x="x",
        y="y",
        size="size",
        line_width="line",
        line_color=text_color(theme),
        fill_color="fill",
        fill_alpha=0.8,
        source=dots,
    )
    add_hover(
        fig,
        [
            ("kernel", "@name"),
            ("mean over ranks", "@mean_txt"),
            ("rank means", "@lo_txt … @hi_txt over @ranks ranks"),
        ],
        [rb],
    )
    add_hover(
        fig,
        [
            ("rank", "@link_rank"),
            ("kernel", "@link_name"),
            ("mean", "@mean_txt over @count launches"),
            ("vs median rank", "@dev_txt"),
            ("outlier", "@outlier"),
        ],
        [rd],
    )
    fig.x_range.start = 0
    fig.ygrid.visible = False
    fig.yaxis.major_label_text_font_size = "11px"
    linkable(fig, dots, "kernel", [rd])
    return fig
