"""CPU operators and the GPU work they launch: frequent kernel sequences, operator -> kernels.

Both analyses rest on a GPU activity's ``launch_eid`` (the runtime call that launched it)
and on CPU enclosure: an operator *launched* an activity when the activity's launch call
ran inside the operator's span on the same thread, at any nesting depth. For properly
nested events that is the ``parent_eid`` chain; the time test also holds where a trace
nests ranges improperly. The searches are vectorised (:mod:`._links`): sorted searches per
thread, never a Python loop over events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import OptionError, TraceSelectionError
from ..model.schema import GPU_ACTIVITY_KINDS, EventKind
from ..model.trace import Trace
from . import _enclose as en
from . import _links as lk
from ._common import empty, warn_no_gpu
from .launch import rows_of

__all__ = ["frequent_kernel_sequences", "op_kernels"]

#: GPU activity kinds counted by default: the GPU's work (sync records are waits, not work).
GPU_WORK_KINDS: tuple[str, ...] = (EventKind.KERNEL.value, EventKind.GPU_MEMCPY.value, EventKind.GPU_MEMSET.value)
#: CPU event kinds an ``operator=`` name can designate.
SCOPE_KINDS: tuple[str, ...] = (
    EventKind.CPU_OP.value,
    EventKind.USER_ANNOTATION.value,
    EventKind.PYTHON_FUNCTION.value,
)
#: Separator of kernel names in the ``sequence`` column.
SEP = " -> "

FREQUENT_COLUMNS = {
    "rank": "int64",
    "operator": "str",
    "sequence": "str",
    "length": "int64",
    "count": "int64",
    "instances": "int64",
    "gpu_ns": "int64",
    "cpu_ns": "int64",
    "first_eid": "int64",
}

OP_SEQUENCE_COLUMNS = {
    "rank": "int64",
    "operator": "str",
    "sequence": "str",
    "kernels": "int64",
    "count": "int64",
    "gpu_ns": "int64",
    "cpu_ns": "int64",
    "op_launch_delay_ns": "int64",
    "runtime_delay_ns": "int64",
    "launch_delay_ns": "int64",
    "first_eid": "int64",
}

OP_KERNEL_COLUMNS = {
    "rank": "int64",
    "operator": "str",
    "kernel": "str",
    "count": "int64",
    "instances": "int64",
    "gpu_ns": "int64",
    "runtime_delay_ns": "int64",
    "launch_delay_ns": "int64",
}

_ALL_ACTIVITY = {k.value for k in GPU_ACTIVITY_KINDS}


def _check_kinds(kinds: Iterable[str]) -> list[str]:
    out = [str(k) for k in ([kinds] if isinstance(kinds, str) else kinds)]
    bad = [k for k in out if k not in _ALL_ACTIVITY]
    if bad or not out:
        raise OptionError(f"kinds must be GPU activity kinds among {sorted(_ALL_ACTIVITY)}, got {out}")
    return out


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise OptionError.invalid(name, value, choices)


class RankLinks:
    """A rank's events with the lookups the analyses share, and its selected GPU activities."""

    def __init__(self, trace: Trace, rank: int, kinds: list[str], window: tuple[int, int] | None) -> None:
        self.ev = trace.rank_data(rank).events
        mask = lk.category_mask(self.ev["kind"], kinds)
        cols = ["eid", "ts_ns", "dur_ns", "name", "launch_eid"]
        acts = pd.DataFrame({c: self.ev[c].to_numpy()[mask] for c in cols if c != "name"})
        acts["name"] = self.ev["name"].array[mask]
        acts["end_ns"] = acts["ts_ns"] + acts["dur_ns"]
        self.acts = lk.clip_to_window(acts, window).reset_index(drop=True)
        act_eids = self.acts["eid"].to_numpy()
        # Through the eids (no table of the events' length where eid is the row).
        self.act_rows = rows_of(self.ev, act_eids) if len(act_eids) else np.empty(0, dtype=np.int64)
        self.launch = rows_of(self.ev, self.acts["launch_eid"].to_numpy())
        self.name_codes = self.ev["name"].cat.codes.to_numpy().astype(np.int64)
        self.names = np.asarray(self.ev["name"].cat.categories, dtype=object)
        self.ts = self.ev["ts_ns"].to_numpy()
        self.dur = self.ev["dur_ns"].to_numpy()


def _sum_by(ids: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Integer sums of ``values`` per id in ``range(n)`` (exact below 2**53 ns, about 104 days)."""
    return np.rint(np.bincount(ids, weights=values.astype(np.float64), minlength=n)).astype(np.int64)


def _finish(rows: list[pd.DataFrame], columns: dict[str, str]) -> pd.DataFrame:
    if not rows:
        return empty(columns)
    out = pd.concat(rows, ignore_index=True)
    return out.astype(columns)[list(columns)]


def frequent_kernel_sequences(
    trace: Trace,
    *,
    operator: str,
    length: int | None = None,
    min_kernels: int = 2,
    top_k: int | None = 10,
    match: Literal["exact", "substring", "regex"] = "exact",
    kinds: Iterable[str] = GPU_WORK_KINDS,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """The most frequent GPU kernel sequences launched under a CPU operator: fusion candidates.

    For each *instance* of the operator (a ``cpu_op``, ``user_annotation`` or
    ``python_function`` event whose name matches ``operator``), its sequence is the GPU
    activities launched while it was open, ordered by GPU start time: launched on its
    thread (by it or by anything nested in it) for an operator or Python frame, on any
    thread of its process for an annotation (the autograd engine runs the backward pass
    on its own threads while the main thread waits inside ``## backward ##``). Instances
    nested inside another matching instance are not roots: their kernels count once, for
    the outermost matching instance. (HTA instead keeps only the matches at the shallowest
    call depth of the whole trace; see ``docs/semantics.md (operators)``.)

    With ``length=None`` each instance's whole sequence is one pattern (HTA's
    ``get_frequent_cuda_kernel_sequences``); with ``length=n`` every run of ``n``
    consecutive activities within an instance is counted (n-grams; runs never cross
    instances), which finds repeated sub-sequences inside long operators.

    Parameters
    ----------
    trace : Trace
    operator : str
        Operator (or annotation, or Python function) name; see ``match``.
    length : int, optional
        Size of the sub-sequences to count; None counts whole instance sequences.
    min_kernels : int, default 2
        With ``length=None``, instances launching fewer activities are skipped (HTA's
        ``min_pattern_len``, 3 there).
    top_k : int or None, default 10
        Rows kept per rank, most frequent first; None keeps all.
    match : {"exact", "substring", "regex"}, default "exact"
        How ``operator`` matches event names. ``substring`` is HTA's rule.
    kinds : iterable of str
        GPU activity kinds in the sequences; default kernels, memcpy and memset. Add
        ``"cuda_sync"`` to include sync records as HTA does.
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`). ``time_range`` keeps the activities running in
        it, clipped to it, wherever their launch calls are; instances keep only those.

    Returns
    -------
    pandas.DataFrame
        One row per (rank, sequence), sorted by rank, then ``count``, ``gpu_ns`` (both
        descending) and ``sequence``:

        ``rank`` (int); ``operator`` (str): name of the root instance; ``sequence`` (str):
        activity names joined by ``" -> "``; ``length`` (int): activities in the sequence;
        ``count`` (int): occurrences; ``instances`` (int): operator instances holding at
        least one occurrence (equals ``count`` with ``length=None``); ``gpu_ns`` (int, ns):
        summed GPU duration of the occurrences' activities; ``cpu_ns`` (int, ns): summed
        duration of those instances; ``first_eid`` (int): eid of the instance holding the
        first occurrence.

    Raises
    ------
    TraceSelectionError
        If no event of the scoped trace matches ``operator`` (the message lists the
        operators that exist, close matches first).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> seqs = tv.frequent_kernel_sequences(trace, operator="aten::linear", ranks=0)
    >>> int(seqs["count"].iloc[0]) > 0
    True
    """
    _check_choice("match", match, ("exact", "substring", "regex"))
    kinds = _check_kinds(kinds)
    if length is not None and length < 1:
        raise OptionError(f"length must be a positive number of kernels or None, got {length}")
    if top_k is not None and top_k < 1:
        raise OptionError(f"top_k must be >= 1 or None, got {top_k}")
    trace, window = lk.scope_linked(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    rows: list[pd.DataFrame] = []
    no_gpu: list[int] = []
    matched = False
    for r in trace.ranks:
        links = RankLinks(trace, r, kinds, window)
        ev = links.ev
        marked = lk.match_names(ev["name"], operator, match) & lk.category_mask(ev["kind"], SCOPE_KINDS)
        matched |= bool(marked.any())
        if links.acts.empty:
            no_gpu.append(r)
            continue
        if not marked.any():
            continue
        frame = _sequences_of_rank(links, marked, length=length, min_kernels=min_kernels, top_k=top_k)
        if frame is not None:
            frame.insert(0, "rank", r)
            rows.append(frame)
    if no_gpu:
        warn_no_gpu("frequent_kernel_sequences", no_gpu)
        if len(no_gpu) == len(trace.ranks):
            return empty(FREQUENT_COLUMNS)
    if not matched:
        raise TraceSelectionError.unknown("operator", operator, _scope_names(trace))
    return _finish(rows, FREQUENT_COLUMNS)


def _scope_names(trace: Trace) -> list[str]:
    names: set[str] = set()
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        sel = ev.loc[lk.category_mask(ev["kind"], SCOPE_KINDS), "name"]
        names.update(str(x) for x in sel.unique())
    return sorted(names)


def _sequences_of_rank(
    links: RankLinks, marked: np.ndarray, *, length: int | None, min_kernels: int, top_k: int | None
) -> pd.DataFrame | None:
    # Annotations (``## backward ##``, ProfilerStep) hold the launches of every thread of
    # their process: the autograd engine runs backward on its own threads. Operators and
    # Python frames hold those of their own thread.
    is_annotation = lk.category_mask(links.ev["kind"], [EventKind.USER_ANNOTATION.value])
    on_thread = en.outermost(links.ev, np.flatnonzero(marked & ~is_annotation), links.launch)
    on_process = en.outermost(links.ev, np.flatnonzero(marked & is_annotation), links.launch, scope="process")
    big = np.iinfo(np.int64).max
    root = np.minimum(np.where(on_thread >= 0, on_thread, big), np.where(on_process >= 0, on_process, big))
    root[root == big] = -1
    sel = np.flatnonzero(root >= 0)
    if len(sel) == 0:
        return None
    acts = links.acts
    a_ts = acts["ts_ns"].to_numpy()[sel]
    a_eid = acts["eid"].to_numpy()[sel]
    a_dur = acts["dur_ns"].to_numpy()[sel]
    a_code = acts["name"].cat.codes.to_numpy().astype(np.int64)[sel]
    a_root = root[sel]
    order = np.lexsort((a_eid, a_ts, a_root))
    a_root, a_dur, a_code = a_root[order], a_dur[order], a_code[order]
    starts = np.flatnonzero(np.concatenate(([True], a_root[1:] != a_root[:-1])))
    bounds = np.append(starts, len(a_root))
    g_root = a_root[starts]
    g_len = np.diff(bounds)
    g_lead = links.name_codes[g_root]
    n_groups = len(starts)
    cum = np.concatenate(([0], np.cumsum(a_dur)))

    if length is None:
        keep = g_len >= max(min_kernels, 1)
        if not keep.any():
            return None
        gs = np.flatnonzero(keep)
        sub_bounds = np.concatenate(([0], np.cumsum(g_len[gs])))
        elem = _ranges(bounds, gs)
        seq_id, first_seq = lk.group_sequences(g_lead[gs], a_code[elem], sub_bounds)
        win_group = gs
        win_start = bounds[gs]
        win_len = g_len[gs]
    else:
        pos = np.arange(len(a_root)) - np.repeat(bounds[:-1], g_len)
        ok = pos <= np.repeat(g_len, g_len) - length
        win_start = np.flatnonzero(ok)
        if len(win_start) == 0:
            return None
        win_group = np.repeat(np.arange(n_groups), g_len)[win_start]
        mat = np.empty((len(win_start), length + 1), dtype=np.int64)
        mat[:, 0] = g_lead[win_group]
        mat[:, 1:] = a_code[win_start[:, None] + np.arange(length)[None, :]]
        seq_id, first_seq = lk.row_ids(mat)
        win_len = np.full(len(win_start), length, dtype=np.int64)

    n_seq = len(first_seq)
    win_gpu = cum[win_start + win_len] - cum[win_start]
    count = np.bincount(seq_id, minlength=n_seq)
    gpu = _sum_by(seq_id, win_gpu, n_seq)
    # Instances and their CPU time: each (sequence, instance) pair once.
    pair = pd.unique(seq_id * n_groups + win_group)
    p_seq, p_group = pair // n_groups, pair % n_groups
    instances = np.bincount(p_seq, minlength=n_seq)
    cpu = _sum_by(p_seq, links.dur[g_root[p_group]], n_seq)

    seq_first_start = win_start[first_seq]
    seq_len = win_len[first_seq]
    seq_root = g_root[win_group[first_seq]]
    out = pd.DataFrame(
        {
            "operator": links.names[links.name_codes[seq_root]],
            "length": seq_len,
            "count": count,
            "instances": instances,
            "gpu_ns": gpu,
            "cpu_ns": cpu,
            "first_eid": links.ev["eid"].to_numpy()[seq_root],
            "_start": seq_first_start,
        }
    )
    out = out.sort_values(["count", "gpu_ns"], ascending=[False, False], kind="stable")
    act_names = np.asarray(acts["name"].cat.categories, dtype=object)
    out["sequence"] = [
        SEP.join(act_names[a_code[s : s + n]])
        for s, n in zip(out["_start"].tolist(), out["length"].tolist(), strict=True)
    ]
    out = out.sort_values(["count", "gpu_ns", "sequence"], ascending=[False, False, True], kind="stable")
    if top_k is not None:
        out = out.head(top_k)
    return out.drop(columns="_start").reset_index(drop=True)


def _ranges(bounds: np.ndarray, gs: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(bounds[g], bounds[g + 1])`` for g in ``gs``, vectorised."""
    lens = bounds[gs + 1] - bounds[gs]
    offsets = np.repeat(bounds[gs] - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
    out: np.ndarray = np.arange(int(lens.sum())) + offsets
    return out


def op_kernels(
    trace: Trace,
    *,
    operators: str | Iterable[str] | None = None,
    op_pattern: str | None = None,
    level: Literal["innermost", "outermost", "all"] = "innermost",
    by: Literal["sequence", "kernel"] = "sequence",
    kinds: Iterable[str] = GPU_WORK_KINDS,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Which GPU kernels each CPU operator launched, how often, how long, and launch delays.

    An operator is a ``cpu_op`` event. A GPU activity belongs to the operator(s) whose
    span encloses its launch call on the same thread (at any nesting depth): with
    ``level="innermost"`` the closest one (HTA's ``get_aten_op_kernels_and_delay``: the
    op that called ``cudaLaunchKernel``), with ``"outermost"`` the top-level operator
    (e.g. ``aten::linear`` rather than its ``aten::addmm``), with ``"all"`` every enclosing
    operator (inclusive attribution: a kernel then counts for several operators).
    Activities whose launch call has no enclosing operator are not reported.

    Delays (all means, in ns):

    * ``op_launch_delay_ns``: operator start -> start of its first launch call (per
      instance; HTA's ``avg_aten_op_launch_delay``);
    * ``runtime_delay_ns``: first launch call start -> start of the activity it launched
      (per instance; HTA's ``avg_runtime_delay``);
    * ``launch_delay_ns``: launch call *end* -> activity start, clipped at 0, over every
      activity (the queueing delay of ``kernel_launch_stats``).

    Parameters
    ----------
    trace : Trace
    operators : str or iterable of str, optional
        Report only these operator names (exact). Unknown names raise
        :class:`TraceSelectionError`.
    op_pattern : str, optional
        Regular expression (``re.search``): only ``cpu_op`` events whose name matches count
        as operators, e.g. ``"^aten::"`` as HTA.
    level : {"innermost", "outermost", "all"}, default "innermost"
    by : {"sequence", "kernel"}, default "sequence"
        ``sequence``: one row per (operator, ordered list of activities one instance
        launched); ``kernel``: one row per (operator, activity name).
    kinds : iterable of str
        GPU activity kinds counted; default kernels, memcpy and memset (HTA: kernels only).
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`). ``time_range`` keeps the activities running in
        it, clipped to it, wherever their launch calls and operators are.

    Returns
    -------
    pandas.DataFrame
        Sorted by rank, then ``gpu_ns`` descending. With ``by="sequence"``:

        ``rank`` (int); ``operator`` (str); ``sequence`` (str): activity names in launch
        order joined by ``" -> "``; ``kernels`` (int): activities per instance; ``count``
        (int): instances; ``gpu_ns`` (int, ns): summed GPU duration; ``cpu_ns`` (int, ns):
        summed operator duration; ``op_launch_delay_ns``, ``runtime_delay_ns``,
        ``launch_delay_ns`` (int, ns): mean delays as above; ``first_eid`` (int): eid of
        the first instance.

        With ``by="kernel"``: ``rank``; ``operator``; ``kernel`` (str); ``count`` (int):
        launches; ``instances`` (int): operator instances that launched it; ``gpu_ns``
        (int, ns); ``runtime_delay_ns``, ``launch_delay_ns`` (int, ns): means over the
        launches.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> ok = tv.op_kernels(trace, ranks=0, by="kernel")
    >>> bool((ok["gpu_ns"] > 0).all())
    True
    """
    _check_choice("level", level, ("innermost", "outermost", "all"))
    _check_choice("by", by, ("sequence", "kernel"))
    kinds = _check_kinds(kinds)
    wanted = None if operators is None else ([operators] if isinstance(operators, str) else list(operators))
    trace, window = lk.scope_linked(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    columns = OP_SEQUENCE_COLUMNS if by == "sequence" else OP_KERNEL_COLUMNS
    rows: list[pd.DataFrame] = []
    no_gpu: list[int] = []
    for r in trace.ranks:
        links = RankLinks(trace, r, kinds, window)
        if links.acts.empty:
            no_gpu.append(r)
            continue
        is_op = lk.category_mask(links.ev["kind"], [EventKind.CPU_OP.value])
        if op_pattern is not None:
            is_op = is_op & lk.match_names(links.ev["name"], op_pattern, "regex", what="op_pattern")
        if wanted is not None:
            is_op_reported = is_op & lk.category_mask(links.ev["name"], wanted)
        else:
            is_op_reported = is_op
        frame = _op_kernels_of_rank(links, is_op, is_op_reported, level=level, by=by)
        if frame is not None:
            frame.insert(0, "rank", r)
            rows.append(frame)
    if no_gpu:
        warn_no_gpu("op_kernels", no_gpu)
        if len(no_gpu) == len(trace.ranks):
            return empty(columns)
    if wanted is not None:
        existing = set(_op_names(trace))
        for w in wanted:
            if w not in existing:
                raise TraceSelectionError.unknown("operator", w, sorted(existing))
    return _finish(rows, columns)


def _op_names(trace: Trace) -> list[str]:
    names: set[str] = set()
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        names.update(str(x) for x in ev.loc[(ev["kind"] == EventKind.CPU_OP.value).to_numpy(), "name"].unique())
    return sorted(names)


def _op_kernels_of_rank(
    links: RankLinks, is_op: np.ndarray, is_reported: np.ndarray, *, level: str, by: str
) -> pd.DataFrame | None:
    ops = np.flatnonzero(is_op)
    if level == "innermost":
        op = en.innermost(links.ev, ops, links.launch)
        k = np.flatnonzero(op >= 0)
        o = op[k]
    elif level == "outermost":
        op = en.outermost(links.ev, ops, links.launch)
        k = np.flatnonzero(op >= 0)
        o = op[k]
    else:  # every (kernel, enclosing operator): the rows counted are the pairs themselves
        k, o = lk.containing_pairs(links.ev, ops, links.launch)
    keep = is_reported[o] if len(o) else np.zeros(0, dtype=bool)
    k, o = k[keep], o[keep]
    if len(k) == 0:
        return None
    acts = links.acts
    launch = links.launch[k]
    l_ts = links.ts[launch]
    l_end = l_ts + links.dur[launch]
    k_ts = links.ts[links.act_rows[k]]  # unclipped start, for delays
    k_dur = acts["dur_ns"].to_numpy()[k]  # clipped to the window, for GPU time
    k_code = acts["name"].cat.codes.to_numpy().astype(np.int64)[k]
    k_eid = acts["eid"].to_numpy()[k]
    order = np.lexsort((k_eid, l_ts, o))
    o, l_ts, l_end, k_ts, k_dur, k_code = o[order], l_ts[order], l_end[order], k_ts[order], k_dur[order], k_code[order]
    queue = np.maximum(k_ts - l_end, 0)
    runtime = k_ts - l_ts
    act_names = np.asarray(acts["name"].cat.categories, dtype=object)

    if by == "kernel":
        key = links.name_codes[o] * (len(act_names) + 1) + k_code
        inv, first = lk.row_ids(key[:, None])
        m = len(first)
        inst = pd.unique(inv * (int(o.max()) + 1) + o) // (int(o.max()) + 1)
        count = np.bincount(inv, minlength=m)
        out = pd.DataFrame(
            {
                "operator": links.names[links.name_codes[o[first]]],
                "kernel": act_names[k_code[first]],
                "count": count,
                "instances": np.bincount(inst, minlength=m),
                "gpu_ns": _sum_by(inv, k_dur, m),
                "runtime_delay_ns": np.rint(_mean_by(inv, runtime, m)).astype(np.int64),
                "launch_delay_ns": np.rint(_mean_by(inv, queue, m)).astype(np.int64),
            }
        )
        out = out.sort_values(["gpu_ns", "count", "operator", "kernel"], ascending=[False, False, True, True])
        return out.reset_index(drop=True)

    starts = np.flatnonzero(np.concatenate(([True], o[1:] != o[:-1])))
    bounds = np.append(starts, len(o))
    g_op = o[starts]
    g_len = np.diff(bounds)
    seq_id, first_group = lk.group_sequences(links.name_codes[g_op], k_code, bounds)
    m = len(first_group)
    g_gpu = np.add.reduceat(k_dur, starts)
    g_queue = np.add.reduceat(queue, starts)
    g_op_delay = l_ts[starts] - links.ts[g_op]
    g_runtime = runtime[starts]
    count = np.bincount(seq_id, minlength=m)
    kernels_total = np.bincount(seq_id, weights=g_len.astype(np.float64), minlength=m)
    out = pd.DataFrame(
        {
            "operator": links.names[links.name_codes[g_op[first_group]]],
            "kernels": g_len[first_group],
            "count": count,
            "gpu_ns": _sum_by(seq_id, g_gpu, m),
            "cpu_ns": _sum_by(seq_id, links.dur[g_op], m),
            "op_launch_delay_ns": np.rint(_mean_by(seq_id, g_op_delay, m)).astype(np.int64),
            "runtime_delay_ns": np.rint(_mean_by(seq_id, g_runtime, m)).astype(np.int64),
            "launch_delay_ns": np.rint(
                np.bincount(seq_id, weights=g_queue.astype(np.float64), minlength=m) / kernels_total
            ).astype(np.int64),
            "first_eid": links.ev["eid"].to_numpy()[g_op[first_group]],
            "_start": bounds[first_group],
        }
    )
    out["sequence"] = [
        SEP.join(act_names[k_code[s : s + n]])
        for s, n in zip(out["_start"].tolist(), out["kernels"].tolist(), strict=True)
    ]
    out = out.sort_values(["gpu_ns", "count", "operator", "sequence"], ascending=[False, False, True, True])
    return out.drop(columns="_start").reset_index(drop=True)


def _mean_by(ids: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    counts = np.bincount(ids, minlength=n)
    sums = np.bincount(ids, weights=values.astype(np.float64), minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
