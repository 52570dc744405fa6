"""Host-side operator times: ``prof.key_averages()`` from a trace, per rank and scope.

The nesting and self time are torch's (see :mod:`._host`); the GPU time of an operator is
that of the GPU activities whose launch call ran inside it on its thread (the launch links
of :mod:`.operators`).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model.rank_data import RankData
from ..model.schema import EventKind
from ..model.trace import Trace
from . import _enclose as en
from . import _links as lk
from ._common import empty
from ._host import HOST_KINDS, HostRanges, host_ranges
from .operators import GPU_WORK_KINDS, RankLinks

__all__ = ["cpu_op_breakdown"]

BY = ("name", "shape", "stack")
#: Name torch's ``key_averages`` gives every ``ProfilerStep#N`` range.
STEP_KEY = "ProfilerStep*"
#: Separator of the frames in the ``stack`` column (innermost first).
STACK_SEP = " <- "

CPU_OP_COLUMNS = {
    "rank": "int64",
    "name": "str",
    "kind": "str",
    "calls": "int64",
    "total_ns": "int64",
    "self_ns": "int64",
    "mean_ns": "int64",
    "min_ns": "int64",
    "max_ns": "int64",
    "self_mean_ns": "int64",
    "total_pct": "float64",
    "self_pct": "float64",
    "gpu_ns": "int64",
    "self_gpu_ns": "int64",
    "first_eid": "int64",
    "first_ts_ns": "int64",
}


def _columns(by: str) -> dict[str, str]:
    if by == "name":
        return CPU_OP_COLUMNS
    items = list(CPU_OP_COLUMNS.items())
    return dict([*items[:2], ("input_shapes" if by == "shape" else by, "str"), *items[2:]])


def cpu_op_breakdown(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    by: Literal["name", "shape", "stack"] = "name",
    kinds: Iterable[str] = (EventKind.CPU_OP.value, EventKind.USER_ANNOTATION.value),
    stack_depth: int = 5,
) -> pd.DataFrame:
    """Per operator: calls, total and self CPU time, GPU time launched; ``prof.key_averages()``.

    An operator's *total* time is the sum of its calls' durations; its *self* time the sum
    of their durations minus their children's (the operators, annotations and Python frames
    nested in them on their thread: torch's rule, see :mod:`jupyter_traceview.analysis._host`).
    On a trace recorded by ``torch.profiler`` both equal ``prof.key_averages()``'s
    ``cpu_time_total`` and ``self_cpu_time_total`` per name (``ProfilerStep#N`` ranges are
    grouped as ``"ProfilerStep*"``, as torch does). Nested calls of one name count in its
    total once per call, as in torch.

    Parameters
    ----------
    trace : Trace
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`). With ``time_range`` calls are clipped to it.
    by : {"name", "shape", "stack"}, default "name"
        ``"name"``: one row per (rank, name); ``"shape"``: one row per (rank, name, input
        shapes), the shapes as torch's ``key_averages(group_by_input_shape=True)`` prints them
        (``[[4, 3, 16, 16], [8], []]``; ``[]`` when not recorded, as torch: traces without
        ``record_shapes=True``, annotations and Python frames); ``"stack"``: one row per (rank, name, Python
        stack), the stack being the ``stack_depth`` innermost Python frames
        (``python_function`` events, recorded with ``with_stack=True``) enclosing the call,
        innermost first (torch's ``key_averages(group_by_stack_n=...)``). Calls with no
        enclosing Python frame have an empty stack.
    kinds : iterable of str, default ("cpu_op", "user_annotation")
        Which host ranges get rows (``"python_function"`` adds Python frames, as
        ``key_averages`` lists them on a ``with_stack`` trace). Children of every host kind
        count for self time whatever ``kinds`` is.
    stack_depth : int, default 5
        Frames kept in the ``stack`` key (``by="stack"``).

    Returns
    -------
    pandas.DataFrame
        One row per (rank, name[, stack]), sorted by rank, then ``self_ns`` descending, then name:

        ``rank`` (int); ``name`` (str); ``input_shapes`` (str, with ``by="shape"``);
        ``stack`` (str, with ``by="stack"``): frame names
        joined by ``" <- "``, innermost first; ``kind`` (str): ``cpu_op``,
        ``user_annotation`` or ``python_function``; ``calls`` (int); ``total_ns`` (int, ns):
        summed durations; ``self_ns`` (int, ns): summed self times; ``mean_ns``, ``min_ns``,
        ``max_ns`` (int, ns): duration of a call; ``self_mean_ns`` (int, ns): self time per
        call; ``total_pct``, ``self_pct`` (float, %): ``total_ns`` and ``self_ns`` as a
        share of the wall time in scope (the summed duration of the rank's iterations in
        scope; the extent of its host ranges if it has none), so the self shares of one
        thread's operators add up to at most 100; ``gpu_ns`` (int, ns): duration of the GPU
        activities (kernels, memcpy, memset) launched inside the calls (at any depth);
        ``self_gpu_ns`` (int, ns): of those, the ones launched by no nested operator;
        ``first_eid`` (int), ``first_ts_ns`` (int, ns): the first call.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> ops = tv.cpu_op_breakdown(trace, ranks=0)
    >>> bool((ops["self_ns"] <= ops["total_ns"]).all())
    True
    """
    if by not in BY:
        raise OptionError.invalid("by", by, BY)
    kinds = [str(k) for k in ([kinds] if isinstance(kinds, str) else kinds)]
    bad = [k for k in kinds if k not in HOST_KINDS]
    if bad or not kinds:
        raise OptionError(f"kinds={kinds!r} is not accepted; use host kinds among {', '.join(HOST_KINDS)}")
    if int(stack_depth) < 1:
        raise OptionError(f"stack_depth={stack_depth!r} is not accepted; give a positive number of frames")
    columns = _columns(by)
    trace, window = lk.scope_linked(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    parts: list[pd.DataFrame] = []
    for r in trace.ranks:
        frame = _rank_breakdown(trace, r, window, by=by, kinds=kinds, stack_depth=int(stack_depth))
        if frame is not None:
            frame.insert(0, "rank", r)
            parts.append(frame)
    if not parts:
        return empty(columns)
    out = pd.concat(parts, ignore_index=True)
    return out.astype(columns)[list(columns)]


def wall_ns(trace: Trace, rank: int, h: HostRanges, window: tuple[int, int] | None) -> int:
    """The wall time in scope of a rank: its iterations' summed durations (clipped to
    ``window``), else the extent of its host ranges."""
    its = trace.iterations
    its = its.loc[its["rank"] == rank]
    ev_steps = set(trace.rank_data(rank).events["step"].unique().tolist())
    its = its.loc[its["step"].isin(ev_steps)]
    if len(its):
        lo, hi = its["start_ns"].to_numpy(), its["end_ns"].to_numpy()
        if window is not None:
            lo, hi = np.maximum(lo, window[0]), np.minimum(hi, window[1])
        total = int(np.maximum(hi - lo, 0).sum())
        if total > 0:
            return total
    if len(h) == 0:
        return 0
    return int(h.end.max() - h.ts.min())


#: The last rank's host ranges and GPU times (``host_facts`` asks for operators, then
#: Python frames, of one rank at a time: both share them). One entry, so nothing grows.
_LAST: list[tuple[weakref.ref[RankData], tuple[int, int] | None, tuple[Any, ...]]] = []


def _ranges_and_gpu(
    trace: Trace, rank: int, window: tuple[int, int] | None
) -> tuple[HostRanges, np.ndarray, np.ndarray]:
    d = trace.rank_data(rank)
    last = _LAST[0] if _LAST else None
    if last is not None and last[0]() is d and last[1] == window:
        h, gpu, direct = last[2]
        return h, gpu, direct
    h = host_ranges(d.events, window)
    gpu, direct = _gpu_times(trace, rank, h, window) if len(h) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    _LAST[:] = [(weakref.ref(d), window, (h, gpu, direct))]
    return h, gpu, direct


def _gpu_times(trace: Trace, rank: int, h: HostRanges, window: tuple[int, int] | None) -> tuple[np.ndarray, np.ndarray]:
    """GPU time launched inside each host range (any depth) and by it directly (innermost)."""
    n = len(h)
    inclusive = np.zeros(n, dtype=np.int64)
    direct = np.zeros(n, dtype=np.int64)
    links = RankLinks(trace, rank, list(GPU_WORK_KINDS), window)
    if links.acts.empty or n == 0:
        return inclusive, direct
    # Launch calls as points inside the ranges (rows of ev), by sweeps (no pairs).
    dur = links.acts["dur_ns"].to_numpy().astype(np.int64)
    inclusive = en.enclosed_sums(h.ev, h.rows, links.launch, dur)
    inner = en.innermost(h.ev, h.rows, links.launch)
    k = np.flatnonzero(inner >= 0)
    if len(k):
        pos_of_row = np.full(len(h.ev), -1, dtype=np.int64)
        pos_of_row[h.rows] = np.arange(n)
        direct = np.bincount(pos_of_row[inner[k]], weights=dur[k].astype(np.float64), minlength=n)
        direct = np.rint(direct).astype(np.int64)
    return inclusive, direct


def _merged_into(h: HostRanges) -> np.ndarray:
    """Per range, the range it is merged into (itself if none), as torch's ``key_averages``.

    Torch (``EventList._remove_dup_nodes``) merges a range into its parent when the parent
    has the same name and no other child (nested ranges and runtime calls counted), e.g. the
    two nested ``aten::layer_norm`` calls of an autocast region: they are one call, whose
    duration is the outer one's. A chain of such ranges merges into its outermost.
    """
    n = len(h)
    pos = np.arange(n, dtype=np.int64)
    p = h.parent
    has = p >= 0
    dup = np.zeros(n, dtype=bool)
    dup[has] = (h.name_codes[has] == h.name_codes[p[has]]) & (h.n_children[p[has]] == 1)
    into = np.where(dup, p, pos)
    while True:
        nxt = into[into]
        if np.array_equal(nxt, into):
            return into
        into = nxt


def _aggregate(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys`` (in order of first row), what ``groupby(keys, sort=False).agg``
    gives: ``calls``, the sums, ``min_ns``/``max_ns`` of ``dur`` and the first row's ``eid``
    and ``ts``; by sorted reductions (exact int64), without pandas' per-call overhead."""
    cols = {c: frame[c].to_numpy() for c in frame.columns}
    mat = np.column_stack([cols[k] if k in ("name", "kind") else pd.factorize(cols[k])[0] for k in keys])
    ids, first = lk.row_ids(mat.astype(np.int64))
    order = np.argsort(ids, kind="stable")
    calls = np.bincount(ids, minlength=len(first)).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(calls)[:-1]))

    def reduce(ufunc: np.ufunc, x: np.ndarray) -> np.ndarray:
        out: np.ndarray = ufunc.reduceat(x[order], starts)
        return out

    return pd.DataFrame(
        {
            **{k: cols[k][first] for k in keys},
            "calls": calls,
            "total_ns": reduce(np.add, cols["dur"]),
            "self_ns": reduce(np.add, cols["self"]),
            "min_ns": reduce(np.minimum, cols["dur"]),
            "max_ns": reduce(np.maximum, cols["dur"]),
            "gpu_ns": reduce(np.add, cols["gpu"]),
            "self_gpu_ns": reduce(np.add, cols["gpu_direct"]),
            "first_eid": cols["eid"][first],
            "first_ts_ns": cols["ts"][first],
        }
    )


def _stacks(h: HostRanges, depth: int) -> np.ndarray:
    """Per range, its ``depth`` innermost enclosing Python frames' names joined (innermost first)."""
    n = len(h)
    is_py = h.kind == EventKind.PYTHON_FUNCTION.value
    # Frame name codes per range, innermost first (-1 past the last), walking up level by
    # level; then each distinct row of codes is joined once.
    frames = np.full((n, depth), -1, dtype=np.int64)
    filled = np.zeros(n, dtype=np.int64)
    cur = h.parent.copy()
    while True:
        live = np.flatnonzero((cur >= 0) & (filled < depth))
        if not len(live):
            break
        p = cur[live]
        py = is_py[p]
        j = live[py]
        frames[j, filled[j]] = h.name_codes[p[py]]
        filled[j] += 1
        cur[live] = h.parent[p]
    if n == 0:
        return np.empty(0, dtype=object)
    ids, first = lk.row_ids(frames)
    names = [str(x) for x in h.names.tolist()]
    texts = np.array([STACK_SEP.join(names[c] for c in row if c >= 0) for row in frames[first].tolist()], dtype=object)
    out: np.ndarray = texts[ids]
    return out


def _shapes(op_args: pd.DataFrame, eids: np.ndarray) -> np.ndarray:
    """Input shapes of the events ``eids`` as torch prints them ("[]" where not recorded)."""
    out = np.full(len(eids), "[]", dtype=object)
    if op_args.empty or not len(eids):
        return out
    dims = op_args["input_dims"]
    # Normalised once per distinct text: JSON re-dumped with torch's ", " separators.
    texts = np.array([_torch_shapes(str(c)) for c in dims.cat.categories.tolist()] + ["[]"], dtype=object)
    codes = dims.cat.codes.to_numpy().astype(np.int64)
    pos = pd.Index(op_args["eid"].to_numpy()).get_indexer(eids)
    ok = pos >= 0
    out[ok] = texts[codes[pos[ok]]]
    return out


def _torch_shapes(text: str) -> str:
    """Kineto's ``Input Dims`` text as torch's ``input_shapes``: a tensor list's shapes are
    recorded in the trace but shown by torch as ``[]``."""
    try:
        dims = json.loads(text)
    except ValueError:
        return text
    if not isinstance(dims, list):
        return text
    return json.dumps([d if isinstance(d, list) and all(not isinstance(x, list) for x in d) else [] for d in dims])


def _rank_breakdown(
    trace: Trace, rank: int, window: tuple[int, int] | None, *, by: str, kinds: list[str], stack_depth: int
) -> pd.DataFrame | None:
    ev = trace.rank_data(rank).events
    h, gpu, gpu_direct = _ranges_and_gpu(trace, rank, window)
    if len(h) == 0:
        return None
    wall = wall_ns(trace, rank, h, window)
    into = _merged_into(h)
    dup = into != np.arange(len(h))
    # A merged range's self and direct GPU time go to the range it merges into (exact ints).
    self_ns = h.self_ns
    if dup.any():
        self_ns, gpu_direct = self_ns.copy(), gpu_direct.copy()
        np.add.at(self_ns, into[dup], self_ns[dup])
        np.add.at(gpu_direct, into[dup], gpu_direct[dup])
    kind_codes = ev["kind"].cat.codes.to_numpy()[h.rows]
    sel = np.flatnonzero(lk.category_mask(ev["kind"], kinds)[h.rows] & ~dup)
    if not len(sel):
        return None
    # Grouped by integer codes (a name's code, its kind's code), texts put back per group:
    # names decided once per distinct name; ProfilerStep#N annotations share one key.
    name_texts = [str(x) for x in h.names.tolist()]
    step_name = np.array([x.startswith("ProfilerStep#") for x in name_texts], dtype=bool)
    step_code = name_texts.index(STEP_KEY) if STEP_KEY in name_texts else len(name_texts)
    name_table = np.array([*name_texts, STEP_KEY], dtype=object)
    kind_table = np.array([str(x) for x in ev["kind"].cat.categories.tolist()], dtype=object)
    codes = h.name_codes[sel]
    annotation = (
        kind_table.tolist().index(EventKind.USER_ANNOTATION.value)
        if EventKind.USER_ANNOTATION.value in kind_table
        else -2
    )
    is_step = (kind_codes[sel] == annotation) & step_name[codes]
    frame = pd.DataFrame(
        {
            "name": np.where(is_step, step_code, codes),
            "kind": kind_codes[sel].astype(np.int64),
            "dur": h.dur[sel],
            "self": self_ns[sel],
            "gpu": gpu[sel],
            "gpu_direct": gpu_direct[sel],
            "eid": ev["eid"].to_numpy()[h.rows[sel]],
            "ts": h.ts[sel],
        }
    )
    keys = ["name", "kind"]
    if by == "stack":
        frame["stack"] = _stacks(h, stack_depth)[sel]
        keys = ["name", "stack", "kind"]
    elif by == "shape":
        frame["input_shapes"] = _shapes(trace.rank_data(rank).op_args, frame["eid"].to_numpy())
        keys = ["name", "input_shapes", "kind"]
    frame = frame.sort_values(["ts", "eid"], kind="stable")
    out = _aggregate(frame, keys)
    out["name"] = name_table[out["name"].to_numpy()]
    out["kind"] = kind_table[out["kind"].to_numpy()]
    out["mean_ns"] = np.rint(out["total_ns"] / out["calls"]).astype(np.int64)
    out["self_mean_ns"] = np.rint(out["self_ns"] / out["calls"]).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["total_pct"] = 100.0 * out["total_ns"] / wall if wall > 0 else np.nan
        out["self_pct"] = 100.0 * out["self_ns"] / wall if wall > 0 else np.nan
    out = out.sort_values(["self_ns", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)
    return out
