"""Comparing two traces: a waterfall of the largest changes in GPU time."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import ColumnDataSource, FactorRange

from ..format import label_names
from ..views.colors import Theme
from ._style import add_hover, duration_text, empty_chart, kind_colors, mix, new_figure, require, time_unit

__all__ = ["trace_diff_chart"]


def trace_diff_chart(
    df: pd.DataFrame,
    *,
    theme: Theme = "light",
    top: int = 12,
    kinds: Iterable[str] = ("kernel", "gpu_memcpy", "gpu_memset"),
    height: int = 340,
) -> Any:
    """A waterfall from the baseline's GPU time to the new trace's: the ``top`` largest changes, then the rest.

    ``df`` is :func:`jupyter_traceview.trace_diff`'s result (not per rank). Only ``kinds``
    enter (GPU work by default: CPU operator times nest, so they do not add up).
    Increases are drawn in the communication (red) tone, decreases in the memory (green) one.
    """
    title = "What changed: GPU time of the baseline, the largest changes, the new trace"
    require(df, ["kind", "name", "total_ns_a", "total_ns_b", "total_delta_ns", "status"], "trace_diff_chart")
    d = df.loc[df["kind"].astype(str).isin(list(kinds))]
    if "rank" in d.columns:
        raise ValueError("trace_diff_chart: pass trace_diff(a, b) without per_rank=True")
    if d.empty:
        return empty_chart(title, "No GPU work in either trace")
    colors = kind_colors(theme)
    total_a = float(d["total_ns_a"].sum())
    total_b = float(d["total_ns_b"].sum())
    order = d.reindex(d["total_delta_ns"].abs().sort_values(ascending=False).index)
    changed = order.loc[order["total_delta_ns"] != 0]
    head = changed.head(top)
    rest = float(changed["total_delta_ns"].iloc[top:].sum()) if len(changed) > top else 0.0
    labels = ["Baseline"]
    bottoms = [0.0]
    tops = [total_a]
    fills = [mix(colors["other"], "#ffffff" if theme == "light" else "#000000", 0.2)]
    names = ["baseline total"]
    deltas = [total_a]
    statuses = [""]
    level = total_a
    short = label_names(head["name"].astype(str))
    for i, (name, label, delta, status) in enumerate(
        zip(
            head["name"].astype(str),
            short,
            head["total_delta_ns"].astype(float),
            head["status"].astype(str),
            strict=True,
        )
    ):
        labels.append(f"{i + 1}. {label}")
        bottoms.append(min(level, level + delta))
        tops.append(max(level, level + delta))
        fills.append(colors["communication"] if delta > 0 else colors["memory"])
        names.append(name)
        deltas.append(delta)
        statuses.append(status)
        level += delta
    if rest:
        labels.append(f"{len(changed) - top} more")
        bottoms.append(min(level, level + rest))
        tops.append(max(level, level + rest))
        fills.append(mix(colors["communication"] if rest > 0 else colors["memory"], colors["other"], 0.5))
        names.append(f"{len(changed) - top} smaller changes")
        deltas.append(rest)
        statuses.append("changed")
        level += rest
    labels.append("New")
    bottoms.append(0.0)
    tops.append(total_b)
    fills.append(colors["compute"])
    names.append("new total")
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
        y_label=f"GPU time ({unit})",
    )
    r = fig.vbar(x="x", bottom="bottom", top="top", width=0.75, fill_color="color", line_color=None, source=source)
    add_hover(fig, [("", "@name"), ("change", "@delta_txt"), ("status", "@status")], [r])
    fig.xaxis.major_label_orientation = 0.8
    fig.xaxis.major_label_text_font_size = "10px"
    fig.xgrid.visible = False
    fig.y_range.start = 0
    return fig
