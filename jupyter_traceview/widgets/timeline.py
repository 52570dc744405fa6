"""``tv.Timeline(trace)``: a multi-rank, zoomable timeline widget (anywidget).

The front end (``js/timeline/``, bundled into ``jupyter_traceview/static/timeline.js``) draws
on a canvas; it asks the kernel for the visible window at its pixel width through
anywidget's request/response commands and gets binary buffers back, computed by
:class:`~jupyter_traceview.views.timeline.index.TimelineIndex` (raw events when zoomed in, per-pixel
bins when zoomed out). Synced traits carry only small state: the visible range, the lanes,
the search pattern and the selection.

Times in synced traits are float ns relative to the trace's first event
(:attr:`Timeline.t0_ns`); the Python API (:meth:`Timeline.show_range`,
:attr:`Timeline.selection`) speaks absolute ns, as ``trace.events()["ts_ns"]`` does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..errors import OptionError, TraceSelectionError, TraceviewError
from ..model.trace import Trace
from ..views.timeline import protocol as timeline_protocol
from ..views.timeline.index import LevelOfDetail, TimelineIndex, compile_pattern
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
    RankPresets,
    SelectedEvent,
    SummaryRequest,
    WindowError,
    WindowRequest,
    WindowResponseMeta,
)
from ..views.timeline.protocol import check_ranks, encode_window, timeline_state
from ..views.timeline.static import timeline_svg, timeline_text

try:
    import anywidget
    import traitlets
    from anywidget.experimental import command
except ImportError as exc:  # pragma: no cover - anywidget is a dependency
    raise ImportError(
        f"tv.Timeline needs anywidget and ipywidgets ({exc}): `pip install anywidget ipywidgets`, "
        "then restart the kernel"
    ) from exc

__all__ = ["Timeline", "TimelineSelection", "encode_window"]

_STATIC = Path(__file__).resolve().parent.parent / "static"
_ESM = _STATIC / "timeline.js"
_CSS = _STATIC / "timeline.css"
#: Stand-in module when the bundle is not built (the constructor refuses to run then).
_NOT_BUILT = "export default { render({ el }) { el.textContent = 'jupyter_traceview: front end not built'; } };"


@dataclass(frozen=True)
class TimelineSelection:
    """What is selected in a :class:`Timeline`: an event, a time range, both or nothing.

    Read it from :attr:`Timeline.selection`; observe it with
    ``timeline.observe(callback, names="selection")``.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> tv.TimelineSelection()  # nothing selected
    TimelineSelection(rank=None, stream=None, thread=None, event=None, name=None, range=None)
    """

    #: Rank of the selected event (None if no event is selected).
    rank: int | None = None
    #: GPU stream of the selected event; None for CPU events.
    stream: int | None = None
    #: CPU thread of the selected event; None for GPU events.
    thread: int | None = None
    #: ``eid`` of the selected event (see ``docs/schema.md``).
    event: int | None = None
    #: Name of the selected event.
    name: str | None = None
    #: Selected time range ``(start_ns, end_ns)``, absolute ns as in ``ts_ns``
    #: (pass it to ``trace.select(time_range=...)``); None if none.
    range: tuple[int, int] | None = None

    @property
    def empty(self) -> bool:
        """True when nothing is selected."""
        return self.event is None and self.range is None

    @classmethod
    def from_traits(
        cls, selected_event: SelectedEvent, selected_range: list[float], index: TimelineIndex
    ) -> TimelineSelection:
        """The selection from the widget's synced traits ``selected_event`` and ``selected_range``.

        ``selected_event`` is ``{"rank": r, "eid": e}`` (or empty); ``selected_range`` is
        ``[start, end]`` in ns relative to the trace start (or empty). Stream, thread and name
        come from the trace, not from the front end.
        """
        rng = None
        if selected_range and len(selected_range) == 2:
            a, b = sorted(float(x) for x in selected_range)
            rng = (index.t0_ns + round(a), index.t0_ns + round(b))
        if not selected_event or "rank" not in selected_event or "eid" not in selected_event:
            return cls(range=rng)
        rank, eid = int(selected_event["rank"]), int(selected_event["eid"])
        try:
            info = index.details(rank, eid)
        except TraceSelectionError:
            return cls(range=rng)
        gpu = info["device"] >= 0
        return cls(
            rank=rank,
            stream=info["stream"] if gpu else None,
            thread=None if gpu else info["tid"],
            event=eid,
            name=info["name"],
            range=rng,
        )


class Timeline(anywidget.AnyWidget):
    """A zoomable timeline of every rank's GPU streams and CPU threads.

    Parameters
    ----------
    trace
        The trace to show (``tv.load(...)``); a trace narrowed with ``select()`` opens on its
        window.
    ranks
        Ranks to show (default all); the others stay one click away (the rank picker,
        "All ranks").
    focus
        A rank to emphasise: scrolled to, expanded and highlighted, the other ranks still
        shown (added to ``ranks`` if they lack it).
    cpu
        Show CPU thread lanes (operators, runtime calls, annotations, nesting by depth)
        under each rank's GPU streams.
    color_by
        ``"kind"`` (compute / communication / memory / sync, and CPU kinds) or ``"name"``
        (a stable colour per name, the same in every chart).
    height
        Height of the lanes area in pixels (the toolbar and the status line come on top).
        None (the default) fits the lanes shown, up to 720 px or 70 % of the browser window.
        The handle under the plot resizes it; the dragged height is kept in :attr:`height`
        and remembered for the notebook (in the browser's localStorage, under the notebook's
        path): a timeline opened again in that notebook with the same ``height`` argument
        opens at the dragged height.
    lod
        When raw events are sent and when they are merged per pixel column.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> timeline = tv.Timeline(tv.load(tv.sample_path()))
    >>> timeline  # doctest: +SKIP
    >>> timeline.highlight("nccl")  # every NCCL kernel and call
    128
    >>> timeline.show_range(timeline.t0_ns, timeline.t0_ns + 2_000_000, ranks=[0, 1])
    >>> timeline.show_range(timeline.t0_ns, timeline.t0_ns + 2_000_000, focus=7)  # 7 added and emphasised
    >>> timeline.ranks, timeline.focus_rank
    ([0, 1, 7], 7)
    >>> timeline.selection  # what the user clicked or shift-dragged
    TimelineSelection(rank=None, stream=None, thread=None, event=None, name=None, range=None)

    Interaction: wheel or +/- zoom around the pointer, drag or A/D pan, W/S zoom, double-click
    fits, Shift+wheel, arrows, PgUp/PgDn scroll the lanes, the "Ranks" picker filters ranks
    (a range such as ``0-7,12`` or a regular expression), offers the "slowest N" and
    "stragglers" presets (:func:`~jupyter_traceview.views.timeline.ranks.rank_presets`), pins,
    reorders, collapses and expands them; above four ranks each rank's CPU threads open folded
    into one row (click its label to unfold), shift+drag measures a range and
    summarises it per kind (a panel over the plot), click selects an event and draws the arrow
    from its CPU launch, the search box dims what does not match (Enter and Shift+Enter walk
    the matches in time order from the earliest), "All ranks" shows every rank again and
    "Back" returns to the view before the last link, ``?`` lists the keys. A saved notebook
    shows a picture of the last view instead of the widget.
    """

    # anywidget reads these files when the class is created (and refuses missing ones).
    _esm = _ESM if _ESM.exists() else _NOT_BUILT
    _css = _CSS if _CSS.exists() else ""

    # Sent once (see js/timeline/messages.ts for the TypeScript mirror of every trait).
    _palette = traitlets.Dict().tag(sync=True)
    _rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    _lanes = traitlets.List(traitlets.Dict()).tag(sync=True)
    #: Memory lanes (views/timeline/memory.py): one per rank and device with memory records.
    _memory = traitlets.List(traitlets.Dict()).tag(sync=True)
    _all_ranks = traitlets.List(traitlets.Int()).tag(sync=True)
    _steps = traitlets.List(traitlets.Dict()).tag(sync=True)
    _span = traitlets.List(traitlets.Float()).tag(sync=True)
    _kinds = traitlets.List(traitlets.Unicode()).tag(sync=True)
    _t0_ns = traitlets.Unicode("0").tag(sync=True)
    _search_count = traitlets.Int(0).tag(sync=True)

    #: Visible time range ``[start, end]``, float ns relative to the trace start.
    x_range = traitlets.List(traitlets.Float(), default_value=[0.0, 1.0]).tag(sync=True)
    #: Ranks shown, in the order drawn (after the ``pinned`` ones).
    ranks = traitlets.List(traitlets.Int()).tag(sync=True)
    #: Ranks whose lanes are collapsed into one summary row.
    collapsed = traitlets.List(traitlets.Int()).tag(sync=True)
    #: Show CPU thread lanes.
    show_cpu = traitlets.Bool(True).tag(sync=True)
    #: "kind" or "name".
    color_by = traitlets.Enum(("kind", "name"), default_value="kind").tag(sync=True)
    #: Search pattern highlighted in names and arguments (a case-insensitive regular expression, or literal text).
    search = traitlets.Unicode("").tag(sync=True)
    #: The selected event, ``{"rank": r, "eid": e}``, or ``{}`` (set by the front end).
    selected_event = traitlets.Dict().tag(sync=True)
    #: The selected range ``[start, end]`` (relative float ns) or ``[]`` (set by the front end).
    selected_range = traitlets.List(traitlets.Float()).tag(sync=True)
    #: Ranks whose CPU threads are folded into one summary row (their top-level calls).
    cpu_collapsed = traitlets.List(traitlets.Int()).tag(sync=True)
    #: Ranks pinned above the others, in this order (pinned ranks not in ``ranks`` are not shown).
    pinned = traitlets.List(traitlets.Int()).tag(sync=True)
    #: The rank emphasised (scrolled to, expanded, highlighted), or None.
    focus_rank = traitlets.Int(None, allow_none=True).tag(sync=True)
    #: Height of the lanes area, px (toolbar and status line excluded); 0 fits the lanes shown.
    #: The resize handle under the plot sets it.
    height = traitlets.Int(0).tag(sync=True)
    #: Where the front end remembers a dragged height: the notebook's path (the kernel's
    #: ``JPY_SESSION_NAME``), "" where unknown (the front end then uses the page's path).
    _height_key = traitlets.Unicode("").tag(sync=True)

    #: The selection, rebuilt whenever the front end changes it (read-only; observable).
    selection = traitlets.Instance(TimelineSelection, read_only=True)

    def __init__(
        self,
        trace: Trace,
        *,
        ranks: Iterable[int] | None = None,
        focus: int | None = None,
        cpu: bool = True,
        color_by: str = "kind",
        height: int | None = None,
        lod: LevelOfDetail | None = None,
    ) -> None:
        if not isinstance(trace, Trace):
            raise TypeError(f"Timeline needs a Trace (from tv.load), got {type(trace).__name__}")
        if not _ESM.exists():
            raise TraceviewError(
                f"the timeline's front end is not built ({_ESM} is missing): install the package with "
                "`pip install .` (in a source checkout `jlpm install && jlpm build` also builds it), "
                "then restart the kernel"
            )
        self._index = TimelineIndex.of(trace)
        self._lod = lod or LevelOfDetail()
        self.trace = trace
        state = timeline_state(
            trace,
            self._index,
            ranks=ranks,
            cpu=cpu,
            color_by=color_by,
            height=0 if height is None else int(height),
            # Set by jupyter_server for the kernels it starts: the notebook's path.
            height_key=os.environ.get("JPY_SESSION_NAME", ""),
            focus=focus,
        )
        super().__init__(**state)
        self.set_trait("selection", TimelineSelection())
        self.observe(self._on_selection, names=["selected_event", "selected_range"])
        self.observe(self._on_search, names=["search"])

    # ------------------------------------------------------------------ public API
    @property
    def t0_ns(self) -> int:
        """Absolute time (ns) of the trace's first event: the origin of the time axis."""
        return self._index.t0_ns

    @property
    def index(self) -> TimelineIndex:
        """The level-of-detail index behind the widget (built once per trace)."""
        return self._index

    def show_range(
        self, start_ns: int, end_ns: int, *, ranks: Iterable[int] | None = None, focus: int | None = None
    ) -> None:
        """Show ``[start_ns, end_ns)`` (absolute ns, as ``ts_ns``).

        ``ranks``: show only these ranks (the visible set; "All ranks" brings the others
        back). ``focus``: emphasise this rank, scrolled to, expanded and highlighted, with the
        other ranks still shown (it is added to the visible set if that lacks it); the
        dashboard's links do this. Without ``focus`` the emphasis is cleared.
        """
        t0 = self._index.t0_ns
        start_ns, end_ns = int(start_ns), int(end_ns)
        if end_ns <= start_ns:
            raise OptionError(f"show_range: need end_ns > start_ns, got ({start_ns}, {end_ns})")
        if end_ns <= t0 or start_ns >= t0 + self._index.end_ns:
            raise OptionError(
                f"show_range: ({start_ns}, {end_ns}) does not overlap the trace, which spans "
                f"[{t0}, {t0 + self._index.end_ns}) ns (absolute, as in trace.events()['ts_ns']); "
                f"for times relative to the trace's origin (the +times shown everywhere) add trace.t0_ns"
            )
        shown = self._check_ranks(ranks) if ranks is not None else list(self.ranks)
        if focus is not None:
            focus = self._check_ranks([focus])[0]
            if focus not in shown:
                shown = sorted([*shown, focus])
        with self.hold_sync():
            if shown != list(self.ranks):
                self.ranks = shown
            self.focus_rank = focus
            self.x_range = [float(start_ns - t0), float(end_ns - t0)]

    def fit(self) -> None:
        """Show the whole trace (every event, zero-length markers included: ``_span``, as the
        toolbar's Fit)."""
        self.x_range = [float(x) for x in self._span]

    def highlight(self, pattern: str | None) -> int:
        """Highlight every event whose name or recorded arguments match ``pattern``; returns how many match.

        Arguments are searched as ``key=value`` text (``input_dims=[[32,64],[64]]``,
        ``collective=all_reduce in_nelems=1024``, ``grid=[8,1,1]``, ``copy_kind=HtoD``; see
        :mod:`jupyter_traceview.views.timeline.args`). ``pattern`` is a case-insensitive
        regular expression in RE2 syntax, matched in linear time (text that is not a valid expression is searched literally); None or "" clears
        the highlight. A pattern over ``MAX_PATTERN_CHARS`` (1,000) characters raises
        :class:`~jupyter_traceview.errors.OptionError`.
        """
        if pattern:
            compile_pattern(pattern)  # refuses an over-long pattern before it is shown
        self.search = pattern or ""
        return self._search_count

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # Where the widget cannot render (a saved notebook opened without its kernel, nbconvert
        # HTML, a static viewer): a picture of the last view with its legend, and a description.
        bundle = super()._repr_mimebundle_(**kwargs)
        data: Any = bundle[0] if isinstance(bundle, tuple) else bundle
        if data is not None:
            data = {**data, **self._fallback()}
        return (data, bundle[1]) if isinstance(bundle, tuple) else data

    def _fallback(self) -> dict[str, str]:
        """``image/svg+xml`` of the view shown (range and ranks) and a ``text/plain`` description."""
        lo, hi = (float(x) for x in self.x_range)
        svg = timeline_svg(self._index, lo, hi, list(self.ranks))
        text = timeline_text(lo, hi, len(self.ranks), len(self.trace.ranks))
        return {"image/svg+xml": svg, "text/plain": text}

    # ------------------------------------------------------------------ trait plumbing
    def _check_ranks(self, ranks: Iterable[int]) -> list[int]:
        return check_ranks(self.trace, ranks)

    def _on_selection(self, _change: dict[str, Any]) -> None:
        # The trait holds what the front end wrote (js/timeline/messages.ts SelectedEvent); from_traits checks it.
        selected = cast(SelectedEvent, self.selected_event)
        sel = TimelineSelection.from_traits(selected, self.selected_range, self._index)
        self.set_trait("selection", sel)

    def _on_search(self, change: dict[str, Any]) -> None:
        pattern = change["new"]
        try:
            self._search_count = self._index.count_matches(pattern) if pattern else 0
        except OptionError:  # an over-long pattern from the front end: nothing matches
            self._search_count = 0

    # ------------------------------------------------------------------ commands (front end -> kernel)
    # The answers come from jupyter_traceview.views.timeline.protocol, shared with the dashboard and
    # the server (docs/frontend.md, "The timeline's protocol").
    @command
    def _window(self, msg: WindowRequest, buffers: list[bytes]) -> tuple[WindowResponseMeta | WindowError, list[bytes]]:
        """Window request: ``{seq, lo, hi, width, rows, summaries, pattern, name_colors}``."""
        return timeline_protocol.answer_window(self._index, msg, lod=self._lod)

    @command
    def _details(self, msg: DetailsRequest, buffers: list[bytes]) -> tuple[EventDetails | CommandError, list[bytes]]:
        """Event details for the tooltip: ``{rank, eid}``."""
        return timeline_protocol.answer_details(self._index, msg)

    @command
    def _find(self, msg: FindRequest, buffers: list[bytes]) -> tuple[FindResult | CommandError, list[bytes]]:
        """Next/previous search match: ``{pattern, t, direction, rows}``."""
        return timeline_protocol.answer_find(self._index, msg)

    @command
    def _ranks(self, msg: dict[str, object], buffers: list[bytes]) -> tuple[RankPresets | CommandError, list[bytes]]:
        """The rank picker's presets (views.timeline.ranks.rank_presets): ``{}``."""
        return timeline_protocol.answer_ranks(self._index)

    @command
    def _summary(self, msg: SummaryRequest, buffers: list[bytes]) -> tuple[RangeSummary | CommandError, list[bytes]]:
        """Per-kind summary of a range: ``{lo, hi, ranks}``."""
        return timeline_protocol.answer_summary(self._index, msg)

    @command
    def _collective(
        self, msg: CollectiveRequest, buffers: list[bytes]
    ) -> tuple[CollectiveInstance | CommandError, list[bytes]]:
        """A communication kernel's collective instance on every rank: ``{rank, eid}``."""
        return timeline_protocol.answer_collective(self._index, msg)

    @command
    def _fold(self, msg: FoldRequest, buffers: list[bytes]) -> tuple[FoldSummary | CommandError, list[bytes]]:
        """What a rank's folded CPU threads do in a range: ``{rank, lo, hi}``."""
        return timeline_protocol.answer_fold(self._index, msg)
