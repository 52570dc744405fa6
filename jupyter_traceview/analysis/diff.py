"""Compare two traces: operators and kernels added, removed, slower or faster."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model.schema import EventKind
from ..model.text import as_text
from ..model.trace import Trace
from ._common import scoped
from ._links import category_mask

__all__ = ["trace_diff"]

#: Event kinds compared by default: CPU operators and GPU work.
DIFF_KINDS: tuple[str, ...] = (
    EventKind.CPU_OP.value,
    EventKind.KERNEL.value,
    EventKind.GPU_MEMCPY.value,
    EventKind.GPU_MEMSET.value,
)

STATUSES = ("added", "removed", "changed", "unchanged")


def _columns(per_rank: bool, aggregate: str) -> dict[str, str]:
    count = "int64" if aggregate == "sum" else "float64"
    cols = {"rank": "int64"} if per_rank else {}
    cols.update(
        {
            "kind": "str",
            "name": "str",
            "count_a": count,
            "count_b": count,
            "total_ns_a": "int64",
            "total_ns_b": "int64",
            "mean_ns_a": "float64",
            "mean_ns_b": "float64",
            "count_delta": count,
            "total_delta_ns": "int64",
            "mean_delta_ns": "float64",
            "total_delta_pct": "float64",
            "status": "str",
        }
    )
    return cols


def trace_diff(
    a: Trace,
    b: Trace,
    *,
    kinds: Iterable[str] = DIFF_KINDS,
    per_rank: bool = False,
    aggregate: Literal["sum", "mean"] = "sum",
    rtol: float = 0.05,
    atol_ns: int = 1_000,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Operators and kernels of two traces side by side: counts, durations, what changed.

    This is the table by name; why one run's steps are slower, in causes that add up to
    the change, with a verdict and the noise, is :func:`jupyter_traceview.compare`.

    Events are grouped by (kind, name) (and rank with ``per_rank=True``); each side gets
    its count and total duration. A row's ``status`` is ``added`` (only in ``b``),
    ``removed`` (only in ``a``), ``changed`` (the count differs, or the total duration
    moved by more than ``max(rtol * total_ns_a, atol_ns)``) or ``unchanged``. CPU operator
    durations are inclusive (a parent's time includes its children's).

    Parameters
    ----------
    a, b : Trace or path
        The baseline and the trace compared with it; a path (folder or file) is loaded
        with :func:`jupyter_traceview.load`.
    kinds : iterable of str
        Event kinds compared; default CPU operators, kernels, memcpy and memset.
    per_rank : bool, default False
        Compare rank r of ``a`` with rank r of ``b`` (a rank held by one side only gives
        added/removed rows); otherwise each side is aggregated over its ranks.
    aggregate : {"sum", "mean"}, default "sum"
        Without ``per_rank``: totals and counts summed over ranks, or averaged per rank
        (to compare jobs run on different numbers of ranks).
    rtol, atol_ns : float, int
        Tolerance below which a change of total duration counts as ``unchanged``.
    ranks, iterations, time_range
        Scope, applied to both traces (see :meth:`Trace.select`); to compare different
        steps, pass ``a.select(iterations=...)`` and ``b.select(...)`` instead. Durations
        are clipped to ``time_range``.

    Returns
    -------
    pandas.DataFrame
        Sorted by ``|total_delta_ns|`` descending, then kind and name:

        ``rank`` (int, only with ``per_rank``); ``kind`` (str); ``name`` (str);
        ``count_a``, ``count_b`` (int; float with ``aggregate="mean"``); ``total_ns_a``,
        ``total_ns_b`` (int, ns); ``mean_ns_a``, ``mean_ns_b`` (float, ns; NaN on a side
        without the event); ``count_delta`` (b - a); ``total_delta_ns`` (int, ns, b - a);
        ``mean_delta_ns`` (float, ns; NaN unless on both sides); ``total_delta_pct``
        (float, %: ``100 * total_delta_ns / total_ns_a``, NaN when ``total_ns_a`` is 0);
        ``status`` (str): ``added``, ``removed``, ``changed`` or ``unchanged``.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> d = tv.trace_diff(trace, trace)
    >>> set(d["status"])
    {'unchanged'}
    """
    if aggregate not in ("sum", "mean"):
        raise OptionError.invalid("aggregate", aggregate, ("sum", "mean"))
    if rtol < 0 or atol_ns < 0:
        raise OptionError(f"rtol and atol_ns must be >= 0, got rtol={rtol}, atol_ns={atol_ns}")
    kinds = [kinds] if isinstance(kinds, str) else [str(k) for k in kinds]
    valid = {k.value for k in EventKind}
    bad = [k for k in kinds if k not in valid]
    if bad or not kinds:
        raise OptionError(f"kinds must be event kinds among {sorted(valid)}, got {kinds}")
    ta = scoped(_as_trace(a), ranks=ranks, iterations=iterations, time_range=time_range)
    tb = scoped(_as_trace(b), ranks=ranks, iterations=iterations, time_range=time_range)
    columns = _columns(per_rank, aggregate)
    ra, ka, na, ca, sa = _side(ta, kinds, per_rank, aggregate)
    rb, kb, nb, cb, sb = _side(tb, kinds, per_rank, aggregate)
    if len(ka) + len(kb) == 0:
        return pd.DataFrame({c: pd.Series([], dtype=d) for c, d in columns.items()})
    # Outer join of the two sides on (rank, kind, name), with hash factorisation.
    rank = np.concatenate((ra, rb))
    kind = np.concatenate((ka, kb))
    name = np.concatenate((na, nb))
    key, uniq = _keys(rank, kind, name)
    n = len(uniq)
    side_b = np.arange(len(key)) >= len(ka)
    count_a = np.bincount(key[~side_b], weights=ca.astype(np.float64), minlength=n)
    count_b = np.bincount(key[side_b], weights=cb.astype(np.float64), minlength=n)
    tot_a = np.bincount(key[~side_b], weights=sa.astype(np.float64), minlength=n)
    tot_b = np.bincount(key[side_b], weights=sb.astype(np.float64), minlength=n)
    first = np.empty(n, dtype=np.int64)
    first[key[::-1]] = np.arange(len(key) - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_a = np.where(count_a > 0, tot_a / count_a, np.nan)
        mean_b = np.where(count_b > 0, tot_b / count_b, np.nan)
        delta_pct = np.where(tot_a > 0, 100.0 * (tot_b - tot_a) / tot_a, np.nan)
    moved = np.abs(tot_b - tot_a) > np.maximum(rtol * tot_a, atol_ns)
    status = np.where(
        count_a == 0,
        "added",
        np.where(count_b == 0, "removed", np.where((count_a != count_b) | moved, "changed", "unchanged")),
    )
    out = {
        "rank": rank[first],
        "kind": kind[first],
        "name": name[first],
        "count_a": count_a,
        "count_b": count_b,
        "total_ns_a": np.rint(tot_a).astype(np.int64),
        "total_ns_b": np.rint(tot_b).astype(np.int64),
        "mean_ns_a": mean_a,
        "mean_ns_b": mean_b,
        "count_delta": count_b - count_a,
        "total_delta_ns": np.rint(tot_b - tot_a).astype(np.int64),
        "mean_delta_ns": mean_b - mean_a,
        "total_delta_pct": delta_pct,
        "status": status,
    }
    # Names sort through their dense ranks (object strings): never a fixed-width string array,
    # whose width is that of the longest name (a 50 MB kernel name made it allocate 40 GiB).
    order = np.lexsort(
        (_sort_ranks(out["name"]), _sort_ranks(out["kind"]), out["rank"], -np.abs(out["total_delta_ns"]))
    )
    frame = pd.DataFrame({c: out[c][order] for c in columns})
    return frame.astype(columns)


def _sort_ranks(values: np.ndarray) -> np.ndarray:
    """Each value's place in the sorted distinct values (as strings), without a fixed-width copy."""
    codes: np.ndarray
    codes, _ = pd.factorize(as_text(pd.Series(values, dtype=object)), sort=True)
    return codes


def _keys(rank: np.ndarray, kind: np.ndarray, name: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense ids of the (rank, kind, name) triples."""
    name_id, _ = pd.factorize(name)
    kind_id, kinds = pd.factorize(kind)
    r_id, _ = pd.factorize(rank)
    combined = (r_id.astype(np.int64) * (len(kinds) + 1) + kind_id) * (int(name_id.max(initial=0)) + 1) + name_id
    key, uniq = pd.factorize(combined)
    return key.astype(np.int64), np.asarray(uniq)


def _as_trace(t: object) -> Trace:
    if isinstance(t, Trace):
        return t
    raise TypeError(
        f"trace_diff compares two Trace objects, got {type(t).__name__}: load paths first, "
        "tv.trace_diff(tv.load(a), tv.load(b))"
    )


def _side(
    trace: Trace, kinds: list[str], per_rank: bool, aggregate: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(rank, kind, name, count, total_ns) arrays of one trace, per rank or over its ranks.

    Without ``per_rank`` the rank is -1 and the rows of all ranks are summed (or averaged
    per rank, ``aggregate="mean"``).
    """
    ranks, kind_out, names, counts, totals = [], [], [], [], []
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        mask = category_mask(ev["kind"], kinds)
        if not mask.any():
            continue
        k_code = ev["kind"].cat.codes.to_numpy()[mask].astype(np.int64)
        n_code = ev["name"].cat.codes.to_numpy()[mask].astype(np.int64)
        dur = ev["dur_ns"].to_numpy()[mask]
        if trace.window is not None:
            lo, hi = trace.window
            ts = ev["ts_ns"].to_numpy()[mask]
            dur = np.maximum(np.minimum(ts + dur, hi) - np.maximum(ts, lo), 0)
        n_names = len(ev["name"].cat.categories) + 1
        uniq, inv = np.unique(k_code * n_names + (n_code + 1), return_inverse=True)
        kind_cats = np.asarray(as_text(ev["kind"].cat.categories), dtype=object)
        name_cats = np.append(np.asarray(as_text(ev["name"].cat.categories), dtype=object), "")
        ranks.append(np.full(len(uniq), r if per_rank else -1, dtype=np.int64))
        kind_out.append(kind_cats[uniq // n_names])
        names.append(name_cats[uniq % n_names - 1])
        counts.append(np.bincount(inv, minlength=len(uniq)).astype(np.float64))
        totals.append(np.bincount(inv, weights=dur.astype(np.float64), minlength=len(uniq)))
    if not ranks:
        e = np.empty(0)
        return e.astype(np.int64), e.astype(object), e.astype(object), e, e.copy()
    rank: np.ndarray = np.concatenate(ranks)
    kind: np.ndarray = np.concatenate(kind_out)
    name: np.ndarray = np.concatenate(names)
    count: np.ndarray = np.concatenate(counts)
    total: np.ndarray = np.concatenate(totals)
    if not per_rank:
        key, _ = _keys(rank, kind, name)
        m = int(key.max()) + 1
        first = np.empty(m, dtype=np.int64)
        first[key[::-1]] = np.arange(len(key) - 1, -1, -1)
        count = np.bincount(key, weights=count, minlength=m)
        total = np.bincount(key, weights=total, minlength=m)
        rank, kind, name = rank[first], kind[first], name[first]
        if aggregate == "mean":
            count = count / len(trace.ranks)
            total = total / len(trace.ranks)
    return rank, kind, name, count, total
