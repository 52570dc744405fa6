"""Communication: NCCL bus bandwidth against message size, and who arrives late to collectives."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import ColumnDataSource, FactorRange, FixedTicker
from bokeh.models.annotations import Legend, LegendItem

from .. import format as fmt
from ..model.text import as_text
from ..views.colors import Theme, palette
from ._style import (
    add_hover,
    bytes_text,
    duration_text,
    empty_chart,
    kind_colors,
    linkable,
    mix,
    new_figure,
    pct_text,
    rate_text,
    require,
    time_unit,
)

__all__ = ["nccl_bandwidth_chart", "stragglers_chart"]


def nccl_bandwidth_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int = 320) -> Any:
    """Bus bandwidth (GB/s) of each collective against message size (log-log), one line per collective.

    ``df`` is :func:`jupyter_traceview.nccl_summary`'s result (one row per collective,
    group size and power-of-two size bucket). Marker area grows with the number of calls.
    """
    title = "NCCL bus bandwidth against message size"
    require(df, ["collective", "group_size", "size_bucket_bytes", "count", "busbw_gbps"], "nccl_bandwidth_chart")
    d = df.loc[(df["size_bucket_bytes"] > 0) & df["busbw_gbps"].notna() & (df["busbw_gbps"] > 0)]
    if d.empty:
        return empty_chart(title, "No NCCL collectives with message sizes in this trace")
    names = palette()["names"][theme]
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        x_axis_type="log",
        y_axis_type="log",
        x_label="Message size (bytes, bucket start)",
        y_label="Bus bandwidth (GB/s)",
    )
    # Ticks at powers of two, labelled in binary units (the hover's text).
    lo_k = int(np.floor(np.log2(float(d["size_bucket_bytes"].min()))))
    hi_k = int(np.ceil(np.log2(float(d["size_bucket_bytes"].max()) * 2)))
    step = max(1, int(np.ceil((hi_k - lo_k) / 8)))
    ticks = [float(2**k) for k in range(lo_k, hi_k + 1, step)]
    fig.xaxis.ticker = FixedTicker(ticks=ticks)
    fig.xaxis.major_label_overrides = dict(zip(ticks, bytes_text(ticks), strict=True))
    items = []
    renderers = []
    groups = d.groupby(["collective", "group_size"], sort=True)
    for i, ((coll, gs), g) in enumerate(groups):
        g = g.sort_values("size_bucket_bytes")
        color = names[i % len(names)]
        src = ColumnDataSource(
            {
                "x": g["size_bucket_bytes"].to_numpy(dtype=np.float64),
                "y": g["busbw_gbps"].to_numpy(dtype=np.float64),
                "collective": [f"{coll} ({gs} ranks)"] * len(g),
                "bucket": as_text(g["size_bucket"]).tolist()
                if "size_bucket" in g
                else bytes_text(g["size_bucket_bytes"]),
                "count": g["count"].to_numpy(),
                "size": 6 + 10 * np.sqrt(g["count"].to_numpy() / max(float(d["count"].max()), 1)),
                "mean_txt": duration_text(g["mean_ns"]) if "mean_ns" in g else ["-"] * len(g),
                "algbw_txt": rate_text(g["algbw_gbps"]) if "algbw_gbps" in g else [fmt.MISSING] * len(g),
                "busbw_txt": rate_text(g["busbw_gbps"]),
            }
        )
        line = fig.line(x="x", y="y", line_color=color, line_width=1.5, line_alpha=0.7, source=src)
        dots = fig.scatter(x="x", y="y", size="size", fill_color=color, line_color=color, fill_alpha=0.6, source=src)
        renderers.append(dots)
        items.append(LegendItem(label=f"{coll} ({gs})", renderers=[line, dots]))
    add_hover(
        fig,
        [
            ("collective", "@collective"),
            ("message size", "@bucket"),
            ("calls", "@count"),
            ("mean time", "@mean_txt"),
            ("bus bandwidth", "@busbw_txt"),
            ("algorithm bandwidth", "@algbw_txt"),
        ],
        renderers,
    )
    # Above the plot, in a row: on the right it took half of a 440 px chart.
    fig.add_layout(Legend(items=items, orientation="horizontal", location="top_left", click_policy="hide"), "above")
    return fig


def stragglers_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int = 280) -> Any:
    """Per rank: time its peers waited for it (lateness) and time it waited for them, in collectives.

    ``df`` is :func:`jupyter_traceview.stragglers`'s result (one row per rank).
    """
    title = "Collective arrival: time each rank made others wait, and waited itself"
    require(df, ["rank", "collectives", "last_count", "lateness_ns", "wait_ns"], "stragglers_chart")
    if df.empty or not (df["collectives"] > 0).any():
        return empty_chart(title, "No collectives matched across ranks in this trace")
    colors = kind_colors(theme)
    unit, scale = time_unit(np.concatenate([df["lateness_ns"].to_numpy(), df["wait_ns"].to_numpy()]))
    ranks = [str(r) for r in df["rank"]]
    kinds = ["late", "waited"]
    x = [(r, k) for r in ranks for k in kinds]
    late = df["lateness_ns"].to_numpy()
    wait = df["wait_ns"].to_numpy()
    values = np.ravel(np.column_stack([late, wait]))
    source = ColumnDataSource(
        {
            "x": x,
            "v": values / scale,
            "txt": duration_text(values),
            "what": ["made the others wait (last in)", "waited for late peers"] * len(ranks),
            "color": [colors["runtime"], mix(colors["communication"], "#ffffff", 0.25)] * len(ranks),
            "link_rank": np.repeat(df["rank"].to_numpy(), 2),
            "last": np.repeat(
                [
                    f"{int(a)} of {int(b)} ({p})"
                    for a, b, p in zip(
                        df["last_count"], df["collectives"], pct_text(df.get("last_pct", np.nan * late)), strict=True
                    )
                ],
                2,
            ),
        }
    )
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        x_range=FactorRange(factors=list(x), group_padding=0.5),
        x_label="Rank",
        y_label=f"Time ({unit})",
    )
    r = fig.vbar(x="x", top="v", width=0.85, fill_color="color", line_color=None, source=source)
    add_hover(fig, [("rank", "@link_rank"), ("", "@what: @txt"), ("last into", "@last collectives")], [r])
    fig.y_range.start = 0
    fig.xgrid.visible = False
    fig.xaxis.major_label_text_font_size = "0px"
    linkable(fig, source, "rank", [r])
    return fig
