"""Host syncs and the Python line that issued them.

A host sync is a call on which the CPU waits for the GPU: ``cudaStreamSynchronize``,
``cudaDeviceSynchronize``, ``cudaEventSynchronize`` (and their driver and HIP twins), and
the operators behind ``tensor.item()`` and friends, ``aten::item`` and
``aten::_local_scalar_dense`` (they copy a scalar to the host and wait for it). A sync
nested in another (``aten::item`` -> ``aten::_local_scalar_dense`` ->
``cudaStreamSynchronize``) counts once, as the outermost.

The *Python line* of a sync is the innermost enclosing Python frame (``python_function``
event, traces recorded with ``with_stack=True``) that is user code: a ``file.py(line):
function`` frame not under ``torch/``, ``site-packages`` or ``dist-packages``; failing that,
the innermost ``file.py(line)`` frame. Without Python frames it is empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..model.schema import EventKind
from ..model.text import as_text, searched
from ..model.trace import Trace
from . import _enclose as en
from . import _links as lk
from ._common import empty

__all__ = ["SYNC_CALLS", "SYNC_OPS", "host_syncs"]

#: Runtime and driver calls that block the host until the GPU is done.
SYNC_CALLS = (
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "hipStreamSynchronize",
    "hipDeviceSynchronize",
    "hipEventSynchronize",
)
#: Operators that copy a scalar to the host and wait for it (``tensor.item()``, ``float(t)``).
SYNC_OPS = ("aten::item", "aten::_local_scalar_dense")

HOST_SYNC_COLUMNS = {
    "rank": "int64",
    "name": "str",
    "python_line": "str",
    "calls": "int64",
    "total_ns": "int64",
    "max_ns": "int64",
    "first_eid": "int64",
    "first_ts_ns": "int64",
}

_FRAME = re.compile(r"^(?P<file>[^()]+\.py)\((?P<line>\d+)\): ")
_LIBRARY = re.compile(r"(^|/)(torch|site-packages|dist-packages)/")


def host_syncs(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Host syncs per rank, name and issuing Python line: how often, how long.

    Parameters
    ----------
    trace : Trace
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        One row per (rank, name, python_line), sorted by rank, then ``total_ns``
        descending:

        ``rank`` (int); ``name`` (str): the outermost sync call (module docstring);
        ``python_line`` (str): the user frame that issued it, ``file.py(line): function``
        (empty without Python frames); ``calls`` (int); ``total_ns``, ``max_ns`` (int, ns):
        summed and longest duration; ``first_eid`` (int), ``first_ts_ns`` (int, ns): the
        first call.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> syncs = tv.host_syncs(tv.load(tv.sample_path()), ranks=0)
    >>> list(syncs.columns)[:3]
    ['rank', 'name', 'python_line']
    """
    trace = (
        trace.select(ranks=ranks, iterations=iterations, time_range=time_range)
        if (ranks is not None or iterations is not None or time_range is not None)
        else trace
    )
    parts = []
    for r in trace.ranks:
        part = _rank_syncs(trace.rank_data(r).events)
        if part is not None:
            part.insert(0, "rank", r)
            parts.append(part)
    if not parts:
        return empty(HOST_SYNC_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    return out.astype(HOST_SYNC_COLUMNS)[list(HOST_SYNC_COLUMNS)]


def _frame_lut(cats: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """Per name category: is it a ``file.py(line)`` frame, and is it user code."""
    texts = [searched(c) for c in cats.tolist()]  # one conversion: iterating an Arrow-backed Index costs ~5 us a name
    is_file = np.fromiter((_FRAME.match(c) is not None for c in texts), dtype=bool, count=len(cats))
    is_lib = np.fromiter((_LIBRARY.search(c) is not None for c in texts), dtype=bool, count=len(cats))
    return np.append(is_file, False), np.append(is_file & ~is_lib, False)


def _rank_syncs(ev: pd.DataFrame) -> pd.DataFrame | None:
    kinds_call = (EventKind.CUDA_RUNTIME.value, EventKind.CUDA_DRIVER.value)
    is_sync = (lk.category_mask(ev["kind"], kinds_call) & lk.category_mask(ev["name"], SYNC_CALLS)) | (
        lk.category_mask(ev["kind"], [EventKind.CPU_OP.value]) & lk.category_mask(ev["name"], SYNC_OPS)
    )
    rows = np.flatnonzero(is_sync)
    if not len(rows):
        return None
    # Outermost only: drop syncs enclosed by another sync on their thread (an earlier row:
    # the outermost enclosing one is not the sync itself; a later row: an equal sync).
    nested = (en.outermost(ev, rows, rows) < rows) | (en.innermost(ev, rows, rows) > rows)
    rows = rows[~nested]
    cats = pd.Index(as_text(ev["name"].cat.categories))
    codes = ev["name"].cat.codes.to_numpy().astype(np.int64)
    line = np.full(len(rows), "", dtype=object)
    py_rows = np.flatnonzero(lk.category_mask(ev["kind"], [EventKind.PYTHON_FUNCTION.value]))
    if len(py_rows):
        is_file, is_user = _frame_lut(cats)
        for wanted in (is_file, is_user):  # user code wins: written second
            best = en.innermost(ev, py_rows[wanted[codes[py_rows]]], rows)
            has = best >= 0
            line[has] = cats[codes[best[has]]].to_numpy()
    ts = ev["ts_ns"].to_numpy()[rows]
    dur = ev["dur_ns"].to_numpy()[rows]
    frame = pd.DataFrame(
        {
            "name": cats[codes[rows]].to_numpy(),
            "python_line": line,
            "dur": dur,
            "eid": ev["eid"].to_numpy()[rows],
            "ts": ts,
        }
    )
    g = frame.groupby(["name", "python_line"], sort=False)
    out = g.agg(
        calls=("dur", "size"),
        total_ns=("dur", "sum"),
        max_ns=("dur", "max"),
        first_eid=("eid", "first"),
        first_ts_ns=("ts", "first"),
    ).reset_index()
    return out.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)
