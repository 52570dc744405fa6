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
    "CommandPending",
    "DashboardRequest",
    "DiffAnswer",
    "DiffData",
    "DiffPending",
    "DiffSide",
    "ErrorBody",
    "FrameJson",
    "RunAnswer",
    "RunData",
    "RunFigures",
    "RunPending",
    "RunRow",
    "RunsListing",
    "SkippedFile",
    "TaskPending",
    "TaskProgress",
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


class RunRow(_RunRow, total=False):
    """One run of ``GET runs``: ``figures`` when ready, ``message`` on error, else ``progress``."""

    figures: RunFigures
    message: str
    progress: TaskProgress


class RunsListing(TypedDict):
    """``GET runs``: the runs, newest first; ``truncated`` when more exist than are listed."""

    runs: list[RunRow]
    truncated: bool


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
    ``verdict``, one-line ``summary`` (its headline) and ``causes``; ``tv.trace_diff(a, b)``'s
    ``table`` and its ``status_counts``."""

    a: DiffSide
    b: DiffSide
    verdict: str
    summary: str
    causes: FrameJson
    status_counts: dict[str, int]
    table: FrameJson


class DiffAnswer(TypedDict):
    """``GET diff`` when ready."""

    a: str
    b: str
    status: Literal["ready"]
    data: DiffData
