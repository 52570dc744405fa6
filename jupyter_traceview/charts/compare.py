"""Comparing two runs: a waterfall from the baseline's mean step to the new one, cause by cause."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import ColumnDataSource, FactorRange

from ..format import short_names
from ..model.text import as_text
from ..views.colors import Theme
from ._style import add_hover, duration_text, empty_chart, kind_colors, mix, new_figure, require, time_unit

__all__ = ["compare_chart"]


def compare_chart(df: pd.DataFrame, *, theme: Theme = "light", top: int = 12, height: int = 340) -> Any:
    """A waterfall from the baseline's mean step to the new run's: the ``top`` largest causes, then the rest.

    ``df`` is the ``causes`` table of :func:`jupyter_traceview.compare` (its rows add up to
    the change of the mean step, so the bars land exactly on the new mean step). Causes
    within noise are drawn paler. Increases are drawn in the communication (red) tone,
    decreases in the memory (green) one.
    """
    title = "Why the step changed: the baseline's mean step, the causes, the new mean step"
    require(df, ["cause", "status", "base_ns", "new_ns", "delta_ns", "within_noise"], "compare_chart")
    if df.empty:
        return empty_chart(title, "No steps compared")
    colors = kind_colors(theme)
    total_a = float(df["base_ns"].sum())
    total_b = float(df["new_ns"].sum())
    order = df.reindex(df["delta_ns"].abs().sort_values(ascending=False, kind="stable").index)
    changed = order.loc[order["delta_ns"] != 0]
    head = changed.head(top)
    rest = float(changed["delta_ns"].iloc[top:].sum()) if len(changed) > top else 0.0
    paper = "#ffffff" if theme == "light" else "#000000"
    labels, bottoms, tops = ["Baseline"], [0.0], [total_a]
    fills, names, deltas, statuses = [mix(colors["other"], paper, 0.2)], ["baseline mean step"], [total_a], [""]
    level = total_a
    short = short_names(as_text(head["cause"]), 48)
    for i, (name, label, delta, status, noise) in enumerate(
        zip(
            as_text(head["cause"]),
            short,
            head["delta_ns"].astype(float),
            as_text(head["status"]),
            head["within_noise"].astype(bool),
            strict=True,
        )
    ):
        tone = colors["communication"] if delta > 0 else colors["memory"]
        labels.append(f"{i + 1}. {label}")
        bottoms.append(min(level, level + delta))
        tops.append(max(level, level + delta))
        fills.append(mix(tone, paper, 0.6) if noise else tone)
        names.append(name)
        deltas.append(delta)
        statuses.append(f"{status} (within noise)" if noise else status)
        level += delta
    if rest:
        labels.append(f"{len(changed) - top} more")
        bottoms.append(min(level, level + rest))
        tops.append(max(level, level + rest))
        fills.append(mix(colors["communication"] if rest > 0 else colors["memory"], colors["other"], 0.5))
        names.append(f"{len(changed) - top} smaller causes")
        deltas.append(rest)
        statuses.append("")
        level += rest
    labels.append("New")
    bottoms.append(0.0)
    tops.append(total_b)
    fills.append(colors["compute"])
    names.append("new mean step")
    deltas.append(total_b)
    statuses.append("")
    unit, scale = time_unit([total_a, total_b])
    source = ColumnDataSource(
        {
            "x": labels,
            "bottom": np.asarray(bottoms) / scale,
            "top": np.asarray(tops) / scale,
            "color": fills,
            "name": names,
            "delta_txt": [
                (("+" if v > 0 else "") + t) if 0 < i < len(labels) - 1 else t
                for i, (v, t) in enumerate(zip(deltas, duration_text(deltas), strict=True))
            ],
            "status": statuses,
        }
    )
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        x_range=FactorRange(factors=list(labels)),
        y_label=f"Mean step ({unit})",
    )
    r = fig.vbar(x="x", bottom="bottom", top="top", width=0.75, fill_color="color", line_color=None, source=source)
    add_hover(fig, [("", "@name"), ("change", "@delta_txt"), ("status", "@status")], [r])
    fig.xaxis.major_label_orientation = 0.8
    fig.xaxis.major_label_text_font_size = "10px"
    fig.xgrid.visible = False
    fig.y_range.start = 0
    return fig
