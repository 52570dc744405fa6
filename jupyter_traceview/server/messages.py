"""The server extension's JSON, typed: what the REST endpoints (:mod:`.handlers`) accept and answer.

Mirrored by the TypeScript interfaces of ``js/labextension/messages.ts`` (same names, same
snake_case keys; ``tests/server/test_server_messages.py`` compares the keys). The dashboard's
own messages, carried inside ``POST dashboard`` answers, are typed in
:mod:`jupyter_traceview.dashboard.protocol` and :mod:`jupyter_traceview.views.timeline.messages`.

``GET run`` and ``GET diff`` (:class:`RunAnswer`, :class:`DiffAnswer`) have no client in the
sidebar (its run and diff panels use ``POST dashboard``); their shapes are typed here only.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from ..model.display_hook import HeadlineCounts, SkippedFile
from .runs import RunKind

__all__ = [
    "AnswerHeader",
    "BaselineRef",
    "BaselineSet",
    "CommandPending",
    "DashboardRequest",
    "DiffAnswer",
    "DiffData",
    "DiffPending",
    "DiffSide",
    "ErrorBody",
    "FrameJson",
    "RemoteError",
    "RemoteListing",
    "RemoteRunRow",
    "RunAnswer",
    "RunData",
    "RunFigures",
    "RunPending",
    "RunRow",
    "RunVerdict",
    "RunsListing",
    "SkippedFile",
    "TaskPending",
    "TaskProgress",
    "VerdictState",
]

RunStatus = Literal["ready", "queued", "running", "error"]


class RunFigures(HeadlineCounts):
    """A run's figures in the list: ``tv.headline(trace)`` without ``source`` (:func:`.tasks.headline_figures`),
    its absolute ns (``t0_ns``, ``window``) as strings, exact in JavaScript."""

    t0_ns: str
    window: list[str] | None


class TaskProgress(TypedDict, total=False):
    """How far a background task is: ``stage`` ("queued", "starting", "loading", "analysing",
    "comparing", ...) and, while it counts, ``done`` of ``total``."""

    stage: str
    done: int
    total: int


class _TaskPending(TypedDict):
    status: Literal["queued", "running"]
    progress: TaskProgress


class TaskPending(_TaskPending, total=False):
    """A task still computing (HTTP 202): its progress, its place in the queue, its age in seconds."""

    position: int
    elapsed_s: float


class CommandPending(TaskPending, total=False):
    """``POST dashboard`` while the worker computes (202): ask again with the same body."""

    command: str


class RunPending(TaskPending, total=False):
    """``GET run`` while the worker computes (202)."""

    path: str


class DiffPending(TaskPending, total=False):
    """``GET diff`` while the worker computes (202)."""

    a: str
    b: str


class _RunRow(TypedDict):
    path: str
    name: str
    title: str
    kind: RunKind
    files: int
    mtime: float
    size: int
    status: RunStatus


class RunVerdict(TypedDict):
    """A run against the baseline (:func:`.tasks.verdict_of`): ``tv.compare(baseline, run)``'s
    ``verdict`` ("faster", "slower", "same"), mean steps and change (ns, %; null when not
    finite), its ``top_cause`` (the largest cause outside noise, else the largest) with its
    change and whether that is within noise, the ``noise_test`` and the first ``warnings``."""

    verdict: str
    base_ns: float | None
    new_ns: float | None
    delta_ns: float | None
    delta_pct: float | None
    top_cause: str
    top_cause_delta_ns: float | None
    top_cause_within_noise: bool
    noise_test: str
    warnings: list[str]


class _VerdictState(TypedDict):
    status: RunStatus
    baseline: str


class VerdictState(_VerdictState, total=False):
    """A run's verdict against ``baseline`` (its path) in ``GET runs``: ``result`` when ready,
    ``message`` on error, else ``progress``."""

    result: RunVerdict
    message: str
    progress: TaskProgress


class RunRow(_RunRow, total=False):
    """One run of ``GET runs``: ``figures`` when ready, ``message`` on error, else ``progress``;
    ``verdict`` against the listing's baseline (not on the baseline itself, and only on the
    newest runs: see handlers.MAX_VERDICTS)."""

    figures: RunFigures
    message: str
    progress: TaskProgress
    verdict: VerdictState


class BaselineRef(TypedDict):
    """A baseline kept beside the runs (``traceview baseline set``, or the sidebar's "Set as
    Baseline"): its ``name``, the run's ``path`` (relative to the server root), when it was set
    (ISO 8601) and the ``file`` that keeps it (relative to the server root)."""

    name: str
    path: str
    set_at: str
    file: str


class _RunsListing(TypedDict):
    runs: list[RunRow]
    truncated: bool


class RunsListing(_RunsListing, total=False):
    """``GET runs``: the runs, newest first; ``truncated`` when more exist than are listed;
    ``baseline``: the baseline the runs' verdicts are against (the most recently set of those
    kept in the listed folders), absent when there is none."""

    baseline: BaselineRef


class BaselineSet(TypedDict):
    """``POST baseline`` when done: the baseline as now kept."""

    baseline: BaselineRef


class RemoteRunRow(TypedDict):
    """A run in object storage (``GET remote/runs``, ``GET remote/run``): its ``url`` (as
    ``tv.load`` takes it), the configured ``root`` it is under, its last part as ``name``,
    ``kind`` ("folder", "file", "nsys" or "dataset"), trace objects, total bytes and the
    latest modification time (seconds since the epoch; 0 when the store gives none)."""

    url: str
    root: str
    name: str
    kind: str
    files: int
    size: int
    mtime: float


class RemoteError(TypedDict):
    """A remote root that could not be listed, and why (the URL without secrets)."""

    root: str
    message: str


class RemoteListing(TypedDict):
    """``GET remote/runs``: the runs under the server's remote roots, newest first;
    ``truncated`` when a root held more than the bounds list; ``errors``: roots not listed."""

    runs: list[RemoteRunRow]
    truncated: bool
    errors: list[RemoteError]


class DashboardRequest(TypedDict):
    """``POST dashboard`` body: one command of the dashboard's front end and its message."""

    command: str
    msg: dict[str, Any]


class AnswerHeader(TypedDict):
    """The JSON head of a ready ``POST dashboard`` answer: the message and its buffers' lengths."""

    status: Literal["ready"]
    msg: Any
    buffers: list[int]


class ErrorBody(TypedDict):
    """Any error answer (4xx): why, in words; never a traceback."""

    message: str


class FrameJson(TypedDict):
    """A DataFrame as JSON: ``columns``, ``data`` rows (NaN as null), ``rows`` in all, ``truncated``."""

    columns: list[str]
    data: list[list[Any]]
    rows: int
    truncated: bool


class RunData(TypedDict):
    """What ``GET run`` computes (:func:`.tasks.compute_run_data`)."""

    ranks: list[int]
    source: str
    headline: RunFigures
    tables: dict[str, FrameJson]


class RunAnswer(TypedDict):
    """``GET run`` when ready."""

    path: str
    status: Literal["ready"]
    data: RunData


class DiffSide(TypedDict):
    """One run of a diff: its path and figures."""

    path: str
    headline: RunFigures


class DiffData(TypedDict):
    """What ``GET diff`` computes (:func:`.tasks.compute_diff`): ``tv.compare(a, b)``'s
    ``verdict``, one-line ``summary`` (its headline), mean-step change (``delta_ns``,
    ``delta_pct``), ``causes`` (adding up to the change), ``per_rank`` and ``warnings``."""

    a: DiffSide
    b: DiffSide
    verdict: str
    summary: str
    delta_ns: float | None
    delta_pct: float | None
    causes: FrameJson
    per_rank: FrameJson
    warnings: list[str]


class DiffAnswer(TypedDict):
    """``GET diff`` when ready."""

    a: str
    b: str
    status: Literal["ready"]
    data: DiffData
