"""How a trace shows itself in a notebook with widgets (``Trace._repr_mimebundle_``).

The package root installs the widgets layer's summary card here
(:func:`set_mimebundle_hook`), so that the trace model imports nothing above it; this module
imports nothing heavy, so that ``import jupyter_traceview`` stays light. None: the text and
HTML reprs show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

__all__ = [
    "Headline",
    "HeadlineCounts",
    "HeadlineFigures",
    "MimebundleHook",
    "SkippedFile",
    "headline_hook",
    "mimebundle_hook",
    "set_headline_hook",
    "set_mimebundle_hook",
]

#: ``hook(trace, include=..., exclude=...) -> MIME bundle or None``.
MimebundleHook = Callable[..., "dict[str, Any] | None"]

_hook: MimebundleHook | None = None


def set_mimebundle_hook(hook: MimebundleHook | None) -> None:
    """Install the function that renders a Trace as a rich MIME bundle (None removes it)."""
    global _hook
    _hook = hook


def mimebundle_hook() -> MimebundleHook | None:
    """The installed hook, or None."""
    return _hook


class SkippedFile(TypedDict):
    """A trace file a load left out (``on_error="skip"``): its path and why."""

    path: str
    reason: str


class HeadlineCounts(TypedDict):
    """The headline figures that hold no absolute time: counts, spans and shares.

    The one list of these keys, for :class:`HeadlineFigures` (absolute ns as ints) and the
    Traces sidebar's ``RunFigures`` (:mod:`jupyter_traceview.server.messages`: absolute ns
    as strings, exact in JavaScript).
    """

    ranks: int
    rank_ids: list[int]
    devices: list[str]
    events: int
    cpu_ops: int
    kernels: int
    gpu_activities: int
    iterations: int
    steps: list[int]
    step_median_ns: int | None
    gpu: bool
    job_span_ns: int
    span_ns: int
    trace_span_ns: int
    gpu_busy_pct: float | None
    gpu_busy_min_pct: float | None
    gpu_busy_max_pct: float | None
    idle_pct: float | None
    compute_pct: float | None
    exposed_comm_pct: float | None
    workload: str
    workload_evidence: str
    skipped_files: list[SkippedFile]
    run_status: str


class HeadlineFigures(HeadlineCounts):
    """``tv.headline(trace)`` without ``source``.

    Meaning and unit of each key: ``HEADLINE_KEYS`` in :mod:`jupyter_traceview.analysis.headline`
    and docs/semantics.md ("Headline figures"). The Traces sidebar lists them as ``RunFigures``
    (``js/labextension/messages.ts``), absolute ns as strings.
    """

    t0_ns: int
    window: list[int] | None


class Headline(HeadlineFigures):
    """``tv.headline(trace)``: the figures, and the path the trace was loaded from (None: built in memory)."""

    source: str | None


#: ``hook(trace) -> tv.headline(trace)``: the figures a trace's reprs show (installed by the
#: package root, so that the trace model imports no analysis).
_headline: Callable[[Any], Headline] | None = None


def set_headline_hook(hook: Callable[[Any], Headline] | None) -> None:
    """Install the function computing a trace's headline figures (None removes it)."""
    global _headline
    _headline = hook


def headline_hook() -> Callable[[Any], Headline] | None:
    """The installed headline function, or None."""
    return _headline
