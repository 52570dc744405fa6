"""The per-rank extraction of the findings: device-level idle gaps, blocking host calls,
pageable copies and kernel occupancy, computed where each rank lives (``map_ranks``).

Every other number a rule quotes comes from the other analyses' outputs (see
:class:`~.context.Context`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ...model import intervals as iv
from ...model.schema import EventKind, GpuClass
from ...model.text import as_text
from ...model.trace import Trace
from .. import loops
from .._common import distinct_ints
from .._gpu import activities
from ..launch import rows_of

__all__ = ["BLOCKING_CALLS", "rank_facts"]

#: Host calls that block the CPU until the GPU (or a copy) is done.
BLOCKING_CALLS = (
    "cudaMemcpy",
    "cudaMemcpy2D",
    "cudaMemcpyToSymbol",
    "cudaMemcpyFromSymbol",
    "cudaMemset",
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "hipMemcpy",
    "hipMemset",
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
)


def rank_facts(trace: Trace, tiny_kernel_ns: int, kernel_wait_ns: int) -> dict[str, Any] | None:
    """One rank's device-level idle gaps and blocking host calls (small dict; None without GPU work).

    Runs where the rank lives (``map_ranks``). Device-level gaps are the gaps of the union
    of the GPU work on all streams; each is classified by :func:`idle_time_breakdown`'s
    rule applied to the whole device: ``host_wait`` when every activity starting where the
    gap ends was launched after the gap began (an unknown launch never is), else
    ``kernel_wait`` below ``kernel_wait_ns``, else ``other``.
    """
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    acts = activities(trace, r, work_only=True)
    if len(acts) == 0:
        return None
    us, ue = acts.union()
    out: dict[str, Any] = {
        "rank": r,
        "gpu_start_ns": int(us[0]),
        "gpu_end_ns": int(ue[-1]),
        "gpu_span_ns": int(ue[-1] - us[0]),
        "gpu_busy_ns": iv.length(us, ue),
        "launches_known": int((acts.launch_eid >= 0).sum()),
    }
    # --- device-level idle gaps and what ended them
    ga, gb = ue[:-1], us[1:]
    ts_ev = ev["ts_ns"].to_numpy()
    lrow = rows_of(ev, acts.launch_eid)
    launch_ts = np.where(lrow >= 0, ts_ev[np.maximum(lrow, 0)], np.iinfo(np.int64).min)
    a_tiny = ((acts.end - acts.ts) < tiny_kernel_ns) & (lrow >= 0)
    if bool((acts.ts[1:] >= acts.ts[:-1]).all()):  # in start order already (as activities are)
        order = None
        a_ts, a_launch, a_name = acts.ts, launch_ts, acts.name
    else:
        order = np.argsort(acts.ts, kind="stable")
        a_ts, a_launch, a_tiny, a_name = acts.ts[order], launch_ts[order], a_tiny[order], acts.name[order]
    if len(ga):
        lo = np.searchsorted(a_ts, gb, side="left")
        hi = np.searchsorted(a_ts, gb, side="right")
        # Reduce over [lo, hi) of each gap end: pairs of indices, one sentinel at the end.
        idx = np.empty(2 * len(lo), dtype=np.int64)
        idx[0::2], idx[1::2] = lo, hi
        pad_launch = np.append(a_launch, np.iinfo(np.int64).max)
        first_launch = np.minimum.reduceat(pad_launch, idx)[0::2]
        any_tiny = np.maximum.reduceat(np.append(a_tiny, False), idx)[0::2]
        gap = gb - ga
        host = first_launch > ga
        kernel_wait = ~host & (gap < kernel_wait_ns)
        out["host_wait_ns"] = int(gap[host].sum())
        out["host_wait_gaps"] = int(host.sum())
        out["kernel_wait_ns"] = int(gap[kernel_wait].sum())
        out["tiny_gap_ns"] = int(gap[any_tiny & (host | kernel_wait)].sum())
        out["tiny_gaps"] = int((any_tiny & (host | kernel_wait)).sum())
        if host.any():
            i = int(np.flatnonzero(host)[np.argmax(gap[host])])
            out["largest_host_gap"] = {
                "gap_ns": int(gap[i]),
                "start_ns": int(ga[i]),
                "next_activity": str(acts.names[a_name[lo[i]]]) if a_name[lo[i]] >= 0 else "",
                "stream": int(acts.stream[lo[i] if order is None else order[lo[i]]]),
            }
    else:
        out.update(host_wait_ns=0, host_wait_gaps=0, kernel_wait_ns=0, tiny_gap_ns=0, tiny_gaps=0)
    # --- blocking host calls and pageable copies
    names = ev["name"]
    name_codes = np.asarray(names.array.codes)  # the codes as stored (int8-32): gathered, then widened
    categories = names.cat.categories
    # Rows named as a blocking call, then those that are host calls (the kind tested there only).
    blocking = np.flatnonzero(_codes_in(name_codes, categories, BLOCKING_CALLS))
    kinds = ev["kind"].array
    host_kinds = {EventKind.CUDA_RUNTIME.value, EventKind.CUDA_DRIVER.value}
    host_kind = np.array([c in host_kinds for c in kinds.categories.tolist()] + [False], dtype=bool)
    blocking = blocking[host_kind[np.asarray(kinds.codes)[blocking]]]
    parent = ev["parent_eid"].to_numpy()
    args = trace.rank_data(r).gpu_args
    # Each argument row's event row (-1: not in the table), for the copies and the kernels below.
    a_rows = rows_of(ev, args["eid"].to_numpy())
    # The pageable copies' argument rows (positions in ``args``; no copy of its other columns).
    pageable = np.flatnonzero(args["pageable"].to_numpy())
    p_rows = a_rows[pageable]
    p_ok = p_rows >= 0
    p_rows, pageable = p_rows[p_ok], pageable[p_ok]
    p_call = rows_of(ev, ev["launch_eid"].to_numpy()[p_rows])
    p_call = p_call[p_call >= 0]
    # A pageable copy's own call is counted with the copies, not again as a blocking call.
    blocking = np.setdiff1d(blocking, p_call)
    dur_ev = ev["dur_ns"].to_numpy()
    byt = args["bytes"].to_numpy()[pageable]
    kinds_copy = as_text(args["copy_kind"].iloc[pageable]).to_numpy()
    out["pageable"] = {
        "copies": len(p_rows),
        "bytes": int(byt[byt >= 0].sum()),
        "bytes_by_kind": {k: int(byt[(kinds_copy == k) & (byt >= 0)].sum()) for k in sorted(set(kinds_copy))},
        "copy_ns": int(dur_ev[p_rows].sum()),
        "calls": len(p_call),
        "call_ns": int(dur_ev[p_call].sum()),
        "idle_ns": _idle_from_calls(ts_ev[p_call], ts_ev[p_call] + dur_ev[p_call], ga, gb),
        "operators": _top_names(name_codes, categories, rows_of(ev, parent[p_call])),
        **_pageable_slowness(trace, args, a_rows, pageable, dur_ev, tiny_kernel_ns),
    }
    b_codes = name_codes[blocking].astype(np.int64)
    out["blocking"] = {
        "calls": len(blocking),
        "call_ns": int(dur_ev[blocking].sum()),
        "by_name": {
            str(categories[c]): {
                "calls": int((b_codes == c).sum()),
                "call_ns": int(dur_ev[blocking][b_codes == c].sum()),
            }
            for c in distinct_ints(b_codes).tolist()
        },
        "idle_ns": _idle_from_calls(ts_ev[blocking], ts_ev[blocking] + dur_ev[blocking], ga, gb),
        "operators": _top_names(name_codes, categories, rows_of(ev, parent[blocking])),
    }
    # --- estimated achieved occupancy of compute kernels, per name (time-weighted). A
    # kernel that runs has a warp resident: 0 % means the profiler could not estimate it.
    # The argument rows with an occupancy and an event row; the compute kernels among them,
    # tested at their rows only.
    occ_all = args["occupancy_pct"].to_numpy()
    kernel_kind = np.append(np.asarray(ev["kind"].array.categories == EventKind.KERNEL.value, dtype=bool), False)
    compute = _category_code(ev["gpu_class"], GpuClass.COMPUTE.value)
    kind_codes, class_codes = np.asarray(ev["kind"].array.codes), np.asarray(ev["gpu_class"].array.codes)
    n_codes = len(categories)
    sums = _native_occupancy(
        a_rows, occ_all, kind_codes, kernel_kind, class_codes, compute, name_codes, dur_ev, n_codes
    )
    if sums is not None:
        occ_ns, occ_w, seen = sums
    else:
        cand = np.flatnonzero((occ_all > 0) & (a_rows >= 0))
        at = a_rows[cand]
        ok = kernel_kind[kind_codes[at]]
        ok &= class_codes[at] == compute
        k_rows, occ = at[ok], occ_all[cand[ok]].astype(np.float64)
        codes = name_codes[k_rows].astype(np.int64)
        d = dur_ev[k_rows].astype(np.float64)
        occ_ns = np.bincount(codes, weights=d, minlength=n_codes)
        occ_w = np.bincount(codes, weights=d * occ, minlength=n_codes)
        seen = distinct_ints(codes)
    texts = np.asarray(as_text(categories[seen]), dtype=object).tolist()  # one conversion for all names
    out["occupancy"] = {t: (float(occ_ns[c]), float(occ_w[c])) for t, c in zip(texts, seen.tolist(), strict=True)}
    return out


#: Pinned copies at least this large measure the link's rate: the fixed cost of a copy (about
#: a launch, ``tiny_kernel_ns``) is then under ~12 % of its time even at PCIe Gen5's rate.
PINNED_SAMPLE_MIN_BYTES = 4 << 20


def _pageable_slowness(
    trace: Trace, args: pd.DataFrame, a_rows: np.ndarray, pageable: np.ndarray, dur: np.ndarray, fixed_ns: int
) -> dict[str, Any]:
    """What pageable memory cost the copies themselves (docs/semantics.md, ``pageable_copies``).

    A pageable copy is staged by the driver through a pinned buffer (a host memcpy, then the
    DMA, chunk by chunk), so it runs slower than the same copy from pinned memory. Per
    host-to-device and device-to-host copy: ``slow_ns = max(0, dur - (fixed_ns + bytes /
    pinned rate))``, the pinned rate of its direction being, in order: measured on this rank
    (its pinned copies of that direction of at least :data:`PINNED_SAMPLE_MIN_BYTES`, bytes
    over time), the device's host link (:func:`..perfmodel.links.host_link`), or PCIe Gen3
    x16's, the slowest link in use (so the excess is then a lower bound).
    """
    from ..perfmodel.links import GEN3, host_link

    if len(pageable) == 0:
        return {"slow_ns": 0, "slow_by_kind": {}, "pinned_gbps_by_kind": {}}
    kinds = as_text(args["copy_kind"]).to_numpy()
    byt = args["bytes"].to_numpy()
    ok = a_rows >= 0
    names = trace.metadata["device_name"]
    link = host_link(str(names.iloc[0])) if len(names) else None
    slow_by_kind: dict[str, int] = {}
    rate_by_kind: dict[str, list[Any]] = {}
    p_kinds = kinds[pageable]
    for kind in ("HtoD", "DtoH"):
        mine = pageable[(p_kinds == kind) & (byt[pageable] > 0)]
        if len(mine) == 0:
            continue
        sample = np.flatnonzero(
            ok & (kinds == kind) & ~args["pageable"].to_numpy(dtype=bool) & (byt >= PINNED_SAMPLE_MIN_BYTES)
        )
        sample_ns = float(dur[a_rows[sample]].sum()) if len(sample) else 0.0
        if sample_ns > 0:
            gbps, source = float(byt[sample].sum()) / sample_ns, f"measured on {len(sample)} pinned {kind} copies"
        elif link is not None:
            gbps, source = link.pinned_gbps, f"{link.name} of the device"
        else:
            gbps, source = GEN3.pinned_gbps, f"{GEN3.name}, the slowest link in use (device not known)"
        pinned_ns = fixed_ns + byt[mine].astype(np.float64) / gbps  # GB/s = bytes per ns
        slow = np.maximum(dur[a_rows[mine]].astype(np.float64) - pinned_ns, 0.0)
        slow_by_kind[kind] = round(float(slow.sum()))
        rate_by_kind[kind] = [gbps, source]
    return {
        "slow_ns": sum(slow_by_kind.values()),
        "slow_by_kind": slow_by_kind,
        "pinned_gbps_by_kind": rate_by_kind,
    }


def _native_occupancy(
    a_rows: np.ndarray,
    occ: np.ndarray,
    kind_codes: np.ndarray,
    kernel_kind: np.ndarray,
    class_codes: np.ndarray,
    compute: int,
    name_codes: np.ndarray,
    dur: np.ndarray,
    n_codes: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The occupancy sums of :func:`rank_facts` (time and time x occupancy per name code, the
    codes present) by one compiled pass over the argument rows (``_loops.occupancy``: the
    same sums in the same order as the bincounts); None where it does not run."""
    if loops.native is None:
        return None
    occ_ns, occ_w = np.zeros(n_codes, dtype=np.float64), np.zeros(n_codes, dtype=np.float64)
    count = np.zeros(n_codes, dtype=np.int64)
    c = np.ascontiguousarray
    try:
        done = loops.native.occupancy(
            c(a_rows, dtype=np.int64), c(occ), kind_codes, kernel_kind, class_codes, compute, name_codes,
            c(dur, dtype=np.int64), occ_ns, occ_w, count,
        )  # fmt: skip
    except (TypeError, ValueError, BufferError):
        return None
    return (occ_ns, occ_w, np.flatnonzero(count)) if done else None


def _idle_from_calls(cs: np.ndarray, ce: np.ndarray, ga: np.ndarray, gb: np.ndarray) -> int:
    """Device idle time from a host call until the GPU's next work, over all calls (once).

    For each device idle gap ``[a, b)``: if a call is running at ``a``, the whole gap; else
    from the start of the first call starting inside the gap to ``b``.
    """
    if len(cs) == 0 or len(ga) == 0:
        return 0
    us, ue = iv.union(cs, ce)
    k = np.searchsorted(us, ga, side="right") - 1
    covering = (k >= 0) & (ue[np.maximum(k, 0)] > ga)
    nxt = k + 1
    has_next = nxt < len(us)
    next_s = us[np.minimum(nxt, len(us) - 1)]
    start = np.where(covering, ga, np.where(has_next & (next_s < gb), next_s, gb))
    return int((gb - start).sum())


def _top_names(codes: np.ndarray, categories: pd.Index, rows: np.ndarray, k: int = 3) -> list[list[Any]]:
    """The ``k`` most frequent names at these rows, as [name, count] (ties by name)."""
    rows = rows[rows >= 0]
    c = codes[rows].astype(np.int64)
    c = c[c >= 0]
    if len(c) == 0:
        return []
    counts = np.bincount(c)
    seen = np.flatnonzero(counts)
    if len(seen) > k:  # only names counted at least as often as the k-th can be among the top
        kth = np.partition(counts[seen], len(seen) - k)[len(seen) - k]
        seen = seen[counts[seen] >= kth]
    texts = np.asarray(as_text(categories[seen]), dtype=object).tolist()  # one conversion, not one per name
    items = sorted(zip(texts, counts[seen].tolist(), strict=True), key=lambda kv: (-kv[1], kv[0]))[:k]
    return [[n, m] for n, m in items]


def _codes_in(codes: np.ndarray, categories: pd.Index, values: Iterable[str]) -> np.ndarray:
    """Rows whose categorical code is one of these values' (on the codes: fast; a comparison
    per value present, as a trace has few of them, else one table gather)."""
    wanted = categories.get_indexer(list(values))
    present = np.unique(wanted[wanted >= 0])
    if len(present) <= 4:
        out: np.ndarray = np.zeros(len(codes), dtype=bool)
        for c in present.tolist():
            out |= codes == c
        return out
    lut = np.zeros(len(categories) + 1, dtype=bool)  # the last entry: code -1 (no name)
    lut[present] = True
    out = lut[codes]
    return out


def _category_code(col: pd.Series, value: str) -> int:
    """The code of ``value`` in a categorical column; -2 (matches no row) if absent."""
    cats = col.cat.categories
    return int(cats.get_loc(value)) if value in cats else -2
