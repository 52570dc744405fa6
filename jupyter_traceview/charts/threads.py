"""CPU threads over time: a band per thread, filled bin by bin with what the thread was doing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import ColumnDataSource, FixedTicker
from bokeh.models.annotations import Legend, LegendItem

from ..model.text import as_text
from ..views.colors import Theme
from ._style import add_hover, duration_text, empty_chart, kind_colors, new_figure, pct_text, require, time_unit

__all__ = ["thread_activity_chart"]

#: State -> (label, colour key in views/colors.json), bottom to top in a band.
STATES = {
    "op_ns": ("operators", "cpu_op"),
    "dataloader_ns": ("data loading", "memory"),
    "python_ns": ("Python", "python"),
}


def thread_activity_chart(
    df: pd.DataFrame,
    *,
    theme: Theme = "light",
    rank: int | None = None,
    height: int | None = None,
    t0_ns: int | None = None,
) -> Any:
    """A band per CPU thread of one rank; in each time bin, the share of it spent in
    operators, data loading and Python (stacked, bottom up); the rest is idle.

    ``df`` is ``thread_activity(trace)``; ``rank`` picks the rank (default: the first).
    Times are shown since ``t0_ns`` (the trace's origin, as on the timeline) if given, else
    since the rank's first host event.
    """
    title = "CPU threads over time"
    require(df, ["rank", "tid", "thread", "start_ns", "end_ns", *STATES, "idle_ns"], "thread_activity_chart")
    if df.empty:
        return empty_chart(title, "No CPU events in this trace")
    r = int(df["rank"].iloc[0]) if rank is None else int(rank)
    d = df.loc[df["rank"] == r]
    if d.empty:
        return empty_chart(title, f"No CPU events on rank {r}")
    threads = list(dict.fromkeys(zip(d["pid"].tolist(), d["tid"].tolist(), strict=True)))
    band = {t: i for i, t in enumerate(threads)}
    labels = {band[(p, t)]: str(n) for p, t, n in zip(d["pid"], d["tid"], d["thread"], strict=True)}
    origin = int(d["start_ns"].min()) if t0_ns is None else int(t0_ns)
    origin_words = "the trace's origin" if t0_ns is not None else "the rank's first host event"
    unit, scale = time_unit(float(d["end_ns"].max() - origin))
    width = (d["end_ns"] - d["start_ns"]).to_numpy().astype(np.float64)
    y0 = np.array([band[(p, t)] for p, t in zip(d["pid"], d["tid"], strict=True)], dtype=np.float64)
    colors = kind_colors(theme)
    n = len(threads)
    fig = new_figure(
        title=f"{title} (rank {r}): share of each bin in operators, data loading and Python",
        height=height or min(110 + 46 * n, 700),
        tooltips=None,
        x_range=(float(d["start_ns"].min() - origin) / scale, float(d["end_ns"].max() - origin) / scale),
        y_range=(-0.1, n),
        x_label=f"Time since {origin_words} ({unit})",
        tools="xpan,xwheel_zoom,reset,save",
    )
    fig.yaxis.ticker = FixedTicker(ticks=[i + 0.45 for i in range(n)])
    fig.yaxis.major_label_overrides = {i + 0.45: labels[i] for i in range(n)}
    fig.ygrid.visible = False
    bottom = y0.copy()
    items = []
    common = {
        "thread": as_text(d["thread"]).tolist(),
        "bin_txt": [
            f"{a} – {b}"
            for a, b in zip(
                duration_text(d["start_ns"].to_numpy() - origin),
                duration_text(d["end_ns"].to_numpy() - origin),
                strict=True,
            )
        ],
        "busy_txt": pct_text(d["busy_pct"].to_numpy()) if "busy_pct" in d else [""] * len(d),
        **{f"{c}_txt": duration_text(d[c].to_numpy()) for c in [*STATES, "idle_ns"]},
    }
    renderers = []
    for col, (label, key) in STATES.items():
        frac = d[col].to_numpy() / np.maximum(width, 1.0)
        top = bottom + 0.9 * frac
        source = ColumnDataSource(
            {
                "left": (d["start_ns"].to_numpy() - origin) / scale,
                "right": (d["end_ns"].to_numpy() - origin) / scale,
                "bottom": bottom,
                "top": top,
                **common,
            }
        )
        g = fig.quad(
            left="left", right="right", bottom="bottom", top="top", source=source, color=colors[key], line_width=0
        )
        renderers.append(g)
        items.append(LegendItem(label=label, renderers=[g]))
        bottom = top
    add_hover(
        fig,
        [
            ("", "@thread, @bin_txt"),
            ("operators", "@op_ns_txt"),
            ("data loading", "@dataloader_ns_txt"),
            ("Python", "@python_ns_txt"),
            ("idle", "@idle_ns_txt"),
            ("busy", "@busy_txt"),
        ],
        renderers,
    )
    fig.add_layout(Legend(items=items, orientation="horizontal", location="top_left"), "above")
    return fig
