"""The report's interactive timeline: the widget's front end fed by a summary embedded in the file.

:func:`timeline_block` gives the HTML of the timeline (its opening state and the levels of
:mod:`jupyter_traceview.views.timeline.levels`, as JSON) and the assets to put once in the
page (the report bundle of ``js/report/``, built into ``jupyter_traceview/static/report.js``,
and its CSS). The timeline zooms and pans with no kernel, down to the finest level embedded;
event details and search need ``tv.Timeline``. See docs/report.md.
"""

from __future__ import annotations

import html
import json
import weakref
from dataclasses import dataclass
from pathlib import Path

from .. import format as fmt
from ..model.trace import Trace
from ..views.timeline.coordinator import TimelineIndex
from ..views.timeline.levels import DEFAULT_MAX_BYTES, TimelineLevels, encode_levels, timeline_levels
from ..views.timeline.protocol import timeline_state

__all__ = ["ReportTimeline", "timeline_block"]

_STATIC = Path(__file__).resolve().parent.parent / "static"
#: Levels already computed, per index and size bound (a trace reported twice, light and dark).
_LEVELS: weakref.WeakKeyDictionary[TimelineIndex, dict[int, TimelineLevels | None]] = weakref.WeakKeyDictionary()
#: Height of the report's timeline, px (the view scrolls its rows inside).
HEIGHT = 420


@dataclass(frozen=True)
class ReportTimeline:
    """The timeline's HTML, the page assets it needs, and a line saying what it holds."""

    html: str
    assets: str
    note: str


def _script(text: str) -> str:
    # "</" inside an inline script would end it early.
    return text.replace("</", "<\\/")


def timeline_block(trace: Trace, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ReportTimeline | None:
    """The report's interactive timeline of ``trace``; None when it cannot be embedded.

    None when the front end is not built (a source checkout without ``jlpm build``) or when
    not even the ranks' coarsest summary fits in ``max_bytes``: the report then keeps only
    its static overview.
    """
    js_path, css_path = _STATIC / "report.js", _STATIC / "report.css"
    if not js_path.exists():
        return None
    index = TimelineIndex.of(trace)
    cached = _LEVELS.setdefault(index, {})
    if max_bytes not in cached:
        cached[max_bytes] = timeline_levels(index, max_bytes=max_bytes)
    levels = cached[max_bytes]
    if levels is None:
        return None
    state = timeline_state(trace, index, height=HEIGHT)
    # Memory counter lanes are not embedded (the report's memory chart shows the same series).
    state["_counters"] = []
    if not levels.rows:
        # Only the ranks' summaries fit: every rank opens collapsed to its summary row.
        state["collapsed"] = list(trace.ranks)
    payload = json.dumps({"state": state, "levels": encode_levels(levels)}, separators=(",", ":"), allow_nan=False)
    finest = levels.end_ns / levels.levels[-1].cells
    note = (
        f"{len(levels.levels)} levels embedded ({fmt.size(levels.size)}), the finest "
        f"{fmt.duration(finest)} per bin" + ("" if levels.rows else "; ranks' summaries only (the rows did not fit)")
    )
    block = (
        '<div class="tvr-timeline" data-source="tvr-timeline-data" '
        f'data-levels="{len(levels.levels)}" data-bytes="{levels.size}"></div>'
        f'<script type="application/json" id="tvr-timeline-data">{_script(payload)}</script>'
    )
    css = css_path.read_text(encoding="utf-8") if css_path.exists() else ""
    assets = f"<style>{css}</style>" + f'<script type="module">{_script(js_path.read_text(encoding="utf-8"))}</script>'
    return ReportTimeline(html=block, assets=assets, note=html.escape(note))
