"""The modelled matrix products of :func:`op_performance` alone, without modelling every operator's GPU time.

The findings rules on matrix products (``gemm_below_peak``, ``tiny_gemms``, ``fp32_matmul``)
read ``op_performance(by="shape")``'s rows with status ``modelled``, a matrix family and GPU
time. :func:`matrix_shapes` gives exactly those rows (the same values, in the same order:
a test compares them on the real traces) at a fraction of the cost, because it follows the
enclosure only where it decides something about a matrix product:

* a matrix product *counts* (see :mod:`.performance`) when it is a candidate and no
  enclosing operator is one, so only the operators enclosing a matrix product are looked
  at (sweeps with the matrix products as points, not every operator);
* a composite is a candidate unless a modelled operator inside it takes its work, so
  delegation is decided only for the composites among those (and the composite matrix
  products themselves);
* counted operators never nest, so a counted matrix product's GPU time is that of every
  activity launched inside it: the innermost counted matrix product around each launch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...model.schema import EventKind
from ...model.text import as_text
from ...model.trace import Trace
from .. import _enclose as en
from .. import _links as lk
from .._common import empty
from .._memo import per_rank
from ..operators import GPU_WORK_KINDS, RankLinks
from .model import COMPOSITE, Work
from .performance import delegated_work, resolve_peaks, shape_texts, work_of_ops
from .roofline import MATRIX_FAMILIES, SHAPE_COLUMNS, by_shape

__all__ = ["matrix_shapes"]


def matrix_shapes(trace: Trace, *, time_range: tuple[int, int] | None = None) -> pd.DataFrame:
    """``op_performance(trace, by="shape", time_range=time_range)`` restricted to the rows with
    status ``modelled``, a family in :data:`MATRIX_FAMILIES` and ``gpu_ns > 0`` (same columns)."""
    trace, window = lk.scope_linked(trace, ranks=None, iterations=None, time_range=time_range)
    device_peaks_of = resolve_peaks(trace, None)
    per = per_rank(trace, _one_rank_matrix, window, keep=window is None)  # kept for the whole trace only
    frames = [f for f in per.values() if f is not None and len(f)]
    if not frames:
        return empty(SHAPE_COLUMNS)
    out = by_shape(pd.concat(frames, ignore_index=True), device_peaks_of, False)
    return out.loc[out["gpu_ns"].to_numpy() > 0].reset_index(drop=True)


def _one_rank_matrix(trace: Trace, window: tuple[int, int] | None) -> pd.DataFrame | None:
    """:func:`_rank_matrix` of a one-rank trace."""
    (r,) = trace.ranks
    return _rank_matrix(trace, r, window)


def _rank_matrix(trace: Trace, rank: int, window: tuple[int, int] | None) -> pd.DataFrame | None:
    d = trace.rank_data(rank)
    ev = d.events
    op_rows = np.flatnonzero(lk.category_mask(ev["kind"], [EventKind.CPU_OP.value]))
    n_ops = len(op_rows)
    if not n_ops:
        return None
    work_code, distinct = work_of_ops(ev, d.op_args, op_rows)
    u = distinct.tolist()
    u_is_work = np.array([isinstance(w, Work) for w in u], dtype=bool)
    u_family = np.array([w.family if isinstance(w, Work) else "" for w in u], dtype=object)
    # Decided once per distinct model result, not per operator.
    u_matrix = u_is_work & np.isin(u_family, MATRIX_FAMILIES)
    if not u_matrix.any():
        return None
    matrix = np.flatnonzero(u_matrix[work_code])
    if not len(matrix):
        return None
    links = RankLinks(trace, rank, list(GPU_WORK_KINDS), window)
    is_work = u_is_work[work_code]
    family = u_family[work_code]
    composite = np.isin(as_text(links.names), list(COMPOSITE))[links.name_codes[op_rows]]
    # Delegation, for the composites that matter: the modelled ones enclosing a matrix
    # product from an earlier row (only modelled operators can be candidates) and the
    # composite matrix products themselves.
    comp_work = np.flatnonzero(composite & is_work)
    outer = comp_work[en.encloses_later(ev, op_rows[comp_work], op_rows[matrix])]
    need = np.union1d(outer, matrix[composite[matrix]])
    delegated = delegated_work(ev, op_rows, need, is_work, family)
    candidate = is_work & ~(composite & delegated)
    # Covered: a candidate encloses it from an earlier row.
    covered = en.outermost(ev, op_rows[np.flatnonzero(candidate)], op_rows[matrix]) < op_rows[matrix]
    counted = matrix[candidate[matrix] & ~covered]
    if not len(counted):
        return None
    # Counted operators never nest: every activity launched inside one is its own.
    a_row = en.innermost(ev, op_rows[counted], links.launch)
    a_i = np.flatnonzero(a_row >= 0)
    owner = np.searchsorted(counted, np.searchsorted(op_rows, a_row[a_i]))
    dur = links.acts["dur_ns"].to_numpy().astype(np.int64)
    gpu_ns = np.bincount(owner, weights=dur[a_i].astype(np.float64), minlength=len(counted))
    kernels = np.bincount(owner, minlength=len(counted))
    keep = np.ones(len(counted), dtype=bool)
    if window is not None:
        ts = links.ts[op_rows[counted]]
        end = ts + links.dur[op_rows[counted]]
        keep = (kernels > 0) | ((ts < window[1]) & (end > window[0]))
    counted, gpu_ns, kernels = counted[keep], gpu_ns[keep], kernels[keep]
    rows = op_rows[counted]
    wc = work_code[counted]
    none = np.full(len(rows), None, dtype=object)

    def attr(c: str) -> pd.Series:
        vals = np.array([getattr(w, c) if isinstance(w, Work) else None for w in u], dtype=object)
        return pd.Series(vals[wc], dtype=object)

    def num(c: str) -> np.ndarray:
        vals = np.array([float(getattr(w, c)) if isinstance(w, Work) else np.nan for w in u], dtype=np.float64)
        out: np.ndarray = vals[wc]
        return out

    return pd.DataFrame(
        {
            "rank": np.full(len(rows), rank, dtype=np.int64),
            "eid": ev["eid"].to_numpy()[rows],
            "name": pd.Series(as_text(links.names[links.name_codes[rows]]), dtype=object),
            "status": pd.Series(np.full(len(rows), "modelled", dtype=object), dtype=object),
            "reason": pd.Series(none, dtype=object),
            "family": attr("family"),
            "dtype": attr("dtype"),
            "shape": pd.Series(shape_texts(d.op_args, links.ev, rows), dtype=object),
            "detail": attr("detail"),
            "flops": num("flops"),
            "bytes": num("bytes"),
            "kernels": kernels.astype(np.int64),
            "gpu_ns": np.rint(gpu_ns).astype(np.int64),
        }
    )
