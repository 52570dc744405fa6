"""What-if replay: what a change would save, by replaying the trace's dependency graph.

The graph is the critical path's (:mod:`..critical_path`): CPU threads in order, launch
-> kernel, stream order, stream waits, syncs, and collectives matched across ranks.
:mod:`.model` weights it so that a replay without a change gives every event its recorded
time; :mod:`.changes` are the edits one can ask for, :mod:`.apply` how each edits the
graph, :mod:`.replay` the longest-path replay. ``docs/semantics.md`` (*What-if replay*)
says what it models and what it cannot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from numbers import Integral

import numpy as np
import pandas as pd

from ...errors import OptionError, TraceSelectionError
from ...model.trace import Trace
from .._common import empty
from .apply import Edit, apply_change
from .changes import (
    CHANGE_TYPES,
    BalanceStraggler,
    Change,
    FuseKernels,
    GraphLaunch,
    OverlapCommunication,
    RemoveDataLoading,
    RemovePython,
    RemoveSyncs,
    ScaleKernels,
    describe_all,
)
from .model import Model, build_model
from .replay import longest_times

__all__ = [
    "WHAT_IF_COLUMNS",
    "BalanceStraggler",
    "Change",
    "FuseKernels",
    "GraphLaunch",
    "OverlapCommunication",
    "RemoveDataLoading",
    "RemovePython",
    "RemoveSyncs",
    "ScaleKernels",
    "describe_all",
    "step_times",
    "what_if",
]

#: The columns of :func:`what_if`, in order, with their dtypes.
WHAT_IF_COLUMNS = {
    "rank": "int64",
    "step": "int64",
    "measured_ns": "int64",
    "replayed_ns": "int64",
    "predicted_ns": "int64",
    "saving_ns": "int64",
    "saving_pct": "float64",
}


#: Step times kept per trace (the replay without a change and the last changes asked for).
_KEEP_REPLAYS = 32


def _model(trace: Trace) -> Model | None:
    """The replay graph of the trace, built once per trace (kept with it, as its iterations);
    None when it has nothing to replay."""
    return trace._cached("whatif_model", lambda: build_model(trace))


def _times(m: Model, trace: Trace, changes: tuple[Change, ...]) -> np.ndarray:
    """Every node's replayed time with ``changes``."""
    e = Edit.of(m)
    for c in changes:
        apply_change(m, e, c, trace)
    k = e.keep
    return longest_times(m.t, m.dst[k], e.src[k], e.w[k], m.binding[k])


def _kept(
    memo: dict[tuple[Change, ...], np.ndarray], changes: tuple[Change, ...], replay: Callable[[], np.ndarray]
) -> np.ndarray:
    """``memo[changes]``, replayed when missing; at most :data:`_KEEP_REPLAYS` kept, the oldest
    dropped first but never the replay without a change (every call needs it)."""
    hit = memo.get(changes)
    if hit is None:
        if len(memo) >= _KEEP_REPLAYS:
            memo.pop(next(k for k in memo if k != ()))
        hit = memo[changes] = replay()
    return hit


def _steps(m: Model, trace: Trace, changes: tuple[Change, ...]) -> np.ndarray:
    """Each step's replayed duration with ``changes`` (the last few kept with the model)."""
    return _kept(m.memo, changes, lambda: step_times(m, _times(m, trace, changes)))


def _spread_steps(
    trace: Trace, changes: tuple[Change, ...]
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray] | None:
    """``(steps, measured, replayed, predicted)`` by the distributed replay (:mod:`.spread`,
    the ranks' graphs kept where the ranks live); None where it gives way to the in-process
    replay (a cycle in the graph, or no rank to replay)."""
    from .spread import Cyclic, Spread

    sp = trace._cached("whatif_spread", lambda: Spread(trace))
    if not sp.ranks:
        return None
    memo: dict[tuple[Change, ...], np.ndarray] = trace._cached("whatif_spread_steps", dict)
    try:
        base = _kept(memo, (), lambda: sp.step_times(()))
        pred = _kept(memo, changes, lambda: sp.step_times(changes))
    except Cyclic:
        return None
    return sp.steps, sp.measured, base, pred


def step_times(m: Model, t: np.ndarray) -> np.ndarray:
    """Each step's duration (``m.steps`` rows) under node times ``t``: from its ProfilerStep's
    start to the last end of its events (:attr:`Model.ev_step_row`); a rank without steps:
    from its first event's start to its last event's end."""
    n = m.n_events
    starts, ends = t[0 : 2 * n : 2], t[1 : 2 * n : 2]
    ev = m.steps["event"].to_numpy()
    has = ev >= 0
    hi = np.full(len(ev), np.iinfo(np.int64).min, dtype=np.int64)
    lo = np.full(len(ev), np.iinfo(np.int64).max, dtype=np.int64)
    lo[has] = starts[ev[has]]
    row = m.ev_step_row
    counted = row >= 0
    np.maximum.at(hi, row[counted], ends[counted])
    empty = has & (hi == np.iinfo(np.int64).min)
    hi[empty] = ends[ev[empty]]
    whole = m.ev_rank_row
    if (~has).any():
        every = whole >= 0
        np.maximum.at(hi, whole[every], ends[every])
        np.minimum.at(lo, whole[every], starts[every])
    return np.asarray(hi - lo, dtype=np.int64)


def _chosen(values: Iterable[int] | int | None) -> list[int] | None:
    if values is None:
        return None
    if isinstance(values, (int, Integral)):
        return [int(values)]
    return [int(v) for v in values]


def what_if(
    trace: Trace,
    *changes: Change,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
) -> pd.DataFrame:
    """What each step would take with ``changes``, by replaying the trace's dependency graph.

    The graph is the critical path's (:func:`critical_path`: CPU threads in order, launch ->
    GPU activity, stream order, stream waits, host syncs, collectives matched across
    ranks), each dependency weighted so that the replay without a change reproduces every
    recorded time; a change edits the graph (:mod:`jupyter_traceview.changes`), and the
    replay propagates it: a sync removed lets the host run ahead, a kernel made faster
    starts the next one sooner where it waited, a rank made faster shortens the others'
    waits in the collectives it joins (a collective ends its own duration after the last
    rank arrives). The whole trace is replayed (every rank), then the rows asked for are
    kept. See ``docs/semantics.md`` (*What-if replay*) for each change, and what the
    replay does not model (cache effects, clock boost, contention, memory, the launch
    queue's depth).

    Parameters
    ----------
    trace:
        The trace.
    *changes:
        Changes to combine (none: the replay only, ``predicted_ns == replayed_ns``):
        ``tv.changes.RemoveSyncs()``, ``RemoveDataLoading()``, ``RemovePython()``,
        ``ScaleKernels(...)``, ``OverlapCommunication()``, ``BalanceStraggler()``,
        ``GraphLaunch()``, ``FuseKernels(...)``.
    ranks, iterations:
        The rows to return: these ranks, these ProfilerStep numbers (None: all).

    Returns
    -------
    pandas.DataFrame
        One row per (rank, step), by rank then step:

        ``rank`` : int
            The rank.
        ``step`` : int
            The ProfilerStep number; ``-1`` for a rank without ProfilerStep iterations (one
            row for its whole span, first event start to last event end).
        ``measured_ns`` : int, ns
            The step as recorded: from its ProfilerStep's start to the last end of its
            events (the CPU events in its span, the GPU work launched from them).
        ``replayed_ns`` : int, ns
            The same, replayed without a change (equal to ``measured_ns`` unless the
            recorded times contradict each other: see ``docs/semantics.md``).
        ``predicted_ns`` : int, ns
            The same, replayed with the changes.
        ``saving_ns`` : int, ns
            ``replayed_ns - predicted_ns`` (negative: the change makes the step slower).
        ``saving_pct`` : float, %
            ``saving_ns`` as a share of ``measured_ns`` (0 where that is 0).

    Raises
    ------
    OptionError
        A change is not one of :mod:`jupyter_traceview.changes`.
    TraceSelectionError
        One of ``ranks`` is not in the trace.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> base = tv.what_if(trace)
    >>> bool((base["replayed_ns"] == base["measured_ns"]).all())
    True
    >>> faster = tv.what_if(trace, tv.changes.ScaleKernels(family="gemm", factor=0.5), ranks=0)
    >>> bool((faster["saving_ns"] >= 0).all())
    True
    """
    for c in changes:
        if not isinstance(c, CHANGE_TYPES):
            raise OptionError(
                f"what_if: {c!r} is not a change; pass tv.changes.<Name>(...) "
                f"(one of {', '.join(t.__name__ for t in CHANGE_TYPES)})"
            )
    want_ranks = _chosen(ranks)
    if want_ranks is not None:
        for r in want_ranks:
            if r not in trace.ranks:
                raise TraceSelectionError.unknown("rank", r, trace.ranks)
    got = _spread_steps(trace, tuple(changes)) if trace.client is not None else None
    if got is None:
        m = _model(trace)
        if m is None:
            return empty(WHAT_IF_COLUMNS)
        measured = m.measured_steps
        if measured is None:
            measured = m.measured_steps = step_times(m, m.t)
        base = _steps(m, trace, ())
        pred = _steps(m, trace, tuple(changes)) if changes else base
        steps = m.steps
    else:
        steps, measured, base, pred = got
    saving = base - pred
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(measured > 0, saving / np.maximum(measured, 1) * 100.0, 0.0)
    out = pd.DataFrame(
        {
            "rank": steps["rank"].to_numpy(),
            "step": steps["step"].to_numpy(),
            "measured_ns": measured,
            "replayed_ns": base,
            "predicted_ns": pred,
            "saving_ns": saving,
            "saving_pct": pct,
        }
    )
    if want_ranks is not None:
        out = out.loc[out["rank"].isin(want_ranks)]
    its = _chosen(iterations)
    if its is not None:
        out = out.loc[out["step"].isin(its)]
    return out.sort_values(["rank", "step"], kind="stable").reset_index(drop=True).astype(WHAT_IF_COLUMNS)
