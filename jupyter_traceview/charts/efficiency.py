"""Efficiency: the parallel-efficiency waterfall and the iteration times per rank."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, FactorRange, LinearColorMapper, NumeralTickFormatter
from bokeh.models.annotations import LabelSet

from ..views.colors import Theme
from ._style import (
    FONT,
    add_hover,
    duration_text,
    empty_chart,
    kind_colors,
    linkable,
    mix,
    new_figure,
    pct_text,
    ramp,
    require,
    text_color,
    time_unit,
)

__all__ = ["efficiency_chart", "iteration_chart"]


#: Slant of the efficiency waterfall's category names (radians).
EFFICIENCY_LABEL_ANGLE = 0.5


def efficiency_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int = 300) -> Any:
    """A waterfall from 100% to the parallel efficiency: what load imbalance, communication and orchestration cost.

    ``df`` is ``efficiency(trace)`` (``per="job"``, one row). Parallel efficiency is the
    product ``LB x CommE x OE``; each factor's loss is drawn where it occurs:
    ``100 -> LB -> LB*CommE -> LB*CommE*OE = PE`` (percent of the ideal GPU time).
    """
    title = "Parallel efficiency = load balance × communication × orchestration"
    cols = [
        "load_balance_pct",
        "communication_efficiency_pct",
        "orchestration_efficiency_pct",
        "parallel_efficiency_pct",
    ]
    require(df, cols, "efficiency_chart")
    if df.empty or df[cols].isna().all(axis=None):
        return empty_chart(title, "No GPU compute in this trace")
    row = df.iloc[0]
    lb, ce, oe = (float(row[c]) / 100 for c in cols[:3])
    pe = float(row["parallel_efficiency_pct"])
    levels = [100.0, 100 * lb, 100 * lb * ce, 100 * lb * ce * oe]
    colors = kind_colors(theme)
    loss = {
        "load": colors["compute"],
        "comm": colors["communication"],
        "orch": colors["runtime"],
    }
    steps = [
        (
            "Ideal",
            0.0,
            100.0,
            mix(colors["other"], "#ffffff" if theme == "light" else "#000000", 0.3),
            "100%",
            "every GPU computes all the time",
        ),
        (
            "Load imbalance",
            levels[1],
            levels[0],
            loss["load"],
            f"LB {100 * lb:.1f}%",
            "compute spread unevenly: ranks wait for the most loaded one (mean/max compute)",
        ),
        (
            "Communication",
            levels[2],
            levels[1],
            loss["comm"],
            f"CommE {100 * ce:.1f}%",
            "transfers not hidden under compute (max compute / max busy)",
        ),
        (
            "Orchestration",
            levels[3],
            levels[2],
            loss["orch"],
            f"OE {100 * oe:.1f}%",
            "GPUs left idle: launch overhead, synchronisation, gaps (max busy / elapsed)",
        ),
        (
            "Parallel efficiency",
            0.0,
            pe,
            colors["compute"],
            f"PE {pe:.1f}%",
            "share of the ideal GPU time spent computing",
        ),
    ]
    source = ColumnDataSource(
        {
            "x": [s[0] for s in steps],
            "bottom": [s[1] for s in steps],
            "top": [s[2] for s in steps],
            "color": [s[3] for s in steps],
            "label": [s[4] for s in steps],
            "what": [s[5] for s in steps],
            "change": [f"{s[2] - s[1]:.1f} points" if i not in (0, 4) else "" for i, s in enumerate(steps)],
            "label_y": [max(s[1], s[2]) for s in steps],
        }
    )
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        x_range=FactorRange(factors=[s[0] for s in steps]),
        y_label="% of the ideal GPU time",
    )
    r = fig.vbar(x="x", bottom="bottom", top="top", width=0.7, fill_color="color", line_color=None, source=source)
    fig.add_layout(
        LabelSet(
            x="x",
            y="label_y",
            text="label",
            source=source,
            text_align="center",
            y_offset=3,
            text_font_size="11px",
            text_font=value(FONT),
            text_color=text_color(theme),
        )
    )
    add_hover(fig, [("", "@x: @label"), ("lost", "@change"), ("meaning", "@what")], [r])
    fig.y_range.start = 0
    fig.y_range.end = 112
    fig.yaxis.formatter = NumeralTickFormatter(format="0")
    fig.xgrid.visible = False
    # Five names side by side overlap below about 110 px each: slanted, they never do.
    fig.xaxis.major_label_orientation = EFFICIENCY_LABEL_ANGLE
    return fig


#: Parts of an iteration's duration, bottom to top: (column, label, kind colour).
_PARTS = (
    ("compute", "Compute", "compute"),
    ("exposed", "Exposed communication", "communication"),
    ("other", "Other GPU work (memory, ...)", "memory"),
    ("idle", "GPU idle", "other"),
)


def iteration_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int | None = None, max_bars: int = 96) -> Any:
    """Iteration times per rank: stacked bars (compute, exposed communication, other, idle) per step and rank.

    ``df`` is :func:`jupyter_traceview.iteration_stats`'s result. With more than
    ``max_bars`` (step, rank) pairs the chart becomes a step x rank heatmap of the
    durations. Clicking a bar or cell zooms the timeline to that rank's step.
    """
    title = "Iteration time per rank: what fills each step"
    require(
        df,
        ["step", "rank", "duration_ns", "compute_ns", "exposed_comm_ns", "gpu_busy_ns", "idle_ns"],
        "iteration_chart",
    )
    if df.empty:
        return empty_chart(title, "No ProfilerStep iterations in this trace")
    d = df.sort_values(["step", "rank"])
    if len(d) > max_bars:
        return _iteration_heatmap(d, theme=theme, height=height)
    colors = kind_colors(theme)
    unit, scale = time_unit(d["duration_ns"])
    factors = [(str(s), str(r)) for s, r in zip(d["step"], d["rank"], strict=True)]
    other = (d["gpu_busy_ns"] - d["compute_ns"] - d["exposed_comm_ns"]).clip(lower=0)
    values = {
        "compute": d["compute_ns"].to_numpy(),
        "exposed": d["exposed_comm_ns"].to_numpy(),
        "other": other.to_numpy(),
        "idle": d["idle_ns"].to_numpy(),
    }
    data: dict[str, Any] = {
        "x": factors,
        "link_rank": d["rank"].to_numpy(),
        "link_step": d["step"].to_numpy(),
        "dur_txt": duration_text(d["duration_ns"]),
    }
    for key, v in values.items():
        data[key] = v / scale
        data[f"{key}_txt"] = duration_text(v)
    source = ColumnDataSource(data)
    fig = new_figure(
        title=title,
        height=height or 300,
        tooltips=None,
        x_range=FactorRange(factors=list(factors), group_padding=0.8),
        x_label="Step · rank",
        y_label=f"Duration ({unit})",
    )
    fade = "#ffffff" if theme == "light" else "#000000"
    parts = [
        (key, label, mix(colors[kind], fade, 0.35) if key == "idle" else colors[kind]) for key, label, kind in _PARTS
    ]
    renderers = fig.vbar_stack(
        [p[0] for p in parts],
        x="x",
        width=0.85,
        color=[p[2] for p in parts],
        line_color=None,
        source=source,
        legend_label=[p[1] for p in parts],
    )
    fig.legend.orientation = "horizontal"
    fig.legend.location = "top_left"
    fig.legend.click_policy = "hide"
    fig.add_layout(fig.legend[0], "above")
    add_hover(
        fig,
        [
            ("step · rank", "@link_step · @link_rank"),
            ("duration", "@dur_txt"),
            ("compute", "@compute_txt"),
            ("exposed communication", "@exposed_txt"),
            ("other GPU work", "@other_txt"),
            ("GPU idle", "@idle_txt"),
        ],
        list(renderers),
    )
    fig.y_range.start = 0
    fig.xgrid.visible = False
    fig.xaxis.major_label_text_font_size = "10px"
    linkable(fig, source, "iteration", list(renderers))
    return fig


def _iteration_heatmap(d: pd.DataFrame, *, theme: Theme, height: int | None) -> Any:
    steps = sorted(set(d["step"].tolist()))
    ranks = sorted(set(d["rank"].tolist()))
    unit, scale = time_unit(d["duration_ns"])
    median = float(d["duration_ns"].median())
    source = ColumnDataSource(
        {
            "x": d["step"].to_numpy(),
            "y": [str(r) for r in d["rank"]],
            "dur": d["duration_ns"].to_numpy() / scale,
            "dur_txt": duration_text(d["duration_ns"]),
            "vs_txt": pct_text(100 * (d["duration_ns"].to_numpy() / median - 1) if median > 0 else np.nan),
            "busy_txt": pct_text(d["gpu_busy_pct"]) if "gpu_busy_pct" in d else ["-"] * len(d),
            "link_rank": d["rank"].to_numpy(),
            "link_step": d["step"].to_numpy(),
        }
    )
    lo, hi = float(d["duration_ns"].min()) / scale, float(d["duration_ns"].max()) / scale
    mapper = LinearColorMapper(palette=ramp("runtime", theme), low=lo, high=max(hi, lo + 1e-9))
    fig = new_figure(
        title=f"Iteration time per rank and step ({unit}; {len(steps)} steps × {len(ranks)} ranks)",
        height=height or max(200, 90 + 18 * len(ranks)),
        tooltips=None,
        y_range=FactorRange(factors=list(reversed([str(r) for r in ranks]))),
        tools="xpan,xwheel_zoom,reset,save",
        x_label="Step",
        y_label="Rank",
    )
    r = fig.rect(
        x="x",
        y="y",
        width=1,
        height=0.92,
        fill_color={"field": "dur", "transform": mapper},
        line_color=None,
        source=source,
    )
    add_hover(
        fig,
        [
            ("step · rank", "@link_step · @link_rank"),
            ("duration", "@dur_txt (@vs_txt vs median)"),
            ("GPU busy", "@busy_txt"),
        ],
        [r],
    )
    from bokeh.models.annotations import ColorBar

    fig.add_layout(ColorBar(color_mapper=mapper, width=10, title=unit), "right")
    fig.grid.visible = False
    linkable(fig, source, "iteration", [r])
    return fig
