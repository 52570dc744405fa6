"""Collective communication: time, message sizes and NCCL's algorithm and bus bandwidths."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model.collectives import kernel_collective
from ..model.schema import EventKind
from ..model.trace import Trace
from ._common import empty, scoped, warn_no_gpu
from ._gpu import COMM, activities

__all__ = ["busbw_factor", "collective_calls", "nccl_summary", "size_bucket"]

#: Collective kinds whose bus bandwidth factor depends on the group size n (nccl-tests).
_FACTOR_2N = {"all_reduce"}
_FACTOR_N = {"all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"}
_FACTOR_1 = {"broadcast", "reduce", "send", "recv", "send_recv"}

CALL_COLUMNS = {
    "rank": "int64",
    "collective": "str",
    "group_size": "int64",
    "group_size_source": "str",
    "msg_bytes": "int64",
    "start_ns": "int64",
    "dur_ns": "int64",
    "kernels": "int64",
    "meta_eid": "int64",
    "meta_source": "str",
}

SUMMARY_COLUMNS = {
    "rank": "int64",
    "collective": "str",
    "group_size": "int64",
    "size_bucket_bytes": "int64",
    "size_bucket": "str",
    "count": "int64",
    "total_ns": "int64",
    "mean_ns": "float64",
    "min_ns": "int64",
    "max_ns": "int64",
    "bytes_total": "int64",
    "algbw_gbps": "float64",
    "busbw_gbps": "float64",
}


def busbw_factor(collective: str, group_size: int) -> float:
    """NCCL's bus-bandwidth factor of a collective over ``group_size`` ranks (nccl-tests).

    all_reduce ``2(n-1)/n``; all_gather, reduce_scatter, all_to_all (and gather, scatter)
    ``(n-1)/n``; broadcast, reduce, send, recv ``1``; NaN for anything else (barrier) or
    when ``n`` is needed but unknown.
    """
    n = group_size
    if collective in _FACTOR_1:
        return 1.0
    if n is None or n < 1:
        return float("nan")
    if collective in _FACTOR_2N:
        return 2.0 * (n - 1) / n
    if collective in _FACTOR_N:
        return (n - 1) / n
    return float("nan")


def _collective_from_kernel(name: str) -> str:
    """Collective kind from a kernel name (the rule every analysis uses)."""
    return kernel_collective(name, fallback="name")


def _message_bytes(
    collective: np.ndarray, in_n: np.ndarray, out_n: np.ndarray, elem: np.ndarray, n: np.ndarray
) -> np.ndarray:
    """The size S of nccl-tests' ``algbw = S / t`` of each call; -1 where unknown.

    all_gather and gather: the whole gathered array (output, or input x n);
    reduce_scatter and scatter: the whole array before scattering (input, or output x n);
    everything else: the input (the output when the input is not recorded).
    """
    in_n, out_n, elem, n = (np.asarray(a, dtype=np.int64) for a in (in_n, out_n, elem, n))
    plain = np.where(in_n >= 0, in_n * elem, np.where(out_n >= 0, out_n * elem, -1))
    gathered = np.where(out_n > 0, out_n * elem, np.where((in_n >= 0) & (n > 0), in_n * elem * n, -1))
    scattered = np.where(in_n > 0, in_n * elem, np.where((out_n >= 0) & (n > 0), out_n * elem * n, -1))
    is_gather = np.isin(collective, ["all_gather", "gather"])
    is_scatter = np.isin(collective, ["reduce_scatter", "scatter"])
    out = np.where(is_gather, gathered, np.where(is_scatter, scattered, plain))
    return np.where(elem > 0, out, -1)


def collective_calls(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Every collective call of every rank: its kind, group size, message size and GPU time.

    Each communication kernel is matched with the collective metadata of
    ``trace.comms()``: the kernel's own (recent PyTorch records it on the NCCL kernel),
    else that of the nearest enclosing ``record_param_comms`` operator or ``nccl:*``
    annotation of the call that launched it (``launch_eid``, then ``parent_eid`` up the
    CPU stack). Kernels sharing one metadata event form one call. A kernel without
    metadata is a call of its own whose kind is read from its name
    (``ncclKernel_AllReduce_RING_LL_Sum_float`` -> ``all_reduce``,
    ``ncclDevKernel_SendRecv`` -> ``send_recv``; another communication kernel is its own
    kind, its name up to ``(`` or ``<``) and whose size is unknown.

    Returns
    -------
    pandas.DataFrame
        One row per call, sorted by rank and start:

        rank : int
        collective : str
            ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all``,
            ``broadcast``, ``reduce``, ``send``, ``recv``, ``send_recv``, ...; for a
            non-NCCL kernel without metadata, its name up to ``(`` or ``<``.
        group_size : int
            Ranks in the process group (the metadata's, else ``world_size``); -1 if unknown.
        group_size_source : str
            ``metadata``, ``world_size`` (older traces record no group size: a collective
            over a sub-group then gets the world's size, which overstates an all_gather's
            S and the bus factor) or ``unknown``.
        msg_bytes : int, bytes
            nccl-tests' message size S (see :func:`nccl_summary`); -1 if unknown.
        start_ns : int, ns
            First kernel start.
        dur_ns : int, ns
            First kernel start to last kernel end.
        kernels : int
            Communication kernels of the call.
        meta_eid : int
            Event carrying the metadata; -1 if none.
        meta_source : str
            ``kernel``, ``record_param_comms``, ``annotation`` or ``kernel name``.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> calls = tv.collective_calls(trace)
    >>> sorted(calls["collective"].unique())
    ['all_reduce', 'all_to_all']
    >>> bool((calls["dur_ns"] > 0).all())
    True
    """
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    calls, idle = _calls(trace)
    if idle:
        warn_no_gpu("collective_calls", idle)
    return calls


def _calls(trace: Trace) -> tuple[pd.DataFrame, list[int]]:
    """The calls of every rank with GPU work, and the ranks without any."""
    parts, idle = [], []
    for r in trace.ranks:
        acts = activities(trace, r, work_only=True)
        if len(acts) == 0:
            idle.append(r)
            continue
        comm = acts.cls == COMM
        part = _rank_calls(trace, r, acts.ts[comm], acts.end[comm], acts.rows[comm])
        if part is not None:
            parts.append(part)
    if not parts:
        return empty(CALL_COLUMNS), idle
    return pd.concat(parts, ignore_index=True).astype(CALL_COLUMNS), idle


def _rank_calls(trace: Trace, r: int, start: np.ndarray, end: np.ndarray, rows: np.ndarray) -> pd.DataFrame | None:
    ev = trace.rank_data(r).events
    kind = ev["kind"]
    kernel_code = kind.cat.categories.get_loc(EventKind.KERNEL.value)
    kernel_mask = kind.cat.codes.to_numpy()[rows] == kernel_code
    start, end, rows = start[kernel_mask], end[kernel_mask], rows[kernel_mask]
    if len(rows) == 0:
        return None
    comms = trace.rank_data(r).comms
    eid = ev["eid"].to_numpy()
    size = int(eid.max()) + 1
    # Dense lookups by eid: the row of each event, the metadata row of each event.
    row_of = np.full(size, -1, dtype=np.int64)
    row_of[eid] = np.arange(len(eid))
    meta_of = np.full(size, -1, dtype=np.int64)
    c_eid = comms["eid"].to_numpy()
    inside = c_eid < size
    meta_of[c_eid[inside]] = np.flatnonzero(inside)
    parent = ev["parent_eid"].to_numpy()

    k_eid = eid[rows]
    meta = meta_of[k_eid]
    # Walk from the launch call up the CPU stack until an event with metadata.
    cur = np.where(meta < 0, ev["launch_eid"].to_numpy()[rows], -1)
    for _ in range(256):
        todo = (meta < 0) & (cur >= 0) & (cur < size)
        if not todo.any():
            break
        idx = np.flatnonzero(todo)
        c = cur[idx]
        found = meta_of[c]
        meta[idx] = found
        row = row_of[c]
        nxt = np.where(row >= 0, parent[np.maximum(row, 0)], -1)
        cur[idx] = np.where(found >= 0, -1, nxt)

    world = trace.meta(r).world_size or -1
    name_codes = ev["name"].cat.codes.to_numpy()[rows]
    name_cats = ev["name"].cat.categories
    has = meta >= 0
    # A call per metadata event; a call per kernel without one.
    call_key = np.where(has, meta, -1 - np.arange(len(rows)))
    uniq, inv = np.unique(call_key, return_inverse=True)
    n_calls = len(uniq)
    c_start = np.full(n_calls, np.iinfo(np.int64).max, dtype=np.int64)
    c_end = np.full(n_calls, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(c_start, inv, start)
    np.maximum.at(c_end, inv, end)
    n_kernels = np.bincount(inv, minlength=n_calls)
    first_kernel = np.full(n_calls, len(rows), dtype=np.int64)
    np.minimum.at(first_kernel, inv, np.arange(len(rows)))

    with_meta = uniq >= 0
    key = np.where(with_meta, uniq, 0)
    # Kind: the metadata's, else read from the kernel's name (once per distinct name).
    collective = np.empty(n_calls, dtype=object)
    if len(comms):
        collective[with_meta] = comms["collective"].astype(object).to_numpy()[key[with_meta]]
    nc = name_codes[first_kernel[~with_meta]]
    by_name = {int(c): _collective_from_kernel(str(name_cats[c])) for c in np.unique(nc)}
    collective[~with_meta] = [by_name[int(c)] for c in nc]
    if len(comms):
        gs = comms["group_size"].to_numpy().astype(np.int64)[key]
        from_meta = with_meta & (gs > 0)
        group = np.where(from_meta, gs, world)
        in_n = np.where(with_meta, comms["in_nelems"].to_numpy()[key], -1)
        out_n = np.where(with_meta, comms["out_nelems"].to_numpy()[key], -1)
        eb = np.where(with_meta, comms["elem_bytes"].to_numpy().astype(np.int64)[key], -1)
        meta_eid = np.where(with_meta, c_eid[key], -1)
        source = np.where(with_meta, comms["source"].astype(object).to_numpy()[key], "kernel name")
    else:
        from_meta = np.zeros(n_calls, dtype=bool)
        group = np.full(n_calls, world, dtype=np.int64)
        in_n = out_n = eb = meta_eid = np.full(n_calls, -1, dtype=np.int64)
        source = np.full(n_calls, "kernel name", dtype=object)
    msg = _message_bytes(collective, in_n, out_n, eb, group)
    out = pd.DataFrame(
        {
            "rank": np.full(n_calls, r, dtype=np.int64),
            "collective": collective,
            "group_size": np.array(group, dtype=np.int64),
            "group_size_source": np.where(from_meta, "metadata", "world_size" if world > 0 else "unknown"),
            "msg_bytes": np.array(msg, dtype=np.int64),
            "start_ns": c_start,
            "dur_ns": c_end - c_start,
            "kernels": n_kernels.astype(np.int64),
            "meta_eid": np.array(meta_eid, dtype=np.int64),
            "meta_source": source,
        }
    )
    return out.sort_values("start_ns", kind="stable")


def size_bucket(size: np.ndarray) -> np.ndarray:
    """Lower bound of the power-of-two bucket ``[2^k, 2^(k+1))`` of each size; 0 for 0, -1 below 0."""
    s = np.asarray(size, dtype=np.int64)
    bucket = np.where(s == 0, 0, -1).astype(np.int64)
    pos = s > 0
    # frexp gives s = m * 2^e with m in [0.5, 1), so 2^(e-1) <= s, exactly for s < 2^53;
    # above, float rounding can push s up to the next power of two: step back then.
    b = np.left_shift(np.int64(1), (np.frexp(s[pos].astype(np.float64))[1] - 1).astype(np.int64))
    bucket[pos] = np.where(b > s[pos], b // 2, b)
    return bucket


def _bucket_label(lo: int) -> str:
    if lo < 0:
        return "unknown"
    if lo == 0:
        return "0 B"

    def fmt(v: int) -> str:
        for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if v >= scale:
                return f"{v // scale} {unit}"
        return f"{v} B"

    return f"{fmt(lo)}-{fmt(2 * lo)}"


def nccl_summary(
    trace: Trace,
    *,
    per: Literal["job", "rank"] = "job",
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Collectives per kind and message size: count, time, algorithm and bus bandwidth.

    Calls come from :func:`collective_calls` (kernels matched with their metadata).
    Message sizes follow nccl-tests (``doc/PERFORMANCE.md``): S is the whole array for
    all_gather (output) and reduce_scatter (input), the input otherwise. Per call
    ``algbw = S / t`` and ``busbw = algbw * f(n)`` with NCCL's factors: all_reduce
    ``2(n-1)/n``; all_gather, reduce_scatter, all_to_all ``(n-1)/n``; broadcast, reduce,
    send, recv ``1``. ``t`` is the call's GPU time (first kernel start to last kernel
    end), which includes any wait for the slowest peer, as nccl-tests' timing does.

    Parameters
    ----------
    per
        ``"job"``: calls of all ranks pooled (no ``rank`` column); ``"rank"``: per rank.
    ranks, iterations, time_range
        Scope the trace first (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        One row per (rank,) collective, group size and size bucket, sorted by total time,
        largest first:

        rank : int
            Only with ``per="rank"``.
        collective : str
            Kind of collective (see :func:`collective_calls`).
        group_size : int
            Ranks in the process group; -1 if unknown.
        size_bucket_bytes : int, bytes
            Lower bound of the power-of-two bucket ``[2^k, 2^(k+1))`` of S; 0 for empty
            messages; -1 when the trace records no size.
        size_bucket : str
            The bucket in words (``"64 KiB-128 KiB"``, ``"unknown"``).
        count : int
            Calls (summed over ranks with ``per="job"``).
        total_ns, mean_ns, min_ns, max_ns : ns
            GPU time of the calls: sum, mean, shortest, longest.
        bytes_total : int, bytes
            Sum of S; -1 when unknown.
        algbw_gbps : float, GB/s
            ``bytes_total / total_ns`` (time-weighted mean of the calls' algbw); NaN when
            the size is unknown.
        busbw_gbps : float, GB/s
            ``sum(S * f(n)) / total_ns``; NaN when the size, or the group size a factor
            needs, is unknown.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> n = tv.nccl_summary(trace)
    >>> sorted(n["collective"].unique())
    ['all_reduce', 'all_to_all']
    """
    if per not in ("job", "rank"):
        raise OptionError.invalid("per", per, ("job", "rank"))
    columns = dict(SUMMARY_COLUMNS)
    if per == "job":
        del columns["rank"]
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    calls, idle = _calls(trace)
    if idle:
        warn_no_gpu("nccl_summary", idle)
    if calls.empty:
        return empty(columns)
    s = calls["msg_bytes"].to_numpy()
    bucket = size_bucket(s)
    calls = calls.assign(size_bucket_bytes=bucket, s_known=np.where(s >= 0, s, 0))
    keys = ["collective", "group_size", "size_bucket_bytes"]
    if per == "rank":
        keys = ["rank", *keys]
    out = (
        calls.groupby(keys, sort=False)
        .agg(
            count=("dur_ns", "size"),
            total_ns=("dur_ns", "sum"),
            min_ns=("dur_ns", "min"),
            max_ns=("dur_ns", "max"),
            bytes_total=("s_known", "sum"),
        )
        .reset_index()
    )
    unknown = out["size_bucket_bytes"].to_numpy() < 0
    total = out["total_ns"].to_numpy().astype(float)
    # One collective kind and group size per row: one bus factor per row.
    factor = np.array(
        [busbw_factor(str(c), int(n)) for c, n in zip(out["collective"], out["group_size"], strict=True)], dtype=float
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        out["mean_ns"] = total / out["count"].to_numpy()
        algbw = np.where(unknown | (total <= 0), np.nan, out["bytes_total"].to_numpy() / total)
    out["algbw_gbps"] = algbw
    out["busbw_gbps"] = algbw * factor
    out.loc[unknown, "bytes_total"] = -1
    out["size_bucket"] = [_bucket_label(int(b)) for b in out["size_bucket_bytes"]]
    sort = ["total_ns", "collective", "size_bucket_bytes"]
    asc = [False, True, True]
    if per == "rank":
        sort, asc = ["rank", *sort], [True, *asc]
    out = out.sort_values(sort, ascending=asc, kind="stable")
    return out[list(columns)].astype(columns).reset_index(drop=True)
