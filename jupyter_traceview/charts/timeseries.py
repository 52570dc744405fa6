"""Over time: the utilisation heatmap (rank x time), queue length, memory bandwidth, a timeline overview."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import (
    BasicTicker,
    ColumnDataSource,
    FactorRange,
    FixedTicker,
    LinearColorMapper,
    NumeralTickFormatter,
    Range1d,
)
from bokeh.models.annotations import ColorBar, Legend, LegendItem

from .. import format as fmt
from ..model.text import as_text
from ..views.colors import KINDS, Theme, palette
from ._style import (
    add_hover,
    duration_text,
    empty_chart,
    kind_colors,
    linkable,
    mix,
    new_figure,
    pct_text,
    ramp,
    rank_colors,
    rate_text,
    require,
    time_text,
    time_unit,
)

__all__ = ["memory_bandwidth_chart", "queue_length_chart", "timeline_overview_chart", "utilization_heatmap_chart"]

#: Title and colour of each heatmap kind (:func:`jupyter_traceview.utilization_heatmap`'s ``kind``).
HEATMAP_KINDS: dict[str, tuple[str, str]] = {
    "all": ("GPU utilisation", "compute"),
    "compute": ("Compute utilisation", "compute"),
    "communication": ("Communication", "communication"),
    "memory": ("Memory copies", "memory"),
    "overlap": ("Communication overlapped with compute", "overlap"),
}


def _row_labels(df: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """One label per (rank, device) row: "rank r", or "rank r · GPU d" where a rank has several devices."""
    pairs = df[["rank", "device"]].drop_duplicates().sort_values(["rank", "device"])
    multi = pairs.groupby("rank")["device"].nunique().gt(1)
    labels = {
        (r, d): f"rank {r} · GPU {d}" if multi.get(r, False) else f"rank {r}"
        for r, d in zip(pairs["rank"], pairs["device"], strict=True)
    }
    per_row = np.asarray([labels[(r, d)] for r, d in zip(df["rank"], df["device"], strict=True)], dtype=object)
    return [labels[(r, d)] for r, d in zip(pairs["rank"], pairs["device"], strict=True)], per_row


def utilization_heatmap_chart(
    df: pd.DataFrame,
    *,
    kind: str = "all",
    theme: Theme = "light",
    height: int | None = None,
    t0_ns: int | None = None,
) -> Any:
    """The Nsight-style heatmap: one row per rank (and device), one cell per time bin, coloured by busy %.

    ``df`` is :func:`jupyter_traceview.utilization_heatmap`'s result computed with the same
    ``kind`` (``"all"``, ``"compute"``, ``"communication"``, ``"memory"`` or ``"overlap"``).
    Hovering a cell shows its rank, time window and busy share; clicking it zooms the
    dashboard's timeline to that rank and window. With ``t0_ns`` (the trace's origin,
    ``trace.t0_ns``) times are shown since that origin, as on the timeline; else since the
    heatmap's own origin (``origin_ns``).
    """
    if kind not in HEATMAP_KINDS:
        raise ValueError(f"utilization_heatmap_chart: unknown kind {kind!r}; kinds are {', '.join(HEATMAP_KINDS)}")
    name, color_kind = HEATMAP_KINDS[kind]
    title = f"{name} per rank over time (% of each bin)"
    require(
        df, ["rank", "device", "bin", "bin_start_ns", "bin_end_ns", "busy_pct", "busy_ns"], "utilization_heatmap_chart"
    )
    if df.empty:
        return empty_chart(title, "No GPU activity in this trace")
    colors = kind_colors(theme)
    color = mix(colors["communication"], colors["compute"], 0.5) if color_kind == "overlap" else colors[color_kind]
    same_origin = "origin_ns" not in df or df["origin_ns"].nunique() <= 1
    shift = 0.0
    if t0_ns is not None and same_origin and "origin_ns" in df:
        shift = float(int(df["origin_ns"].iloc[0]) - int(t0_ns))
    labels, per_row = _row_labels(df)
    start = df["bin_start_ns"].to_numpy(dtype=np.float64) + shift
    end = df["bin_end_ns"].to_numpy(dtype=np.float64) + shift
    unit, scale = time_unit(end)
    source = ColumnDataSource(
        {
            "x": (start + end) / 2 / scale,
            "w": (end - start) / scale,
            "y": per_row,
            "busy": df["busy_pct"].to_numpy(dtype=np.float64),
            "busy_txt": pct_text(df["busy_pct"]),
            "busy_ns_txt": duration_text(df["busy_ns"]),
            "from_txt": time_text(start),
            "to_txt": time_text(end),
            "link_rank": df["rank"].to_numpy(),
            "link_bin": df["bin"].to_numpy(),
            "link_heatmap": [kind] * len(df),
        }
    )
    mapper = LinearColorMapper(palette=ramp(color, theme), low=0, high=100)
    origin = "the trace's origin" if t0_ns is not None else "the first GPU activity"
    h = height or max(200, 90 + 22 * len(labels))
    fig = new_figure(
        title=title,
        height=h,
        tooltips=None,
        y_range=FactorRange(factors=list(reversed(labels))),
        x_range=Range1d(start=float(start.min() / scale), end=float(end.max() / scale)),
        tools="xpan,xwheel_zoom,reset,save",
        x_label=f"Time since {origin if same_origin else 'each rank’s origin'} ({unit})",
    )
    r = fig.rect(
        x="x",
        y="y",
        width="w",
        height=0.92,
        fill_color={"field": "busy", "transform": mapper},
        line_color=None,
        source=source,
    )
    add_hover(
        fig,
        [
            ("rank", "@link_rank"),
            ("time", "@from_txt … @to_txt"),
            (name.lower(), "@busy_txt (@busy_ns_txt)"),
            ("click", "zoom the timeline here"),
        ],
        [r],
    )
    bar = ColorBar(
        color_mapper=mapper,
        ticker=BasicTicker(desired_num_ticks=5),
        formatter=NumeralTickFormatter(format="0"),
        title="%",
        width=10,
    )
    fig.add_layout(bar, "right")
    fig.grid.visible = False
    linkable(fig, source, "heatmap", [r])
    return fig


def _step_bins(ts: np.ndarray, values: np.ndarray, edges: np.ndarray, how: str) -> np.ndarray:
    """A step function (``values[i]`` from ``ts[i]`` on, 0 before) per bin: time-weighted mean or max."""
    n = len(edges) - 1
    if len(ts) == 0:
        return np.zeros(n)
    order = np.argsort(ts, kind="stable")
    ts, values = ts[order].astype(np.float64), values[order].astype(np.float64)
    at_edge = np.searchsorted(ts, edges, side="right") - 1  # last change at or before each edge
    if how == "mean":
        seg = np.diff(np.append(ts, ts[-1]))
        cum = np.concatenate(([0.0], np.cumsum(values * seg)))  # integral up to ts[i]
        idx = np.clip(at_edge, 0, None)
        integral = np.where(at_edge >= 0, cum[idx] + values[idx] * (edges - ts[idx]), 0.0)
        widths = np.diff(edges)
        return np.divide(np.diff(integral), widths, out=np.zeros(n), where=widths > 0)
    start_value = np.where(at_edge[:-1] >= 0, values[np.clip(at_edge[:-1], 0, None)], 0.0)
    out = start_value.copy()
    inside = np.searchsorted(edges, ts, side="right") - 1
    ok = (inside >= 0) & (inside < n)
    np.maximum.at(out, inside[ok], values[ok])
    return out


def queue_length_chart(
    df: pd.DataFrame, *, theme: Theme = "light", bins: int = 600, height: int = 280, t0_ns: int | None = None
) -> Any:
    """Kernels queued (launched, not finished) over time: the largest queue over each rank's streams, per bin.

    ``df`` is ``queue_length(trace)`` (``per="time"``: ``rank``, ``stream``, ``ts_ns``,
    ``queue_length``); each rank's step functions are reduced to their maximum in ``bins``
    time bins, so that millions of changes draw as a few hundred points per rank. Times are
    shown since ``t0_ns`` (the trace's origin) if given, else since the first launch.
    """
    title = "Queue length: kernels launched and not yet finished (max over streams)"
    require(df, ["rank", "stream", "ts_ns", "queue_length"], "queue_length_chart")
    if df.empty:
        return empty_chart(title, "No kernel launches in this trace")
    t0, edges, unit, scale, origin = _time_bins(df, bins, t0_ns, "the first launch")
    ranks = sorted(set(df["rank"].tolist()))
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        tools="xpan,xwheel_zoom,reset,save",
        x_label=f"Time since {origin} ({unit})",
        y_label="Queued kernels",
    )
    renderers = []
    items = []
    for rank, color in zip(ranks, rank_colors(ranks, theme), strict=True):
        sub = df.loc[df["rank"] == rank]
        per_stream = [
            _step_bins((g["ts_ns"].to_numpy() - t0), g["queue_length"].to_numpy(), edges, "max")
            for _, g in sub.groupby("stream", sort=False)
        ]
        y = np.max(per_stream, axis=0) if per_stream else np.zeros(bins)
        src = ColumnDataSource(
            {
                "x": edges[:-1] / scale,
                "y": y,
                "rank": [rank] * bins,
                "t_txt": time_text(edges[:-1]),
            }
        )
        r = fig.step(x="x", y="y", mode="after", line_color=color, line_width=1.5, source=src)
        renderers.append(r)
        items.append(LegendItem(label=f"rank {rank}", renderers=[r]))
    add_hover(fig, [("rank", "@rank"), ("from", "@t_txt"), ("queued (max)", "@y")], renderers, mode="vline")
    _legend(fig, items)
    fig.y_range.start = 0
    return fig


def _time_bins(
    df: pd.DataFrame, bins: int, t0_ns: int | None, fallback: str
) -> tuple[int, np.ndarray, str, float, str]:
    """Bin edges (ns since the origin) over ``df["ts_ns"]``: the origin, edges, unit, scale and its words."""
    first, last = int(df["ts_ns"].min()), int(df["ts_ns"].max())
    t0 = first if t0_ns is None else int(t0_ns)
    edges = np.linspace(first - t0, max(last - t0, first - t0 + 1), bins + 1)
    unit, scale = time_unit(edges[-1])
    return t0, edges, unit, scale, ("the trace's origin" if t0_ns is not None else fallback)


def memory_empty_message(per_kind: pd.DataFrame | None) -> str:
    """What an empty bandwidth chart says, from the per-kind table beside it.

    >>> import pandas as pd
    >>> memory_empty_message(pd.DataFrame({"copies": [966], "unmeasured": [966]}))
    '966 memory copies, none with a recorded size or bandwidth: no bandwidth to plot'
    >>> memory_empty_message(None)
    'No memory copies in this trace'
    """
    copies = int(per_kind["copies"].sum()) if per_kind is not None and len(per_kind) else 0
    if copies == 0:
        return "No memory copies in this trace"
    unmeasured = int(per_kind["unmeasured"].sum()) if per_kind is not None and "unmeasured" in per_kind else 0
    if unmeasured >= copies:
        return f"{fmt.plural(copies, 'memory copy', 'memory copies')}, none with a recorded size or bandwidth: no bandwidth to plot"
    return f"{fmt.plural(copies, 'memory copy', 'memory copies')}: no bandwidth to plot"


def _legend(fig: Any, items: list[LegendItem]) -> None:
    legend = Legend(items=items, orientation="horizontal", location="top_left", click_policy="hide")
    if len(items) > 12:
        legend.orientation = "vertical"
        fig.add_layout(legend, "right")
    else:
        fig.add_layout(legend, "above")


def memory_bandwidth_chart(
    df: pd.DataFrame,
    *,
    theme: Theme = "light",
    bins: int = 600,
    height: int = 280,
    t0_ns: int | None = None,
    per_kind: pd.DataFrame | None = None,
) -> Any:
    """Memory copy bandwidth over time, per copy kind (HtoD, DtoH, ...), summed over ranks.

    ``df`` is ``memory_bandwidth(trace)`` (``per="time"``: step functions of
    ``bandwidth_gbps`` per rank and kind); shown as time-weighted means over ``bins`` bins.
    Times are shown since ``t0_ns`` (the trace's origin) if given, else since the first copy.
    ``per_kind`` (``memory_bandwidth(trace, per="kind")``, the table shown beside the chart)
    words the empty state: copies without a recorded size or bandwidth are not "no copies".
    """
    title = "Memory bandwidth over time, per copy kind (sum over ranks)"
    require(df, ["rank", "kind", "ts_ns", "bandwidth_gbps"], "memory_bandwidth_chart")
    if df.empty:
        return empty_chart(title, memory_empty_message(per_kind))
    t0, edges, unit, scale, origin = _time_bins(df, bins, t0_ns, "the first copy")
    names = palette()["names"][theme]
    fig = new_figure(
        title=title,
        height=height,
        tooltips=None,
        tools="xpan,xwheel_zoom,reset,save",
        x_label=f"Time since {origin} ({unit})",
        y_label="Bandwidth (GB/s)",
    )
    kinds = [k for k in as_text(df["kind"]).unique().tolist()]
    renderers = []
    items = []
    for i, kind in enumerate(kinds):
        sub = df.loc[as_text(df["kind"]) == kind]
        y = np.zeros(bins)
        for _, g in sub.groupby("rank", sort=False):
            y += _step_bins(g["ts_ns"].to_numpy() - t0, g["bandwidth_gbps"].to_numpy(), edges, "mean")
        src = ColumnDataSource(
            {
                "x": edges[:-1] / scale,
                "y": y,
                "kind": [kind] * bins,
                "t_txt": time_text(edges[:-1]),
                "y_txt": rate_text(y),
            }
        )
        color = names[i % len(names)]
        r = fig.step(x="x", y="y", mode="after", line_color=color, line_width=1.5, source=src)
        renderers.append(r)
        items.append(LegendItem(label=kind, renderers=[r]))
    add_hover(fig, [("copies", "@kind"), ("from", "@t_txt"), ("bandwidth (mean)", "@y_txt")], renderers, mode="vline")
    _legend(fig, items)
    fig.y_range.start = 0
    return fig


def timeline_overview_chart(df: pd.DataFrame, *, theme: Theme = "light", height: int | None = None) -> Any:
    """A static picture of the timeline: one row per GPU stream, each pixel column coloured by its main kind.

    ``df`` has one row per (timeline row, bin): ``row`` (int, top to bottom), ``label``,
    ``rank``, ``bin``, ``start_ns`` and ``end_ns`` (the bin, relative to the trace start),
    ``busy_frac`` (0-1) and ``kind`` (the colour kind covering most of the bin, or "");
    :func:`jupyter_traceview.dashboard.data.timeline_overview` computes it. Opacity follows
    the busy fraction, so sparse work reads lighter.
    """
    title = "Timeline overview: every GPU stream (colour: main kind in each column; opacity: busy share)"
    require(df, ["row", "label", "rank", "bin", "start_ns", "end_ns", "busy_frac", "kind"], "timeline_overview_chart")
    if df.empty:
        return empty_chart(title, "No GPU activity in this trace")
    rows = df[["row", "label", "rank"]].drop_duplicates("row").sort_values("row")
    nrows = len(rows)
    nbins = int(df["bin"].max()) + 1
    row_pos = {r: i for i, r in enumerate(rows["row"].tolist())}
    kcolors = kind_colors(theme)
    rgb = np.zeros((len(KINDS) + 1, 3), dtype=np.uint32)
    for i, k in enumerate(KINDS):
        c = kcolors[k].lstrip("#")
        rgb[i] = [int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)]
    code = {k: i for i, k in enumerate(KINDS)}
    kcode = np.asarray([code.get(str(k), len(KINDS)) for k in df["kind"].tolist()])
    frac = np.clip(df["busy_frac"].to_numpy(dtype=np.float64), 0, 1)
    alpha = np.where(frac > 0, 60 + 195 * frac, 0).astype(np.uint32)
    img = np.zeros((nrows, nbins), dtype=np.uint32)
    yi = np.asarray([nrows - 1 - row_pos[r] for r in df["row"].tolist()])  # row 0 at the top
    xi = df["bin"].to_numpy()
    c = rgb[kcode]
    img[yi, xi] = c[:, 0] | (c[:, 1] << 8) | (c[:, 2] << 16) | (alpha << 24)
    start = float(df["start_ns"].min())
    end = float(df["end_ns"].max())
    unit, scale = time_unit(end)
    h = height or max(160, 70 + 14 * nrows)
    fig = new_figure(
        title=title,
        height=h,
        tooltips=None,
        x_range=Range1d(start=start / scale, end=end / scale),
        y_range=Range1d(start=0, end=nrows),
        tools="xpan,xwheel_zoom,reset,save",
        x_label=f"Time since the trace's origin ({unit})",
    )
    fig.image_rgba(image=[img], x=start / scale, y=0, dw=(end - start) / scale, dh=nrows)
    # Transparent bands carry the hover: which stream, and how busy it is over the whole trace.
    busy = df.groupby("row")["busy_frac"].mean().reindex(rows["row"]).to_numpy()
    bands = ColumnDataSource(
        {
            "y": [nrows - 1 - row_pos[r] + 0.5 for r in rows["row"].tolist()],
            "label": rows["label"].tolist(),
            "busy": pct_text(100 * busy),
            "link_rank": rows["rank"].to_numpy(),
        }
    )
    rb = fig.rect(
        x=(start + end) / 2 / scale,
        y="y",
        width=(end - start) / scale,
        height=1,
        fill_alpha=0,
        line_alpha=0,
        source=bands,
    )
    add_hover(fig, [("stream", "@label"), ("busy overall", "@busy"), ("time", "$x{0.000} " + unit)], [rb])
    ticks = [nrows - 1 - i + 0.5 for i in range(nrows)]
    fig.yaxis.ticker = FixedTicker(ticks=ticks)
    fig.yaxis.major_label_overrides = {t: lab for t, lab in zip(ticks, rows["label"].tolist(), strict=True)}
    fig.yaxis.major_label_text_font_size = "10px"
    fig.grid.visible = False
    legend_items = []
    present = [k for k in KINDS if k in set(as_text(df["kind"]))]
    for k in present:
        r = fig.rect(x=[start / scale], y=[-10], width=0, height=0, fill_color=kcolors[k], line_color=None)
        legend_items.append(LegendItem(label=k, renderers=[r]))
    if legend_items:
        fig.add_layout(Legend(items=legend_items, orientation="horizontal", location="top_left"), "above")
    linkable(fig, bands, "rank", [rb])
    return fig
