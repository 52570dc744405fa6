"""What a default :func:`findings` call computes per rank, computed while a big trace loads.

On a big trace most of a first ``findings`` call is per-rank work (:func:`.._memo.per_rank`:
each rank's GPU facts, summary row, launch statistics, host facts, communication kernels...),
whose results are kept with the ranks' cache entries for later calls. :func:`prepare` does
that work on the ranks of one file, in the load's worker process that has just read them
(their tables still in memory), and keeps the results the same way, so that the first
``findings`` call after the load (the dashboard's first view) reads them instead of
computing them. The package root installs it in the loader
(:func:`jupyter_traceview.loading.prepare.set_prepare_functions`): the loader sits below the
analyses and names none of them.

The first file of a trace a process prepares runs every rule of a default ``findings`` call (the
default :class:`FindingRules`), plus what the rules that compare ranks compute per rank
first (they stop short on one file's ranks), and records the per-rank calls that made
(:func:`.._memo.recording`): the functions and arguments findings uses, found by running
it rather than listed here, so the two cannot drift apart. Every later file makes those
calls only, without the rules' own work on one file's ranks (~40 % of the time). The values
are those ``findings`` computes itself, under the same keys. A rank whose results were not
prepared, or whose key differs (other rules, a trace narrowed to a window, ranks renumbered
after the load, a file unlike the first), is computed by ``findings`` as before.
"""

from __future__ import annotations

import warnings

from ...model.trace import Trace
from .._memo import Call, per_rank, recording, save_facts, shared_rank_facts
from ..efficiency import efficiency
from ..stragglers import straggler_views
from .config import FindingRules
from .context import Context
from .registry import all_rules

__all__ = ["prepare"]

#: The per-rank calls of a default findings call, recorded on the first file this process
#: prepared of each trace (by the trace's source: the load's path; the last few only).
_CALLS: dict[str | None, list[Call]] = {}
_KEEP = 8


def prepare(trace: Trace) -> None:
    """Compute and keep (:func:`.._memo.save_facts`) the per-rank results a default
    ``findings`` call on the whole job computes for these ranks.

    ``trace``: ranks just read, each with its cache entry's store attached
    (:func:`jupyter_traceview.model.facts.attach`); without stores nothing is kept. Called in
    a worker process: no worker processes of its own, and nothing warned (the findings call
    warns about what it skips, in the user's process).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        known = _CALLS.get(trace.source)
        if known is None:
            with recording() as calls:
                _run_rules(trace)
            while len(_CALLS) >= _KEEP:
                del _CALLS[next(iter(_CALLS))]
            _CALLS[trace.source] = calls
        else:
            with shared_rank_facts():
                for fn, args in known:
                    per_rank(trace, fn, *args)
    save_facts()


def _run_rules(trace: Trace) -> None:
    rules = FindingRules()
    ctx = Context(trace, rules, ranks=None, iterations=None, time_range=None, workers=False)
    try:
        for rule in all_rules():
            rule.run(ctx, rules.of(rule.id))
        # The rules that compare ranks need two with GPU work, so they stop short here;
        # what they compute per rank first, as they ask for it on the whole job: each
        # rank's collective kernels (the straggler views) and its compute (efficiency).
        ctx.call(straggler_views, "stragglers", views=("rank", "collective", "arrival"))
        ctx.call(efficiency, "efficiency_job")
    finally:
        ctx.close()
