"""Which kernels take the GPU's time: breakdown by kernel type and by kernel, and how a
kernel's duration varies across ranks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model import intervals as iv
from ..model.trace import Trace
from ._common import empty, pct, scoped, warn_no_gpu
from ._gpu import CLASSES, OTHER, activities

__all__ = ["KERNEL_TYPES", "OVERLAP_TYPES", "kernel_breakdown", "kernel_duration_distribution", "rank_kernel_totals"]

#: Kernel types of the per-kernel views (the GPU work classes), in the order rows are given;
#: positions are the class codes of ``_gpu.activities``.
KERNEL_TYPES: tuple[str, ...] = CLASSES[:OTHER]
#: Labels of the exclusive time segments of ``kernel_breakdown(by="type")``: bit i of the
#: position is set when KERNEL_TYPES[i] runs (position 0, nothing running, is unused).
OVERLAP_TYPES: tuple[str, ...] = tuple(
    " overlapping ".join(t for i, t in enumerate(KERNEL_TYPES) if mask >> i & 1) for mask in range(1, 8)
)
#: Name of the row grouping the kernels beyond the top k.
OTHERS = "others"

TYPE_COLUMNS = {
    "rank": "int64",
    "kernel_type": pd.CategoricalDtype(list(OVERLAP_TYPES)),
    "time_ns": "int64",
    "busy_pct": "float64",
}

KERNEL_COLUMNS = {
    "rank": "int64",
    "kernel_type": pd.CategoricalDtype(list(KERNEL_TYPES)),
    "name": "category",
    "count": "int64",
    "sum_ns": "int64",
    "mean_ns": "float64",
    "min_ns": "int64",
    "max_ns": "int64",
    "std_ns": "float64",
    "type_share_pct": "float64",
}

DISTRIBUTION_COLUMNS = {
    "name": "category",
    "kernel_type": pd.CategoricalDtype(list(KERNEL_TYPES)),
    "rank": "int64",
    "count": "int64",
    "sum_ns": "int64",
    "mean_ns": "float64",
    "min_ns": "int64",
    "max_ns": "int64",
    "std_ns": "float64",
    "median_mean_ns": "float64",
    "deviation_pct": "float64",
    "robust_z": "float64",
    "outlier": "bool",
}

#: Outlier rule of kernel_duration_distribution (Iglewicz & Hoaglin's modified z-score).
ROBUST_Z_LIMIT = 3.5
#: ... and the smallest deviation from the median (% of it) worth flagging.
MIN_DEVIATION_PCT = 5.0
#: ... among at least this many ranks running the kernel.
MIN_RANKS = 3


def _check_top_k(top_k: int | None) -> None:
    if top_k is None:
        return
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 0:
        raise OptionError(f"top_k must be a non-negative integer or None (all kernels), got {top_k!r}")


def _rank_totals(trace: Trace) -> pd.DataFrame | None:
    """Phase 1, per rank where it lives: total time and count of each (type, kernel name)."""
    (r,) = trace.ranks
    acts = activities(trace, r, work_only=True)
    if len(acts) == 0:
        return None
    n = len(acts.names)
    key = acts.cls.astype(np.int64) * n + acts.name
    count = np.bincount(key, minlength=len(KERNEL_TYPES) * n)
    total = np.zeros(len(count), dtype=np.int64)
    np.add.at(total, key, acts.dur)
    at = np.flatnonzero(count)
    tcode, code = np.divmod(at, n)
    return pd.DataFrame(
        {"tcode": tcode, "name": np.asarray(acts.names, dtype=object)[code], "total": total[at], "count": count[at]}
    )


def rank_kernel_totals(trace: Trace) -> pd.DataFrame | None:
    """One rank's GPU time and count per (type code into :data:`KERNEL_TYPES`, kernel name):
    the first phase of ``kernel_breakdown(by="kernel")``, for readers that need only the
    totals (the ``dominant_kernel_family`` finding, per rank through ``per_rank``).
    Columns ``tcode``, ``name``, ``total`` (ns), ``count``; None without GPU work."""
    return _rank_totals(trace)


def _totals(trace: Trace, analysis: str) -> pd.DataFrame | None:
    """Phase 1 over all ranks: (type, name) totals summed over ranks; None without GPU work."""
    per_rank = trace.map_ranks(_rank_totals)
    missing = [r for r, f in per_rank.items() if f is None]
    if missing:
        warn_no_gpu(analysis, missing)
    parts = [f for f in per_rank.values() if f is not None]
    if not parts:
        return None
    return pd.concat(parts, ignore_index=True).groupby(["tcode", "name"], as_index=False)[["total", "count"]].sum()


def _ranked(totals: pd.DataFrame, *, by_type: bool) -> pd.DataFrame:
    """Kernels by decreasing total time, ties by name then type (never by event order);
    with ``by_type`` sorted within each type."""
    order = ["tcode", "total", "name"] if by_type else ["total", "name", "tcode"]
    asc = [True, False, True] if by_type else [False, True, True]
    return totals.sort_values(order, ascending=asc, kind="stable").reset_index(drop=True)


def _rank_label_stats(trace: Trace, chosen: list[tuple[int, str]], others: bool) -> dict[str, np.ndarray] | None:
    """Phase 2, per rank where it lives: statistics of the executions of each chosen
    (type, name), by its position in ``chosen``; with ``others`` the rest of each type is
    grouped under position ``len(chosen)``, else left out."""
    (r,) = trace.ranks
    acts = activities(trace, r, work_only=True)
    if len(acts) == 0:
        return None
    n_chosen = len(chosen)
    rest = n_chosen if others else -1
    lut = np.full((len(KERNEL_TYPES), len(acts.names)), rest, dtype=np.int64)
    if n_chosen:
        tcodes = np.array([t for t, _ in chosen], dtype=np.int64)
        codes = acts.names.get_indexer(pd.Index([n for _, n in chosen], dtype=acts.names.dtype))
        here = codes >= 0
        lut[tcodes[here], codes[here]] = np.flatnonzero(here)
    label = lut[acts.cls, acts.name]
    sel = np.flatnonzero(label >= 0)
    n_labels = n_chosen + 1
    key = acts.cls[sel].astype(np.int64) * n_labels + label[sel]
    st = _group_stats(key, acts.dur[sel], len(KERNEL_TYPES) * n_labels)
    st["tcode"], st["label"] = np.divmod(st.pop("key"), n_labels)
    st["rank"] = np.full(len(st["tcode"]), r, dtype=np.int64)
    return st


def _group_stats(key: np.ndarray, dur: np.ndarray, n_keys: int) -> dict[str, np.ndarray]:
    """count, sum, mean, min, max and std (ddof=1; 0 for one value) of ``dur`` per key, for
    the keys that occur (``key`` column, ascending)."""
    count = np.bincount(key, minlength=n_keys)
    total = np.zeros(n_keys, dtype=np.int64)
    np.add.at(total, key, dur)
    lo = np.full(n_keys, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(lo, key, dur)
    hi = np.full(n_keys, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(hi, key, dur)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = total / count
        ss = np.zeros(n_keys, dtype=np.float64)
        np.add.at(ss, key, (dur - mean[key]) ** 2)
        std = np.where(count > 1, np.sqrt(ss / (count - 1)), 0.0)
    at = np.flatnonzero(count)
    return {
        "key": at,
        "count": count[at],
        "sum": total[at],
        "mean": mean[at],
        "min": lo[at],
        "max": hi[at],
        "std": std[at],
    }


def kernel_breakdown(
    trace: Trace,
    *,
    by: Literal["kernel", "type"] = "kernel",
    top_k: int | None = 10,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """GPU time per kernel (``by="kernel"``) or per kernel type (``by="type"``), per rank.

    Kernel types are the GPU work classes: ``compute``, ``communication`` and ``memory``
    (copies and sets count as kernels of type memory). Synchronisation records are not work
    and never appear.

    ``by="kernel"``
        The ``top_k`` kernels of each type by total time over all the selected ranks (the
        same kernels on every rank, so ranks line up), with statistics of their individual
        executions per rank; the other kernels of the type are grouped in one row named
        ``"others"`` whose statistics are over its individual executions too.
    ``by="type"``
        Exclusive wall-clock time: the rank's GPU busy time cut into segments by which
        types run in them, e.g. ``"compute overlapping communication"`` when both run at
        once on different streams. The rows of a rank add up to its busy time. Sum
        ``time_ns`` over ranks for the job-wide figure.

    Parameters
    ----------
    trace : Trace
    by : {"kernel", "type"}, default "kernel"
    top_k : int or None, default 10
        ``by="kernel"``: kernels kept per type; None keeps every kernel (no ``others``).
    ranks, iterations, time_range
        Narrow the scope (see :meth:`Trace.select`); with ``time_range`` activities are
        clipped to it and only their time inside counts.

    Returns
    -------
    pandas.DataFrame
        ``by="kernel"``: one row per (rank, kernel_type, name), sorted by rank, type and
        time, ``others`` last:

        ``rank`` (int), ``kernel_type`` (categorical: compute, communication, memory),
        ``name`` (categorical: the kernel's full name, or ``"others"``), ``count`` (int:
        executions), ``sum_ns`` (int, ns: total time), ``mean_ns`` (float, ns),
        ``min_ns``, ``max_ns`` (int, ns), ``std_ns`` (float, ns: sample standard deviation,
        0 for one execution), ``type_share_pct`` (float, % of the rank's total time of
        kernels of this type).

        ``by="type"``: one row per (rank, kernel_type) with time, sorted by rank and time:

        ``rank`` (int), ``kernel_type`` (categorical: ``compute``, ``communication``,
        ``memory`` and their overlaps ``"compute overlapping communication"``, ...),
        ``time_ns`` (int, ns: exclusive wall-clock time), ``busy_pct`` (float, % of the
        rank's GPU busy time).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> kb = tv.kernel_breakdown(trace, by="type", ranks=0)
    >>> kb[["kernel_type", "time_ns"]].values.tolist()[:2]
    [['communication', 5537000], ['compute', 773000]]
    """
    if by not in ("kernel", "type"):
        raise OptionError.invalid("by", by, ("kernel", "type"))
    _check_top_k(top_k)
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    if by == "type":
        return _by_type(trace)
    return _by_kernel(trace, top_k)


def _by_type(trace: Trace) -> pd.DataFrame:
    rows: list[tuple[int, str, int, float]] = []
    missing = []
    for r in trace.ranks:
        acts = activities(trace, r, work_only=True)
        if len(acts) == 0:
            missing.append(r)
            continue
        s, e, mask = iv.segments(*(acts.union(t) for t in range(len(KERNEL_TYPES))))
        time = np.zeros(8, dtype=np.int64)
        np.add.at(time, mask, e - s)
        busy = int(time.sum())
        rows.extend(
            (r, OVERLAP_TYPES[m - 1], int(time[m]), 100.0 * time[m] / busy) for m in np.flatnonzero(time[1:]) + 1
        )
    if missing:
        warn_no_gpu("kernel_breakdown", missing)
    if not rows:
        return empty(TYPE_COLUMNS)
    out = pd.DataFrame(rows, columns=list(TYPE_COLUMNS)).astype(TYPE_COLUMNS)
    out["_order"] = out["kernel_type"].cat.codes
    out = out.sort_values(["rank", "time_ns", "_order"], ascending=[True, False, True], kind="stable")
    return out.drop(columns="_order").reset_index(drop=True)


def _by_kernel(trace: Trace, top_k: int | None) -> pd.DataFrame:
    totals = _totals(trace, "kernel_breakdown")
    if totals is None:
        return empty(KERNEL_COLUMNS)
    ranked = _ranked(totals, by_type=True)
    if top_k is not None:
        ranked = ranked.groupby("tcode", sort=False).head(top_k).reset_index(drop=True)
    chosen = list(zip(ranked["tcode"].tolist(), ranked["name"].tolist(), strict=True))
    parts = [st for st in trace.map_ranks(_rank_label_stats, chosen, True).values() if st is not None]
    c = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    # Rank, type, then the kept kernels in their order and "others" (the last label) last.
    order = np.lexsort((c["label"], c["tcode"], c["rank"]))
    c = {k: v[order] for k, v in c.items()}
    type_total = pd.Series(c["sum"]).groupby([c["rank"], c["tcode"]]).transform("sum").to_numpy()
    label_names = np.append(ranked["name"].to_numpy(dtype=object), OTHERS)
    out = pd.DataFrame(
        {
            "rank": c["rank"],
            "kernel_type": pd.Categorical.from_codes(c["tcode"], categories=list(KERNEL_TYPES)),
            "name": pd.Categorical(label_names[c["label"]]),
            "count": c["count"],
            "sum_ns": c["sum"],
            "mean_ns": c["mean"],
            "min_ns": c["min"],
            "max_ns": c["max"],
            "std_ns": c["std"],
            "type_share_pct": np.asarray(pct(c["sum"], type_total), dtype=np.float64),
        }
    )
    return out.astype(KERNEL_COLUMNS)


def kernel_duration_distribution(
    trace: Trace,
    *,
    top_k: int | None = 10,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Duration statistics of the top kernels on each rank, with outlier ranks flagged.

    The top kernels are the ``top_k`` kernels (any type) with the most total time over all
    the selected ranks. For each of them and each rank that runs it: count, mean, min,
    max and standard deviation of its executions. A rank is an *outlier* for a kernel when
    its mean duration is far from the other ranks': Iglewicz and Hoaglin's modified
    z-score ``0.6745 * (mean - median) / MAD`` of the rank's mean among the per-rank means
    (median and median absolute deviation over ranks) exceeds 3.5 in absolute value, the
    mean differs from the median by more than 5 %, and at least 3 ranks run the kernel.
    The rule is robust: one or two slow ranks do not hide themselves by inflating a
    standard deviation.

    Parameters
    ----------
    trace : Trace
    top_k : int or None, default 10
        Number of kernels; None for all.
    ranks, iterations, time_range
        Narrow the scope (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        One row per (kernel, rank running it), kernels by decreasing total time, then rank:

        ``name`` (categorical), ``kernel_type`` (categorical: compute, communication,
        memory), ``rank`` (int), ``count`` (int), ``sum_ns`` (int, ns), ``mean_ns``
        (float, ns), ``min_ns``, ``max_ns`` (int, ns), ``std_ns`` (float, ns: sample
        standard deviation, 0 for one execution), ``median_mean_ns`` (float, ns: median
        over ranks of ``mean_ns``), ``deviation_pct`` (float, %: ``mean_ns`` relative to
        that median), ``robust_z`` (float: the modified z-score; ±inf when the MAD is 0
        and the mean differs from the median, NaN with fewer than 3 ranks), ``outlier``
        (bool).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> dist = tv.kernel_duration_distribution(tv.load(tv.sample_path()), top_k=2)
    >>> dist.loc[dist["outlier"], "rank"].tolist()  # their all-reduces are 8x shorter
    [4, 5]
    """
    _check_top_k(top_k)
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    totals = _totals(trace, "kernel_duration_distribution")
    if totals is None:
        return empty(DISTRIBUTION_COLUMNS)
    ranked = _ranked(totals, by_type=False)
    if top_k is not None:
        ranked = ranked.head(top_k).reset_index(drop=True)
    chosen = list(zip(ranked["tcode"].tolist(), ranked["name"].tolist(), strict=True))
    parts = [st for st in trace.map_ranks(_rank_label_stats, chosen, False).values() if st is not None]
    c = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    c["pos"] = c.pop("label")
    order = np.lexsort((c["rank"], c["pos"]))
    c = {k: v[order] for k, v in c.items()}

    # Robust statistics of the per-rank means, per kernel (few rows: pandas is fine here).
    mean = pd.Series(c["mean"])
    g = mean.groupby(c["pos"])
    median = g.transform("median").to_numpy()
    dev = c["mean"] - median
    mad = pd.Series(np.abs(dev)).groupby(c["pos"]).transform("median").to_numpy()
    n_ranks = g.transform("size").to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(mad > 0, 0.6745 * dev / mad, np.where(dev == 0, 0.0, np.sign(dev) * np.inf))
        deviation_pct = np.where(median > 0, 100.0 * dev / median, np.nan)
    z = np.where(n_ranks >= MIN_RANKS, z, np.nan)
    outlier = (np.abs(z) > ROBUST_Z_LIMIT) & (np.abs(deviation_pct) > MIN_DEVIATION_PCT)
    top_names = ranked["name"].to_numpy()
    out = pd.DataFrame(
        {
            "name": pd.Categorical(top_names[c["pos"]], categories=pd.unique(top_names)),
            "kernel_type": pd.Categorical.from_codes(
                ranked["tcode"].to_numpy()[c["pos"]], categories=list(KERNEL_TYPES)
            ),
            "rank": c["rank"],
            "count": c["count"],
            "sum_ns": c["sum"],
            "mean_ns": c["mean"],
            "min_ns": c["min"],
            "max_ns": c["max"],
            "std_ns": c["std"],
            "median_mean_ns": median,
            "deviation_pct": deviation_pct,
            "robust_z": z,
            "outlier": outlier,
        }
    )
    return out.astype(DISTRIBUTION_COLUMNS)
