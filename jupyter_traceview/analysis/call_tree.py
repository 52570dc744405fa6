"""The host call tree: Python frames, annotations and operators nested, merged across calls.

Every host range (see :mod:`._host`) sits at a *path*: its thread, then the names of the
ranges enclosing it, outermost first, then its own name. A node of the tree is a path;
its calls are the ranges at that path, merged across calls, iterations and (by name) across
``ProfilerStep#N`` ranges, which all become ``ProfilerStep*``. A node's inclusive time is
its calls' summed durations; its exclusive time the time in its calls when none of its
children was open (torch's self time, the duration minus the children's durations, where
children do not overlap; they overlap only where a trace nests ranges improperly, as a
``ProfilerStep#N`` range starting inside ``profiler.step()``'s Python frame, and there
torch's self time goes negative). On each thread a root node (kind ``thread``)
holds the top-level ranges. The paths are ranked by pointer jumping up the parent chains
(:func:`._chains.path_ranks`, O(n log n log depth)), never level by level (events x depth:
300,000 identical operators nest 300,000 deep) nor by walking events in Python.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..model.schema import EventKind
from ..model.trace import Trace
from . import _links as lk
from ._chains import path_ranks
from ._common import empty
from ._host import children_cover, host_ranges
from .cpu_ops import STEP_KEY

__all__ = ["call_tree"]

CALL_TREE_COLUMNS = {
    "rank": "int64",
    "node_id": "int64",
    "parent_id": "int64",
    "depth": "int64",
    "name": "str",
    "kind": "str",
    "tid": "int64",
    "calls": "int64",
    "inclusive_ns": "int64",
    "exclusive_ns": "int64",
    "first_ts_ns": "int64",
    "first_dur_ns": "int64",
    "first_eid": "int64",
}

THREAD_KIND = "thread"


def call_tree(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """The nesting of Python frames, annotations and operators as a merged call tree.

    Parameters
    ----------
    trace : Trace
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`). With ``time_range`` calls are clipped to it.

    Returns
    -------
    pandas.DataFrame
        One row per node, per rank. Within a rank nodes are numbered breadth first
        (``parent_id < node_id``), siblings by inclusive time, longest first:

        ``rank`` (int); ``node_id`` (int): the node, from 0 per rank; ``parent_id`` (int):
        its parent's ``node_id``, -1 for a thread root; ``depth`` (int): 0 for a thread
        root, 1 for top-level ranges; ``name`` (str): the range's name (a thread root is
        named after its thread); ``kind`` (str): ``thread``, ``python_function``,
        ``user_annotation`` or ``cpu_op``; ``tid`` (int): the thread; ``calls`` (int):
        ranges merged into the node; ``inclusive_ns`` (int, ns): their summed durations
        (for a thread root: the union of its top-level ranges, its busy time); ``exclusive_ns`` (int, ns): the time in
        them with no child open (0 for a thread root), so that a node's inclusive time is
        its exclusive time plus its children's inclusive times wherever ranges nest properly; ``first_ts_ns``, ``first_dur_ns`` (int,
        ns), ``first_eid`` (int): the node's first call (a thread root: its first range).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> tree = tv.call_tree(tv.load(tv.sample_path()), ranks=0)
    >>> roots = tree[tree["parent_id"] < 0]
    >>> int(roots["inclusive_ns"].sum()) == int(tree.loc[tree["depth"] == 1, "inclusive_ns"].sum())
    True
    """
    trace, window = lk.scope_linked(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    parts = []
    for r in trace.ranks:
        part = _rank_tree(trace, r, window)
        if part is not None:
            part.insert(0, "rank", r)
            parts.append(part)
    if not parts:
        return empty(CALL_TREE_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    return out.astype(CALL_TREE_COLUMNS)[list(CALL_TREE_COLUMNS)]


def _thread_label(trace: Trace, rank: int, pid: int, tid: int) -> str:
    for p, t, name in trace.meta(rank).thread_names:
        if p == pid and t == tid:
            return name
    return f"thread {tid}"


def _rank_tree(trace: Trace, rank: int, window: tuple[int, int] | None) -> pd.DataFrame | None:
    ev = trace.rank_data(rank).events
    h = host_ranges(ev, window)
    n = len(h)
    if n == 0:
        return None
    # Names and kinds as integer codes, their texts looked up once per distinct value:
    # ProfilerStep#N annotations share one name, STEP_KEY.
    name_texts = [str(x) for x in h.names.tolist()]
    step_name = np.array([x.startswith("ProfilerStep#") for x in name_texts], dtype=bool)
    step_code = name_texts.index(STEP_KEY) if STEP_KEY in name_texts else len(name_texts)
    name_table = np.array([*name_texts, STEP_KEY], dtype=object)
    kind_table = np.array([str(x) for x in ev["kind"].cat.categories.tolist()], dtype=object)
    ev_kind = ev["kind"].cat.codes.to_numpy().astype(np.int64)[h.rows]
    is_step = (kind_table[ev_kind] == EventKind.USER_ANNOTATION.value) & step_name[h.name_codes]
    name_codes, name_uniques = pd.factorize(np.where(is_step, step_code, h.name_codes))
    name_values = name_table[name_uniques]
    kind_codes, kind_uniques = pd.factorize(ev_kind)
    kind_values = kind_table[kind_uniques]
    key_codes, key_first = lk.row_ids(np.column_stack((name_codes, kind_codes)))
    pid = ev["pid"].to_numpy()[h.rows]
    tid = ev["tid"].to_numpy()[h.rows]
    thread_codes, thread_first = lk.row_ids(np.column_stack((pid, tid)))
    n_threads = len(thread_first)
    depth = h.depth()
    # Node of every range: its path (its thread, then the names and kinds of its chain from
    # the top down), numbered by depth, then by first call (thread roots are 0..n_threads-1).
    path = path_ranks(h.parent, lk.row_ids(np.column_stack((thread_codes, key_codes)))[0])
    first_of_path = np.empty(int(path.max()) + 1, dtype=np.int64)
    first_of_path[path[::-1]] = np.arange(n - 1, -1, -1)
    by_depth = np.lexsort((first_of_path, depth[first_of_path]))
    node_of_path = np.empty(len(by_depth), dtype=np.int64)
    node_of_path[by_depth] = n_threads + np.arange(len(by_depth))
    node = node_of_path[path]
    first = first_of_path[by_depth]  # each node's first range, in node order
    up = h.parent[first]
    next_id = n_threads + len(first)
    parent_of = np.concatenate(
        (np.full(n_threads, -1, dtype=np.int64), np.where(up >= 0, node[np.maximum(up, 0)], thread_codes[first]))
    )
    key_of = np.concatenate((np.full(n_threads, -1, dtype=np.int64), key_codes[first]))
    depth_of = np.concatenate((np.zeros(n_threads, dtype=np.int64), depth[first] + 1))
    m = next_id
    calls = np.bincount(node, minlength=m)
    incl = np.bincount(node, weights=h.dur.astype(np.float64), minlength=m)
    excl = np.bincount(node, weights=h.exclusive_ns.astype(np.float64), minlength=m)
    top = depth == 0
    # A thread root's time: the union of its top-level ranges (its busy time).
    incl[:n_threads] = children_cover(np.where(top, thread_codes, -1), h.ts, h.end)[:n_threads]
    calls[:n_threads] = 1
    # First call of each node (ranges are in time order); a thread root's is its first range.
    first_range = np.full(m, -1, dtype=np.int64)
    first_range[node[::-1]] = np.arange(n - 1, -1, -1)
    first_range[:n_threads] = thread_first
    labels = [
        _thread_label(trace, rank, int(pid[thread_first[t]]), int(tid[thread_first[t]])) for t in range(n_threads)
    ]
    key_name = np.asarray(name_values, dtype=object)[name_codes[key_first]]
    key_kind = np.asarray(kind_values, dtype=object)[kind_codes[key_first]]
    name = np.empty(m, dtype=object)
    kind = np.empty(m, dtype=object)
    name[:n_threads] = labels
    kind[:n_threads] = THREAD_KIND
    name[n_threads:] = key_name[key_of[n_threads:]]
    kind[n_threads:] = key_kind[key_of[n_threads:]]
    frame = pd.DataFrame(
        {
            "old": np.arange(m),
            "old_parent": parent_of,
            "depth": depth_of,
            "name": name,
            "kind": kind,
            "tid": tid[first_range],
            "calls": calls,
            "inclusive_ns": np.rint(incl).astype(np.int64),
            "exclusive_ns": np.rint(excl).astype(np.int64),
            "first_ts_ns": h.ts[first_range],
            "first_dur_ns": h.dur[first_range],
            "first_eid": ev["eid"].to_numpy()[h.rows[first_range]],
        }
    )
    frame.loc[: n_threads - 1, "exclusive_ns"] = 0
    # Renumber breadth first: by depth, then by the parent's new id, then longest first (then
    # first call, then old id). Within a depth that is the order of the nodes' paths of
    # sibling ranks (a node's rank among its parent's children in that order), top down.
    o = np.lexsort((np.arange(m), frame["first_ts_ns"].to_numpy(), -frame["inclusive_ns"].to_numpy(), parent_of))
    group = parent_of[o]
    starts = np.concatenate(([True], group[1:] != group[:-1]))
    pos = np.arange(m)
    sibling = np.empty(m, dtype=np.int64)
    sibling[o] = pos - np.maximum.accumulate(np.where(starts, pos, 0))
    order = np.lexsort((path_ranks(parent_of, sibling), depth_of))
    new_id = np.empty(m, dtype=np.int64)
    new_id[order] = pos
    out = frame.iloc[order].reset_index(drop=True)
    out.insert(0, "node_id", np.arange(m, dtype=np.int64))
    out.insert(1, "parent_id", np.where(out["old_parent"] >= 0, new_id[np.maximum(out["old_parent"], 0)], -1))
    return out.drop(columns=["old", "old_parent"])
