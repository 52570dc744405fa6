"""Operator performance: the roofline (operators against the device's ceilings) and time lost.

Both take ``tv.op_performance(trace, by="shape")`` (one row per operator name and shapes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import ColumnDataSource, FactorRange

from ..analysis.perfmodel import FAMILIES
from ..format import label_names, short_name
from ..model.text import as_text
from ..views.colors import Theme
from ._style import (
    add_hover,
    duration_text,
    empty_chart,
    kind_colors,
    legend_outside,
    linkable,
    muted_color,
    new_figure,
    pct_text,
    rank_colors,
    require,
    time_unit,
)

__all__ = ["roofline_chart", "time_lost_chart"]

_ROOF_COLUMNS = ["rank", "name", "family", "dtype", "intensity", "tflops", "gpu_ns", "peak_tflops", "peak_gbps"]


def _label(df: pd.DataFrame) -> list[str]:
    return [
        f"{short_name(str(n), 32)} {d}" if isinstance(d, str) and d else short_name(str(n), 40)
        for n, d in zip(df["name"], df["detail"] if "detail" in df.columns else [""] * len(df), strict=True)
    ]


def roofline_chart(df: pd.DataFrame, *, rank: int | None = None, theme: Theme = "light", height: int = 380) -> Any:
    """Operators on the device's roofline: achieved TFLOP/s against arithmetic intensity (log-log).

    One point per rank, operator name and shapes (``op_performance(trace, by="shape")``),
    sized by its GPU time and coloured by operator family; the device's ceilings are drawn
    for each dtype present (the bandwidth slope up to the dtype's compute peak; memory-only
    families under the bandwidth slope alone). ``rank`` keeps one rank. A click on a point
    shows that operator on the timeline.
    """
    title = "Roofline: operators against the device's peaks" + (f" (rank {rank})" if rank is not None else "")
    require(df, _ROOF_COLUMNS, "roofline_chart")
    d = df if rank is None else df[df["rank"] == rank]
    d = d[(d["gpu_ns"] > 0) & (d["intensity"] > 0) & (d["tflops"] > 0)]
    if d.empty:
        return empty_chart(title, "No modelled operator with GPU time (record with record_shapes=True)")
    families = list(FAMILIES)
    colors = dict(zip(families, rank_colors(list(range(len(families))), theme), strict=True))
    share = d["gpu_ns"].to_numpy(dtype=np.float64) / float(d["gpu_ns"].sum())
    source = ColumnDataSource(
        {
            "x": d["intensity"].to_numpy(dtype=np.float64),
            "y": d["tflops"].to_numpy(dtype=np.float64),
            "size": 6 + 30 * np.sqrt(share),
            "color": [colors.get(str(f), muted_color(theme)) for f in d["family"]],
            "label": _label(d),
            "family": as_text(d["family"]).tolist(),
            "dtype": as_text(d["dtype"]).tolist(),
            "gpu_txt": duration_text(d["gpu_ns"].to_numpy()),
            "pct_txt": pct_text(d["pct_of_peak"].to_numpy(dtype=np.float64)) if "pct_of_peak" in d else [""] * len(d),
            "bound": as_text(d["bound"]).tolist() if "bound" in d else [""] * len(d),
            "link_rank": d["rank"].to_numpy(dtype=np.int64),
            "link_name": as_text(d["name"]).tolist(),
        }
    )
    intensity = d["intensity"].to_numpy(dtype=np.float64)
    x_lo = float(min(intensity.min(), 0.1)) / 2
    x_hi = float(max(intensity.max(), 1e3)) * 2
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        x_axis_type="log",
        y_axis_type="log",
        x_label="arithmetic intensity (FLOP/byte)",
        y_label="achieved TFLOP/s",
    )
    # Ceilings: per (rank's device) bandwidth and dtype peak.
    ceilings = d[["peak_gbps", "peak_tflops", "dtype"]].drop_duplicates()
    dashes = ["solid", "dotdash", "dotted", "dashdot"]
    seen_bw: set[float] = set()
    xs = np.geomspace(x_lo, x_hi, 64)
    for i, row in enumerate(ceilings.itertuples(index=False)):
        bw = float(row.peak_gbps) if pd.notna(row.peak_gbps) else np.nan
        if np.isnan(bw):
            continue
        peak = float(row.peak_tflops) if pd.notna(row.peak_tflops) else np.nan
        if np.isnan(peak):
            if bw not in seen_bw:
                fig.line(
                    xs, bw * xs / 1e3, line_color=muted_color(theme), line_dash="dashed", legend_label=f"{bw:g} GB/s"
                )
                seen_bw.add(bw)
            continue
        fig.line(
            xs,
            np.minimum(peak, bw * xs / 1e3),
            line_color=muted_color(theme),
            line_width=2,
            line_dash=dashes[i % len(dashes)],
            legend_label=f"{row.dtype} {peak:g} TFLOP/s, {bw:g} GB/s",
        )
    r = fig.scatter("x", "y", size="size", fill_color="color", line_color="color", fill_alpha=0.55, source=source)
    add_hover(
        fig,
        [
            ("operator", "@label"),
            ("rank", "@link_rank"),
            ("family / dtype", "@family / @dtype"),
            ("GPU time", "@gpu_txt"),
            ("intensity", "@x{0.00} FLOP/byte"),
            ("achieved", "@y{0.000} TFLOP/s"),
            ("of peak", "@pct_txt (@bound bound)"),
        ],
        [r],
    )
    if fig.legend:
        fig.legend.label_text_font_size = "10px"
        legend_outside(fig)
    linkable(fig, source, "kernel", [r])
    return fig


def time_lost_chart(df: pd.DataFrame, *, top_k: int = 15, theme: Theme = "light", height: int | None = None) -> Any:
    """The operators losing most GPU time to running below the roofline.

    Each bar is an operator name and shapes (``op_performance(trace, by="shape")``, summed
    over ranks): its time at 100 % of the roofline (``ideal_ns``) and the rest of its GPU time
    (``lost_ns``). A click shows the operator on the timeline of its busiest rank.
    """
    title = f"Time lost to low efficiency: top {top_k} operators (all ranks)"
    require(df, ["rank", "name", "gpu_ns", "ideal_ns", "lost_ns"], "time_lost_chart")
    d = df[(df["lost_ns"] > 0) & df["ideal_ns"].notna()].copy()
    if d.empty:
        return empty_chart(title, "No modelled operator with GPU time and device peaks")
    d["label"] = _label(d)
    busiest = d.sort_values("gpu_ns", ascending=False).drop_duplicates("label").set_index("label")["rank"]
    g = d.groupby("label", sort=False).agg(
        name=("name", "first"), gpu_ns=("gpu_ns", "sum"), ideal_ns=("ideal_ns", "sum"), lost_ns=("lost_ns", "sum")
    )
    g = g.sort_values("lost_ns", ascending=False).head(top_k).iloc[::-1]
    kinds = kind_colors(theme)
    unit, scale = time_unit(g["gpu_ns"])
    full = [str(x) for x in g.index]
    labels = label_names(full)
    source = ColumnDataSource(
        {
            "label": labels,
            "full": full,
            "ideal": g["ideal_ns"].to_numpy(dtype=np.float64) / scale,
            "lost": g["lost_ns"].to_numpy(dtype=np.float64) / scale,
            "gpu_txt": duration_text(g["gpu_ns"].to_numpy()),
            "ideal_txt": duration_text(g["ideal_ns"].to_numpy()),
            "lost_txt": duration_text(g["lost_ns"].to_numpy()),
            "pct_txt": pct_text(
                100 * g["ideal_ns"].to_numpy(dtype=np.float64) / g["gpu_ns"].to_numpy(dtype=np.float64)
            ),
            "link_rank": np.array([int(busiest[x]) for x in full], dtype=np.int64),
            "link_name": as_text(g["name"]).tolist(),
        }
    )
    fig = new_figure(
        title=title,
        height=height or max(160, 26 * len(g) + 70),
        tooltips=None,
        y_range=FactorRange(factors=labels),
        x_label=f"GPU time ({unit})",
    )
    renderers = fig.hbar_stack(
        ["ideal", "lost"],
        y="label",
        height=0.7,
        color=[kinds["compute"], kinds["communication"]],
        source=source,
        legend_label=["at the roofline", "lost"],
    )
    add_hover(
        fig,
        [
            ("operator", "@full"),
            ("GPU time", "@gpu_txt"),
            ("at the roofline", "@ideal_txt (@pct_txt of the time)"),
            ("lost", "@lost_txt"),
        ],
        renderers,
    )
    fig.x_range.start = 0
    fig.ygrid.visible = False
    fig.yaxis.major_label_text_font_size = "11px"
    legend_outside(fig)
    linkable(fig, source, "kernel", renderers)
    return fig
