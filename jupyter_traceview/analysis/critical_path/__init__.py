"""The critical path through CPU operators, launches, GPU activities and waits, within a rank and across ranks.

The model (``docs/semantics.md``, *Critical path*): every event of a rank is two points in
time, its start and its end. A point waits for other points:

* **CPU threads** are sequential and nested: an event starts after its previous sibling
  ends (or, first child, after its parent starts); a parent ends after its last child
  (its own time around the children is the parent's ``self`` time); a top-level event
  starts after the previous top-level event of its thread (the gap is ``idle``).
* A **launch** call's start comes before the start of the GPU activity it launched.
* A **stream** runs its activities in order: an activity starts after the previous one
  on its stream ends.
* A **stream wait** (``cudaStreamWaitEvent``, recorded as a ``Stream Wait Event`` record
  with the awaited event's stream and ``cudaEventRecord`` correlation) makes the next
  activity launched on the waiting stream start after the last activity launched on the
  recorded stream before the ``cudaEventRecord`` call ends.
* A **synchronisation** call (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``,
  ``cudaEventSynchronize``, synchronous ``cudaMemcpy``/``cudaMemset`` and pageable
  copies) returns after the GPU work it waits for ends: the last activity launched
  before it on the synchronised stream (from its ``Stream Sync``/``Event Sync`` record),
  on every stream (``Context Sync``, or when no record says which stream), or its own
  copy.
* Across ranks, a **collective** kernel ends after every rank of the collective has
  started its kernel (matched as in :mod:`jupyter_traceview.model.collectives`).
* Where the trace does not record them, cross-stream waits and waits between threads of
  a process are inferred from timing (``inferred_wait``, ``inferred_join``,
  ``inferred_fork``; see ``docs/semantics.md``).

Each dependency is an edge whose length is the time between its two points, so a path
of edges covers the time from its first point to its last without gaps or overlap. The
critical path is found backwards from the end of the trace's last event (of the GPU work
and of the threads that carry the step: a thread that only waits, or launches no GPU work
and hands none to a thread that does, never ends it; ``graph.Graph.final_node``): at every point,
the path follows the dependency that was satisfied last (the *binding* one: the point
could not have happened before it), as in Scalasca's backward replay of MPI traces. It
is the longest path (by time) ending at that event among the paths made of binding
dependencies, and its segments add up to its length exactly.

The package: ``graph`` (the binding dependencies of one rank), ``walk`` (following them
back, on one rank and across ranks), ``frame`` (the path as a frame, by category).
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral
from typing import Literal

import pandas as pd

from ...deprecation import removed_parameters
from ...errors import OptionError, TraceSelectionError
from ...model.trace import Trace
from .._common import scoped
from .frame import CATEGORY_COLUMNS, CRITICAL_PATH_CATEGORIES, CRITICAL_PATH_COLUMNS, category_times
from .walk import cross_rank_path, one_rank_path

__all__ = ["CATEGORY_COLUMNS", "CRITICAL_PATH_CATEGORIES", "CRITICAL_PATH_COLUMNS", "critical_path"]


@removed_parameters(
    rank="pass ranks={value} (one rank: the path within it, "
    "with the waits for the other ranks split off), as every analysis takes its ranks"
)
def critical_path(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    view: Literal["path", "categories"] = "path",
) -> pd.DataFrame:
    """The critical path ending at the last event of the chosen ranks, within one rank or across ranks.

    With one rank (``ranks=r`` or ``[r]``) the path stays within rank ``r``; when the trace
    holds other ranks, the part of each collective kernel on the path spent before the last
    of the other ranks arrived is split off as ``wait_other_rank`` (the other ranks are read
    for their arrivals only). With several ranks (by default all of them) the path runs
    across them: at a collective whose last rank to arrive (start its kernel) is another
    of them, it continues on that rank. A path within a trace of one rank only, with no
    other rank to wait for: ``critical_path(trace.select(ranks=[r]))``. See the module
    documentation for the dependencies followed, and ``docs/semantics.md`` for how this
    compares with HTA.

    Parameters
    ----------
    trace:
        The trace.
    ranks:
        The ranks the path runs on: one rank, several, or None (every rank).
    iterations, time_range:
        Narrow the trace first (see :meth:`Trace.select`); times are clipped to the time
        range, and the path ends at the last event of what is left.
    view:
        ``"path"``: the path's segments; ``"categories"``: the time of each category.

    Returns
    -------
    pandas.DataFrame
        ``view="path"``: one row per segment of the path, in time order; consecutive
        segments touch, and their ``dur_ns`` add up to the path's length.

        ``rank`` : int
            The rank the segment is on.
        ``eid`` : int
            The event the segment belongs to (``trace.events(rank)``): the event whose
            own time it is (``span``, ``self``), or whose start it leads to.
        ``name``, ``kind`` : str
            That event's name and kind.
        ``category`` : str
            One of :data:`CRITICAL_PATH_CATEGORIES`: ``cpu`` (operators, annotations,
            Python), ``cpu_runtime`` (CUDA runtime/driver calls), ``cpu_idle`` (gaps
            between top-level events of a thread), ``launch_delay`` (from a launch call
            to its GPU activity, the GPU waiting for the CPU), ``sync`` (from the awaited
            GPU activity's end to the synchronising call's return), ``gpu_compute``,
            ``gpu_communication``, ``gpu_memory``, ``gpu_other`` (GPU activities by
            class), ``gpu_gap`` (between dependent activities of one stream),
            ``stream_wait`` (between an awaited activity on another stream and the
            waiting one), ``wait_other_rank`` (a collective waiting for a later rank).
        ``edge`` : str
            The dependency the segment follows: ``span`` (the event's own duration),
            ``self`` (a parent's time around its children), ``idle``, ``launch``,
            ``stream``, ``stream_wait``, ``sync``, ``collective`` (from the start of the
            last rank's kernel to this rank's end of the collective), ``wait``, and the
            dependencies inferred where the trace does not record them:
            ``inferred_wait`` (an unrecorded cross-stream wait), ``inferred_join`` and
            ``inferred_fork`` (one thread waiting for, or woken by, another).
        ``start_ns``, ``end_ns``, ``dur_ns`` : int, ns
            The segment (absolute times, as ``ts_ns``).
        ``from_rank`` : int
            The rank the segment starts on: differs from ``rank`` for ``collective``
            segments (and names the last rank to arrive for ``wait`` ones).

        ``view="categories"``: one row per category, in the order above:
        ``category`` (str), ``time_ns`` (int, ns) and ``time_pct`` (float, % of the
        path's length); the times add up to the length.

        Both views carry ``attrs["spine"]``: a list with one dict for the rank the path
        ends on, saying which CPU thread the path is traced back from and why: ``rank``,
        ``pid``, ``tid``, ``thread`` (its recorded name, "" if none), ``launches`` (GPU
        activities it launched) and ``reason`` (in words). The path ends at the last event
        of a GPU activity or of a thread that launches GPU work: a thread that launches none
        (a progress bar's monitor thread whose ``threading.wait`` spans the step, a data
        loader's queue ``get``) is never its spine, and the reason names such threads
        (``waits only`` where their innermost calls are all waits:
        :data:`~.graph.WAIT_CALLS`). Where no thread launches GPU work, every thread may.

    Raises
    ------
    TraceSelectionError
        One of ``ranks`` is not in the trace.
    OptionError
        ``view`` is not one of the above, or the removed ``rank=`` was passed (``rank=r``
        is now ``ranks=r``, the same path).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> path = tv.critical_path(tv.load(tv.sample_path()), ranks=0)
    >>> int(path["dur_ns"].sum()) == int(path["end_ns"].iloc[-1] - path["start_ns"].iloc[0])
    True
    """
    if view not in ("path", "categories"):
        raise OptionError.invalid("view", view, ("path", "categories"))
    chosen: list[int] | None = None
    if isinstance(ranks, (int, Integral)):  # numpy integers too
        chosen = [int(ranks)]
    elif ranks is not None:
        chosen = [int(r) for r in ranks]
    if chosen is None or len(chosen) != 1:
        # Several ranks (or all): the path across them.
        path = cross_rank_path(scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range))
    else:
        # One rank: its path, the other ranks read for their arrivals at collectives.
        (one,) = chosen
        if one not in trace.ranks:
            raise TraceSelectionError.unknown("rank", one, trace.ranks)
        scope = scoped(trace, iterations=iterations, time_range=time_range)
        if one not in scope.ranks:
            raise TraceSelectionError.unknown("rank", one, scope.ranks)
        path = one_rank_path(scope, one)
    if view == "categories":
        cats = category_times(path)
        cats.attrs["spine"] = path.attrs.get("spine", [])
        return cats
    return path
