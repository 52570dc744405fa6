"""The POP efficiency model for GPU jobs, and per-iteration statistics.

See ``docs/semantics.md (efficiency)`` for the definitions and their sources.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import OptionError, TraceviewWarning
from ..model import intervals as iv
from ..model.intervals import coverage_of
from ..model.trace import Trace
from ._common import empty, scoped, warn_no_gpu, with_gpu
from ._gpu import COMM, COMPUTE, Activities, activities
from ._memo import per_rank

__all__ = ["efficiency", "iteration_stats"]

_JOB_COLUMNS = {
    "ranks": "int64",
    "window_start_ns": "int64",
    "window_end_ns": "int64",
    "elapsed_ns": "int64",
    "useful_mean_ns": "float64",
    "useful_max_ns": "int64",
    "useful_max_rank": "int64",
    "busy_max_ns": "int64",
    "load_balance_pct": "float64",
    "communication_efficiency_pct": "float64",
    "orchestration_efficiency_pct": "float64",
    "parallel_efficiency_pct": "float64",
}
EFFICIENCY_COLUMNS = {
    "job": _JOB_COLUMNS,
    "iteration": {"step": "int64", **_JOB_COLUMNS},
    "rank": {
        "rank": "int64",
        "window_start_ns": "int64",
        "window_end_ns": "int64",
        "elapsed_ns": "int64",
        "useful_ns": "int64",
        "busy_ns": "int64",
        "load_pct": "float64",
        "communication_efficiency_pct": "float64",
        "orchestration_efficiency_pct": "float64",
        "parallel_efficiency_pct": "float64",
    },
}

_STEP_RANK_COLUMNS = {
    "step": "int64",
    "rank": "int64",
    "start_ns": "int64",
    "end_ns": "int64",
    "duration_ns": "int64",
    "gpu_busy_ns": "int64",
    "compute_ns": "int64",
    "communication_ns": "int64",
    "exposed_comm_ns": "int64",
    "idle_ns": "int64",
    "gpu_busy_pct": "float64",
    "exposed_comm_pct": "float64",
    "idle_pct": "float64",
}
ITERATION_COLUMNS = {
    "step_rank": _STEP_RANK_COLUMNS,
    "step": {
        "step": "int64",
        "ranks": "int64",
        "duration_ns": "int64",
        "duration_min_ns": "int64",
        "duration_mean_ns": "float64",
        "slowest_rank": "int64",
        "spread_ns": "int64",
        "spread_pct": "float64",
        "compute_max_ns": "int64",
        "compute_min_ns": "int64",
        "most_compute_rank": "int64",
        "compute_spread_ns": "int64",
        "exposed_comm_max_ns": "int64",
        "idle_max_ns": "int64",
        "vs_median_pct": "float64",
    },
    "rank": {
        "rank": "int64",
        "steps": "int64",
        "duration_mean_ns": "float64",
        "duration_std_ns": "float64",
        "duration_min_ns": "int64",
        "duration_max_ns": "int64",
        "jitter_pct": "float64",
        "compute_mean_ns": "float64",
        "exposed_comm_mean_ns": "float64",
        "idle_mean_ns": "float64",
    },
    "job": {
        "steps": "int64",
        "ranks": "int64",
        "step_mean_ns": "float64",
        "step_std_ns": "float64",
        "step_min_ns": "int64",
        "step_max_ns": "int64",
        "jitter_pct": "float64",
        "slowest_step": "int64",
        "fastest_step": "int64",
    },
}


def _pct(num: np.ndarray | float, den: np.ndarray | float) -> np.ndarray:
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, 100.0 * num / den, np.nan)


def _gpu_ranks(trace: Trace, analysis: str) -> dict[int, Activities]:
    """Work activities of each rank that has some; warns about those without."""
    out, idle = {}, []
    for r in trace.ranks:
        acts = activities(trace, r, work_only=True)
        if len(acts):
            out[r] = acts
        else:
            idle.append(r)
    if idle:
        warn_no_gpu(analysis, idle)
    return out


def _warn_no_steps(analysis: str, trace: Trace) -> None:
    warnings.warn(
        f"{analysis}: the ranks with GPU work have no ProfilerStep iterations (was the profiler "
        "stepped with prof.step()?); the result is empty",
        TraceviewWarning,
        stacklevel=3,
    )


def step_windows(trace: Trace, ranks: Iterable[int]) -> pd.DataFrame:
    """Per (rank, step) the iteration's window on that rank: ``rank, step, start_ns, end_ns``.

    A step starts where its ``ProfilerStep#N`` starts and ends where the rank's next
    step (N+1) starts, so consecutive steps tile the rank's time; a step not followed by
    N+1 ends at its CPU end or the end of the GPU work it launched, whichever is later.
    """
    its = trace.iterations
    # The ranks' rows by (rank, start), in a stable order (as sort_values(kind="stable")), on arrays.
    rank = its["rank"].to_numpy()
    rows = np.flatnonzero(np.isin(rank, list(ranks)))
    if not len(rows):
        return pd.DataFrame({c: pd.Series([], dtype="int64") for c in ("rank", "step", "start_ns", "end_ns")})
    start = its["start_ns"].to_numpy()[rows]
    rows = rows[np.lexsort((start, rank[rows]))]
    rank, step, start = rank[rows], its["step"].to_numpy()[rows], its["start_ns"].to_numpy()[rows]
    own_end = np.maximum(its["end_ns"].to_numpy()[rows], its["gpu_end_ns"].to_numpy()[rows])
    end = own_end.copy()
    follows = (rank[1:] == rank[:-1]) & (step[1:] == step[:-1] + 1)
    end[:-1] = np.where(follows, start[1:], own_end[:-1])
    # A window never ends before it starts (a next step recorded as starting early).
    end = np.maximum(end, start)
    if trace.window is not None:
        lo, hi = trace.window
        start, end = np.clip(start, lo, hi), np.clip(end, lo, hi)
    return pd.DataFrame({"rank": rank, "step": step, "start_ns": start, "end_ns": end}).astype("int64")


def window_times(acts: Activities, starts: np.ndarray, ends: np.ndarray) -> dict[str, np.ndarray]:
    """Busy, compute, communication and exposed-communication time of ``acts`` in each window."""
    work = acts.union()
    comp = acts.union(COMPUTE)
    comm = acts.union(COMM)
    exposed = iv.subtract(comm, comp)
    return {
        "gpu_busy_ns": coverage_of(work, starts, ends),
        "compute_ns": coverage_of(comp, starts, ends),
        "communication_ns": coverage_of(comm, starts, ends),
        "exposed_comm_ns": coverage_of(exposed, starts, ends),
    }


def _add_ratios(out: pd.DataFrame) -> None:
    """LB, CommE, OE and PE columns from the U, M and T columns of job-level rows."""
    umean = out["useful_mean_ns"].to_numpy()
    umax = out["useful_max_ns"].to_numpy()
    mmax = out["busy_max_ns"].to_numpy()
    t = out["elapsed_ns"].to_numpy()
    out["load_balance_pct"] = _pct(umean, umax)
    out["communication_efficiency_pct"] = _pct(umax, mmax)
    out["orchestration_efficiency_pct"] = _pct(mmax, t)
    out["parallel_efficiency_pct"] = _pct(umean, t)


def efficiency(
    trace: Trace,
    *,
    per: Literal["job", "rank", "iteration"] = "job",
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """The POP parallel-efficiency model of a GPU job: which kind of loss dominates.

    For each rank, over a common elapsed window of length ``T``: the *useful* time ``U``
    (some compute kernel runs) and the *busy* time ``M`` (some compute, communication or
    memory activity runs; unions over streams). Then, over the ranks:

    * Load Balance ``LB = mean(U) / max(U)``: compute spread evenly across ranks;
    * Communication Efficiency ``CommE = max(U) / max(M)``: transfers hidden under compute;
    * Orchestration Efficiency ``OE = max(M) / T``: the GPUs kept fed (host launch
      overhead, synchronisation and idle gaps lower it);
    * Parallel Efficiency ``PE = LB * CommE * OE = sum(U) / (ranks * T)``.

    ``T`` is the job's GPU span: the first GPU work start to the last GPU work end over
    all ranks (within ``time_range`` when given). With ``per="iteration"`` each
    ProfilerStep is its own window, from the earliest start of that step on any rank to
    the latest end (a step lasts until the rank's next step starts, or for the last step
    until its CPU or GPU work ends), and each rank's ``U`` and ``M`` are taken within its
    own span of that step. See ``docs/semantics.md (efficiency)``.

    Parameters
    ----------
    per
        ``"job"``: one row; ``"rank"``: one row per rank (its share of the job window);
        ``"iteration"``: one row per ProfilerStep.
    ranks, iterations, time_range
        Scope the trace first (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        ``per="job"`` (one row) and ``per="iteration"`` (one row per step, with a leading
        ``step`` column):

        ranks : int
            Ranks with GPU work that enter the model.
        window_start_ns, window_end_ns : int, ns
            The elapsed window, absolute.
        elapsed_ns : int, ns
            ``T``.
        useful_mean_ns : float, ns
            ``mean(U)``.
        useful_max_ns : int, ns
            ``max(U)``.
        useful_max_rank : int
            The rank with the most compute: the one the others wait for.
        busy_max_ns : int, ns
            ``max(M)``.
        load_balance_pct, communication_efficiency_pct, orchestration_efficiency_pct, parallel_efficiency_pct : float, %
            LB, CommE, OE and PE, as percentages.

        ``per="rank"``:

        rank : int
        window_start_ns, window_end_ns, elapsed_ns : int, ns
            The job window and ``T`` (the same for every rank).
        useful_ns, busy_ns : int, ns
            The rank's ``U`` and ``M``.
        load_pct : float, %
            ``U / max(U)``: the rank's compute relative to the most loaded rank.
        communication_efficiency_pct : float, %
            ``U / M``.
        orchestration_efficiency_pct : float, %
            ``M / T``.
        parallel_efficiency_pct : float, %
            ``U / T`` (the job's PE is the mean of these).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> e = tv.efficiency(trace)
    >>> int(e.loc[0, "ranks"]), bool(0 < e.loc[0, "load_balance_pct"] <= 100)
    (8, True)
    """
    if per not in EFFICIENCY_COLUMNS:
        raise OptionError.invalid("per", per, tuple(EFFICIENCY_COLUMNS))
    columns = EFFICIENCY_COLUMNS[per]
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    if per != "iteration":
        return _efficiency_of(with_gpu(per_rank(trace, _rank_work), "efficiency"), per, columns)
    acts = _gpu_ranks(trace, "efficiency")
    if not acts:
        return empty(columns)
    win = step_windows(trace, acts)
    if win.empty:
        _warn_no_steps("efficiency", trace)
        return empty(columns)
    useful = np.zeros(len(win), dtype=np.int64)
    busy = np.zeros(len(win), dtype=np.int64)
    wr = win["rank"].to_numpy()
    for r, a in acts.items():
        sel = np.flatnonzero(wr == r)
        if len(sel) == 0:
            continue
        s, e = win["start_ns"].to_numpy()[sel], win["end_ns"].to_numpy()[sel]
        useful[sel] = coverage_of(a.union(COMPUTE), s, e)
        busy[sel] = coverage_of(a.union(), s, e)
    win = win.assign(useful=useful, busy=busy)
    g = win.groupby("step", sort=True)
    umax_row = win.loc[g["useful"].idxmax(), ["step", "rank"]].set_index("step")["rank"]
    out = pd.DataFrame(
        {
            "ranks": g.size(),
            "window_start_ns": g["start_ns"].min(),
            "window_end_ns": g["end_ns"].max(),
            "useful_mean_ns": g["useful"].mean(),
            "useful_max_ns": g["useful"].max(),
            "useful_max_rank": umax_row,
            "busy_max_ns": g["busy"].max(),
        }
    ).reset_index()
    out["elapsed_ns"] = out["window_end_ns"] - out["window_start_ns"]
    _add_ratios(out)
    return out[list(columns)].astype(columns)


def _rank_work(trace: Trace) -> tuple[int, int, int, int] | None:
    """One rank's ``U`` (compute union), ``M`` (busy union), first and last busy instant; None
    without GPU work."""
    (r,) = trace.ranks
    a = activities(trace, r, work_only=True)
    if not len(a):
        return None
    busy = a.union()
    return iv.length(*a.union(COMPUTE)), iv.length(*busy), int(busy[0][0]), int(busy[1][-1])


def _efficiency_of(work: dict[int, tuple[int, int, int, int]], per: str, columns: dict[str, str]) -> pd.DataFrame:
    """:func:`efficiency` ``per="job"`` or ``"rank"`` from the ranks' :func:`_rank_work`."""
    if not work:
        return empty(columns)
    rank_ids = np.array(list(work), dtype=np.int64)
    useful = np.array([w[0] for w in work.values()], dtype=np.int64)
    busy = np.array([w[1] for w in work.values()], dtype=np.int64)
    w0 = min(w[2] for w in work.values())
    w1 = max(w[3] for w in work.values())
    if per == "job":
        umax_i = int(np.argmax(useful))
        out = pd.DataFrame(
            {
                "ranks": [len(useful)],
                "window_start_ns": [w0],
                "window_end_ns": [w1],
                "elapsed_ns": [w1 - w0],
                "useful_mean_ns": [float(useful.mean())],
                "useful_max_ns": [int(useful[umax_i])],
                "useful_max_rank": [int(rank_ids[umax_i])],
                "busy_max_ns": [int(busy.max())],
            }
        )
        _add_ratios(out)
        return out[list(columns)].astype(columns)
    t = w1 - w0
    out = pd.DataFrame(
        {
            "rank": rank_ids,
            "window_start_ns": w0,
            "window_end_ns": w1,
            "elapsed_ns": t,
            "useful_ns": useful,
            "busy_ns": busy,
            "load_pct": _pct(useful, useful.max()),
            "communication_efficiency_pct": _pct(useful, busy),
            "orchestration_efficiency_pct": _pct(busy, t),
            "parallel_efficiency_pct": _pct(useful, t),
        }
    )
    return out.astype(columns)


def iteration_stats(
    trace: Trace,
    *,
    per: Literal["step_rank", "step", "rank", "job"] = "step_rank",
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Per ProfilerStep and rank: duration, GPU busy, compute, exposed communication, idle.

    Each step's window on a rank starts where its ``ProfilerStep#N`` starts and lasts
    until the rank's next step starts (the last step of a run: until its CPU span or the
    GPU work it launched ends, whichever is later), so the steps of a rank tile its time.
    Within the window, times are unions over streams of the GPU activities running then
    (whichever step launched them).

    Parameters
    ----------
    per
        ``"step_rank"``: one row per (step, rank). ``"step"``: one row per step across
        ranks (the job's step time is the slowest rank's). ``"rank"``: one row per rank
        across steps, with its step-time jitter. ``"job"``: one row, with the jitter of
        the job's step time over steps.
    ranks, iterations, time_range
        Scope the trace first (see :meth:`Trace.select`).

    Returns
    -------
    pandas.DataFrame
        ``per="step_rank"``:

        step, rank : int
        start_ns, end_ns : int, ns
            The window, absolute.
        duration_ns : int, ns
            Its length.
        gpu_busy_ns : int, ns
            Time with some compute, communication or memory activity running.
        compute_ns : int, ns
            Time with some compute kernel running.
        communication_ns : int, ns
            Time with some communication kernel running.
        exposed_comm_ns : int, ns
            Communication time with no compute kernel running.
        idle_ns : int, ns
            ``duration_ns - gpu_busy_ns``.
        gpu_busy_pct, exposed_comm_pct, idle_pct : float, %
            As shares of ``duration_ns``.

        ``per="step"``: ``step``; ``ranks``; ``duration_ns`` (the slowest rank's, ns);
        ``duration_min_ns``; ``duration_mean_ns``; ``slowest_rank``; ``spread_ns`` (max -
        min duration); ``spread_pct`` (spread / mean duration, %); ``compute_max_ns``,
        ``compute_min_ns``, ``most_compute_rank`` (the likely straggler: in a
        synchronous job every rank's step lasts as long, the others wait for it) and
        ``compute_spread_ns``; ``exposed_comm_max_ns``; ``idle_max_ns``;
        ``vs_median_pct`` (step duration over the median step's, minus 100, %).

        ``per="rank"``: ``rank``; ``steps``; ``duration_mean_ns``, ``duration_std_ns``
        (population), ``duration_min_ns``, ``duration_max_ns``; ``jitter_pct``
        (coefficient of variation of the duration over steps, %); ``compute_mean_ns``,
        ``exposed_comm_mean_ns``, ``idle_mean_ns``.

        ``per="job"``: ``steps``; ``ranks``; ``step_mean_ns``, ``step_std_ns``,
        ``step_min_ns``, ``step_max_ns`` of the job's step time (the slowest rank's per
        step); ``jitter_pct`` (their coefficient of variation, %); ``slowest_step``,
        ``fastest_step``.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> it = tv.iteration_stats(trace)
    >>> it["step"].unique().tolist(), len(it)  # one ProfilerStep, eight ranks
    ([10], 8)
    >>> bool(((it["gpu_busy_pct"] + it["idle_pct"]).round(6) == 100).all())
    True
    """
    if per not in ITERATION_COLUMNS:
        raise OptionError.invalid("per", per, tuple(ITERATION_COLUMNS))
    columns = ITERATION_COLUMNS[per]
    trace = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    parts = list(with_gpu(per_rank(trace, _rank_step_times), "iteration_stats").values())
    if not parts:
        return empty(columns)
    win = pd.concat(parts, ignore_index=True)
    if win.empty:
        _warn_no_steps("iteration_stats", trace)
        return empty(columns)
    sr = win[["step", "rank", "start_ns", "end_ns"]].copy()
    sr["duration_ns"] = sr["end_ns"] - sr["start_ns"]
    for c in ("gpu_busy_ns", "compute_ns", "communication_ns", "exposed_comm_ns"):
        sr[c] = win[c].to_numpy()
    sr["idle_ns"] = sr["duration_ns"] - sr["gpu_busy_ns"]
    d = sr["duration_ns"].to_numpy()
    sr["gpu_busy_pct"] = _pct(sr["gpu_busy_ns"].to_numpy(), d)
    sr["exposed_comm_pct"] = _pct(sr["exposed_comm_ns"].to_numpy(), d)
    sr["idle_pct"] = _pct(sr["idle_ns"].to_numpy(), d)
    sr = sr.sort_values(["step", "rank"], kind="stable").reset_index(drop=True)
    if per == "step_rank":
        return sr[list(columns)].astype(columns)

    if per == "rank":
        g = sr.groupby("rank", sort=True)
        out = pd.DataFrame(
            {
                "steps": g.size(),
                "duration_mean_ns": g["duration_ns"].mean(),
                "duration_std_ns": g["duration_ns"].std(ddof=0),
                "duration_min_ns": g["duration_ns"].min(),
                "duration_max_ns": g["duration_ns"].max(),
                "compute_mean_ns": g["compute_ns"].mean(),
                "exposed_comm_mean_ns": g["exposed_comm_ns"].mean(),
                "idle_mean_ns": g["idle_ns"].mean(),
            }
        ).reset_index()
        out["jitter_pct"] = _pct(out["duration_std_ns"].to_numpy(), out["duration_mean_ns"].to_numpy())
        return out[list(columns)].astype(columns)

    g = sr.groupby("step", sort=True)
    slowest = sr.loc[g["duration_ns"].idxmax()].set_index("step")
    most = sr.loc[g["compute_ns"].idxmax()].set_index("step")
    st = pd.DataFrame(
        {
            "ranks": g.size(),
            "duration_ns": g["duration_ns"].max(),
            "duration_min_ns": g["duration_ns"].min(),
            "duration_mean_ns": g["duration_ns"].mean(),
            "slowest_rank": slowest["rank"],
            "compute_max_ns": g["compute_ns"].max(),
            "compute_min_ns": g["compute_ns"].min(),
            "most_compute_rank": most["rank"],
            "exposed_comm_max_ns": g["exposed_comm_ns"].max(),
            "idle_max_ns": g["idle_ns"].max(),
        }
    ).reset_index()
    st["spread_ns"] = st["duration_ns"] - st["duration_min_ns"]
    st["spread_pct"] = _pct(st["spread_ns"].to_numpy(), st["duration_mean_ns"].to_numpy())
    st["compute_spread_ns"] = st["compute_max_ns"] - st["compute_min_ns"]
    median = float(np.median(st["duration_ns"].to_numpy()))
    st["vs_median_pct"] = _pct(st["duration_ns"].to_numpy(), median) - 100.0
    if per == "step":
        return st[list(columns)].astype(columns)

    steps = st["duration_ns"].to_numpy()
    job = {
        "steps": len(st),
        "ranks": int(sr["rank"].nunique()),
        "step_mean_ns": float(steps.mean()),
        "step_std_ns": float(steps.std()),
        "step_min_ns": int(steps.min()),
        "step_max_ns": int(steps.max()),
        "jitter_pct": float(_pct(steps.std(), steps.mean())),
        "slowest_step": int(st["step"].to_numpy()[np.argmax(steps)]),
        "fastest_step": int(st["step"].to_numpy()[np.argmin(steps)]),
    }
    return pd.DataFrame([job], columns=list(columns)).astype(columns)


def _rank_step_times(trace: Trace) -> pd.DataFrame | None:
    """One rank's step windows (:func:`step_windows`) with their busy, compute, communication and
    exposed-communication times (:func:`window_times`): ``step, rank, start_ns, end_ns`` and those
    ``*_ns`` columns, in start order; None without GPU work (no rows without steps)."""
    (r,) = trace.ranks
    a = activities(trace, r, work_only=True)
    if not len(a):
        return None
    win = step_windows(trace, [r])
    times = window_times(a, win["start_ns"].to_numpy(), win["end_ns"].to_numpy())
    # One frame built at once (setting columns one by one costs more than computing them).
    return pd.DataFrame(
        {**{c: win[c].to_numpy() for c in win.columns}, **{c: np.asarray(v, dtype=np.int64) for c, v in times.items()}}
    )
