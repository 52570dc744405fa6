"""Memory: allocated and reserved bytes over time per rank and device, the peaks marked."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import ColumnDataSource
from bokeh.models.annotations import Legend, LegendItem

from ..model.text import as_text
from ..views.colors import Theme
from ._style import (
    add_hover,
    bytes_text,
    duration_text,
    empty_chart,
    linkable,
    new_figure,
    rank_colors,
    require,
    time_unit,
)

__all__ = ["memory_timeline_chart"]

_BYTE_UNITS = (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10))


def _bytes_unit(top: float) -> tuple[str, float]:
    for name, scale in _BYTE_UNITS:
        if top >= scale:
            return name, scale
    return "B", 1.0


def _label(rank: int, device_type: str, device: int, multi: bool) -> str:
    dev = str(device_type) if int(device) < 0 else f"{device_type}:{int(device)}"
    return f"rank {rank} · {dev}" if multi else f"rank {rank}"


def memory_timeline_chart(
    df: pd.DataFrame,
    *,
    peaks: pd.DataFrame | None = None,
    origin_ns: int | None = None,
    theme: Theme = "light",
    height: int = 300,
) -> Any:
    """Allocated memory over time, one step line per rank and device, reserved memory dashed.

    ``df`` is :func:`jupyter_traceview.memory_timeline`'s result (resampled or not);
    ``peaks``, :func:`jupyter_traceview.memory_peaks`'s, marks each peak with a dot whose
    hover names the operator running then and the top holder; clicking a dot opens the
    timeline at that operator (link target ``event``). Times are relative to ``origin_ns``
    (the trace's origin, ``trace.t0_ns``; default: the first point).
    """
    title = "Memory over time: allocated (solid) and reserved (dashed), per rank and device"
    require(
        df, ["rank", "device_type", "device", "ts_ns", "allocated_bytes", "reserved_bytes"], "memory_timeline_chart"
    )
    if df.empty:
        return empty_chart(title, "No memory records: record with profile_memory=True (%%traceprofile --memory)")
    origin = int(df["ts_ns"].min()) if origin_ns is None else int(origin_ns)
    origin_words = "the first point" if origin_ns is None else "the trace's origin"
    rel = df["ts_ns"].to_numpy(dtype=np.int64) - origin
    tunit, tscale = time_unit(rel)
    bunit, bscale = _bytes_unit(float(max(df["allocated_bytes"].max(), df["reserved_bytes"].max())))
    keys = df[["rank", "device_type", "device"]].drop_duplicates().astype({"device_type": str})
    keys = keys.sort_values(["rank", "device_type", "device"]).reset_index(drop=True)
    multi = keys[["device_type", "device"]].drop_duplicates().shape[0] > 1
    colors = rank_colors(list(range(len(keys))), theme)
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        tools="xpan,xwheel_zoom,box_zoom,reset,save",
        x_label=f"Time since {origin_words} ({tunit})",
        y_label=f"Memory ({bunit})",
    )
    renderers, items = [], []
    dtype = as_text(df["device_type"]).to_numpy()
    for (rank, dev_type, dev), color in zip(keys.itertuples(index=False), colors, strict=True):
        mask = (df["rank"].to_numpy() == rank) & (dtype == dev_type) & (df["device"].to_numpy() == dev)
        sub = df.loc[mask]
        t = rel[mask]
        label = _label(int(rank), dev_type, int(dev), multi)
        src = ColumnDataSource(
            {
                "x": t / tscale,
                "y": sub["allocated_bytes"].to_numpy(dtype=np.float64) / bscale,
                "r": sub["reserved_bytes"].to_numpy(dtype=np.float64) / bscale,
                "series": [label] * len(sub),
                "t_txt": duration_text(t),
                "a_txt": bytes_text(sub["allocated_bytes"]),
                "r_txt": bytes_text(sub["reserved_bytes"]),
            }
        )
        line = fig.step(x="x", y="y", mode="after", line_color=color, line_width=1.6, source=src)
        if (sub["reserved_bytes"] > 0).any():
            fig.step(x="x", y="r", mode="after", line_color=color, line_width=1.2, line_dash="dashed", source=src)
        renderers.append(line)
        items.append(LegendItem(label=label, renderers=[line]))
    add_hover(
        fig,
        [("", "@series"), ("at", "@t_txt"), ("allocated", "@a_txt"), ("reserved", "@r_txt")],
        renderers,
        mode="vline",
    )
    if peaks is not None and len(peaks):
        _mark_peaks(fig, peaks, origin, tscale, bscale, multi)
    legend = Legend(items=items, orientation="horizontal", location="top_left", click_policy="hide")
    fig.add_layout(legend, "above" if len(items) <= 12 else "right")
    fig.y_range.start = 0
    return fig


def _mark_peaks(fig: Any, peaks: pd.DataFrame, origin: int, tscale: float, bscale: float, multi: bool) -> None:
    require(
        peaks,
        ["rank", "device_type", "device", "step", "peak_allocated_bytes", "peak_ts_ns", "operator", "operator_eid"],
        "memory_timeline_chart(peaks=)",
    )
    t = peaks["peak_ts_ns"].to_numpy(dtype=np.int64) - origin
    holder = as_text(peaks["top_holder"]).tolist() if "top_holder" in peaks else [""] * len(peaks)
    src = ColumnDataSource(
        {
            "x": t / tscale,
            "y": peaks["peak_allocated_bytes"].to_numpy(dtype=np.float64) / bscale,
            "series": [
                _label(int(r), str(d), int(i), multi)
                for r, d, i in zip(peaks["rank"], peaks["device_type"], peaks["device"], strict=True)
            ],
            "step_txt": [str(s) if s >= 0 else "-" for s in peaks["step"].tolist()],
            "t_txt": duration_text(t),
            "peak_txt": bytes_text(peaks["peak_allocated_bytes"]),
            "op": as_text(peaks["operator"]).tolist(),
            "holder": holder,
            "link_rank": peaks["rank"].to_numpy(),
            # The device: the timeline reveals its memory counter lane.
            "link_device_type": as_text(peaks["device_type"]).tolist(),
            "link_device": peaks["device"].to_numpy(),
            "link_eid": np.where(
                peaks["operator_eid"].to_numpy() >= 0, peaks["operator_eid"].to_numpy(), peaks["peak_eid"].to_numpy()
            ),
        }
    )
    dots = fig.scatter(x="x", y="y", size=9, marker="circle", fill_alpha=0.9, line_width=1.5, source=src)
    add_hover(
        fig,
        [
            ("peak", "@peak_txt"),
            ("", "@series, step @step_txt"),
            ("at", "@t_txt"),
            ("operator", "@op"),
            ("top holder", "@holder"),
            ("", "click: open the timeline there"),
        ],
        [dots],
    )
    linkable(fig, src, "event", [dots])
