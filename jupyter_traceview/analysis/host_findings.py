"""The facts behind the host-side findings: data loading, Python between operators, host syncs, hotspots.

One pass per rank over its CPU events (:func:`host_facts`); the findings rules
(``dataloader_stall``, ``python_overhead``, ``host_sync_lines``, ``cpu_hotspots``) turn
them into plain language. The facts are measured on the rank's *main thread*, the thread
with the most time in operators (the one that runs the model and launches GPU work), inside
its iterations (``ProfilerStep#N``), or over its host events' extent without iterations.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd

from ..model import intervals as iv
from ..model.schema import EventKind
from ..model.trace import Trace
from . import _links as lk
from ._memo import per_rank
from .cpu_ops import cpu_op_breakdown
from .host_syncs import host_syncs
from .threads import thread_states

__all__ = ["host_facts"]


def host_facts(
    trace: Trace, *, time_range: tuple[int, int] | None = None, top: int = 3, operators: bool = True
) -> dict[int, dict[str, Any]]:
    """Per rank: its main thread's time in operators, data loading and Python within its iterations,
    its top operators and Python frames by self time, and its host syncs (JSON-able dicts).

    Keys: ``thread`` (name), ``tid``, ``wall_ns`` (the iterations' union, or the host
    extent), ``op_ns``, ``dataloader_ns``, ``python_ns`` (in Python frames, with_stack
    traces), ``outside_ops_ns`` (wall minus operators and data loading: Python and
    unrecorded host time), ``has_python`` (bool), ``top_ops`` and ``top_frames`` (lists of
    ``[name, self_ns, calls]``), ``op_self_ns``, ``syncs`` (list of ``[name, python_line,
    calls, total_ns]``), ``sync_ns``.

    ``operators=False`` (what the rules need on a trace with GPU work: ``dataloader_stall``
    and ``host_sync_lines``) leaves out ``top_ops``, ``op_self_ns`` and ``top_frames`` (the
    operator breakdowns, the expensive part) and looks up the syncs only of ranks with
    Python frames (``syncs`` is ``[]`` and ``sync_ns`` 0 on the others): the other keys are
    the same.
    """
    # Kept with the cache entries for the whole trace only (not one entry per window asked for).
    facts = per_rank(trace, _rank_host_facts, time_range, top, operators, keep=time_range is None)
    return {r: f for r, f in facts.items() if f is not None}


def _rank_host_facts(
    trace: Trace, time_range: tuple[int, int] | None, top: int, operators: bool
) -> dict[str, Any] | None:
    """:func:`host_facts` of a one-rank trace: the rank's dict, or None (no host thread, no wall time)."""
    (r,) = trace.ranks
    its = trace.iterations
    ev = trace.rank_data(r).events
    states = thread_states(ev, time_range)
    if not states:
        return None
    main = max(states, key=lambda k: (iv.length(*states[k]["op"]), -k[1]))
    st = states[main]
    steps = np.flatnonzero(its["rank"].to_numpy() == r)  # the rank's iterations (rows)
    if len(steps):
        scope = iv.union(its["start_ns"].to_numpy()[steps], its["end_ns"].to_numpy()[steps])
    else:
        lo = min(int(u[0][0]) for u in st.values() if len(u[0]))
        hi = max(int(u[1][-1]) for u in st.values() if len(u[1]))
        scope = (np.array([lo]), np.array([hi]))
    if time_range is not None:
        scope = iv.clip(scope[0], scope[1], int(time_range[0]), int(time_range[1]))
    wall = iv.length(*scope)
    if wall <= 0:
        return None
    op = iv.overlap_length(st["op"], scope)
    dl = iv.overlap_length(st["dataloader"], scope)
    py = iv.overlap_length(st["python"], scope)
    names = {(p, t): n for p, t, n in trace.meta(r).thread_names}
    facts: dict[str, Any] = {
        "thread": names.get(main, f"thread {main[1]}"),
        "tid": main[1],
        "wall_ns": wall,
        "op_ns": op,
        "dataloader_ns": dl,
        "python_ns": py,
        "outside_ops_ns": max(wall - op - dl, 0),
    }
    if operators:
        ops = cpu_op_breakdown(trace, ranks=r, time_range=time_range, kinds=["cpu_op"])
        frames = cpu_op_breakdown(trace, ranks=r, time_range=time_range, kinds=["python_function"])
        facts["has_python"] = bool(len(frames))
        facts["top_ops"] = _top(ops, top)
        facts["op_self_ns"] = int(ops["self_ns"].sum()) if len(ops) else 0
        facts["top_frames"] = _top(frames, top)
    else:
        facts["has_python"] = _has_frames(trace, r, time_range)
    if operators or facts["has_python"]:
        syncs = host_syncs(trace, ranks=r, time_range=time_range)
        facts["syncs"] = [
            [str(s.name), str(s.python_line), int(s.calls), int(s.total_ns)] for s in syncs.head(top).itertuples()
        ]
        facts["sync_ns"] = int(syncs["total_ns"].sum()) if len(syncs) else 0
    else:
        facts["syncs"], facts["sync_ns"] = [], 0
    return facts


def _has_frames(trace: Trace, rank: int, time_range: tuple[int, int] | None) -> bool:
    """Whether the rank has Python frames in scope: ``cpu_op_breakdown(kinds=["python_function"])``
    would have rows (a frame overlapping the window, as :func:`._host.host_ranges` keeps)."""
    _, window = lk.scope_linked(trace, ranks=None, iterations=None, time_range=time_range)
    ev = trace.rank_data(rank).events
    has = lk.kind_any(ev, [EventKind.PYTHON_FUNCTION.value])
    if window is None or not has:
        return has
    rows = np.flatnonzero(lk.category_mask(ev["kind"], [EventKind.PYTHON_FUNCTION.value]))
    ts = ev["ts_ns"].to_numpy()[rows]
    end = ts + ev["dur_ns"].to_numpy()[rows]
    lo, hi = window
    return bool(((ts < hi) & ((end > lo) | (ts == lo))).any())


def _top(df: pd.DataFrame, k: int) -> list[list[Any]]:
    if df.empty:
        return []
    head = df.sort_values(["self_ns", "name"], ascending=[False, True]).head(k)
    return [[str(n), int(s), int(c)] for n, s, c in zip(head["name"], head["self_ns"], head["calls"], strict=True)]


# --------------------------------------------------------------------------- rules
#: The rules in words ({...}: thresholds of FindingRules), and the analyses to read next.
HOST_RULES = {
    "dataloader_stall": "a rank's main thread spends at least {dataloader_min_pct}% of its iterations in DataLoader "
    "annotations (enumerate(DataLoader)#...), outside operators",
    "python_overhead": "a trace without GPU work: a rank's main thread spends at least {python_overhead_min_pct}% "
    "of its iterations outside operators and data loading (Python between operators, or host time the profiler "
    "did not record)",
    "host_sync_lines": "a trace with GPU work and Python frames has host syncs (cuda*Synchronize, aten::item) taking "
    "at least {host_sync_min_pct}% of the elapsed time on a rank; named with the Python frame that issued them",
    "cpu_hotspots": "a trace without GPU work: the operators with the most self CPU time",
}
HOST_ANALYSES = {
    "dataloader_stall": "tv.thread_activity, tv.call_tree",
    "python_overhead": "tv.thread_activity, tv.call_tree, tv.cpu_op_breakdown",
    "host_sync_lines": "tv.host_syncs",
    "cpu_hotspots": "tv.cpu_op_breakdown, tv.call_tree",
}


def _fmt(ns: float) -> str:
    from ..format import duration

    return duration(ns)


def _worst(named: dict[int, dict[str, Any]], key: str) -> int:
    return max(named, key=lambda r: (named[r][key], -r))


def dataloader_stall(
    facts: dict[int, dict[str, Any]], min_pct: float, *, cpu_only: Collection[int] = ()
) -> list[dict[str, Any]]:
    """Partial findings (``id, title, detail, time_at_stake_ns, ranks, evidence``); ``cpu_only``:
    the ranks without GPU work, where pinned memory (a host-to-GPU copy's remedy) does not apply."""
    named = {r: f for r, f in facts.items() if f["dataloader_ns"] >= min_pct / 100 * f["wall_ns"]}
    if not named:
        return []
    w = _worst(named, "dataloader_ns")
    f = named[w]
    pct = 100.0 * f["dataloader_ns"] / f["wall_ns"]
    ranks = sorted(named)
    where = f"rank {w}" if len(ranks) == 1 else f"rank {w} (of ranks {', '.join(map(str, ranks))})"
    return [
        {
            "id": "dataloader_stall",
            "title": f"Data loading stalls the main thread: {pct:.0f}% of the iterations on {where}",
            "detail": (
                f"On {where} the main thread ({f['thread']}) spends {_fmt(f['dataloader_ns'])} of "
                f"{_fmt(f['wall_ns'])} in its iterations inside the DataLoader's next() "
                "(enumerate(DataLoader)#... ranges) without running an operator: the model waits for its data. "
                "Load in worker processes (DataLoader(num_workers=N, "
                + ("" if w in cpu_only else "pin_memory=True, ")
                + "persistent_workers=True), prefetch_factor), and make __getitem__ cheaper (decode, augment or read less per item)."
            ),
            "time_at_stake_ns": int(f["dataloader_ns"]),
            "ranks": ranks,
            "evidence": {
                "worst_rank": w,
                "thread": f["thread"],
                "dataloader_ns": f["dataloader_ns"],
                "wall_ns": f["wall_ns"],
                "dataloader_pct": pct,
            },
        }
    ]


def python_overhead(
    facts: dict[int, dict[str, Any]], min_pct: float, *, cpu_only: Collection[int] = ()
) -> list[dict[str, Any]]:
    """Partial findings; ``cpu_only``: the ranks without GPU work, where CUDA graphs do not apply."""
    named = {r: f for r, f in facts.items() if f["outside_ops_ns"] >= min_pct / 100 * f["wall_ns"]}
    if not named:
        return []
    w = _worst(named, "outside_ops_ns")
    f = named[w]
    pct = 100.0 * f["outside_ops_ns"] / f["wall_ns"]
    frames = ", ".join(f"{n} ({_fmt(s)} self, {c} calls)" for n, s, c in f["top_frames"])
    if f["has_python"]:
        what = (
            f"{_fmt(f['python_ns'])} of it in Python frames"
            + (f"; the Python frames with the most self time: {frames}" if frames else "")
            + ". "
        )
    else:
        what = (
            "The trace has no Python frames: record with torch.profiler.profile(with_stack=True) to see which "
            "Python code it is. "
        )
    return [
        {
            "id": "python_overhead",
            "title": f"Python between operators: {pct:.0f}% of the iterations on rank {w} run no operator",
            "detail": (
                f"On rank {w} the main thread ({f['thread']}) runs operators for {_fmt(f['op_ns'])} of "
                f"{_fmt(f['wall_ns'])} in its iterations and waits on data loading for {_fmt(f['dataloader_ns'])}; "
                f"the other {_fmt(f['outside_ops_ns'])} it is outside any operator: {what}"
                "Move per-step Python work (logging, metrics, .item(), Python loops over tensors) out of the loop "
                "or batch it; "
                + (
                    "torch.compile removes much of the per-operator dispatch, and larger operators (batching "
                    "the work of a Python loop into one tensor operation) amortise what is left."
                    if w in cpu_only
                    else "torch.compile or CUDA graphs remove the per-operator dispatch."
                )
            ),
            "time_at_stake_ns": int(f["outside_ops_ns"]),
            "ranks": sorted(named),
            "evidence": {
                "worst_rank": w,
                "thread": f["thread"],
                "outside_ops_ns": f["outside_ops_ns"],
                "python_ns": f["python_ns"],
                "op_ns": f["op_ns"],
                "wall_ns": f["wall_ns"],
                "top_python_frames": f["top_frames"],
            },
        }
    ]


def host_sync_lines(facts: dict[int, dict[str, Any]], min_ns: float) -> list[dict[str, Any]]:
    named = {r: f for r, f in facts.items() if f["has_python"] and f["syncs"] and f["sync_ns"] >= min_ns}
    if not named:
        return []
    w = _worst(named, "sync_ns")
    f = named[w]
    sites = "; ".join(f"{n} x{c} ({_fmt(t)})" + (f" from {line}" if line else "") for n, line, c, t in f["syncs"])
    return [
        {
            "id": "host_sync_lines",
            "title": f"Host syncs from Python: {_fmt(f['sync_ns'])} on rank {w}",
            "detail": (
                f"On rank {w} the host waits for the GPU in {sites}. Each sync drains the GPU's queue. Keep values on "
                "the GPU (accumulate losses as tensors, log every N steps), avoid .item()/.cpu()/print in the loop; "
                "the frames are where the calls come from (torch records a function's definition line)."
            ),
            "time_at_stake_ns": int(f["sync_ns"]),
            "ranks": sorted(named),
            "evidence": {"worst_rank": w, "sync_ns": f["sync_ns"], "sites": f["syncs"]},
        }
    ]


def cpu_hotspots(facts: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    named = {r: f for r, f in facts.items() if f["top_ops"]}
    if not named:
        return []
    w = _worst(named, "op_ns")
    f = named[w]
    total = max(f["op_self_ns"], 1)
    tops = ", ".join(f"{n} {100.0 * s / total:.0f}% ({_fmt(s)}, {c} calls)" for n, s, c in f["top_ops"])
    return [
        {
            "id": "cpu_hotspots",
            "title": f"Where the CPU time goes on rank {w}: {f['top_ops'][0][0]} first",
            "detail": (
                f"No GPU work in this trace. On rank {w} operators run {_fmt(f['op_ns'])} of the main thread's "
                f"{_fmt(f['wall_ns'])}; by self time: {tops}. The Operators tab (tv.cpu_op_breakdown, tv.call_tree) "
                "shows every operator and where it is called from."
            ),
            "time_at_stake_ns": 0,
            "ranks": sorted(named),
            "evidence": {"worst_rank": w, "op_ns": f["op_ns"], "wall_ns": f["wall_ns"], "top_ops": f["top_ops"]},
            "info": True,
        }
    ]
