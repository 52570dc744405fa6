"""Where the GPU time goes, per rank: temporal breakdown, communication overlap, idle time, concurrency."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import ColumnDataSource, FactorRange, NumeralTickFormatter
from bokeh.models.annotations import Legend, LegendItem

from ..views.colors import Theme
from ._style import (
    add_hover,
    duration_text,
    empty_chart,
    kind_colors,
    linkable,
    mix,
    new_figure,
    pct_text,
    require,
    time_unit,
)

__all__ = ["comm_comp_overlap_chart", "concurrency_chart", "idle_breakdown_chart", "temporal_breakdown_chart"]


def _stack(
    fig: Any,
    source: ColumnDataSource,
    x: str,
    parts: list[tuple[str, str, str]],
    *,
    width: float = 0.8,
    horizontal: bool = False,
) -> list[Any]:
    """Stacked bars of the ``parts`` ``(column, label, colour)``; returns the renderers, bottom first."""
    fn = fig.hbar_stack if horizontal else fig.vbar_stack
    kw: dict[str, Any] = {"y" if horizontal else "x": x, "height" if horizontal else "width": width}
    renderers = fn(
        [c for c, _, _ in parts],
        source=source,
        color=[c for _, _, c in parts],
        line_color=None,
        **kw,
    )
    items = [LegendItem(label=label, renderers=[r]) for r, (_, label, _) in zip(renderers, parts, strict=True)]
    legend = Legend(items=items, orientation="horizontal", location="top_left", click_policy="hide")
    fig.add_layout(legend, "above")
    return list(renderers)


def temporal_breakdown_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int = 300) -> Any:
    """Stacked bars per rank: compute, non-compute (communication, memory) and idle time.

    ``df`` is :func:`jupyter_traceview.temporal_breakdown`'s result. Clicking a rank's bar
    opens that rank in the dashboard's timeline.
    """
    title = "Temporal breakdown: where each rank's GPU time goes"
    require(df, ["rank", "idle_ns", "compute_ns", "non_compute_ns", "span_ns"], "temporal_breakdown_chart")
    if df.empty:
        return empty_chart(title, "No GPU activity in this trace")
    unit, scale = time_unit(df["span_ns"])
    colors = kind_colors(theme)
    ranks = [str(r) for r in df["rank"].tolist()]
    data: dict[str, Any] = {
        "x": ranks,
        "link_rank": df["rank"].to_numpy(),
        "compute": df["compute_ns"].to_numpy() / scale,
        "non_compute": df["non_compute_ns"].to_numpy() / scale,
        "idle": df["idle_ns"].to_numpy() / scale,
        "compute_txt": duration_text(df["compute_ns"]),
        "non_compute_txt": duration_text(df["non_compute_ns"]),
        "idle_txt": duration_text(df["idle_ns"]),
        "span_txt": duration_text(df["span_ns"]),
        "compute_pct": pct_text(df["compute_pct"]),
        "non_compute_pct": pct_text(df["non_compute_pct"]),
        "idle_pct": pct_text(df["idle_pct"]),
    }
    source = ColumnDataSource(data)
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        x_range=FactorRange(factors=list(ranks)),
        x_label="Rank",
        y_label=f"GPU time ({unit})",
    )
    parts = [
        ("compute", "Compute", colors["compute"]),
        ("non_compute", "Non-compute (communication, memory)", colors["communication"]),
        ("idle", "Idle", mix(colors["other"], "#ffffff" if theme == "light" else "#000000", 0.35)),
    ]
    renderers = _stack(fig, source, "x", parts)
    add_hover(
        fig,
        [
            ("rank", "@x"),
            ("GPU span", "@span_txt"),
            ("compute", "@compute_txt (@compute_pct)"),
            ("non-compute", "@non_compute_txt (@non_compute_pct)"),
            ("idle", "@idle_txt (@idle_pct)"),
        ],
        renderers,
    )
    fig.y_range.start = 0
    fig.xgrid.visible = False
    linkable(fig, source, "rank", renderers)
    return fig


def comm_comp_overlap_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int = 300) -> Any:
    """Stacked bars per rank: communication hidden under compute vs exposed, with the overlap share.

    ``df`` is :func:`jupyter_traceview.comm_comp_overlap`'s result.
    """
    title = "Communication overlapped with compute, per rank"
    require(df, ["rank", "comm_ns", "overlap_ns", "exposed_comm_ns", "overlap_pct"], "comm_comp_overlap_chart")
    if df.empty or not (df["comm_ns"] > 0).any():
        return empty_chart(title, "No GPU communication in this trace")
    unit, scale = time_unit(df["comm_ns"])
    colors = kind_colors(theme)
    ranks = [str(r) for r in df["rank"].tolist()]
    source = ColumnDataSource(
        {
            "x": ranks,
            "link_rank": df["rank"].to_numpy(),
            "overlap": df["overlap_ns"].to_numpy() / scale,
            "exposed": df["exposed_comm_ns"].to_numpy() / scale,
            "overlap_txt": duration_text(df["overlap_ns"]),
            "exposed_txt": duration_text(df["exposed_comm_ns"]),
            "comm_txt": duration_text(df["comm_ns"]),
            "compute_txt": duration_text(df["compute_ns"]) if "compute_ns" in df else ["-"] * len(df),
            "overlap_pct": pct_text(df["overlap_pct"]),
        }
    )
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        x_range=FactorRange(factors=list(ranks)),
        x_label="Rank",
        y_label=f"Communication time ({unit})",
    )
    parts = [
        ("overlap", "Overlapped with compute", mix(colors["communication"], colors["compute"], 0.5)),
        ("exposed", "Exposed (nothing else runs)", colors["communication"]),
    ]
    renderers = _stack(fig, source, "x", parts)
    add_hover(
        fig,
        [
            ("rank", "@x"),
            ("communication", "@comm_txt"),
            ("overlapped", "@overlap_txt (@overlap_pct of it)"),
            ("exposed", "@exposed_txt"),
            ("compute", "@compute_txt"),
        ],
        renderers,
    )
    fig.y_range.start = 0
    fig.xgrid.visible = False
    linkable(fig, source, "rank", renderers)
    return fig


_IDLE = (
    ("host_wait", "Waiting for the host (launches)"),
    ("kernel_wait", "Between kernels (short gaps)"),
    ("other", "Other (synchronisation, ...)"),
)


def idle_breakdown_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int = 320) -> Any:
    """Stacked bars per rank and stream: idle time by cause (host wait, kernel wait, other).

    ``df`` is :func:`jupyter_traceview.idle_time_breakdown`'s result.
    """
    title = "Idle time per rank and stream, by cause"
    require(df, ["rank", "stream", "idle_category", "idle_ns"], "idle_breakdown_chart")
    if df.empty:
        return empty_chart(title, "No GPU activity in this trace")
    wide = df.pivot_table(
        index=["rank", "stream"], columns="idle_category", values="idle_ns", aggfunc="sum", observed=False
    ).fillna(0)
    wide = wide.reindex(columns=[k for k, _ in _IDLE], fill_value=0)
    wide = wide.loc[wide.sum(axis=1) > 0]
    if wide.empty:
        return empty_chart(title, "No idle time between GPU activities")
    total = wide.sum(axis=1).to_numpy()
    unit, scale = time_unit(total)
    colors = kind_colors(theme)
    factors = [(str(r), str(s)) for r, s in wide.index]
    data: dict[str, Any] = {
        "x": factors,
        "link_rank": np.asarray([r for r, _ in wide.index]),
        "stream": [str(s) for _, s in wide.index],
        "total_txt": duration_text(total),
    }
    for key, _ in _IDLE:
        data[key] = wide[key].to_numpy() / scale
        data[f"{key}_txt"] = duration_text(wide[key].to_numpy())
        data[f"{key}_pct"] = pct_text(np.where(total > 0, 100 * wide[key].to_numpy() / np.maximum(total, 1), np.nan))
    source = ColumnDataSource(data)
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        x_range=FactorRange(factors=list(factors), group_padding=0.6),
        x_label="Rank · stream",
        y_label=f"Idle time ({unit})",
    )
    shade = {"host_wait": colors["runtime"], "kernel_wait": colors["sync"], "other": colors["other"]}
    parts = [(k, label, shade[k]) for k, label in _IDLE]
    renderers = _stack(fig, source, "x", parts, width=0.85)
    add_hover(
        fig,
        [
            ("rank · stream", "@link_rank · @stream"),
            ("idle", "@total_txt"),
            ("host wait", "@host_wait_txt (@host_wait_pct)"),
            ("kernel wait", "@kernel_wait_txt (@kernel_wait_pct)"),
            ("other", "@other_txt (@other_pct)"),
        ],
        renderers,
    )
    fig.y_range.start = 0
    fig.xgrid.visible = False
    fig.xaxis.major_label_orientation = 0.9 if len(factors) > 24 else 0
    fig.xaxis.group_text_font_size = "11px"
    linkable(fig, source, "rank", renderers)
    return fig


def concurrency_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int = 300) -> Any:
    """Stacked bars per rank: share of the GPU span with 0, 1, 2, 3+ activities in flight.

    ``df`` is :func:`jupyter_traceview.concurrency`'s result; levels with communication in
    flight are drawn in the communication colour's tones, compute-only levels in compute's.
    """
    title = "Concurrency: activities in flight at once, share of the GPU span"
    require(df, ["rank", "in_flight", "in_flight_min", "with_communication", "time_pct"], "concurrency_chart")
    if df.empty:
        return empty_chart(title, "No GPU activity in this trace")
    colors = kind_colors(theme)
    levels = sorted(set(zip(df["in_flight_min"].tolist(), df["in_flight"].tolist(), strict=True)))
    ranks = sorted(set(df["rank"].tolist()))
    x = [str(r) for r in ranks]
    parts: list[tuple[str, str, str]] = []
    data: dict[str, Any] = {"x": x, "link_rank": np.asarray(ranks)}
    fade = "#ffffff" if theme == "light" else "#000000"
    top = max((m for m, _ in levels), default=1) or 1
    for m, label in levels:
        for comm in (False, True):
            if m == 0 and comm:
                continue
            sel = df.loc[(df["in_flight_min"] == m) & (df["with_communication"] == comm)]
            col = f"l{m}{'c' if comm else ''}"
            pct = sel.set_index("rank")["time_pct"].reindex(ranks).fillna(0).to_numpy()
            ns = (
                sel.set_index("rank")["time_ns"].reindex(ranks).fillna(0).to_numpy()
                if "time_ns" in sel
                else np.zeros(len(ranks))
            )
            if m > 0 and not (pct > 0).any():
                continue
            data[col] = pct
            data[f"{col}_txt"] = [f"{p} ({d})" for p, d in zip(pct_text(pct), duration_text(ns), strict=True)]
            if m == 0:
                name, color = "Idle (0 in flight)", mix(colors["other"], fade, 0.35)
            else:
                base = colors["communication" if comm else "compute"]
                name = f"{label} in flight{' with communication' if comm else ', compute only'}"
                color = mix(base, fade, 0.55 * (1 - (m - 1) / max(top - 1, 1)))
            parts.append((col, name, color))
    source = ColumnDataSource(data)
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        x_range=FactorRange(factors=list(x)),
        x_label="Rank",
        y_label="Share of GPU span",
    )
    renderers = _stack(fig, source, "x", [(c, n, col) for c, n, col in parts])
    tips = [("rank", "@x")] + [(name, f"@{col}_txt") for col, name, _ in parts]
    add_hover(fig, tips, renderers)
    fig.y_range.start = 0
    fig.y_range.end = 100
    fig.yaxis.formatter = NumeralTickFormatter(format="0")
    fig.yaxis.axis_label = "Share of the GPU span (%)"
    fig.xgrid.visible = False
    linkable(fig, source, "rank", renderers)
    return fig
