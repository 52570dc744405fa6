"""Kernel launch statistics: CPU launch cost, GPU duration and launch delay of every launch.

A *launch* is a GPU activity (kernel, memory copy or memory set) together with the CPU-side
runtime or driver call that enqueued it, linked by correlation id (``launch_eid`` in the
events table). Every launch API counts: ``cudaLaunchKernel``, ``cudaLaunchKernelExC``,
``cuLaunchKernel(Ex)``, ``cudaMemcpyAsync``, ``cudaMemsetAsync``, synchronous
``cudaMemcpy``, ``cudaGraphLaunch`` (one row per activity of the graph), the ``hip*`` calls
of ROCm traces, MTIA's ``runFunction``. Synchronisation records (``cuda_sync``) are not
launches. See ``docs/semantics.md (launches, queues and bandwidth)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from ..errors import OptionError
from ..model.schema import GPU_ACTIVITY_KINDS, EventKind
from ..model.trace import Trace
from . import _links as lk
from ._common import empty, scoped, warn_no_gpu
from ._gpu import activities
from ._memo import per_rank, sharing

__all__ = ["kernel_launch_stats"]

#: GPU activity kinds that are launched work (sync records are not).
LAUNCHED_KINDS = (EventKind.KERNEL.value, EventKind.GPU_MEMCPY.value, EventKind.GPU_MEMSET.value)
_ACTIVITY_KINDS = [k.value for k in GPU_ACTIVITY_KINDS]

LAUNCH_COLUMNS = {
    "rank": "int64",
    "eid": "int64",
    "name": "category",
    "kind": "category",
    "device": "int16",
    "stream": "int64",
    "correlation": "int64",
    "launch_eid": "int64",
    "launch_name": "category",
    "operator_eid": "int64",
    "operator": "category",
    "step": "int32",
    "cpu_ts_ns": "int64",
    "cpu_dur_ns": "int64",
    "gpu_ts_ns": "int64",
    "gpu_dur_ns": "int64",
    "launch_delay_ns": "int64",
    "short_kernel": "bool",
    "runtime_outlier": "bool",
    "launch_delay_outlier": "bool",
}

RANK_COLUMNS = {
    "rank": "int64",
    "launches": "int64",
    "kernels": "int64",
    "short_kernels": "int64",
    "short_kernel_pct": "float64",
    "launch_bound_pct": "float64",
    "runtime_outliers": "int64",
    "launch_delay_outliers": "int64",
    "cpu_dur_total_ns": "int64",
    "cpu_dur_mean_ns": "int64",
    "cpu_dur_p50_ns": "int64",
    "cpu_dur_p99_ns": "int64",
    "cpu_dur_max_ns": "int64",
    "gpu_dur_total_ns": "int64",
    "gpu_dur_mean_ns": "int64",
    "gpu_dur_p50_ns": "int64",
    "launch_delay_mean_ns": "int64",
    "launch_delay_p50_ns": "int64",
    "launch_delay_p90_ns": "int64",
    "launch_delay_p99_ns": "int64",
    "launch_delay_max_ns": "int64",
    "runtime_outlier_cutoff_ns": "int64",
    "launch_delay_outlier_cutoff_ns": "int64",
}


def launched(ev: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Row positions of the launched GPU activities of a rank's events and of their launch calls.

    Only activities whose launch call is among ``ev``'s rows count (after ``select`` a call
    may be out of scope). Rows are in ``ev`` order (by GPU start).
    """
    mask = kind_mask(ev, LAUNCHED_KINDS)
    leid = ev["launch_eid"].to_numpy()
    act = np.flatnonzero(mask & (leid >= 0))
    return act, rows_of(ev, leid[act])


def rows_of(ev: pd.DataFrame, eids: np.ndarray) -> np.ndarray:
    """Row positions of ``eids`` in ``ev`` (sorted by eid); -1 where an eid is not there."""
    eid = ev["eid"].to_numpy()
    n = len(eid)
    eids = np.asarray(eids, dtype=np.int64)
    if n and eid[-1] == n - 1:  # the rank's full table: eid is the row position
        return np.where((eids >= 0) & (eids < n), eids, -1)
    pos = np.searchsorted(eid, eids)
    ok = (eids >= 0) & (pos < n)
    ok[ok] &= eid[pos[ok]] == eids[ok]
    return np.where(ok, pos, -1)


def kind_mask(ev: pd.DataFrame, kinds: Iterable[str]) -> np.ndarray:
    """Rows of ``ev`` whose ``kind`` is one of ``kinds`` (on the categorical codes: fast)."""
    kind = ev["kind"].array
    # One flag per category (and False for code -1, no kind), then one gather.
    lut = np.append(np.asarray(kind.categories.isin(list(kinds)), dtype=bool), False)
    out: np.ndarray = lut[np.asarray(kind.codes)]
    return out


def _is_kernel(ev: pd.DataFrame) -> np.ndarray:
    """Per code of the ``kind`` column (and code -1 last), whether it is a kernel."""
    cats = ev["kind"].array.categories
    return np.append(np.asarray(cats == EventKind.KERNEL.value, dtype=bool), False)


def has_gpu(ev: pd.DataFrame) -> bool:
    """Whether a rank's events include any GPU activity."""
    return lk.kind_any(ev, _ACTIVITY_KINDS)


def ranks_without_gpu(trace: Trace, ranks: Iterable[int] | int | None) -> list[int]:
    """The ranks asked for (all if None) that have no GPU activity at all (CPU-only traces).

    Decided on the trace as given, before iterations or a time range narrow it: an empty
    window is an empty result, not a CPU-only trace.
    """
    return [r for r, has in per_rank(scoped(trace, ranks=ranks), _has_gpu_rank).items() if not has]


def _has_gpu_rank(trace: Trace) -> bool:
    (r,) = trace.ranks
    return has_gpu(trace.rank_data(r).events)


def categorical_take(col: pd.Series, rows: np.ndarray) -> pd.Categorical:
    """``col`` (categorical) at ``rows``, NaN where a row is -1, keeping only the categories used."""
    codes = col.cat.codes.to_numpy()
    cats = col.cat.categories
    if len(codes) == 0 or len(cats) == 0:
        return pd.Categorical.from_codes(np.full(len(rows), -1, dtype=np.int32), categories=cats[:0])
    taken = codes[np.maximum(rows, 0)].astype(np.int64)
    valid = (rows >= 0) & (taken >= 0)
    used = np.zeros(len(cats), dtype=bool)
    used[taken[valid]] = True
    keep = np.flatnonzero(used)
    remap = np.full(len(cats), -1, dtype=np.int64)
    remap[keep] = np.arange(len(keep))
    new = np.where(valid, remap[np.where(valid, taken, 0)], -1)
    return pd.Categorical.from_codes(new.astype(np.int32), categories=cats[keep])


def concat_ranks(parts: Sequence[dict[str, Any]], columns: dict[str, str]) -> pd.DataFrame:
    """Concatenate per-rank column dicts into one frame with the documented dtypes."""
    if not parts:
        return empty(columns)
    out: dict[str, Any] = {}
    for c, dtype in columns.items():
        values = [p[c] for p in parts]
        if dtype == "category":
            cats = [v if isinstance(v, pd.Categorical) else pd.Categorical(v) for v in values]
            out[c] = cats[0] if len(cats) == 1 else union_categoricals(cats, ignore_order=True)
        else:
            out[c] = np.concatenate([np.asarray(v) for v in values]).astype(dtype, copy=False)
    # The arrays are new: no need for pandas to copy them into consolidated blocks.
    return pd.DataFrame(out, copy=False)


def _tukey_fence(x: np.ndarray, k: float) -> int:
    q1, q3 = np.percentile(x, [25, 75]).tolist()
    return _fence(q1, q3, k)


def _fence(q1: float, q3: float, k: float) -> int:
    """Tukey's upper fence from the quartiles."""
    return int(np.floor(q3 + k * (q3 - q1)))


def _q(x: np.ndarray, q: float) -> int:
    return round(float(np.percentile(x, q)))


def kernel_launch_stats(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    per: Literal["launch", "rank"] = "launch",
    short_kernel_ns: int = 10_000,
    runtime_outlier_ns: int = 50_000,
    launch_delay_outlier_ns: int = 100_000,
    outlier_rule: Literal["fixed", "tukey"] = "fixed",
    tukey_k: float = 3.0,
) -> pd.DataFrame:
    """CPU launch cost, GPU duration and launch delay of every GPU launch, or a summary per rank.

    A launch is a kernel, memory copy or memory set with the runtime/driver call that
    enqueued it in the trace (any launch API, HIP and CUDA graphs included; see the module
    docstring). The *launch delay* is HTA's: ``max(0, gpu start - (cpu start + cpu dur))``,
    the time the activity waited on the GPU after the launch call returned.

    Parameters
    ----------
    trace:
        The trace.
    ranks, iterations, time_range:
        Scope (see :meth:`Trace.select`). A launch counts when both its call and its GPU
        activity are in scope; times are not clipped.
    per:
        ``"launch"``: one row per launch. ``"rank"``: one row per rank that has launches.
    short_kernel_ns:
        A launched activity running less than this on the GPU is a *short kernel* (its launch
        cost is comparable to its work). Default 10 us.
    runtime_outlier_ns, launch_delay_outlier_ns:
        With ``outlier_rule="fixed"``, a launch call longer than ``runtime_outlier_ns``
        (default 50 us, HTA's ``runtime_cutoff``) is a runtime outlier and a launch delay
        longer than ``launch_delay_outlier_ns`` (default 100 us, HTA's
        ``launch_delay_cutoff``) a launch-delay outlier. Comparisons are strict (``>``), as
        in HTA's plots.
    outlier_rule:
        ``"fixed"``: the cutoffs above. ``"tukey"``: per rank, values above
        ``Q3 + tukey_k * (Q3 - Q1)`` of that rank's distribution (Tukey's far-out fence;
        where most delays are 0 the fence is low, so read it with the distribution).
    tukey_k:
        The fence multiplier of ``outlier_rule="tukey"`` (default 3).

    Returns
    -------
    pandas.DataFrame
        With ``per="launch"``, sorted by rank and launch time:

        rank : int
        eid : int
            The GPU activity's event id.
        name : category
            Kernel (or copy/set) name.
        kind : category
            ``kernel``, ``gpu_memcpy`` or ``gpu_memset``.
        device : int
        stream : int
        correlation : int
        launch_eid : int
            Event id of the launch call.
        launch_name : category
            The launch API (``cudaLaunchKernel``, ``hipLaunchKernel``, ``cudaGraphLaunch``, ...).
        operator_eid : int
            Event id of the launching operator: the innermost event enclosing the launch call
            on its thread; -1 if none.
        operator : category
            Its name; NaN if none.
        step : int
            ProfilerStep of the launch; -1 if none.
        cpu_ts_ns, cpu_dur_ns : int, ns
            Start and duration of the launch call.
        gpu_ts_ns, gpu_dur_ns : int, ns
            Start and duration of the GPU activity.
        launch_delay_ns : int, ns
            ``max(0, gpu_ts_ns - (cpu_ts_ns + cpu_dur_ns))``.
        short_kernel : bool
            ``gpu_dur_ns < short_kernel_ns``.
        runtime_outlier : bool
            ``cpu_dur_ns`` above the runtime cutoff.
        launch_delay_outlier : bool
            ``launch_delay_ns`` above the launch-delay cutoff.

        With ``per="rank"``:

        rank : int
        launches : int
            Launches (kernels, copies and sets).
        kernels : int
            Of which kernels.
        short_kernels : int
            Launches flagged ``short_kernel``.
        short_kernel_pct : float, %
            ``100 * short_kernels / launches``.
        launch_bound_pct : float, %
            Share of launches whose GPU duration is shorter than their launch call
            (the CPU cannot enqueue work as fast as the GPU runs it).
        runtime_outliers, launch_delay_outliers : int
            Launches flagged as outliers.
        cpu_dur_total_ns, cpu_dur_mean_ns, cpu_dur_p50_ns, cpu_dur_p99_ns, cpu_dur_max_ns : int, ns
            Launch call durations: sum, mean, median, 99th percentile, maximum.
        gpu_dur_total_ns, gpu_dur_mean_ns, gpu_dur_p50_ns : int, ns
            GPU durations: sum, mean, median.
        launch_delay_mean_ns, launch_delay_p50_ns, launch_delay_p90_ns, launch_delay_p99_ns, launch_delay_max_ns : int, ns
            Launch delays: mean, percentiles (linear interpolation), maximum.
        runtime_outlier_cutoff_ns, launch_delay_outlier_cutoff_ns : int, ns
            The cutoffs used on this rank (the fixed ones, or the Tukey fences).

        Means and percentiles are rounded to the nanosecond.

    Warns
    -----
    TraceviewWarning
        For ranks without GPU activity (a CPU-only trace gives an empty frame).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> stats = tv.kernel_launch_stats(trace)
    >>> int(stats["launch_delay_ns"].min()) >= 0
    True
    >>> tv.kernel_launch_stats(trace, per="rank")["launches"].tolist()[:2]
    [261, 262]
    """
    if per not in ("launch", "rank"):
        raise OptionError.invalid("per", per, ("launch", "rank"))
    if outlier_rule not in ("fixed", "tukey"):
        raise OptionError.invalid("outlier_rule", outlier_rule, ("fixed", "tukey"))
    no_gpu = ranks_without_gpu(trace, ranks)
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range, clip=False)
    options = (per, short_kernel_ns, runtime_outlier_ns, launch_delay_outlier_ns, outlier_rule, tukey_k)
    # One summary row per rank is kept with the cache entry (per_rank); the launches are not.
    by_rank = per_rank(trace, _launch_rank, *options) if per == "rank" else trace.map_ranks(_launch_rank, *options)
    parts = [p for p in by_rank.values() if p is not None]
    if no_gpu:
        warn_no_gpu("kernel_launch_stats", no_gpu)
    if per == "rank":
        if not parts:
            return empty(RANK_COLUMNS)
        return pd.DataFrame(parts, columns=list(RANK_COLUMNS)).astype(RANK_COLUMNS)
    return concat_ranks(parts, LAUNCH_COLUMNS)


def _launch_rank(
    trace: Trace,
    per: str,
    short_kernel_ns: int,
    runtime_outlier_ns: int,
    launch_delay_outlier_ns: int,
    outlier_rule: str,
    tukey_k: float,
) -> dict[str, Any] | None:
    """One rank's launches (``per="launch"``: columns) or summary row; None without launches."""
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    ts = ev["ts_ns"].to_numpy()
    dur = ev["dur_ns"].to_numpy()
    if per == "rank" and trace.window is None and sharing():
        # From the rank's GPU activities (shared, unclipped without a window): the same rows
        # as ``launched``, their times at hand, the kinds tested at those rows only.
        acts = activities(trace, r)
        launched_kind = np.append(np.asarray(ev["kind"].array.categories.isin(LAUNCHED_KINDS), dtype=bool), False)
        sel = np.flatnonzero(launched_kind[np.asarray(ev["kind"].array.codes)[acts.rows]] & (acts.launch_eid >= 0))
        call = rows_of(ev, acts.launch_eid[sel])
        keep = call >= 0
        sel, call = sel[keep], call[keep]
        act, gpu_ts, gpu_dur = acts.rows[sel], acts.ts[sel], acts.end[sel] - acts.ts[sel]
        if len(act) == 0:
            return None
        cpu_ts, cpu_dur = ts[call], dur[call]
    else:
        act, call = launched(ev)
        keep = call >= 0
        act, call = act[keep], call[keep]
        if len(act) == 0:
            return None
        cpu_ts, cpu_dur = ts[call], dur[call]
        if per == "launch":  # rows in launch order; the summary row's figures do not depend on it
            order = np.lexsort((ts[act], cpu_ts))
            act, call, cpu_ts, cpu_dur = act[order], call[order], cpu_ts[order], cpu_dur[order]
        gpu_ts, gpu_dur = ts[act], dur[act]
    delay = np.maximum(0, gpu_ts - (cpu_ts + cpu_dur))
    # The summary row's percentiles of each array from one partition of it, the fences' among
    # them (np.percentile computes each q alone: the same values as separate calls).
    cpu_q: list[float] = np.percentile(cpu_dur, [25, 75, 50, 99]).tolist() if per == "rank" else []
    delay_q: list[float] = np.percentile(delay, [25, 75, 50, 90, 99]).tolist() if per == "rank" else []
    if outlier_rule == "tukey" and per == "rank":
        runtime_cut = _fence(cpu_q[0], cpu_q[1], tukey_k)
        delay_cut = _fence(delay_q[0], delay_q[1], tukey_k)
    elif outlier_rule == "tukey":
        runtime_cut = _tukey_fence(cpu_dur, tukey_k)
        delay_cut = _tukey_fence(delay, tukey_k)
    else:
        runtime_cut, delay_cut = int(runtime_outlier_ns), int(launch_delay_outlier_ns)
    short = gpu_dur < short_kernel_ns
    rt_out = cpu_dur > runtime_cut
    dl_out = delay > delay_cut
    if per == "launch":
        op_eid = ev["parent_eid"].to_numpy()[call]
        op_rows = rows_of(ev, op_eid)
        return {
            "rank": np.full(len(act), r, dtype=np.int64),
            "eid": ev["eid"].to_numpy()[act],
            "name": categorical_take(ev["name"], act),
            "kind": categorical_take(ev["kind"], act),
            "device": ev["device"].to_numpy()[act],
            "stream": ev["stream"].to_numpy()[act],
            "correlation": ev["correlation"].to_numpy()[act],
            "launch_eid": ev["eid"].to_numpy()[call],
            "launch_name": categorical_take(ev["name"], call),
            "operator_eid": np.where(op_rows >= 0, op_eid, -1),
            "operator": categorical_take(ev["name"], op_rows),
            "step": ev["step"].to_numpy()[call],
            "cpu_ts_ns": cpu_ts,
            "cpu_dur_ns": cpu_dur,
            "gpu_ts_ns": gpu_ts,
            "gpu_dur_ns": gpu_dur,
            "launch_delay_ns": delay,
            "short_kernel": short,
            "runtime_outlier": rt_out,
            "launch_delay_outlier": dl_out,
        }
    n = len(act)
    n_short = int(short.sum())
    cpu_p50, cpu_p99 = (round(v) for v in cpu_q[2:])
    delay_p50, delay_p90, delay_p99 = (round(v) for v in delay_q[2:])
    return {
        "rank": r,
        "launches": n,
        "kernels": int(np.count_nonzero(_is_kernel(ev)[np.asarray(ev["kind"].array.codes)[act]])),
        "short_kernels": n_short,
        "short_kernel_pct": 100.0 * n_short / n,
        "launch_bound_pct": 100.0 * float((gpu_dur < cpu_dur).sum()) / n,
        "runtime_outliers": int(rt_out.sum()),
        "launch_delay_outliers": int(dl_out.sum()),
        "cpu_dur_total_ns": int(cpu_dur.sum()),
        "cpu_dur_mean_ns": round(float(cpu_dur.mean())),
        "cpu_dur_p50_ns": cpu_p50,
        "cpu_dur_p99_ns": cpu_p99,
        "cpu_dur_max_ns": int(cpu_dur.max()),
        "gpu_dur_total_ns": int(gpu_dur.sum()),
        "gpu_dur_mean_ns": round(float(gpu_dur.mean())),
        "gpu_dur_p50_ns": _q(gpu_dur, 50),
        "launch_delay_mean_ns": round(float(delay.mean())),
        "launch_delay_p50_ns": delay_p50,
        "launch_delay_p90_ns": delay_p90,
        "launch_delay_p99_ns": delay_p99,
        "launch_delay_max_ns": int(delay.max()),
        "runtime_outlier_cutoff_ns": runtime_cut,
        "launch_delay_outlier_cutoff_ns": delay_cut,
    }
