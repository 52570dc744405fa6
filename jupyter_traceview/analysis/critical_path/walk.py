"""Walking the graph backwards: the path of one rank, and the path across ranks."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...errors import TraceviewWarning, caller_stacklevel
from ...model.collectives import match_instances, rank_collective_kernels
from ...model.trace import Trace
from .._common import empty, warn_no_gpu
from .frame import CRITICAL_PATH_COLUMNS, path_frame
from .graph import COLLECTIVE, SPAN, WAIT, Graph, build_graph

# ---------------------------------------------------------------------- walking
# A segment of the path: (rank, eid, edge, start, end, from_rank), all ints.
_Seg = tuple[int, int, int, int, int, int]


def _walk(g: Graph, start: int, eff: int, stop: int | None, lists: dict[str, list[Any]]) -> list[_Seg]:
    """Segments from node ``start`` (at effective time ``eff``) back to ``stop`` or a source, latest first.

    Effective times never increase going back (a dependency reported as ending after
    the point that waited for it is taken to end at that point), so segments tile time.
    """
    pred, t, edge, attr, eids = lists["pred"], lists["t"], lists["edge"], lists["attr"], lists["eid"]
    rank = g.rank
    out: list[_Seg] = []
    cur = start
    seen = set()
    for _ in range(len(pred) + 1):
        if cur == stop:
            break
        p = pred[cur]
        if p < 0 or p in seen:  # a source (or, with self-contradicting times, a loop: stop there)
            break
        seen.add(cur)
        ep = t[p] if t[p] < eff else eff
        out.append((rank, eids[attr[cur]], edge[cur], ep, eff, rank))
        cur, eff = p, ep
    return out


def _lists(g: Graph) -> dict[str, list[Any]]:
    return {
        "pred": g.pred.tolist(),
        "t": g.t.tolist(),
        "edge": g.edge.tolist(),
        "attr": g.attr.tolist(),
        "eid": g.eid.tolist(),
    }


def _roots(g: Graph, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every node: the stop or source its backward chain reaches, and the minimum time on the way."""
    nxt = g.pred.copy()
    src = nxt < 0
    nxt[src] = np.flatnonzero(src)
    nxt[stops] = stops
    low = g.t.copy()
    for _ in range(64):
        low = np.minimum(low, low[nxt])
        jumped = nxt[nxt]
        if np.array_equal(jumped, nxt):
            break
        nxt = jumped
    return nxt, np.minimum(low, g.t[nxt])


# ---------------------------------------------------------------------- one rank
def one_rank_path(trace: Trace, rank: int) -> pd.DataFrame:
    one = trace.select(ranks=[rank])
    got = one.map_ranks(_rank_full_path)[rank]
    if got is None:
        warn_no_gpu("critical_path", [rank], stacklevel=caller_stacklevel() + 1)  # (warned one call deeper)
        return empty(CRITICAL_PATH_COLUMNS)
    segs, spine = got
    if len(trace.ranks) > 1:
        segs = _split_waits(trace, rank, segs)
    out = path_frame(trace, segs)
    out.attrs["spine"] = [spine]
    return out


def _rank_full_path(trace: Trace) -> tuple[np.ndarray, dict[str, Any]] | None:
    g = build_graph(trace)
    if g is None:
        return None
    end = g.final_node()
    return _seg_array(_walk(g, end, int(g.t[end]), None, _lists(g))[::-1]), g.spine(end)


def _seg_array(segs: list[_Seg]) -> np.ndarray:
    return np.array(segs, dtype=np.int64).reshape(len(segs), 6)


def _split_waits(trace: Trace, rank: int, segs: np.ndarray) -> np.ndarray:
    """Split each collective kernel on a one-rank path at the last other rank's arrival."""
    kernels = trace.map_ranks(rank_collective_kernels)
    inst, _ = match_instances(kernels)
    inst = _consistent(inst)
    if not len(inst):
        return segs
    mine = kernels[rank]
    latest = inst.loc[inst["rank"] != rank].sort_values(["start_ns", "rank"]).groupby("key").tail(1)
    arrival = mine[["eid", "key"]].merge(latest[["key", "start_ns", "rank"]], on="key", how="inner")
    if not len(arrival):
        return segs
    lookup = pd.Series(np.arange(len(arrival)), index=arrival["eid"].to_numpy())
    at = lookup.reindex(segs[:, 1]).to_numpy()
    cand = (segs[:, 2] == SPAN) & ~np.isnan(at)
    idx = np.flatnonzero(cand)
    if not len(idx):
        return segs
    row = at[idx].astype(np.int64)
    cut = np.minimum(np.maximum(arrival["start_ns"].to_numpy()[row], segs[idx, 3]), segs[idx, 4])
    split = cut > segs[idx, 3]
    idx, row, cut = idx[split], row[split], cut[split]
    if not len(idx):
        return segs
    waits = segs[idx].copy()
    waits[:, 2] = WAIT
    waits[:, 4] = cut
    waits[:, 5] = arrival["rank"].to_numpy()[row]
    out = segs.copy()
    out[idx, 3] = cut
    # Each wait goes right before the rest of its kernel.
    merged: np.ndarray = np.insert(out, idx, waits, axis=0)
    return merged


# ---------------------------------------------------------------------- across ranks
def _rank_summary(trace: Trace) -> dict[str, Any] | None:
    """Phase 1, per rank: where the backward chains of its entry points lead."""
    g = build_graph(trace)
    if g is None:
        return None
    kernels = rank_collective_kernels(trace)
    kernels = kernels.loc[kernels["collective"] != "unknown"]
    k_local = g.loc[kernels["eid"].to_numpy()]
    stops = 2 * k_local + 1
    root, low = _roots(g, stops)
    final = g.final_node()
    starts = 2 * k_local
    return {
        "spine": g.spine(final),
        "final_eid": int(g.eid[final // 2]),
        "final_t": int(g.t[final]),
        "final_root": _node_ref(g, int(root[final])),
        "final_low": int(low[final]),
        "kernels": kernels.assign(
            start_t=g.t[starts],
            end_t=g.t[stops],
            root=[_node_ref(g, int(x)) for x in root[starts].tolist()],
            low=low[starts],
        ),
    }


def _node_ref(g: Graph, node: int) -> tuple[int, bool, bool]:
    """(eid, is_end, is_source) of a node, stable across rebuilds of the graph."""
    return int(g.eid[node // 2]), bool(node % 2), bool(g.pred[node] < 0)


def _rank_expand(trace: Trace, pieces: Mapping[int, list[tuple[int, bool, int, int | None]]]) -> dict[int, list[_Seg]]:
    """Phase 3, per rank: the segments of the path pieces on this rank (rebuilding its graph)."""
    (rank,) = trace.ranks
    mine = pieces.get(rank, [])
    if not mine:
        return {}
    g = build_graph(trace)
    if g is None:  # cannot happen: phase 1 found GPU activity on this rank
        return {}
    lists = _lists(g)
    out = {}
    for index, (eid, is_end, eff, stop_eid) in enumerate(mine):
        stop = None if stop_eid is None else g.node(stop_eid, True)
        out[index] = _walk(g, g.node(eid, is_end), eff, stop, lists)
    return out


def cross_rank_path(trace: Trace) -> pd.DataFrame:
    summaries = trace.map_ranks(_rank_summary)
    without = [r for r, s in summaries.items() if s is None]
    live = {r: s for r, s in summaries.items() if s is not None}
    if without:
        warn_no_gpu("critical_path", without, stacklevel=caller_stacklevel() + 1)
    if not live:
        return empty(CRITICAL_PATH_COLUMNS)
    kernels = {r: s["kernels"].reset_index() for r, s in live.items()}
    inst, _ = match_instances(kernels)
    inst = _consistent(inst)
    latest = inst.sort_values(["start_ns", "rank"]).groupby("key").tail(1)
    last_arrival = {
        key: (int(r), int(t), int(e))
        for key, r, t, e in zip(latest["key"], latest["rank"], latest["start_ns"], latest["start_eid"], strict=True)
    }
    # Per rank: eid -> (key, start, root, low) of its communication kernels.
    info = {
        r: {
            int(e): (str(key), int(st), root, int(low))
            for e, key, st, root, low in zip(k["eid"], k["key"], k["start_t"], k["root"], k["low"], strict=True)
        }
        for r, k in kernels.items()
    }

    end_rank = max(live, key=lambda r: (live[r]["final_t"], -r))
    s = live[end_rank]
    cur_rank, cur_eid, cur_end, eff = end_rank, s["final_eid"], True, s["final_t"]
    root, low = s["final_root"], s["final_low"]
    # The path, latest first: pieces (walked later, on their ranks) and collective hand-overs.
    steps: list[tuple[str, Any]] = []
    pieces: dict[int, list[tuple[int, bool, int, int | None]]] = {}
    seen: set[tuple[int, int]] = set()
    while True:
        root_eid, _, root_is_source = root
        stop = None if root_is_source else root_eid
        pieces.setdefault(cur_rank, []).append((cur_eid, cur_end, eff, stop))
        steps.append(("piece", (cur_rank, len(pieces[cur_rank]) - 1)))
        eff = min(eff, low)
        if root_is_source or (cur_rank, root_eid) in seen:
            break
        seen.add((cur_rank, root_eid))
        if root_eid not in info[cur_rank]:
            # Ties (events at one time, as in a trace whose timestamps are all equal) can leave a
            # root that is not a communication kernel: the path starts there.
            warnings.warn(
                f"critical_path: rank {cur_rank}'s events tie in time; the path is traced back only "
                "to where the ties begin",
                TraceviewWarning,
                stacklevel=caller_stacklevel(),
            )
            break
        key, own_start, own_root, own_low = info[cur_rank][root_eid]
        late = last_arrival.get(key)
        if late is not None and late[0] != cur_rank and late[1] > own_start:
            to_rank, late_start, to_eid = late
            seg_start = min(late_start, eff)
            steps.append(("segment", (cur_rank, root_eid, COLLECTIVE, seg_start, eff, to_rank)))
            _, _, root, low = info[to_rank][to_eid]
            cur_rank, cur_eid = to_rank, to_eid
        else:
            seg_start = min(own_start, eff)
            steps.append(("segment", (cur_rank, root_eid, SPAN, seg_start, eff, cur_rank)))
            root, low = own_root, own_low
            cur_eid = root_eid
        cur_end, eff = False, seg_start
    expanded = trace.map_ranks(_rank_expand, pieces)
    segments: list[_Seg] = []
    for kind, what in steps:
        if kind == "piece":
            r, index = what
            segments.extend(expanded[r][index])
        else:
            segments.append(what)
    out = path_frame(trace, _seg_array(segments[::-1]))
    out.attrs["spine"] = [live[end_rank]["spine"]]
    return out


def _consistent(inst: pd.DataFrame) -> pd.DataFrame:
    """The matched collectives that no rank starts after another has ended them (warns about the others).

    Such a collective is impossible as recorded: either the ranks' clocks disagree or the
    collectives were matched wrongly (by order, when ranks run different sequences). It
    is not followed across ranks.
    """
    if not len(inst):
        return inst
    g = inst.groupby("key")
    bad = g["start_ns"].transform("max") > g["end_ns"].transform("min")
    n_bad = int(inst.loc[bad, "key"].nunique())
    if n_bad:
        warnings.warn(
            f"critical_path: {n_bad} of {g.ngroups} matched collective(s) start on some rank after they have "
            "ended on another, so they are not followed across ranks: the ranks' clocks disagree (align them "
            "with tv.align_clocks(trace)) or, for collectives matched by order, the ranks ran different "
            "sequences of them",
            TraceviewWarning,
            stacklevel=caller_stacklevel(),
        )
    return inst.loc[~bad]
