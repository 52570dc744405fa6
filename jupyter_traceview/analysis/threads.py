"""CPU threads over time: what each thread of each rank does, bin by bin.

A thread's time falls into one of four states, the first that applies:

``op``
    inside an operator (``cpu_op``) or a CUDA/HIP runtime or driver call: the thread runs
    ATen or launches GPU work;
``dataloader``
    inside a DataLoader annotation (``enumerate(DataLoader)#...``, which torch records
    around every ``next()`` on a DataLoader) and not in an operator: the thread waits for
    (or, with ``num_workers=0``, does) data loading;
``python``
    inside a Python frame (``python_function``, traces recorded with ``with_stack=True``)
    and in none of the above: Python code between operators;
``idle``
    none of these (inside an annotation only, or between recorded events).

The unions are exact (:mod:`jupyter_traceview.model.intervals`), not sampled: per thread
the four columns add up to the bin's width.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model import intervals as iv
from ..model.schema import EventKind
from ..model.text import as_text, searched
from ..model.trace import Trace
from . import _links as lk
from ._common import empty

__all__ = ["DATALOADER_PATTERN", "thread_activity"]

#: Annotation names that mark data loading (torch's ``enumerate(DataLoader)#...__next__``).
DATALOADER_PATTERN = r"DataLoader"

THREAD_COLUMNS = {
    "rank": "int64",
    "pid": "int64",
    "tid": "int64",
    "thread": "str",
    "bin": "int64",
    "start_ns": "int64",
    "end_ns": "int64",
    "op_ns": "int64",
    "dataloader_ns": "int64",
    "python_ns": "int64",
    "idle_ns": "int64",
    "busy_pct": "float64",
}

#: :func:`thread_states` selects each (thread, state)'s rows by one comparison each up to
#: this many keys in use, else by one sort (a comparison costs about a fifth of the sort).
_FEW_KEYS = 8

_OP_KINDS = (EventKind.CPU_OP.value, EventKind.CUDA_RUNTIME.value, EventKind.CUDA_DRIVER.value)
_HOST_KINDS = (*_OP_KINDS, EventKind.USER_ANNOTATION.value, EventKind.PYTHON_FUNCTION.value)


def thread_activity(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    bins: int = 100,
) -> pd.DataFrame:
    """Per CPU thread and time bin: time in operators, in data loading, in Python, idle.

    Parameters
    ----------
    trace : Trace
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`).
    bins : int, default 100
        Equal bins spanning each rank's host events in scope (all its threads share them);
        ``bins=1`` gives one row per thread with its totals.

    Returns
    -------
    pandas.DataFrame
        One row per (rank, thread, bin), threads in order of first event:

        ``rank``, ``pid``, ``tid`` (int); ``thread`` (str): its name as recorded
        (``thread 123 (python)``), else ``thread <tid>``; ``bin`` (int); ``start_ns``,
        ``end_ns`` (int, absolute ns): the bin; ``op_ns``, ``dataloader_ns``,
        ``python_ns``, ``idle_ns`` (int, ns): the thread's time in each state (module
        docstring), adding up to the bin's width; ``busy_pct`` (float, %): ``op_ns +
        dataloader_ns + python_ns`` over the bin's width.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> th = tv.thread_activity(tv.load(tv.sample_path()), ranks=0, bins=1)
    >>> bool(((th["op_ns"] + th["dataloader_ns"] + th["python_ns"] + th["idle_ns"]) == th["end_ns"] - th["start_ns"]).all())
    True
    """
    if not isinstance(bins, (int, np.integer)) or isinstance(bins, bool) or bins < 1:
        raise OptionError(f"bins={bins!r} is not accepted; give a positive number of bins")
    trace, window = lk.scope_linked(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    parts = []
    for r in trace.ranks:
        part = _rank_threads(trace, r, window, int(bins))
        if part is not None:
            parts.append(part)
    if not parts:
        return empty(THREAD_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    return out.astype(THREAD_COLUMNS)[list(THREAD_COLUMNS)]


def thread_states(
    ev: pd.DataFrame, window: tuple[int, int] | None, pattern: str = DATALOADER_PATTERN
) -> dict[tuple[int, int], dict[str, iv.Intervals]]:
    """Per (pid, tid): the disjoint unions of its ``op``, ``dataloader`` and ``python`` states."""
    ts = ev["ts_ns"].to_numpy()
    dur = ev["dur_ns"].to_numpy()
    # Kinds and names decided once per category, not per event. Each row's state: 0 op,
    # 1 data loader, 2 Python, 3 another annotation, 4 not a host event (the kinds of the
    # states are disjoint); the host rows are those in states 0-3.
    kind_cats = as_text(ev["kind"].cat.categories).tolist()
    op_kinds = set(_OP_KINDS)
    kind_state = np.array(
        [
            0 if k in op_kinds else 2 if k == EventKind.PYTHON_FUNCTION.value else 3 if k in _HOST_KINDS else 4
            for k in kind_cats
        ]
        + [4],
        dtype=np.int8,
    )
    state_all = kind_state[np.asarray(ev["kind"].array.codes)]
    _mark_loaders(ev, state_all, pattern)
    if iv.native is not None:  # the compiled loop: one pass over the rows, the same unions
        return _native_states(ev, state_all, ts, dur, window)
    mask = state_all < 4
    if window is not None:
        mask &= (ts < window[1]) & (ts + dur > window[0])
    rows = np.flatnonzero(mask)
    state = state_all[rows]
    pid = ev["pid"].to_numpy()[rows]
    tid = ev["tid"].to_numpy()[rows]
    out: dict[tuple[int, int], dict[str, iv.Intervals]] = {}
    ids, first = _thread_ids(pid, tid)
    n_keys = 4 * len(first)
    # Each row's (thread, state) key, in the narrowest integers that hold it.
    key = ids.astype(np.int16) if n_keys <= 2**15 else ids.copy()
    key *= 4
    key += state
    counts = np.bincount(key, minlength=n_keys)
    # The rows of each (thread, state) in row order (what a mask per thread and state would
    # select). Only states 0-2 have unions. With few such keys in use (a rank has a few
    # threads), one comparison of the keys each; else one stable sort by key for all.
    used = [k for k in np.flatnonzero(counts).tolist() if k % 4 < 3]
    if len(used) <= _FEW_KEYS:
        selected = {k: rows[np.flatnonzero(key == k)] for k in used}

        def rows_of_key(k: int) -> np.ndarray:
            return selected.get(k, rows[:0])

    else:
        order = np.argsort(key, kind="stable")
        bounds = np.zeros(n_keys + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
        at = rows[order]

        def rows_of_key(k: int) -> np.ndarray:
            return at[int(bounds[k]) : int(bounds[k + 1])]

    def union_of(t: int, st: int) -> iv.Intervals:
        sel = rows_of_key(4 * t + st)
        s = ts[sel]
        e = s + dur[sel]
        if window is not None:
            s, e = np.maximum(s, window[0]), np.minimum(e, window[1])
        return iv.union(s, e)

    for t in np.argsort(first, kind="stable").tolist():  # threads in order of first event
        out[(int(pid[first[t]]), int(tid[first[t]]))] = _exclusive(union_of(t, 0), union_of(t, 1), union_of(t, 2))
    return out


def _exclusive(u_op: iv.Intervals, u_loader: iv.Intervals, u_py: iv.Intervals) -> dict[str, iv.Intervals]:
    """A thread's states from the unions of its rows of each: operators first, then the data
    loader outside them, then Python outside both."""
    u_loader = _minus(u_loader, u_op)
    return {"op": u_op, "dataloader": u_loader, "python": _minus(_minus(u_py, u_op), u_loader)}


def _mark_loaders(ev: pd.DataFrame, state: np.ndarray, pattern: str) -> None:
    """Rows of state 3 (annotations) whose name matches ``pattern`` (a data loader's) get
    state 1 (data loader), in place."""
    cats = pd.Index(as_text(ev["name"].cat.categories))
    rx = re.compile(pattern)
    # Over a list: iterating the (Arrow-backed) Index costs ~5 us a name.
    is_loader_name = np.fromiter(
        (rx.search(searched(c)) is not None for c in cats.tolist()), dtype=bool, count=len(cats)
    )
    if is_loader_name.any():
        codes = np.asarray(ev["name"].array.codes)
        state[(state == 3) & np.append(is_loader_name, False)[codes]] = 1


def _native_states(
    ev: pd.DataFrame, state: np.ndarray, ts: np.ndarray, dur: np.ndarray, window: tuple[int, int] | None
) -> dict[tuple[int, int], dict[str, iv.Intervals]]:
    """:func:`thread_states` by the compiled loop (``intervals.native.thread_unions``): the
    threads in order of first host row, each (thread, state)'s union of its rows' intervals,
    then the same subtractions (:func:`_exclusive`). ``state``: each row's state."""
    n = len(state)
    c64 = np.ascontiguousarray
    pid, tid = c64(ev["pid"].to_numpy(), dtype=np.int64), c64(ev["tid"].to_numpy(), dtype=np.int64)
    out_pid, out_tid = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    out_s, out_e = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    offsets = np.empty(3 * n + 1, dtype=np.int64)
    lo, hi = (int(window[0]), int(window[1])) if window is not None else (0, 0)
    n_threads = iv.native.thread_unions(
        c64(state, dtype=np.int8),
        pid,
        tid,
        c64(ts, dtype=np.int64),
        c64(dur, dtype=np.int64),
        lo,
        hi,
        window is not None,
        out_pid,
        out_tid,
        out_s,
        out_e,
        offsets,
    )
    at = offsets[: 3 * n_threads + 1].tolist()
    out: dict[tuple[int, int], dict[str, iv.Intervals]] = {}
    for t in range(n_threads):
        u_op, u_loader, u_py = (
            (out_s[at[k] : at[k + 1]].copy(), out_e[at[k] : at[k + 1]].copy()) for k in range(3 * t, 3 * t + 3)
        )
        out[(int(out_pid[t]), int(out_tid[t]))] = _exclusive(u_op, u_loader, u_py)
    return out


def _minus(a: iv.Intervals, b: iv.Intervals) -> iv.Intervals:
    """``iv.subtract(a, b)``; nothing left of nothing (most threads run no data loader)."""
    return a if len(a[0]) == 0 else iv.subtract(a, b)


def _thread_ids(pid: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A dense id per (pid, tid) and each id's first row (as :func:`._links.row_ids`, whose
    ids are numbered by first row; the ids here may be numbered otherwise).

    Events in time order come in runs on one thread: the ids are found for the runs
    (:func:`_run_thread_ids`), then repeated over each run's rows.
    """
    n = len(pid)
    if n == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(pid[1:], pid[:-1], out=change[1:])
    change[1:] |= tid[1:] != tid[:-1]
    starts = np.flatnonzero(change)
    run_ids, run_first = _run_thread_ids(pid[starts], tid[starts])
    return np.repeat(run_ids, np.diff(np.append(starts, n))), starts[run_first]


def _run_thread_ids(pid: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_thread_ids` without the runs (a rank has few threads: each column is hashed
    on its own and the pairs counted densely)."""
    n = len(pid)
    p_codes, n_p = _codes(pid)
    t_codes, n_t = _codes(tid)
    if n_p * n_t > 4 * n + 1024:  # many threads: pack and hash the pairs
        return lk.row_ids(np.column_stack((pid, tid)))
    key = p_codes * n_t + t_codes
    first_of_key = np.full(n_p * n_t, n, dtype=np.int64)
    first_of_key[key[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)  # the first row wins
    seen = np.flatnonzero(first_of_key < n)
    dense = np.empty(len(first_of_key), dtype=np.int64)
    dense[seen] = np.arange(len(seen), dtype=np.int64)
    return dense[key], first_of_key[seen]


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense int64 codes of ``values`` and how many there are (one value: no hashing)."""
    if values[0] == values.min() == values.max():
        return np.zeros(len(values), dtype=np.int64), 1
    codes, uniq = pd.factorize(values)
    return codes.astype(np.int64), len(uniq)


def _rank_threads(trace: Trace, rank: int, window: tuple[int, int] | None, bins: int) -> pd.DataFrame | None:
    ev = trace.rank_data(rank).events
    states = thread_states(ev, window)
    if not states:
        return None
    starts = [int(u[0][0]) for st in states.values() for u in st.values() if len(u[0])]
    ends = [int(u[1][-1]) for st in states.values() for u in st.values() if len(u[1])]
    if not starts or not ends:
        return None  # threads without any interval (odd traces): nothing to bin
    lo, hi = min(starts), max(ends)
    if window is not None:
        lo, hi = max(lo, window[0]), min(hi, window[1])
    span = max(hi - lo, bins)
    q, rem = divmod(span, bins)
    k = np.arange(bins + 1, dtype=np.int64)
    edges = lo + k * q + (k * rem) // bins
    names = {(p, t): n for p, t, n in trace.meta(rank).thread_names}
    frames = []
    width = np.diff(edges)
    for (pid, tid), st in states.items():
        cols = {name: iv.binned_coverage(u[0], u[1], edges) for name, u in st.items()}
        busy = cols["op"] + cols["dataloader"] + cols["python"]
        frames.append(
            pd.DataFrame(
                {
                    "rank": rank,
                    "pid": pid,
                    "tid": tid,
                    "thread": names.get((pid, tid), f"thread {tid}"),
                    "bin": np.arange(bins),
                    "start_ns": edges[:-1],
                    "end_ns": edges[1:],
                    "op_ns": cols["op"],
                    "dataloader_ns": cols["dataloader"],
                    "python_ns": cols["python"],
                    "idle_ns": width - busy,
                    "busy_pct": 100.0 * busy / np.maximum(width, 1),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
