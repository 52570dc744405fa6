"""Which kernels take the GPU's time: breakdown by kernel type and by kernel, and how a
kernel's duration varies across ranks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from .. import intervals as iv
from ..trace import Trace
from ._common import empty, pct, scoped, warn_no_gpu
from ._gpu import CLASSES, OTHER, activities

__all__ = ["KERNEL_TYPES", "OVERLAP_TYPES", "kernel_breakdown", "kernel_duration_distribution"]

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
        raise ValueError(f"top_k must be a non-negative integer or None (all kernels), got {top_k!r}")


@dataclass(frozen=True)
class _Pool:
    """The work activities of every rank, their names coded into one list over all ranks."""

    #: Ranks with GPU work, in order, and for each: type code (index of KERNEL_TYPES),
    #: global name code and duration (ns) of its activities.
    ranks: list[int]
    tcode: list[np.ndarray]
    name: list[np.ndarray]
    dur: list[np.ndarray]
    #: The names, as an object array.
    names: np.ndarray

    @property
    def n_keys(self) -> int:
        """Size of the dense (type, name) key space: ``tcode * len(names) + name``."""
        return len(KERNEL_TYPES) * len(self.names)

    def keys(self, i: int) -> np.ndarray:
        return self.tcode[i].astype(np.int64) * len(self.names) + self.name[i]

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """Total time (ns) and count of every (type, name) key over all ranks."""
        total = np.zeros(self.n_keys, dtype=np.int64)
        count = np.zeros(self.n_keys, dtype=np.int64)
        for i in range(len(self.ranks)):
            k = self.keys(i)
            np.add.at(total, k, self.dur[i])
            count += np.bincount(k, minlength=self.n_keys)
        return total, count


def _pool(trace: Trace, analysis: str) -> _Pool:
    per_rank = []
    missing = []
    for r in trace.ranks:
        acts = activities(trace, r, work_only=True)
        if len(acts) == 0:
            missing.append(r)
            continue
        per_rank.append((r, acts))
    if missing:
        warn_no_gpu(analysis, missing)
    # Global names: only those of work activities (the categories hold every CPU op too).
    used_names = []
    for _, acts in per_rank:
        used = np.flatnonzero(np.bincount(acts.name, minlength=len(acts.names)))
        used_names.append(np.asarray(acts.names[used], dtype=object))
    names = pd.unique(np.concatenate(used_names)) if used_names else np.empty(0, dtype=object)
    index = pd.Index(names)
    codes = [index.get_indexer(np.asarray(acts.names, dtype=object))[acts.name] for _, acts in per_rank]
    return _Pool(
        ranks=[r for r, _ in per_rank],
        tcode=[acts.cls.astype(np.int8) for _, acts in per_rank],
        name=[c.astype(np.int64) for c in codes],
        dur=[acts.dur for _, acts in per_rank],
        names=np.asarray(names, dtype=object),
    )


def _rank_keys(total: np.ndarray, count: np.ndarray, names: np.ndarray, by_type: bool) -> pd.DataFrame:
    """Keys that occur, sorted by decreasing time, ties by name then type (never by order of
    events); with ``by_type`` sorted within each type."""
    keys = np.flatnonzero(count)
    n = len(names)
    frame = pd.DataFrame({"key": keys, "tcode": keys // n, "total": total[keys], "name": names[keys % n]})
    order = ["tcode", "total", "name"] if by_type else ["total", "name", "tcode"]
    asc = [True, False, True] if by_type else [False, True, True]
    return frame.sort_values(order, ascending=asc, kind="stable").reset_index(drop=True)


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
    pool = _pool(trace, "kernel_breakdown")
    if not pool.ranks:
        return empty(KERNEL_COLUMNS)
    n_names = len(pool.names)
    total, count = pool.totals()
    ranked = _rank_keys(total, count, pool.names, by_type=True)
    if top_k is not None:
        ranked = ranked.groupby("tcode", sort=False).head(top_k)
    # Each (type, name) key -> its label: a position among the kept kernels of the type, or
    # "others" (position past them all). Stats are keyed by (type, label).
    n_labels = len(ranked) + 1
    others = len(ranked)
    label = np.full(pool.n_keys, others, dtype=np.int64)
    label[ranked["key"].to_numpy()] = np.arange(len(ranked))
    parts = []
    for i, r in enumerate(pool.ranks):
        key = pool.tcode[i].astype(np.int64) * n_labels + label[pool.keys(i)]
        st = _group_stats(key, pool.dur[i], len(KERNEL_TYPES) * n_labels)
        tcode, lab = np.divmod(st["key"], n_labels)
        order = np.lexsort((lab, tcode))  # kept kernels by rank, then others, per type
        st = {k: v[order] for k, v in st.items()}
        tcode, lab = tcode[order], lab[order]
        type_total = np.zeros(len(KERNEL_TYPES), dtype=np.int64)
        np.add.at(type_total, tcode, st["sum"])
        st["rank"] = np.full(len(order), r, dtype=np.int64)
        st["tcode"] = tcode
        st["label"] = lab
        st["share"] = np.asarray(pct(st["sum"], type_total[tcode]), dtype=np.float64)
        parts.append(st)
    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    label_names = np.append(pool.names[ranked["key"].to_numpy() % n_names], OTHERS)
    out = pd.DataFrame(
        {
            "rank": cat["rank"],
            "kernel_type": pd.Categorical.from_codes(cat["tcode"], categories=list(KERNEL_TYPES)),
            "name": pd.Categorical(label_names[cat["label"]]),
            "count": cat["count"],
            "sum_ns": cat["sum"],
            "mean_ns": cat["mean"],
            "min_ns": cat["min"],
            "max_ns": cat["max"],
            "std_ns": cat["std"],
            "type_share_pct": cat["share"],
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
    pool = _pool(trace, "kernel_duration_distribution")
    if not pool.ranks:
        return empty(DISTRIBUTION_COLUMNS)
    total, count = pool.totals()
    ranked = _rank_keys(total, count, pool.names, by_type=False)
    if top_k is not None:
        ranked = ranked.head(top_k)
    n_top = len(ranked)
    position = np.full(pool.n_keys, -1, dtype=np.int64)
    position[ranked["key"].to_numpy()] = np.arange(n_top)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("pos", "rank", "count", "sum", "mean", "min", "max", "std")}
    for i, r in enumerate(pool.ranks):
        pos = position[pool.keys(i)]
        sel = pos >= 0
        st = _group_stats(pos[sel], pool.dur[i][sel], n_top)
        cols["pos"].append(st.pop("key"))
        cols["rank"].append(np.full(len(cols["pos"][-1]), r, dtype=np.int64))
        for k, v in st.items():
            cols[k].append(v)
    c = {k: np.concatenate(v) for k, v in cols.items()}
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
