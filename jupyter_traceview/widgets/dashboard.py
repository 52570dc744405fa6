"""``tv.Dashboard(trace)``: every analysis as a picture, in tabs, linked to the timeline (anywidget).

The content comes from :mod:`jupyter_traceview.dashboard.data` (the same for the Traces
sidebar and ``traceview report``); this widget only carries it: a few synced traits (the
open tab, whether it is expanded) and request/response commands answered by
:func:`jupyter_traceview.dashboard.commands.answer`. The front end (``js/dashboard/``) draws
the charts with BokehJS, which this widget sends once from the installed bokeh package
(no CDN), and the timeline with the same view as ``tv.Timeline``.

The timeline inside the dashboard is a :class:`~jupyter_traceview.Timeline` widget,
created when first needed (:attr:`Dashboard.timeline`): read its range and selection,
or move it, from Python as with a standalone timeline.
"""

from __future__ import annotations

import contextlib
import html
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from ..dashboard.commands import answer
from ..dashboard.data import DashboardData
from ..dashboard.protocol import LinkAnswer, LinkRequest, TabContent, TabRequest, TimelineAnswer
from ..errors import OptionError, TraceviewError
from ..model.trace import Trace
from ..views.timeline.index import LevelOfDetail
from ..views.timeline.messages import (
    CollectiveInstance,
    CollectiveRequest,
    CommandError,
    DetailsRequest,
    EventDetails,
    FindRequest,
    FindResult,
    FoldRequest,
    FoldSummary,
    RangeSummary,
    SummaryRequest,
    WindowError,
    WindowRequest,
    WindowResponseMeta,
)
from .timeline import Timeline

try:
    import anywidget
    import traitlets
    from anywidget.experimental import command
except ImportError as exc:  # pragma: no cover - anywidget is a dependency
    raise ImportError(
        f"tv.Dashboard needs anywidget and ipywidgets ({exc}): `pip install anywidget ipywidgets`, "
        "then restart the kernel"
    ) from exc

__all__ = ["Dashboard"]

_STATIC = Path(__file__).resolve().parent.parent / "static"
_ESM = _STATIC / "dashboard.js"
_CSS = _STATIC / "dashboard.css"
_NOT_BUILT = "export default { render({ el }) { el.textContent = 'jupyter_traceview: front end not built'; } };"


def _prewarm_charts() -> None:
    """Import the charts layer (bokeh, ~0.5 s) while the front end loads, not when the first tab is asked for."""
    with contextlib.suppress(Exception):  # the tab itself reports what is wrong
        import jupyter_traceview.charts  # noqa: F401


class Dashboard(anywidget.AnyWidget):
    """Every analysis of a trace as a picture, in tabs, linked to the timeline.

    Tabs: Overview (headline figures, the findings with their evidence, the utilisation
    heatmap, the efficiency waterfall), Timeline, Breakdown, Overlap, Kernels,
    Communication, Iterations, Counters (and Diff with ``baseline``). Tabs are computed
    when first opened, with progress shown while the analyses run.

    Linked: clicking a heatmap cell, a rank's bar or an iteration opens the timeline on
    that rank and time window; a range selected on the timeline (shift+drag) recomputes the
    Breakdown tab for that range.

    Parameters
    ----------
    trace
        The trace to show (``tv.load(...)``).
    baseline
        Another trace to compare with: adds a Diff tab (``tv.compare(baseline, trace)``).
    tab
        The tab open first (default: the first tab, Overview; Operators for a trace without GPU activity).
    expanded
        False shows a compact summary with a button that opens the dashboard (what
        ``trace`` on the last line of a cell shows).
    heatmap_bins
        Time bins of the utilisation heatmaps.
    lod
        The timeline's level of detail.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> dash = tv.Dashboard(tv.load(tv.sample_path()))
    >>> dash  # doctest: +SKIP
    >>> dash.tab = "kernels"  # open a tab from Python
    >>> dash.timeline.show_range(dash.timeline.t0_ns, dash.timeline.t0_ns + 2_000_000, ranks=[3])
    """

    _esm = _ESM if _ESM.exists() else _NOT_BUILT
    _css = _CSS if _CSS.exists() else ""

    # Sent once (js/dashboard/model.ts mirrors every synced trait).
    _payload = traitlets.Dict().tag(sync=True)
    #: The open tab ("overview", "timeline", "breakdown", ...).
    tab = traitlets.Unicode("overview").tag(sync=True)
    #: False: a compact summary with an "Open dashboard" button.
    expanded = traitlets.Bool(True).tag(sync=True)

    def __init__(
        self,
        trace: Trace,
        *,
        baseline: Trace | None = None,
        tab: str | None = None,
        expanded: bool = True,
        heatmap_bins: int = 200,
        lod: LevelOfDetail | None = None,
    ) -> None:
        if not isinstance(trace, Trace):
            raise TypeError(f"Dashboard needs a Trace (from tv.load), got {type(trace).__name__}")
        if not _ESM.exists():
            raise TraceviewError(
                f"the dashboard's front end is not built ({_ESM} is missing): install the package with "
                "`pip install .` (in a source checkout `jlpm install && jlpm build` also builds it), "
                "then restart the kernel"
            )
        self.trace = trace
        self._data = DashboardData(trace, baseline=baseline, heatmap_bins=heatmap_bins, lod=lod)
        self._child: Timeline | None = None
        payload = self._data.payload()
        tabs = [t["id"] for t in payload["tabs"]]
        if tab is None:  # the first tab: Overview, or Operators for a trace without GPU activity
            tab = tabs[0]
        if tab not in tabs:
            raise OptionError.invalid("tab", tab, tabs)
        super().__init__(_payload=payload, tab=tab, expanded=bool(expanded))
        if expanded:
            threading.Thread(target=_prewarm_charts, name="traceview-charts-import", daemon=True).start()

    # ------------------------------------------------------------------ public API
    @property
    def data(self) -> DashboardData:
        """The content behind the dashboard (tabs as JSON, links; see :mod:`jupyter_traceview.dashboard.data`)."""
        return self._data

    @property
    def timeline(self) -> Timeline:
        """The timeline of the Timeline tab (created on first use: building its index takes a moment)."""
        if self._child is None:
            self._child = Timeline(self.trace, lod=self._data.lod)
        return self._child

    @property
    def breakdown_range(self) -> tuple[int, int] | None:
        """The range (absolute ns) the Breakdown tab shows: the timeline's selected range, if any."""
        if self._child is None:
            return None
        return self._child.selection.range

    def follow(self, target: str, **msg: Any) -> LinkAnswer:
        """Do what a click on a chart does: move the timeline, open its tab; returns where it went.

        The timeline keeps the ranks it shows (adding the link's rank if it lacks it) and
        emphasises the link's rank (:attr:`Timeline.focus_rank`).

        ``target`` is ``"heatmap"`` (``rank=``, ``bin=``, ``heatmap=`` kind), ``"rank"``
        (``rank=``), ``"iteration"`` (``rank=``, ``step=``) or ``"kernel"`` (``rank=``,
        ``name=``); see :meth:`DashboardData.link`.
        """
        out = self._data.link({"target": target, **msg})
        tl = self.timeline
        # The timeline keeps the ranks it shows and emphasises the link's rank.
        shown = list(tl.ranks) + [r for r in out["ranks"] if r not in tl.ranks]
        with tl.hold_sync():
            if shown != list(tl.ranks):
                tl.ranks = shown
            tl.focus_rank = out["focus"]
            tl.x_range = list(out["x_range"])
            if "search" in out:
                tl.search = out["search"]
        self.tab = "timeline"
        return out

    def breakdown(self, *, theme: str = "light") -> TabContent:
        """The Breakdown tab's content for :attr:`breakdown_range` (what the front end shows)."""
        return self._data.tab(
            "breakdown", theme="dark" if theme == "dark" else "light", time_range=self.breakdown_range
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # Where widgets do not render (a static notebook viewer), the trace's summary shows.
        bundle = super()._repr_mimebundle_(**kwargs)
        data: Any = bundle[0] if isinstance(bundle, tuple) else bundle
        if data is not None:
            data = {**data, "text/html": data.get("text/html") or self._fallback_html()}
        return (data, bundle[1]) if isinstance(bundle, tuple) else data

    def _fallback_html(self) -> str:
        from ..analysis.summary import summary

        parts = [self.trace._repr_html_()]
        if self.expanded:
            table = summary(self.trace)
            parts.append(table.to_html(index=False, float_format=lambda v: f"{v:.1f}", border=0))
        parts.append(
            "<div style='font-size:smaller;opacity:0.7'>"
            f"{html.escape('tv.Dashboard: run the notebook with a kernel to see the charts and the timeline')}</div>"
        )
        return "".join(parts)

    # ------------------------------------------------------------------ commands (front end -> kernel)
    def _answer(self, name: str, msg: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[bytes]]:
        """Answer ``name`` (dashboard.commands.answer), reporting progress to the front end."""

        def progress(done: int, total: int, label: str) -> None:
            self.send(
                {
                    "type": "progress",
                    "command": name,
                    "tab": msg.get("tab"),
                    "done": done,
                    "total": total,
                    "label": label,
                }
            )

        return answer(self._data, name, dict(msg), progress=progress)

    # The messages are typed in dashboard/protocol.py and views/timeline/messages.py (mirrored
    # by js/dashboard/protocol.ts and js/timeline/messages.ts); ``answer`` checks each request.
    @command
    def _tab(self, msg: TabRequest, buffers: list[bytes]) -> tuple[TabContent | CommandError, list[bytes]]:
        """One tab's content: ``{seq, tab, theme, range}``."""
        out, bufs = self._answer("_tab", msg)
        return cast("TabContent | CommandError", out), bufs

    @command
    def _link(self, msg: LinkRequest, buffers: list[bytes]) -> tuple[LinkAnswer | CommandError, list[bytes]]:
        """A click on a chart: move the timeline (here, so that Python sees it) and say where."""
        try:
            fields: dict[str, Any] = dict(msg)
            return self.follow(str(fields.pop("target", "")), **fields), []
        except (TraceviewError, ValueError, KeyError, TypeError) as exc:
            return CommandError(error=str(exc)), []

    @command
    def _timeline(self, msg: Mapping[str, object], buffers: list[bytes]) -> tuple[TimelineAnswer, list[bytes]]:
        """The timeline child widget: its model id and state."""
        try:
            tl = self.timeline
        except TraceviewError as exc:
            return TimelineAnswer(error=str(exc)), []
        # The front end takes the state from the child widget's model itself.
        return TimelineAnswer(model_id=tl.model_id), []

    @command
    def _bokehjs(self, msg: Mapping[str, object], buffers: list[bytes]) -> tuple[Mapping[str, Any], list[bytes]]:
        """BokehJS of the installed bokeh (sent once per page): ``{version, bytes}`` and one buffer."""
        return self._answer("_bokehjs", msg)

    @command
    def _window(self, msg: WindowRequest, buffers: list[bytes]) -> tuple[WindowResponseMeta | WindowError, list[bytes]]:
        out, bufs = self._answer("_window", msg)
        return cast("WindowResponseMeta | WindowError", out), bufs

    @command
    def _details(self, msg: DetailsRequest, buffers: list[bytes]) -> tuple[EventDetails | CommandError, list[bytes]]:
        out, bufs = self._answer("_details", msg)
        return cast("EventDetails | CommandError", out), bufs

    @command
    def _find(self, msg: FindRequest, buffers: list[bytes]) -> tuple[FindResult | CommandError, list[bytes]]:
        out, bufs = self._answer("_find", msg)
        return cast("FindResult | CommandError", out), bufs

    @command
    def _summary(self, msg: SummaryRequest, buffers: list[bytes]) -> tuple[RangeSummary | CommandError, list[bytes]]:
        out, bufs = self._answer("_summary", msg)
        return cast("RangeSummary | CommandError", out), bufs

    @command
    def _collective(
        self, msg: CollectiveRequest, buffers: list[bytes]
    ) -> tuple[CollectiveInstance | CommandError, list[bytes]]:
        out, bufs = self._answer("_collective", msg)
        return cast("CollectiveInstance | CommandError", out), bufs

    @command
    def _fold(self, msg: FoldRequest, buffers: list[bytes]) -> tuple[FoldSummary | CommandError, list[bytes]]:
        out, bufs = self._answer("_fold", msg)
        return cast("FoldSummary | CommandError", out), bufs
