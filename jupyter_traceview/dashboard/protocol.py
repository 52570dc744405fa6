"""The dashboard's messages, typed: what :mod:`.data` and :mod:`.commands` send the front end.

Mirrored by the TypeScript interfaces of ``js/dashboard/protocol.ts`` (same names, same
snake_case keys; ``tests/dashboard/test_protocol.py`` compares the keys) and documented in
``docs/frontend.md`` ("The dashboard's protocol"). Times are float ns relative to the
trace's first event; absolute ns travel as strings (``t0_ns``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from ..analysis.findings.context import Finding as AnalysisFinding
from ..views.timeline.messages import TimelineModel

__all__ = [
    "Chart",
    "DashboardPayload",
    "DashboardState",
    "Figure",
    "Finding",
    "LinkAnswer",
    "LinkRequest",
    "ProgressReport",
    "TabContent",
    "TabInfo",
    "TabRequest",
    "Table",
    "TableColumn",
    "TimelineAnswer",
]

Tone = Literal["", "good", "warn", "bad"]
ColumnFormat = Literal["text", "name", "int", "duration", "pct", "bytes", "gbps", "float"]


class Figure(TypedDict):
    """A headline figure (:func:`.tabs.builder.figure_`)."""

    label: str
    value: str
    hint: str
    tone: Tone


class TabInfo(TypedDict):
    """A tab of the payload: its id and label."""

    id: str
    label: str


class DashboardPayload(TypedDict):
    """``_payload``: what the dashboard needs to open (:meth:`.data.DashboardData.payload`)."""

    protocol: int
    source: str
    title: str
    ranks: list[int]
    t0_ns: str
    span_ns: int
    tabs: list[TabInfo]
    headline: list[Figure]
    bokeh_version: str


class TableColumn(TypedDict):
    """A table column: ``key`` in the frame, header ``label``, display ``format``."""

    key: str
    label: str
    format: ColumnFormat


class Table(TypedDict):
    """A table (:func:`.tabs.builder.table`): the first rows of a frame."""

    id: str
    title: str
    columns: list[TableColumn]
    rows: list[list[Any]]
    total_rows: int
    #: The full names of the ``name`` columns (by key), row by row: the cells hold their
    #: short names (``format.label_names``), the full one shows on hover.
    full: dict[str, list[str]]


class Chart(TypedDict):
    """A chart: a bokeh JSON item (``bokeh.embed.json_item``), drawn by BokehJS."""

    id: str
    wide: bool
    empty: bool
    item: Mapping[str, Any]


class Finding(AnalysisFinding):
    """A finding (one row of ``tv.findings``: a rule's finding with the what-if columns
    ``saving_ns``, ``saving_pct`` and ``change``) with ``stake``, its time at stake in words,
    and ``fix``, what fixing it buys per step in words (``format.saving``; "" when unknown)."""

    saving_ns: int
    saving_pct: float
    change: str
    stake: str
    fix: str


class _TabContent(TypedDict):
    tab: str
    theme: Literal["light", "dark"]
    range: list[float] | None
    figures: list[Figure]
    tables: list[Table]
    charts: list[Chart]
    notes: list[str]
    elapsed_ms: float


class TabContent(_TabContent, total=False):
    """``_tab``: one tab's content (:meth:`.data.DashboardData.tab`); ``findings`` and ``checks`` on the Overview."""

    findings: list[Finding]
    #: The Overview's "checked, fine" lines: each rule that did not fire and why
    #: (``tv.findings(explain=True)``), as "rule: reason".
    checks: list[str]
    seq: int | None
    error: str


class TabRequest(TypedDict):
    """``_tab`` request."""

    seq: int
    tab: str
    theme: Literal["light", "dark"]
    range: list[float] | None


class _LinkRequest(TypedDict):
    target: Literal["heatmap", "rank", "iteration", "kernel", "event"]
    rank: int


class LinkRequest(_LinkRequest, total=False):
    """``_link`` request: what was clicked (the ``link_*`` columns of a chart's source)."""

    bin: int
    heatmap: str
    step: int
    name: str
    range: list[float] | None
    eid: int
    #: target "event" at a memory peak: the device whose memory lane the timeline reveals.
    device_type: str
    device: int


class _LinkAnswer(TypedDict):
    x_range: list[float]
    ranks: list[int]
    focus: int


class LinkAnswer(_LinkAnswer, total=False):
    """``_link`` answer: where the timeline goes (:meth:`.data.DashboardData.link`)."""

    search: str
    #: The memory lane to reveal (an id of the timeline state's ``_memory``).
    memory: int
    error: str


class TimelineAnswer(TypedDict, total=False):
    """``_timeline`` answer: the timeline's initial state; ``model_id`` when a widget holds it."""

    state: TimelineModel
    model_id: str
    error: str


class _ProgressReport(TypedDict):
    type: Literal["progress"]
    command: str
    done: int
    total: int
    label: str


class ProgressReport(_ProgressReport, total=False):
    """A progress report while a command runs (the widget's ``{type: "progress"}`` messages)."""

    tab: str


class DashboardState(TypedDict):
    """State of the dashboard itself (``tv.Dashboard``'s traits ``tab`` and ``expanded``)."""

    tab: str
    expanded: bool
