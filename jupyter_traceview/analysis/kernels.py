"""Which kernels take the GPU's time: breakdown by kernel type and by kernel, and how a
kernel's duration varies across ranks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from .. import intervals as iv
from ..trace import Trace
from ._common import WORK_CLASSES, class_union, empty, gpu_activities, pct, scoped, warn_no_gpu

__all__ = ["KERNEL_TYPES", "OVERLAP_TYPES", "kernel_breakdown", "kernel_duration_distribution"]

#: Kernel types of the per-kernel views (the GPU work classes), in the order rows are given.
KERNEL_TYPES: tuple[str, ...] = tuple(WORK_CLASSES)
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
        raise ValueError(f"top_k must be a non-negative integer or None (all kernels), got {top_k!r}")


def _stack(trace: Trace, analysis: str) -> pd.DataFrame:
    """GPU work activities of every rank in one frame: rank, type code, name, dur_ns.

    ``tcode`` indexes KERNEL_TYPES; ``name`` is one categorical over all ranks.
    """
    ranks, tcodes, names, durs = [], [], [], []
    missing = []
    type_code = {t: i for i, t in enumerate(KERNEL_TYPES)}
    for r in trace.ranks:
        acts = gpu_activities(trace, r, classes=WORK_CLASSES)
        if acts.empty:
            missing.append(r)
            continue
        cls = acts["gpu_class"].array
        lut = np.array([type_code.get(c, -1) for c in cls.categories], dtype=np.int8)
        tcodes.append(lut[np.asarray(cls.codes)])
        names.append(acts["name"].array)
        durs.append(acts["dur_ns"].to_numpy())
        ranks.append(np.full(len(acts), r, dtype=np.int64))
    if missing:
        warn_no_gpu(analysis, missing)
    if not ranks:
        return pd.DataFrame(
            {
                "rank": np.empty(0, np.int64),
                "tcode": np.empty(0, np.int8),
                "name": pd.Categorical([]),
                "dur_ns": np.empty(0, np.int64),
            }
        )
    return pd.DataFrame(
        {
            "rank": np.concatenate(ranks),
            "tcode": np.concatenate(tcodes),
            "name": union_categoricals(names, ignore_order=True),
            "dur_ns": np.concatenate(durs),
        }
    )


def _top(stack: pd.DataFrame, top_k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The top_k (type, name code) pairs per type by total time over all ranks, best first."""
    codes = np.asarray(stack["name"].array.codes, dtype=np.int64)
    totals = (
        pd.DataFrame({"tcode": stack["tcode"].to_numpy(), "ncode": codes, "dur": stack["dur_ns"].to_numpy()})
        .groupby(["tcode", "ncode"], sort=False)["dur"]
        .sum()
        .reset_index()
    )
    names = np.asarray(stack["name"].array.categories.astype(str))
    # Ties in time are broken by name, so the choice never depends on event order.
    totals["n"] = names[totals["ncode"].to_numpy()]
    totals = totals.sort_values(["tcode", "dur", "n"], ascending=[True, False, True], kind="stable")
    if top_k is not None:
        totals = totals.groupby("tcode", sort=False).head(top_k)
    return totals["tcode"].to_numpy(), totals["ncode"].to_numpy()


def _per_name_stats(keys: pd.DataFrame) -> pd.DataFrame:
    """count, sum, mean, min, max, std (ddof=1; 0 for a single event) of dur per key group."""
    cols = [c for c in keys.columns if c != "dur"]
    g = keys.groupby(cols, sort=False)["dur"]
    out = g.agg(["count", "sum", "mean", "min", "max", "std"])
    out["std"] = out["std"].fillna(0.0)
    return out.reset_index()


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
    [['communication', 5431000], ['compute', 872000]]
    """
    if by not in ("kernel", "type"):
        raise ValueError(f"by must be 'kernel' or 'type', got {by!r}")
    _check_top_k(top_k)
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    if by == "type":
        return _by_type(trace)
    return _by_kernel(trace, top_k)


def _by_type(trace: Trace) -> pd.DataFrame:
    rows: list[tuple[int, str, int, float]] = []
    missing = []
    for r in trace.ranks:
        acts = gpu_activities(trace, r, classes=WORK_CLASSES)
        if acts.empty:
            missing.append(r)
            continue
        s, e, mask = iv.segments(*(class_union(acts, [t]) for t in KERNEL_TYPES))
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
    stack = _stack(trace, "kernel_breakdown")
    if stack.empty:
        return empty(KERNEL_COLUMNS)
    top_t, top_n = _top(stack, top_k)
    categories = stack["name"].array.categories
    n_names = len(categories)
    tcode = stack["tcode"].to_numpy().astype(np.int64)
    ncode = np.asarray(stack["name"].array.codes, dtype=np.int64)
    kept = np.isin(tcode * n_names + ncode, top_t.astype(np.int64) * n_names + top_n)
    label = np.where(kept, ncode, n_names)  # n_names stands for "others"
    stats = _per_name_stats(
        pd.DataFrame({"rank": stack["rank"].to_numpy(), "tcode": tcode, "label": label, "dur": stack["dur_ns"]})
    )
    type_total = stats.groupby(["rank", "tcode"])["sum"].transform("sum").to_numpy()
    # Order: rank, type, then the top kernels by their global rank, others last.
    position = np.full(n_names + 1, len(top_n), dtype=np.int64)
    position[top_n] = np.arange(len(top_n))
    stats["_pos"] = position[stats["label"].to_numpy()]
    stats["_type_share"] = pct(stats["sum"].to_numpy(), type_total)
    stats = stats.sort_values(["rank", "tcode", "_pos"], kind="stable")
    name_values = np.append(np.asarray(categories.astype(str), dtype=object), OTHERS)
    out = pd.DataFrame(
        {
            "rank": stats["rank"].to_numpy(),
            "kernel_type": pd.Categorical.from_codes(stats["tcode"].to_numpy(), categories=list(KERNEL_TYPES)),
            "name": pd.Categorical(name_values[stats["label"].to_numpy()]),
            "count": stats["count"].to_numpy(),
            "sum_ns": stats["sum"].to_numpy(),
            "mean_ns": stats["mean"].to_numpy(),
            "min_ns": stats["min"].to_numpy(),
            "max_ns": stats["max"].to_numpy(),
            "std_ns": stats["std"].to_numpy(),
            "type_share_pct": stats["_type_share"].to_numpy(),
        }
    )
    return out.astype(KERNEL_COLUMNS).reset_index(drop=True)


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
    >>> dist = tv.kernel_duration_distribution(tv.load(tv.sample_path()), top_k=1)
    >>> dist.loc[dist["outlier"], "rank"].tolist()
    [7]
    """
    _check_top_k(top_k)
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    stack = _stack(trace, "kernel_duration_distribution")
    if stack.empty:
        return empty(DISTRIBUTION_COLUMNS)
    # One pool over all types: rank (type, name) pairs by total time.
    tcode = stack["tcode"].to_numpy().astype(np.int64)
    ncode = np.asarray(stack["name"].array.codes, dtype=np.int64)
    categories = stack["name"].array.categories
    names = np.asarray(categories.astype(str), dtype=object)
    totals = (
        pd.DataFrame({"tcode": tcode, "ncode": ncode, "dur": stack["dur_ns"].to_numpy()})
        .groupby(["tcode", "ncode"], sort=False)["dur"]
        .sum()
        .reset_index()
    )
    totals["n"] = names[totals["ncode"].to_numpy()]
    totals = totals.sort_values(["dur", "n", "tcode"], ascending=[False, True, True], kind="stable")
    if top_k is not None:
        totals = totals.head(top_k)
    key_all = tcode * len(names) + ncode
    key_top = totals["tcode"].to_numpy() * len(names) + totals["ncode"].to_numpy()
    position = pd.Series(np.arange(len(key_top)), index=key_top)
    sel = np.isin(key_all, key_top)
    pos = position.reindex(key_all[sel]).to_numpy()
    stats = _per_name_stats(
        pd.DataFrame({"pos": pos, "rank": stack["rank"].to_numpy()[sel], "dur": stack["dur_ns"].to_numpy()[sel]})
    )
    stats = stats.sort_values(["pos", "rank"], kind="stable").reset_index(drop=True)

    g = stats.groupby("pos")["mean"]
    median = g.transform("median").to_numpy()
    absdev = np.abs(stats["mean"].to_numpy() - median)
    mad = pd.Series(absdev).groupby(stats["pos"].to_numpy()).transform("median").to_numpy()
    n_ranks = g.transform("size").to_numpy()
    dev = stats["mean"].to_numpy() - median
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(mad > 0, 0.6745 * dev / mad, np.where(dev == 0, 0.0, np.sign(dev) * np.inf))
        deviation_pct = np.where(median > 0, 100.0 * dev / median, np.nan)
    z = np.where(n_ranks >= MIN_RANKS, z, np.nan)
    outlier = (np.abs(z) > ROBUST_Z_LIMIT) & (np.abs(deviation_pct) > MIN_DEVIATION_PCT)
    p = stats["pos"].to_numpy()
    top_names = totals["n"].to_numpy()
    out = pd.DataFrame(
        {
            "name": pd.Categorical(top_names[p], categories=pd.unique(top_names)),
            "kernel_type": pd.Categorical.from_codes(totals["tcode"].to_numpy()[p], categories=list(KERNEL_TYPES)),
            "rank": stats["rank"].to_numpy(),
            "count": stats["count"].to_numpy(),
            "sum_ns": stats["sum"].to_numpy(),
            "mean_ns": stats["mean"].to_numpy(),
            "min_ns": stats["min"].to_numpy(),
            "max_ns": stats["max"].to_numpy(),
            "std_ns": stats["std"].to_numpy(),
            "median_mean_ns": median,
            "deviation_pct": deviation_pct,
            "robust_z": z,
            "outlier": outlier,
        }
    )
    return out.astype(DISTRIBUTION_COLUMNS)
