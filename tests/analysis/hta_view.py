"""What HTA 0.5 sees of a trace, rebuilt from ours, so that tests compare like with like.

HTA (see /work/shared/HTA_SEMANTICS.md §0) drops the last ProfilerStep when the trace has
two or more step names, works in the trace's microseconds (ns-resolution traces: start
rounded up, end rounded down) relative to the earliest event of all ranks. These helpers
reproduce each of those choices explicitly; the tests apply them to our results before
comparing with ``tests/golden/hta``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import jupyter_traceview as tv
from tests.analysis.hta_ops import drop_last_step, rebuild

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "hta"

#: Launch calls HTA 0.5's get_cuda_kernel_launch_stats counts (include_memory_events=True).
HTA_LAUNCH_STATS_NAMES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync")
#: Launch calls of HTA 0.5's queue length (get_runtime_launch_events_query).
HTA_QUEUE_NAMES = (
    *HTA_LAUNCH_STATS_NAMES,
    "cuLaunchKernel",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemsetAsync",
    "hipMemcpyAsync",
    "hipMemcpyWithStream",
)


def hta_selection(trace: tv.Trace) -> tv.Trace:
    """The trace as HTA filters it (:func:`tests.analysis.hta_ops.hta_kept`; events keep
    their eids, as ``Trace.select`` does)."""
    return drop_last_step(trace)


def hta_queue_selection(trace: tv.Trace) -> tv.Trace:
    """:func:`hta_selection`, less the GPU activities launched by a call HTA's queue length
    does not know (``cuLaunchKernelEx``, which cuBLAS uses on Hopper: ``h200_train``)."""
    sel = hta_selection(trace)
    drop = {}
    for r in sel.ranks:
        ev = sel.rank_data(r).events
        names = ev["name"].astype(str).to_numpy()
        by_eid = pd.Series(names, index=ev["eid"].to_numpy())
        leid = ev["launch_eid"].to_numpy()
        has = leid >= 0
        launcher = np.full(len(ev), "", dtype=object)
        launcher[has] = by_eid.reindex(leid[has]).fillna("").to_numpy()
        drop[r] = has & ~np.isin(launcher, HTA_QUEUE_NAMES)
    return rebuild(sel, {r: sel.rank_data(r).events.loc[~d] for r, d in drop.items()})


def hta_copy_selection(trace: tv.Trace) -> tv.Trace:
    """:func:`hta_selection`, less the copies and sets HTA's rounding gives a negative
    duration (shorter than a microsecond, inside one: start rounded up past the end rounded
    down). HTA's bandwidth drops them; the sub-us memsets of ``h200_train`` are such."""
    sel = hta_selection(trace)
    drop = {}
    for r in sel.ranks:
        if trace.meta(r).ts_precision != "ns":
            continue
        ev = sel.rank_data(r).events
        copy = ev["kind"].isin(["gpu_memcpy", "gpu_memset"]).to_numpy()
        ts = ev["ts_ns"].to_numpy()
        neg = hta_end_us(trace, r, ts + ev["dur_ns"].to_numpy()) < hta_start_us(trace, r, ts)
        drop[r] = copy & neg
    return rebuild(sel, {r: sel.rank_data(r).events.loc[~d] for r, d in drop.items()})


def _rel_ns(trace: tv.Trace, rank: int, t_ns: np.ndarray) -> np.ndarray:
    """Times relative to the rank file's own clock origin (baseTimeNanoseconds), ns."""
    return np.asarray(t_ns, dtype=np.int64) - trace.meta(rank).base_time_ns


def hta_start_us(trace: tv.Trace, rank: int, ts_ns: np.ndarray) -> np.ndarray:
    """HTA's start times (us in the file's clock): rounded up on ns-resolution traces."""
    rel = _rel_ns(trace, rank, ts_ns)
    return -((-rel) // 1000)


def hta_end_us(trace: tv.Trace, rank: int, end_ns: np.ndarray) -> np.ndarray:
    """HTA's end times (us in the file's clock): rounded down on ns-resolution traces."""
    return _rel_ns(trace, rank, end_ns) // 1000


def hta_min_us(trace: tv.Trace) -> int:
    """HTA's time origin: the earliest start (HTA units) of any event with a duration, all ranks."""
    lows = []
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        timed = ev["kind"].astype(str).to_numpy() != "cpu_instant_event"
        lows.append(int(hta_start_us(trace, r, ev["ts_ns"].to_numpy()[timed]).min()))
    return min(lows)


def read_hta(folder: str, analysis: str) -> pd.DataFrame | None:
    """An HTA reference frame; None where HTA returned nothing."""
    p = GOLDEN / folder / f"{analysis}.csv"
    if not p.exists():
        return None
    if analysis.endswith("_summary"):
        # describe() under a two-level header; HTA's (rank, key) index was not written:
        # rows come in sorted (rank, key) order.
        df = pd.read_csv(p, header=[0, 1])
        df.columns = [c[1] for c in df.columns]
        return df
    return pd.read_csv(p)
