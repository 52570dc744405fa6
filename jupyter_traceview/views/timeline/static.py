"""A static picture of a timeline view: what a saved notebook shows where the widget was.

A notebook opened without a kernel (or converted to HTML by nbconvert, or shown by a static
viewer) cannot run the timeline's front end. :func:`timeline_svg` draws the view the widget
showed last (its time range and ranks) as an SVG: one row per rank with the rank's summary
(the time its GPU work, or top-level CPU work on a CPU-only trace, covers in each pixel column,
coloured by the kind covering most of it), the time axis's ends and the legend of the kinds
in the trace. ``tv.Timeline`` puts it in its mime bundle beside the widget view, so the saved
notebook shows this picture instead of ``<Timeline object at 0x...>``.

The picture is bounded: :data:`SVG_WIDTH` columns and at most :data:`MAX_SVG_RANKS` rows (a
note says how many ranks are left out), so its size does not grow with the trace.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from ... import format as fmt
from ..colors import Theme, palette
from .binning import NO_KIND
from .coordinator import TimelineIndex

__all__ = ["MAX_SVG_RANKS", "SVG_WIDTH", "timeline_svg", "timeline_text"]

#: Pixel columns of the plot in the picture.
SVG_WIDTH = 720
#: Ranks drawn at most (one row each).
MAX_SVG_RANKS = 64
_GUTTER = 70
_ROW = 16
_AXIS = 18
_LEGEND = 22


def timeline_svg(index: TimelineIndex, lo: float, hi: float, ranks: Sequence[int], *, dark: bool = False) -> str:
    """An SVG of ranks' summaries over ``[lo, hi)`` (ns relative to the index's ``t0_ns``), with a legend.

    ``ranks`` are drawn in the order given, :data:`MAX_SVG_RANKS` at most.
    """
    lo_i = int(np.floor(lo))
    hi_i = max(int(np.ceil(hi)), lo_i + 1)
    shown = [int(r) for r in ranks][:MAX_SVG_RANKS]
    left_out = len(ranks) - len(shown)
    win = index.window(lo_i, hi_i, SVG_WIDTH, summaries=shown)
    pal = palette()
    tone: Theme = "dark" if dark else "light"
    colors = [k[tone] for k in pal["kinds"]]
    fg, muted, bg = ("#e0e0e0", "#9e9e9e", "#1e1e1e") if dark else ("#1a1a1a", "#666666", "#ffffff")
    width = _GUTTER + SVG_WIDTH + 8
    rows_h = _ROW * len(shown)
    note_h = 14 if left_out > 0 else 0
    height = _AXIS + rows_h + note_h + _LEGEND
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f"<title>{html.escape(_title(lo_i, hi_i, len(ranks)))}</title>",
        f'<rect width="{width}" height="{height}" fill="{bg}"/>',
        f'<text x="4" y="12" fill="{muted}">{html.escape(fmt.duration(hi_i - lo_i))} shown</text>',
        f'<text x="{_GUTTER}" y="12" fill="{muted}">{html.escape(fmt.time(lo_i))}</text>',
        f'<text x="{_GUTTER + SVG_WIDTH}" y="12" fill="{muted}" text-anchor="end">{html.escape(fmt.time(hi_i))}</text>',
    ]
    present: set[int] = set()
    for i, s in enumerate(win.summaries):
        y = _AXIS + i * _ROW
        out.append(f'<text x="4" y="{y + _ROW - 4}" fill="{fg}">rank {s.row}</text>')
        if s.coverage_ns is None or s.kind is None:
            continue
        bw = np.diff(win.edges).astype(np.float64)
        frac = np.divide(s.coverage_ns, bw, out=np.zeros(len(bw)), where=bw > 0)
        out.extend(_bars(frac, s.kind, colors, y, present))
    if left_out > 0:
        y = _AXIS + rows_h + 11
        out.append(f'<text x="4" y="{y}" fill="{muted}">+ {left_out} more ranks not drawn</text>')
    x = 4.0
    y = _AXIS + rows_h + note_h + 15
    # The legend of the widget: every kind the trace holds (as the toolbar's chips).
    keys = [k["key"] for k in pal["kinds"]]
    for code in sorted(present | {keys.index(k) for k in index.kinds_present}):
        label = html.escape(str(pal["kinds"][code]["label"]))
        out.append(f'<rect x="{x:.0f}" y="{y - 9}" width="10" height="10" rx="2" fill="{colors[code]}"/>')
        out.append(f'<text x="{x + 14:.0f}" y="{y}" fill="{fg}">{label}</text>')
        x += 24 + 6.5 * len(label)
    out.append("</svg>")
    return "".join(out)


def _bars(frac: np.ndarray, kind: np.ndarray, colors: Sequence[str], y: int, present: set[int]) -> list[str]:
    """Runs of equal kind and height as rectangles from the row's bottom (one per run, not per column)."""
    out: list[str] = []
    h = _ROW - 3
    heights = np.where((frac > 0) & (kind != NO_KIND), np.maximum(1.5, np.round(np.minimum(frac, 1) * h * 2) / 2), 0)
    k = 0
    n = len(frac)
    while k < n:
        if heights[k] <= 0:
            k += 1
            continue
        j = k + 1
        while j < n and heights[j] == heights[k] and kind[j] == kind[k]:
            j += 1
        code = int(kind[k])
        present.add(code)
        bh = float(heights[k])
        out.append(
            f'<rect class="bar" x="{_GUTTER + k}" y="{y + 1 + h - bh:.1f}" width="{j - k}" height="{bh:.1f}" fill="{colors[code]}"/>'
        )
        k = j
    return out


def _title(lo: int, hi: int, ranks: int) -> str:
    return f"Timeline of {ranks} rank{'s' if ranks != 1 else ''}, {fmt.time(lo)} to {fmt.time(hi)} since the trace's origin"


def timeline_text(lo: float, hi: float, ranks: int, of: int) -> str:
    """The ``text/plain`` of a timeline outside a live kernel: which ranks and which range it showed."""
    return (
        f"tv.Timeline: {ranks} rank{'s' if ranks != 1 else ''} of {of}, {fmt.duration(hi - lo)} from "
        f"{fmt.time(lo)} since the trace's origin (run the notebook to interact)"
    )
