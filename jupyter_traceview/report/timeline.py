"""The report's interactive timeline: the widget's front end fed by a summary embedded in the file.

:func:`timeline_block` gives the HTML of the timeline (its opening state and the levels of
:mod:`jupyter_traceview.views.timeline.levels`, as JSON) and the assets to put once in the
page (the report bundle of ``js/report/``, built into ``jupyter_traceview/static/report.js``,
and its CSS). The timeline zooms and pans with no kernel, down to the finest level embedded;
it searches names, names a hovered column's events, summarises a measured range and draws the
memory lanes from :mod:`jupyter_traceview.views.timeline.details` and
:func:`~jupyter_traceview.views.timeline.memory.memory_levels`; single events and their
details need ``tv.Timeline``. See docs/frontend.md ("The HTML report's timeline").
"""

from __future__ import annotations

import html
import json
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import format as fmt
from ..model.trace import Trace
from ..views.timeline.coordinator import TimelineIndex
from ..views.timeline.details import DETAILS_MAX_BYTES, payload_size, timeline_details
from ..views.timeline.levels import (
    BASE_CELLS,
    DEFAULT_MAX_BYTES,
    LEVEL_FACTOR,
    MAX_LEVELS,
    TimelineLevels,
    encode_levels,
    timeline_levels,
)
from ..views.timeline.memory import MEMORY_LEVELS_MAX_BYTES, MemoryIndex, memory_levels
from ..views.timeline.protocol import timeline_state

__all__ = ["ReportTimeline", "timeline_block"]

_STATIC = Path(__file__).resolve().parent.parent / "static"
#: What was embedded, per index and size bound (a trace reported twice, light and dark).
_LEVELS: weakref.WeakKeyDictionary[TimelineIndex, dict[int, _Embedded]] = weakref.WeakKeyDictionary()
#: Height of the report's timeline, px (the view scrolls its rows inside).
HEIGHT = 420


@dataclass(frozen=True)
class ReportTimeline:
    """The timeline's HTML, the page assets it needs (its style), its script (the module
    drawing it, which the page runs), and a line saying what it holds."""

    html: str
    assets: str
    note: str
    script: str = ""


@dataclass(frozen=True)
class _Embedded:
    levels: TimelineLevels | None
    details: dict[str, Any] | None
    memory: dict[str, Any] | None


def _embedded(trace: Trace, index: TimelineIndex, max_bytes: int) -> _Embedded:
    """Details (search, hover, range summaries) and memory lanes first, each within its own bound,
    then as many levels as the rest of ``max_bytes`` holds."""
    details = timeline_details(index, max_bytes=min(DETAILS_MAX_BYTES, max_bytes // 2))
    end = max(int(index.end_ns), 1)
    cells = [BASE_CELLS * LEVEL_FACTOR**k for k in range(MAX_LEVELS)]
    memory = memory_levels(MemoryIndex.of(trace), end, cells, max_bytes=min(MEMORY_LEVELS_MAX_BYTES, max_bytes // 8))
    used = (payload_size(details) if details else 0) + (payload_size(memory) if memory else 0)
    levels = timeline_levels(index, max_bytes=max(1, max_bytes - used))
    return _Embedded(levels=levels, details=details, memory=memory)


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
        cached[max_bytes] = _embedded(trace, index, max_bytes)
    emb = cached[max_bytes]
    levels = emb.levels
    if levels is None:
        return None
    state = timeline_state(trace, index, height=HEIGHT)
    if emb.memory is None:
        # No memory records, or their levels did not fit: no memory lane.
        state["_memory"] = []
    else:
        # The levels hold the memory lanes (not the hardware counter lanes): those lanes only.
        held = set(emb.memory["lanes"])
        state["_memory"] = [c for c in state["_memory"] if c["id"] in held]
    if not levels.rows:
        # Only the ranks' summaries fit: every rank opens collapsed to its summary row.
        state["collapsed"] = list(trace.ranks)
    payload = json.dumps(
        {"state": state, "levels": encode_levels(levels), "details": emb.details, "memory": emb.memory},
        separators=(",", ":"),
        allow_nan=False,
    )
    finest = levels.end_ns / levels.levels[-1].cells
    extra = (payload_size(emb.details) if emb.details else 0) + (payload_size(emb.memory) if emb.memory else 0)
    note = (
        f"{len(levels.levels)} levels embedded ({fmt.size(levels.size + extra)} with search and details), the finest "
        f"{fmt.duration(finest)} per bin" + ("" if levels.rows else "; ranks' summaries only (the rows did not fit)")
    )
    if emb.details:
        grid = fmt.duration(int(emb.details["end"]) / int(emb.details["cells"]))
        note += (
            f". Search (names), hover and range summaries work to {grid}: a measured range's figures are "
            "exact at multiples of it and prorated inside"
        )
    else:
        note += ". Search, hover names and range summaries did not fit: they need tv.Timeline"
    block = (
        '<div class="tvr-timeline" data-source="tvr-timeline-data" '
        f'data-levels="{len(levels.levels)}" data-bytes="{levels.size + extra}" '
        f'data-details="{1 if emb.details else 0}" data-memory="{len(emb.memory["lanes"]) if emb.memory else 0}">'
        "</div>"
        f'<script type="application/json" id="tvr-timeline-data">{_script(payload)}</script>'
    )
    css = css_path.read_text(encoding="utf-8") if css_path.exists() else ""
    assets = f"<style>{css}</style>"
    script = js_path.read_text(encoding="utf-8")
    return ReportTimeline(html=block, assets=assets, note=html.escape(note), script=script)
