"""Stragglers: collectives matched across ranks, and who arrived last."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd

from ..deprecation import removed_parameters
from ..errors import OptionError, TraceviewWarning, caller_stacklevel
from ..model.collectives import kernel_collective
from ..model.schema import EventKind, GpuClass
from ..model.text import as_text
from ..model.trace import Trace
from . import _enclose as en
from . import _links as lk
from ._common import distinct_ints, empty, pct, warn_no_gpu
from ._gpu import COMM, activities
from ._memo import per_rank
from .launch import rows_of

__all__ = ["straggler_views", "stragglers"]

ARRIVAL_COLUMNS = {
    "collective_id": "int64",
    "rank": "int64",
    "collective": "str",
    "arrival_ns": "int64",
    "delay_ns": "int64",
    "wait_ns": "int64",
    "is_last": "bool",
    "eid": "int64",
}

COLLECTIVE_COLUMNS = {
    "collective_id": "int64",
    "collective": "str",
    "pg_name": "str",
    "seq": "int64",
    "stream": "int64",
    "ordinal": "int64",
    "ranks": "int64",
    "first_arrival_ns": "int64",
    "last_arrival_ns": "int64",
    "last_rank": "int64",
    "lateness_ns": "int64",
    "spread_ns": "int64",
    "wait_ns": "int64",
}

RANK_COLUMNS = {
    "rank": "int64",
    "collectives": "int64",
    "last_count": "int64",
    "last_pct": "float64",
    "lateness_ns": "int64",
    "mean_delay_ns": "int64",
    "max_delay_ns": "int64",
    "wait_ns": "int64",
}


def kind_from_name(name: str) -> str:
    """Collective kind from a communication kernel's name (see collectives.kernel_collective)."""
    return kernel_collective(name, fallback="name")


@removed_parameters(
    align_ends="align the ranks' clocks first, "
    "tv.stragglers(tv.align_clocks(trace)) (tv.clock_alignment(trace) shows the offsets)"
)
def stragglers(
    trace: Trace,
    *,
    by: Literal["rank", "collective", "arrival"] = "rank",
    arrival: Literal["kernel", "launch"] = "kernel",
    match: Literal["auto", "seq", "order"] = "auto",
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Collectives matched across ranks: who arrived last, by how much, and how often.

    A collective (all-reduce, all-gather, all-to-all...) cannot finish before its last
    rank arrives: every other rank's communication kernel spins waiting for it. The rank
    that keeps arriving last is the straggler.

    **Matching.** A communication kernel (``gpu_class == "communication"``) takes the
    collective metadata (``trace.comms()``) of the kernel itself, or of the innermost
    ``record_param_comms`` / ``nccl:*`` range enclosing its launch call. With
    ``match="seq"`` kernels are matched across ranks by (process group, sequence number);
    with ``match="order"`` the k-th kernel of each (collective kind, stream) on one rank is
    matched with the k-th on the others (the kind from the metadata, else from the NCCL
    kernel name, e.g. ``ncclKernel_AllReduce_RING_LL_Sum_float`` -> ``all_reduce``; SPMD
    ranks allocate their NCCL streams alike). ``"auto"`` uses sequence numbers when every
    communication kernel has them, else order. A collective seen on fewer than two ranks
    is dropped.

    **Arrival** of a rank at a collective: with ``arrival="kernel"`` the start of its
    communication kernel (the GPU reached the collective: work queued before it on the
    stream delays it too); with ``"launch"`` the start of the launch call on the CPU (the
    host reached it). Arrivals compare clocks across ranks: ranks on different hosts may
    be skewed. Align their clocks first, ``tv.stragglers(tv.align_clocks(trace))`` (the one
    way to align clocks: every rank moved onto one clock, estimated from the ends of
    matched collectives, which end together on every rank).

    Parameters
    ----------
    trace : Trace
    by : {"rank", "collective", "arrival"}, default "rank"
        One row per rank (the summary), per collective, or per (collective, rank).
    arrival : {"kernel", "launch"}, default "kernel"
    match : {"auto", "seq", "order"}, default "auto"
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`); ``time_range`` keeps the communication kernels
        that run in it (their launch calls may come before it).

    Returns
    -------
    pandas.DataFrame
        ``by="rank"``, sorted by rank: ``rank`` (int); ``collectives`` (int): matched
        collectives the rank took part in; ``last_count`` (int): how often it arrived
        last; ``last_pct`` (float, %): ``last_count / collectives``; ``lateness_ns`` (int,
        ns): summed ``lateness_ns`` of the collectives where it was last; ``mean_delay_ns``,
        ``max_delay_ns`` (int, ns): its arrival after the first rank's, mean and max;
        ``wait_ns`` (int, ns): its *arrival wait*, summed: at each collective, the time
        from its arrival to the last rank's arrival (whether or not compute ran meanwhile:
        the part the step pays is ``collective_wait``'s *exposed peer wait*; docs/semantics.md,
        "Waits: one word per quantity").

        ``by="collective"``, sorted by first arrival: ``collective_id`` (int);
        ``collective`` (str): kind; ``pg_name`` (str; empty when matched by order);
        ``seq`` (int; -1 when matched by order); ``stream`` (int; -1 when matched by
        sequence), ``ordinal`` (int): k of the k-th kernel of that kind and stream (-1 when
        matched by sequence); ``ranks`` (int): ranks matched; ``first_arrival_ns``,
        ``last_arrival_ns`` (int, ns, trace clock); ``last_rank`` (int): the rank that
        arrived last (the lowest such rank on a tie); ``lateness_ns`` (int, ns): last
        arrival minus the second-last, by how much that rank alone held the collective
        up; ``spread_ns`` (int, ns): last minus first arrival; ``wait_ns`` (int, ns): the
        arrival wait summed over the ranks (each rank's time from its arrival to the last's).

        ``by="arrival"``: ``collective_id``; ``rank``; ``collective``; ``arrival_ns`` (int,
        ns); ``delay_ns`` (int, ns): after the first arrival; ``wait_ns`` (int, ns): the
        arrival wait, until the last arrival; ``is_last`` (bool); ``eid`` (int): the communication kernel.

        No communication kernels, or fewer than two ranks, give an empty frame and a
        :class:`TraceviewWarning`.

    Raises
    ------
    OptionError
        ``by``, ``arrival`` or ``match`` not one of the above, or the removed
        ``align_ends=`` (align the clocks first: ``tv.stragglers(tv.align_clocks(trace))``).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> per_rank = tv.stragglers(trace)
    >>> int(per_rank["last_count"].sum()) == len(tv.stragglers(trace, by="collective"))
    True
    """
    if by not in ("rank", "collective", "arrival"):
        raise OptionError.invalid("by", by, ("rank", "collective", "arrival"))
    if arrival not in ("kernel", "launch"):
        raise OptionError.invalid("arrival", arrival, ("kernel", "launch"))
    if match not in ("auto", "seq", "order"):
        raise OptionError.invalid("match", match, ("auto", "seq", "order"))
    return _views(trace, (by,), arrival, match, ranks, iterations, time_range)[by]


_COLUMNS = {"rank": RANK_COLUMNS, "collective": COLLECTIVE_COLUMNS, "arrival": ARRIVAL_COLUMNS}


def straggler_views(
    trace: Trace,
    *,
    views: Iterable[str],
    arrival: Literal["kernel", "launch"] = "kernel",
    match: Literal["auto", "seq", "order"] = "auto",
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> dict[str, pd.DataFrame]:
    """``{by: stragglers(trace, by=by, ...)}`` for each ``by`` in ``views``, the collectives
    matched once for all of them (as :func:`findings` reads three views)."""
    views = tuple(views)
    bad = [v for v in views if v not in _COLUMNS]
    if bad:
        raise OptionError.invalid("by", bad[0], tuple(_COLUMNS))
    if arrival not in ("kernel", "launch"):
        raise OptionError.invalid("arrival", arrival, ("kernel", "launch"))
    if match not in ("auto", "seq", "order"):
        raise OptionError.invalid("match", match, ("auto", "seq", "order"))
    return _views(trace, views, arrival, match, ranks, iterations, time_range)


def _views(
    trace: Trace,
    views: tuple[str, ...],
    arrival: str,
    match: str,
    ranks: Iterable[int] | int | None,
    iterations: Iterable[int] | int | None,
    time_range: tuple[int, int] | None,
) -> dict[str, pd.DataFrame]:
    # Called by the public functions: warnings name their caller (caller_stacklevel).
    trace, window = lk.scope_linked(trace, ranks=ranks, iterations=iterations, time_range=time_range)

    parts = []
    no_comm: list[int] = []
    # Kept with the cache entries for the whole trace only (not one entry per window asked for).
    for r, k in per_rank(trace, _one_rank_comm_kernels, arrival, window, keep=window is None).items():
        if k is None:
            no_comm.append(r)
        else:
            parts.append(k)
    if no_comm:
        has_gpu = [r for r in no_comm if _has_gpu(trace, r)]
        cpu_only = [r for r in no_comm if r not in has_gpu]
        if cpu_only:
            warn_no_gpu("stragglers", cpu_only, stacklevel=caller_stacklevel() + 1)  # (warned one call deeper)
        if has_gpu:
            _warn(f"stragglers: rank(s) {has_gpu} have no communication kernels; they take part in no collective")
    if len(parts) < 2:
        if parts:
            _warn("stragglers: collectives need at least two ranks with communication kernels; the result is empty")
        return {v: empty(_COLUMNS[v]) for v in views}
    # One frame for all ranks, the texts kept as Python strings (an object Series: a text
    # column would convert every value to Arrow, ~1 us each; the views convert what they show).
    kernels = pd.DataFrame(
        {
            c: pd.Series(np.concatenate([p[c] for p in parts]), dtype=object)
            if c in ("collective", "pg_name")
            else np.concatenate([p[c] for p in parts])
            for c in parts[0]
        }
    )

    use_seq = match == "seq" or (
        match == "auto" and bool((kernels["seq"] >= 0).all()) and bool(kernels["pg_name"].notna().all())
    )
    if match == "seq" and not ((kernels["seq"] >= 0).all() and kernels["pg_name"].notna().all()):
        missing = int(((kernels["seq"] < 0) | kernels["pg_name"].isna()).sum())
        _warn(
            f"stragglers: {missing} communication kernel(s) carry no process group and sequence number; "
            "they are left out (match='order' matches them by order)"
        )
        kernels = kernels.loc[(kernels["seq"] >= 0) & kernels["pg_name"].notna()]
    if use_seq:
        kernels = kernels.assign(pg=as_text(kernels["pg_name"]), stream=-1, ordinal=-1)
        key = ["pg", "seq"]
    else:
        kernels = kernels.sort_values(["rank", "collective", "stream", "ts_ns", "eid"], kind="stable")
        kernels["ordinal"] = kernels.groupby(["rank", "collective", "stream"]).cumcount()
        kernels = kernels.assign(pg="", seq=-1)
        key = ["collective", "stream", "ordinal"]
        counts = kernels.groupby(["collective", "stream", "rank"]).size().unstack("rank")
        uneven = counts.loc[counts.nunique(axis=1, dropna=False) > 1]
        if len(uneven):
            shown = "; ".join(
                f"{c} on stream {s}: " + ", ".join(f"rank {r}: {int(v) if v == v else 0}" for r, v in row.items())
                for (c, s), row in uneven.head(3).iterrows()
            )
            _warn(
                "stragglers: matched by order, but ranks launched different numbers of some collectives "
                f"({shown}); the k-th of each were matched, check the trace covers the same steps on every rank"
            )
    kernels = _arrivals_per_rank(kernels, key)
    if kernels.empty:
        _warn("stragglers: no collective was found on two ranks or more; the result is empty")
        return {v: empty(_COLUMNS[v]) for v in views}

    arrivals, collectives = _match(kernels, key)
    out = {}
    for v in views:
        if v == "arrival":
            out[v] = arrivals.astype(ARRIVAL_COLUMNS)[list(ARRIVAL_COLUMNS)]
        elif v == "collective":
            out[v] = collectives.astype(COLLECTIVE_COLUMNS)[list(COLLECTIVE_COLUMNS)]
        else:
            out[v] = _per_rank(arrivals, collectives, trace.ranks)
    return out


def _warn(message: str) -> None:
    warnings.warn(message, TraceviewWarning, stacklevel=caller_stacklevel())


def _has_gpu(trace: Trace, rank: int) -> bool:
    kinds = trace.rank_data(rank).events["kind"]
    return bool(
        lk.category_mask(kinds, [EventKind.KERNEL.value, EventKind.GPU_MEMCPY.value, EventKind.GPU_MEMSET.value]).any()
    )


def _one_rank_comm_kernels(trace: Trace, arrival: str, window: tuple[int, int] | None) -> dict[str, np.ndarray] | None:
    """:func:`_comm_kernels` of a one-rank trace."""
    (r,) = trace.ranks
    return _comm_kernels(trace, r, arrival, window)


def _comm_kernels(
    trace: Trace, rank: int, arrival: str, window: tuple[int, int] | None
) -> dict[str, np.ndarray] | None:
    """The rank's communication kernels with kind, stream, metadata and arrival time, as
    columns (None without any)."""
    ev = trace.rank_data(rank).events
    kind = ev["kind"].array
    kind_codes = np.asarray(kind.codes)
    kernel_kind = np.append(np.asarray(kind.categories == EventKind.KERNEL.value, dtype=bool), False)
    if window is None and trace.window is None:
        # The rank's communication activities (shared with the other analyses), kernels only.
        acts = activities(trace, rank, work_only=True)
        rows = acts.rows[acts.cls == COMM]
        rows = rows[kernel_kind[kind_codes[rows]]]
    else:
        is_comm = kernel_kind[kind_codes] & lk.category_mask(ev["gpu_class"], [GpuClass.COMMUNICATION.value])
        if window is not None:
            ts = ev["ts_ns"].to_numpy()
            is_comm = is_comm & (ts < window[1]) & (ts + ev["dur_ns"].to_numpy() > window[0])
        rows = np.flatnonzero(is_comm)
    if len(rows) == 0:
        return None
    comms = trace.rank_data(rank).comms
    meta_row = np.full(len(rows), -1, dtype=np.int64)  # row in ``comms``
    if len(comms):
        c_rows = rows_of(ev, comms["eid"].to_numpy())
        present = c_rows >= 0
        c_pos = np.flatnonzero(present)
        c_rows = c_rows[present]
        meta_row = _pos_of_rows(c_rows, c_pos, rows)  # metadata on the kernel itself
        launch = rows_of(ev, ev["launch_eid"].to_numpy()[rows])
        cpu_meta = c_rows[~kernel_kind[kind_codes[c_rows]]]
        inner = en.innermost(ev, cpu_meta, launch)
        use = (meta_row < 0) & (inner >= 0)
        meta_row[use] = _pos_of_rows(c_rows, c_pos, inner[use])
    # Kinds from names: one regular expression per distinct name, not per kernel.
    codes = ev["name"].cat.codes.to_numpy()[rows]
    distinct = distinct_ints(codes)
    cats = ev["name"].cat.categories
    lut = np.empty(int(distinct.max()) + 1, dtype=object)
    lut[distinct] = [kind_from_name(str(cats[c])) for c in distinct.tolist()]
    name_kind = lut[codes]
    has_meta = meta_row >= 0
    safe = np.maximum(meta_row, 0)
    collective = name_kind.copy()
    seq: np.ndarray
    pg: np.ndarray
    if len(comms):
        meta_kind = comms["collective"].astype(object).to_numpy()[safe]
        ok = has_meta & pd.notna(meta_kind)
        collective[ok] = meta_kind[ok]
        seq = np.where(has_meta, comms["seq"].to_numpy()[safe], -1)
        pg = comms["pg_name"].astype(object).to_numpy()[safe]
        pg[~has_meta] = None
    else:
        seq = np.full(len(rows), -1, dtype=np.int64)
        pg = np.full(len(rows), None, dtype=object)
    ts = ev["ts_ns"].to_numpy()
    if arrival == "kernel":
        arr = ts[rows]
    else:
        launch = rows_of(ev, ev["launch_eid"].to_numpy()[rows])
        arr = np.where(launch >= 0, ts[np.maximum(launch, 0)], -1)
    return {
        "rank": np.full(len(rows), rank, dtype=np.int64),
        "eid": ev["eid"].to_numpy()[rows],
        "ts_ns": ts[rows],
        "end_ns": ts[rows] + ev["dur_ns"].to_numpy()[rows],
        "stream": ev["stream"].to_numpy()[rows],
        "collective": collective,  # Python strings (kind names and the metadata's texts)
        "seq": seq.astype(np.int64),
        "pg_name": pg,
        "arrival_ns": arr.astype(np.int64),
    }


def _arrivals_per_rank(kernels: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """One arrival per (collective, rank), the rank's first kernel of it (then by eid), of
    the collectives two ranks or more arrive at, sorted by ``key`` then rank.

    ``sort_values([*key, "rank", "arrival_ns", "eid"])``, ``drop_duplicates([*key, "rank"])``,
    arrivals >= 0, groups of two or more, with one sort of integer codes (text keys coded
    in sorted order) and one take of the rows.
    """
    codes = []
    for c in key:
        col = kernels[c]
        if pd.api.types.is_numeric_dtype(col.dtype):
            codes.append(col.to_numpy())
        else:
            codes.append(pd.factorize(col, sort=True)[0])  # codes in the values' sort order
    rank = kernels["rank"].to_numpy()
    arrival = kernels["arrival_ns"].to_numpy()
    order = np.lexsort((kernels["eid"].to_numpy(), arrival, rank, *codes[::-1]))
    n = len(order)
    same_key = np.ones(max(n - 1, 0), dtype=bool)  # row i + 1 has row i's key
    for cc in codes:
        v = cc[order]
        same_key &= v[1:] == v[:-1]
    r = rank[order]
    first_of_rank = np.ones(n, dtype=bool)
    first_of_rank[1:] = ~(same_key & (r[1:] == r[:-1]))
    keep = first_of_rank & (arrival[order] >= 0)
    rows = order[keep]
    # Groups of equal keys among the kept rows: contiguous; sizes from their boundaries.
    starts_mask = np.zeros(len(rows), dtype=bool)
    if len(rows):
        starts_mask[0] = True
        for cc in codes:
            v = cc[rows]
            starts_mask[1:] |= v[1:] != v[:-1]
    starts = np.flatnonzero(starts_mask)
    size = np.diff(np.append(starts, len(rows)))
    rows = rows[np.repeat(size >= 2, size)]
    return kernels.take(rows).reset_index(drop=True)


def _pos_of_rows(c_rows: np.ndarray, c_pos: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each event row in ``at``, the ``c_pos`` of the last ``c_rows`` entry naming it (-1:
    none): what a table as long as the events filled in order (``table[c_rows] = c_pos``)
    gives, by binary search among the few metadata rows instead."""
    if len(c_rows) == 0:
        return np.full(len(at), -1, dtype=np.int64)
    by_row = np.argsort(c_rows, kind="stable")
    sorted_rows = c_rows[by_row]
    i = np.maximum(np.searchsorted(sorted_rows, at, side="right") - 1, 0)
    out: np.ndarray = np.where(sorted_rows[i] == at, c_pos[by_row[i]], -1).astype(np.int64)
    return out


def _match(kernels: pd.DataFrame, key: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Arrivals and collectives of ``kernels`` (sorted by ``key`` then rank, one row per
    (collective, rank), two ranks or more per collective), with numpy reductions over the
    groups of equal keys (contiguous rows)."""
    n = len(kernels)
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for c in key:
        v = kernels[c].to_numpy()
        new[1:] |= v[1:] != v[:-1]
    starts = np.flatnonzero(new)
    gid = np.cumsum(new) - 1
    arrival = kernels["arrival_ns"].to_numpy().astype(np.int64)
    rank = kernels["rank"].to_numpy().astype(np.int64)
    first = np.minimum.reduceat(arrival, starts)
    last = np.maximum.reduceat(arrival, starts)
    size = np.diff(np.append(starts, n))
    # Last rank (lowest rank on a tie) and second-last arrival, per collective: rows sorted by
    # group, arrival (latest first), rank; a group keeps its block of rows.
    srt = np.lexsort((rank, -arrival, gid))
    last_rank = rank[srt[starts]]
    second = arrival[srt[starts + 1]]
    wait = last[gid] - arrival
    coll = pd.DataFrame(
        {
            "collective": kernels["collective"].to_numpy()[starts],
            "pg_name": kernels["pg"].to_numpy()[starts],
            "seq": kernels["seq"].to_numpy()[starts],
            "stream": kernels["stream"].to_numpy()[starts],
            "ordinal": kernels["ordinal"].to_numpy()[starts],
            "ranks": size.astype(np.int64),
            "first_arrival_ns": first,
            "last_arrival_ns": last,
            "last_rank": last_rank,
            "lateness_ns": last - second,
            "spread_ns": last - first,
            "wait_ns": np.add.reduceat(wait, starts),
        }
    )
    # Number collectives by first arrival.
    order = np.lexsort((np.arange(len(coll)), first))
    cid = np.empty(len(coll), dtype=np.int64)
    cid[order] = np.arange(len(coll))
    coll.insert(0, "collective_id", cid)
    coll = coll.iloc[order].reset_index(drop=True)
    k_cid = cid[gid]
    by = np.lexsort((rank, k_cid))
    arrivals = pd.DataFrame(
        {
            "collective_id": k_cid[by],
            "rank": rank[by],
            "collective": kernels["collective"].to_numpy()[by],
            "arrival_ns": arrival[by],
            "delay_ns": (arrival - first[gid])[by],
            "wait_ns": wait[by],
            "eid": kernels["eid"].to_numpy()[by],
            "is_last": (rank == last_rank[gid])[by],
        }
    )
    return arrivals, coll


def _per_rank(arrivals: pd.DataFrame, collectives: pd.DataFrame, ranks: Iterable[int]) -> pd.DataFrame:
    g = arrivals.groupby("rank")
    out = pd.DataFrame(
        {
            "collectives": g.size(),
            "mean_delay_ns": np.rint(g["delay_ns"].mean()),
            "max_delay_ns": g["delay_ns"].max(),
            "wait_ns": g["wait_ns"].sum(),
        }
    )
    last = collectives.groupby("last_rank").agg(
        last_count=("collective_id", "size"), lateness_ns=("lateness_ns", "sum")
    )
    out = out.join(last, how="left").reindex(sorted(set(ranks)))
    out = out.fillna(
        {"collectives": 0, "last_count": 0, "lateness_ns": 0, "mean_delay_ns": 0, "max_delay_ns": 0, "wait_ns": 0}
    )
    out["last_pct"] = pct(out["last_count"].to_numpy(dtype=np.float64), out["collectives"].to_numpy(dtype=np.float64))
    out = out.rename_axis("rank").reset_index()
    return out.astype(RANK_COLUMNS)[list(RANK_COLUMNS)]
