"""What every chart shares: units, themes, colours, figure defaults, hover and link tags.

Nothing here loads data or displays anything: builders get DataFrames and return bokeh
models. Colours come from :mod:`jupyter_traceview.views.colors`, the palette the timeline uses.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import (
    CategoricalAxis,
    ColumnDataSource,
    CustomJSTickFormatter,
    HoverTool,
    NoOverlap,
    TapTool,
)
from bokeh.models.annotations import Title
from bokeh.plotting import figure
from bokeh.themes import Theme as BokehTheme

from .. import format as fmt
from ..views.colors import Theme, kind_color, palette

__all__ = [
    "LINK_TAG",
    "bokeh_theme",
    "bytes_text",
    "duration_text",
    "empty_chart",
    "fit_labels",
    "kind_colors",
    "legend_outside",
    "linkable",
    "new_figure",
    "ramp",
    "rank_colors",
    "rate_text",
    "time_text",
    "time_unit",
]

#: Tag of a ColumnDataSource whose rows link to the timeline: ``"traceview-link:<target>"``.
#: Its ``link_*`` columns (``link_rank``, ``link_bin``, ``link_step``, ``link_name``) are
#: what a click sends to the dashboard (see docs/frontend.md, "The dashboard's protocol").
LINK_TAG = "traceview-link"

#: (name, ns per unit), largest first: the units of time axes and durations.
TIME_UNITS: tuple[tuple[str, float], ...] = (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0))

#: Narrowest chart (px): every chart fits a 360 px output (an 800 px window with
#: JupyterLab's file browser open gives a 368 px output).
MIN_WIDTH = 320
#: Width of a title character at the theme's 13 px (generous, so that a line is never cut).
TITLE_CHAR_PX = 8
#: Longest title line (characters); longer titles wrap. A line fits :data:`MIN_WIDTH`.
TITLE_LINE_CHARS = (MIN_WIDTH - 24) // TITLE_CHAR_PX
#: Tag of the tick formatter of a category axis whose labels the dashboard shortens to the
#: chart's width (its ``chars`` argument; 0: labels whole). See :func:`fit_labels`.
FIT_LABELS_TAG = "traceview-fit-labels"
#: The formatter's code: a label longer than ``chars`` loses its middle (``…``), so that its
#: start (the name) and its end (a rank, shapes' index) stay.
_FIT_LABELS_JS = """
const s = String(tick);
if (!(chars > 0) || s.length <= chars) return s;
const head = Math.ceil((chars - 1) / 2);
const tail = chars - 1 - head;
return s.slice(0, head) + "\u2026" + (tail > 0 ? s.slice(s.length - tail) : "");
"""
#: Height of a title line.
TITLE_LINE_PX = 18

_TEXT = {"light": "#1f1f1f", "dark": "#e3e3e3"}
_MUTED = {"light": "#5f5f5f", "dark": "#a9a9a9"}
_GRID = {"light": "#e6e6e6", "dark": "#3a3a3a"}
_AXIS = {"light": "#9e9e9e", "dark": "#6b6b6b"}
_BASE = {"light": "#f4f4f4", "dark": "#262626"}
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"


def time_unit(values: Iterable[float] | float) -> tuple[str, float]:
    """The unit to show durations of this magnitude in: ``(name, ns per unit)``.

    The largest unit in which the largest absolute value is at least 1 (``"ns"`` for
    nothing but zeros or NaN).

    >>> time_unit([1_500, 20_000_000])
    ('ms', 1000000.0)
    >>> time_unit(999)
    ('ns', 1.0)
    """
    arr = np.abs(np.atleast_1d(np.asarray(values, dtype=np.float64)))
    arr = arr[np.isfinite(arr)]
    top = float(arr.max()) if len(arr) else 0.0
    for name, scale in TIME_UNITS:
        if top >= scale:
            return name, scale
    return "ns", 1.0


def _texts(format_one: Any, values: Any) -> list[str]:
    """``format_one`` of each value (as float), each distinct value formatted once: a chart's
    columns repeat values (bin edges shared by every rank, idle bins), and the formatter is
    per value Python."""
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(arr) < 64:
        return [format_one(v) for v in arr.tolist()]
    # Distinct by bit pattern: -0.0 and 0.0 (equal as floats) are formatted each as itself.
    bits, inv = np.unique(arr.view(np.int64), return_inverse=True)
    texts = np.array([format_one(v) for v in bits.view(np.float64).tolist()], dtype=object)
    out: list[str] = texts[inv.reshape(-1)].tolist()
    return out


def duration_text(ns: Any) -> list[str]:
    """Durations as text (:func:`jupyter_traceview.format.duration` of each value)."""
    return _texts(fmt.duration, ns)


def time_text(rel_ns: Any) -> list[str]:
    """Times since the trace's origin as text (:func:`jupyter_traceview.format.time`): ``+18.1 ms``."""
    return _texts(fmt.time, rel_ns)


def bytes_text(n: Any) -> list[str]:
    """Sizes as text (:func:`jupyter_traceview.format.size` of each value)."""
    return _texts(fmt.size, n)


def pct_text(p: Any) -> list[str]:
    """Percentages as text (:func:`jupyter_traceview.format.percent` of each value)."""
    return _texts(fmt.percent, p)


def rate_text(gbps: Any) -> list[str]:
    """Bandwidths in GB/s as text (:func:`jupyter_traceview.format.rate` of each value)."""
    return _texts(fmt.rate, gbps)


def legend_outside(fig: Any) -> None:
    """Move ``fig``'s legend above the plot area, in a row (it never covers the data)."""
    if not fig.legend:
        return
    legend = fig.legend[0]
    legend.orientation = "horizontal"
    legend.location = "top_left"
    if legend in fig.center:
        fig.center.remove(legend)
    fig.add_layout(legend, "above")


def kind_colors(theme: Theme) -> dict[str, str]:
    """Colour of each timeline kind (``compute``, ``communication``, ...) in ``theme``."""
    return {k["key"]: k[theme] for k in palette()["kinds"]}


def rank_colors(ranks: Sequence[int], theme: Theme) -> list[str]:
    """One colour per rank, from the names palette (cycled)."""
    names = palette()["names"][theme]
    return [names[i % len(names)] for i in range(len(ranks))]


def text_color(theme: Theme) -> str:
    return _TEXT[theme]


def muted_color(theme: Theme) -> str:
    return _MUTED[theme]


def _rgb(color: str) -> tuple[float, float, float]:
    c = color.lstrip("#")
    return int(c[0:2], 16) / 255, int(c[2:4], 16) / 255, int(c[4:6], 16) / 255


def _hex(rgb: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{round(max(0.0, min(1.0, v)) * 255):02x}" for v in rgb)


def mix(a: str, b: str, t: float) -> str:
    """The colour ``t`` of the way from ``a`` to ``b`` (hex colours)."""
    ra, rb = _rgb(a), _rgb(b)
    return _hex(tuple(x + (y - x) * t for x, y in zip(ra, rb, strict=True)))  # type: ignore[arg-type]


def ramp(color: str, theme: Theme, n: int = 256) -> list[str]:
    """A sequential palette from the plot's base colour (0%) through ``color`` to a deep tone (100%).

    ``color`` is a kind (``"compute"``, see :data:`jupyter_traceview.views.colors.KINDS`) or a hex colour.
    """
    base = _BASE[theme]
    mid = color if color.startswith("#") else kind_color(color, theme)
    deep = mix(mid, "#000000" if theme == "light" else "#ffffff", 0.45)
    half = n // 2
    return [mix(base, mid, i / max(half - 1, 1)) for i in range(half)] + [
        mix(mid, deep, (i + 1) / (n - half)) for i in range(n - half)
    ]


def bokeh_theme(theme: Theme = "light") -> BokehTheme:
    """The bokeh theme of jupyter_traceview's charts: transparent, so they take the page's background."""
    text, muted, grid, axis = _TEXT[theme], _MUTED[theme], _GRID[theme], _AXIS[theme]
    return BokehTheme(
        json={
            "attrs": {
                "Plot": {
                    "background_fill_alpha": 0,
                    "border_fill_alpha": 0,
                    "outline_line_color": None,
                },
                "Axis": {
                    "axis_line_color": axis,
                    "major_tick_line_color": axis,
                    "minor_tick_line_color": None,
                    "major_label_text_color": muted,
                    "major_label_text_font": FONT,
                    "major_label_text_font_size": "11px",
                    "axis_label_text_color": text,
                    "axis_label_text_font": FONT,
                    "axis_label_text_font_size": "12px",
                    "axis_label_text_font_style": "normal",
                },
                "Grid": {"grid_line_color": grid},
                "Title": {
                    "text_color": text,
                    "text_font": FONT,
                    "text_font_size": "13px",
                    "text_font_style": "bold",
                },
                "Legend": {
                    "background_fill_alpha": 0,
                    "border_line_alpha": 0,
                    "label_text_color": text,
                    "label_text_font": FONT,
                    "label_text_font_size": "11px",
                    "inactive_fill_alpha": 0.6,
                    "inactive_fill_color": _BASE[theme],
                },
                "ColorBar": {
                    "background_fill_alpha": 0,
                    "major_label_text_color": muted,
                    "title_text_color": text,
                    "title_text_font_style": "normal",
                    "major_tick_line_color": axis,
                    "bar_line_color": None,
                },
                "Label": {"text_color": muted, "text_font": FONT},
                "LabelSet": {"text_color": text, "text_font": FONT},
            }
        }
    )


def new_figure(
    *,
    title: str,
    height: int,
    tooltips: list[tuple[str, str]] | None,
    x_range: Any = None,
    y_range: Any = None,
    x_axis_type: Any = "auto",
    y_axis_type: Any = "auto",
    tools: str = "save,reset",
    x_label: str | None = None,
    y_label: str | None = None,
    renderers: Sequence[Any] | None = None,
) -> Any:
    """A figure with the project's defaults: stretches to the width of its container.

    The title is never cut: a long one is wrapped onto lines of at most
    :data:`TITLE_LINE_CHARS` characters, each of which fits the narrowest chart
    (:data:`MIN_WIDTH`, the figure's ``min_width``). Category axes' labels shorten to the
    chart's width where the dashboard draws it (:func:`fit_labels`).
    """
    kw: dict[str, Any] = {}
    if x_range is not None:
        kw["x_range"] = x_range
    if y_range is not None:
        kw["y_range"] = y_range
    lines = textwrap.wrap(title, TITLE_LINE_CHARS) or [""]
    fig = figure(
        title=title if len(lines) == 1 else None,
        height=height + TITLE_LINE_PX * (len(lines) - 1),
        sizing_mode="stretch_width",
        min_width=MIN_WIDTH,
        tools=tools,
        toolbar_location="right",
        x_axis_type=x_axis_type,
        y_axis_type=y_axis_type,
        **kw,
    )
    if len(lines) > 1:
        # "above" stacks outwards: the last added is the top line.
        for line in reversed(lines):
            fig.add_layout(Title(text=line), "above")
    fig.toolbar.logo = None
    fig.toolbar.autohide = True
    if tooltips is not None:
        fig.add_tools(HoverTool(tooltips=tooltips, renderers=list(renderers) if renderers else "auto"))
    if x_label is not None:
        fig.xaxis.axis_label = x_label
    if y_label is not None:
        fig.yaxis.axis_label = y_label
    # Tick labels never overprint: where they would touch, BokehJS leaves some out.
    for axis in [*fig.xaxis, *fig.yaxis]:
        axis.major_label_policy = NoOverlap()
    fit_labels(fig)
    return fig


def fit_labels(fig: Any) -> None:
    """Let the dashboard shorten ``fig``'s category labels to the chart's width.

    Each category axis gets a tick formatter tagged :data:`FIT_LABELS_TAG` whose ``chars``
    argument (0 here: labels whole) the dashboard sets from the chart's width
    (js/dashboard/bokeh.ts ``fitLabels``), so that the labels never take the plot area's
    half of a narrow chart. The data, and so the hover's full name, stay as they are.
    """
    for axis in [*fig.xaxis, *fig.yaxis]:
        if isinstance(axis, CategoricalAxis):
            # Any TickFormatter is accepted (bokeh's stub names the default one only).
            axis.formatter = CustomJSTickFormatter(  # type: ignore[assignment]
                args={"chars": 0}, code=_FIT_LABELS_JS, tags=[FIT_LABELS_TAG]
            )


def add_hover(fig: Any, tooltips: list[tuple[str, str]], renderers: Sequence[Any], **kw: Any) -> HoverTool:
    tool = HoverTool(tooltips=tooltips, renderers=list(renderers), **kw)
    fig.add_tools(tool)
    return tool


def linkable(fig: Any, source: ColumnDataSource, target: str, renderers: Sequence[Any]) -> None:
    """Mark ``source``'s rows as links to the timeline (a click selects a row; see :data:`LINK_TAG`)."""
    source.tags = [f"{LINK_TAG}:{target}"]
    fig.add_tools(TapTool(renderers=list(renderers)))
    for r in renderers:
        # A click selects a row; the others must not fade (the selection is a gesture, not a filter).
        r.nonselection_glyph = r.glyph.clone()
        r.selection_glyph = r.glyph.clone()


def empty_chart(title: str, message: str, *, height: int = 160) -> Any:
    """A blank figure that says why there is nothing to draw."""
    from bokeh.models.annotations import Label

    fig = new_figure(title=title, height=height, tooltips=None, tools="")
    fig.toolbar_location = None
    fig.xaxis.visible = False
    fig.yaxis.visible = False
    fig.xgrid.visible = False
    fig.ygrid.visible = False
    fig.x_range.start, fig.x_range.end = 0, 1
    fig.y_range.start, fig.y_range.end = 0, 1
    fig.add_layout(Label(x=0.5, y=0.5, text=message, text_align="center", text_baseline="middle", text_font=FONT))
    fig.scatter(x=[], y=[])  # a renderer, so that bokeh's validation has nothing to say
    fig.tags = ["traceview-empty"]
    return fig


def require(df: pd.DataFrame, columns: Iterable[str], builder: str) -> None:
    """Raise a ValueError naming what is missing when ``df`` lacks a column a builder needs."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(
            f"{builder}: the frame lacks column(s) {', '.join(missing)}; it has {', '.join(map(str, df.columns))} "
            "(pass the result of the matching analysis)"
        )
