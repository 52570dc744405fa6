"""Which ranks the timeline shows first: the rank picker's presets and the initial folding.

The rank picker of the timeline (``js/timeline/ranks.ts``) offers two presets computed here,
from the analyses, when the front end asks for them (the ``_ranks`` command of
:mod:`~jupyter_traceview.views.timeline.protocol`):

- **slowest**: ranks by their mean ProfilerStep duration, longest first
  (:func:`~jupyter_traceview.analysis.efficiency.iteration_stats` ``per="rank"``; ties by
  mean compute time, then rank). Empty for a trace without ProfilerStep annotations.
- **stragglers**: ranks that arrived last at some collective, the most often last first
  (:func:`~jupyter_traceview.analysis.stragglers.stragglers` ``by="rank"``: ``last_count``
  descending, then ``lateness_ns`` descending, then rank). Empty without matched
  collectives (a single rank, or no communication kernels).

Above :data:`CPU_COLLAPSE_ABOVE` ranks, each rank's CPU threads open folded into one summary
row (their top-level calls drawn together), so that the GPU streams of every rank fit.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TypedDict

from ...analysis.efficiency import iteration_stats
from ...analysis.stragglers import stragglers
from ...model.trace import Trace

__all__ = ["CPU_COLLAPSE_ABOVE", "RankPresets", "SlowRank", "StragglerRank", "initial_cpu_collapsed", "rank_presets"]

#: Above this many ranks shown, each rank's CPU threads start folded into one summary row.
CPU_COLLAPSE_ABOVE = 4


class SlowRank(TypedDict):
    """A rank of the "slowest" preset."""

    rank: int
    #: Mean ProfilerStep duration of the rank, ns.
    step_mean_ns: int
    #: Mean compute time per step, ns.
    compute_mean_ns: int


class StragglerRank(TypedDict):
    """A rank of the "stragglers" preset."""

    rank: int
    #: Collectives at which the rank arrived last.
    last_count: int
    #: Matched collectives it took part in.
    collectives: int
    #: Summed lateness of the collectives where it was last, ns.
    lateness_ns: int


class RankPresets(TypedDict):
    """The ``_ranks`` answer (``RankPresets`` in ``js/timeline/messages.ts``)."""

    #: Every rank with steps, slowest first.
    slowest: list[SlowRank]
    #: Ranks that arrived last at least once, worst first.
    stragglers: list[StragglerRank]


def rank_presets(trace: Trace) -> RankPresets:
    """The rank picker's "slowest" and "stragglers" presets (see the module docstring).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> presets = rank_presets(tv.load(tv.sample_path()))
    >>> sorted(r["rank"] for r in presets["slowest"])
    [0, 1, 2, 3, 4, 5, 6, 7]
    """
    with warnings.catch_warnings():
        # No steps or no collectives is an answer here (an empty preset), not a warning.
        warnings.simplefilter("ignore")
        its = iteration_stats(trace, per="rank")
        late = stragglers(trace, by="rank")
    slowest: list[SlowRank] = []
    if len(its):
        its = its.sort_values(
            ["duration_mean_ns", "compute_mean_ns", "rank"], ascending=[False, False, True], kind="stable"
        )
        slowest = [
            {"rank": int(r), "step_mean_ns": round(float(d)), "compute_mean_ns": round(float(c))}
            for r, d, c in zip(its["rank"], its["duration_mean_ns"], its["compute_mean_ns"], strict=True)
        ]
    out: list[StragglerRank] = []
    if len(late):
        late = late.loc[late["last_count"] > 0].sort_values(
            ["last_count", "lateness_ns", "rank"], ascending=[False, False, True], kind="stable"
        )
        out = [
            {"rank": int(r), "last_count": int(n), "collectives": int(c), "lateness_ns": int(ns)}
            for r, n, c, ns in zip(
                late["rank"], late["last_count"], late["collectives"], late["lateness_ns"], strict=True
            )
        ]
    return {"slowest": slowest, "stragglers": out}


def initial_cpu_collapsed(shown: Sequence[int]) -> list[int]:
    """Ranks whose CPU threads open folded: all of ``shown`` above :data:`CPU_COLLAPSE_ABOVE` ranks."""
    return sorted(int(r) for r in shown) if len(shown) > CPU_COLLAPSE_ABOVE else []
