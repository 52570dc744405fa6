"""The replay graph of a trace: every rank's dependencies (the critical path's), weighted, and
the collectives that tie the ranks together.

Each event is two nodes (start ``2i``, end ``2i + 1``, ``i`` over all ranks); a collective
instance matched across ranks adds one node, its *arrival* (the last rank's kernel start).
Each dependency of :mod:`..critical_path.graph` is an edge ``src -> dst`` of weight ``w``:
the replayed time of a node is the latest of its incoming ``src`` times plus ``w`` (and
a node without one keeps its recorded time). Weights (see ``docs/semantics.md``,
*What-if replay*):

* the dependency that bound the node when recorded (the one satisfied last) weighs the
  recorded time between its two points, so that the replay without a change gives every
  node its recorded time;
* every other dependency weighs the recorded time between its points, but at most the
  rank's median binding time of its kind (a ``launch`` edge: the rank's median launch
  latency; a sync call's own ``span``: the median call's duration), so that a point held
  by something a change removes falls back on what it would cost unheld;
* a collective kernel's end is its arrival plus the time it ran after the last rank
  arrived (its own duration once everyone is there), and at least its start plus that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...model.collectives import match_instances, rank_collective_kernels
from ...model.schema import EventKind
from ...model.text import as_text
from ...model.trace import Trace
from .._memo import rank_memo
from ..critical_path.graph import COLLECTIVE, EDGE_NAMES, SPAN, Graph, build_graph

__all__ = ["Model", "assemble", "build_model", "match_collectives", "rank_part"]

_STEP_PREFIX = "ProfilerStep#"


@dataclass
class Model:
    """The weighted dependency graph of every rank of a trace (arrays over events, nodes, edges)."""

    ranks: list[int]
    # ---- events (global index i; nodes 2i and 2i + 1)
    ev_rank: np.ndarray
    ev_eid: np.ndarray
    ev_gpu: np.ndarray  # a GPU activity
    ev_name: np.ndarray  # code into ``names``
    names: np.ndarray  # object (str): the distinct names
    ev_kind: np.ndarray  # object (str)
    ev_class: np.ndarray  # object (str): gpu_class ("" where none)
    ev_parent: np.ndarray  # global index of the parent CPU event, -1
    ev_thread: np.ndarray  # global thread id (CPU events), -1
    ev_launcher: np.ndarray  # GPU activity -> its launch call (global), -1
    ev_lane: np.ndarray  # GPU activity -> global (rank, device, stream) lane, -1
    ev_step: np.ndarray  # the ProfilerStep number the event belongs to, -1
    thread_carries: np.ndarray  # per global thread: it carries the step (launches GPU work)
    # ---- nodes
    t: np.ndarray  # recorded time of each node (collective arrivals: the last start)
    # ---- edges, sorted by dst
    dst: np.ndarray
    src: np.ndarray
    code: np.ndarray  # edge code (critical_path.graph), COLLECTIVE for arrival edges
    w: np.ndarray
    binding: np.ndarray
    attr: np.ndarray  # the event the edge belongs to (global), -1 for arrival edges
    coll_kernel: np.ndarray  # events that are matched collective kernels (bool per event)
    # ---- steps: one row per (rank, step)
    steps: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Event -> the row of ``steps`` whose end it may set (:func:`_step_rows`), -1 if none.
    ev_step_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: Event -> the row of ``steps`` of its rank when that rank has no steps (step -1), else -1.
    ev_rank_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    memo: dict[Any, Any] = field(default_factory=dict)
    measured_steps: np.ndarray | None = None
    #: A rank's share only (the distributed replay, :mod:`.spread`): per arrival node, the
    #: rank's lateness into that instance (what :func:`.apply.arrivals` measures over every
    #: participant), and the straggler rank ``BalanceStraggler()`` picks over the whole trace.
    arrival_lateness: np.ndarray | None = None
    straggler: int | None = None

    @property
    def n_events(self) -> int:
        return len(self.ev_eid)


def _rank_graph(one: Trace, rank: int) -> Graph | None:
    return rank_memo(one.rank_data(rank).events, "whatif_graph", lambda: build_graph(one, cpu_only=True))


def _floors(code: np.ndarray, gap: np.ndarray, binding: np.ndarray) -> np.ndarray:
    """Per edge code: the median recorded time of the binding edges of that code (>= 0)."""
    out = np.zeros(len(EDGE_NAMES), dtype=np.int64)
    for c in np.unique(code[binding]).tolist():
        out[c] = max(int(np.median(gap[binding & (code == c)])), 0)
    return out


def rank_part(one: Trace) -> dict[str, Any] | None:
    """A one-rank trace's share of the model, indices local to the rank (events from 0,
    threads and lanes from 0): a ``map_ranks`` function, so that with ``engine="dask"`` the
    graph is built where the rank lives and only these arrays come back. None when the rank
    has nothing to replay."""
    (rank,) = one.ranks
    g = _rank_graph(one, rank)
    if g is None or g.deps is None:
        return None
    ev = one.rank_data(rank).events
    n = len(g.eid)
    rows = g.pos
    name, kind, cls = (_strings(ev[c], rows) for c in ("name", "kind", "gpu_class"))
    # Parents in the graph (the nearest ancestor that is a graph event).
    size = int(ev["eid"].max()) + 1
    pe = ev["parent_eid"].to_numpy()[rows]
    parent = np.where((pe >= 0) & (pe < size), g.loc[np.clip(pe, 0, size - 1)], -1)
    # GPU lanes (device, stream) of this rank.
    dev = ev["device"].to_numpy()[rows].astype(np.int64)
    stream = ev["stream"].to_numpy()[rows].astype(np.int64)
    lane = np.full(n, -1, dtype=np.int64)
    n_lanes = 0
    if g.is_gpu.any():
        codes, _ = pd.factorize(pd.MultiIndex.from_arrays([dev[g.is_gpu], stream[g.is_gpu]]))
        lane[g.is_gpu] = codes
        n_lanes = int(codes.max()) + 1
    node, pred, edge, attr = g.deps
    gap = g.t[node] - g.t[pred]
    binding = (g.pred[node] == pred) & (g.edge[node] == edge)
    floors = _floors(edge, gap, binding)
    w = np.where(binding, gap, np.minimum(gap, floors[edge]))
    return {
        "n_threads": len(g.threads),
        "n_lanes": n_lanes,
        "carries": np.array([bool(x["carries_step"]) for x in g.threads], dtype=bool),
        "steps": _rank_steps(one, rank, ev, g),
        "ev_rank": np.full(n, rank, dtype=np.int64),
        "ev_eid": g.eid.astype(np.int64),
        "ev_gpu": g.is_gpu,
        "ev_name": name,
        "ev_kind": kind,
        "ev_class": cls,
        "ev_parent": parent,
        "ev_thread": g.thread_of,
        "ev_launcher": g.launcher,
        "ev_lane": lane,
        "ev_step": ev["step"].to_numpy()[rows].astype(np.int64),
        "t": g.t.astype(np.int64),
        "dst": node,
        "src": pred,
        "code": edge.astype(np.int8),
        "w": w.astype(np.int64),
        "binding": binding,
        "attr": attr,
    }


def _shifted(x: np.ndarray, off: int) -> np.ndarray:
    """Local indices made global: ``x + off`` where ``x >= 0``, -1 elsewhere."""
    return np.where(x >= 0, x + off, -1).astype(np.int64)


def build_model(trace: Trace) -> Model | None:
    """The replay graph of every rank of ``trace`` (ranks without any event are left out);
    None when no rank has an event to replay. Each rank's share is built by
    :func:`rank_part` (on the workers with ``engine="dask"``), then joined here."""
    built = trace.map_ranks(rank_part)
    parts: list[tuple[int, dict[str, Any]]] = [(r, p) for r in trace.ranks if (p := built[r]) is not None]
    if not parts:
        return None
    coll = None
    if len(parts) >= 2:
        every = trace.map_ranks(rank_collective_kernels)
        local = {r: pd.Series(np.arange(len(p["ev_eid"]), dtype=np.int64), index=p["ev_eid"]) for r, p in parts}
        starts = {r: pd.Series(p["t"][0::2]) for r, p in parts}
        inst = match_collectives({r: every[r] for r, _ in parts}, local, starts)
        if len(inst):
            off: np.ndarray = np.cumsum(np.array([0] + [len(p["ev_eid"]) for _, p in parts], dtype=np.int64))
            at = pd.Series(off[:-1], index=[r for r, _ in parts])
            gi = inst["local"].to_numpy() + at.reindex(inst["rank"].to_numpy()).to_numpy()
            kc = inst["key_code"].to_numpy()
            arrival = np.full(int(kc.max()) + 1, np.iinfo(np.int64).min, dtype=np.int64)
            np.maximum.at(arrival, kc, inst["start_ns"].to_numpy())
            coll = (gi, kc, arrival)
    return assemble(parts, coll)


def assemble(parts: list[tuple[int, dict[str, Any]]], coll: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> Model:
    """The model of the ranks' shares (:func:`rank_part`, in rank order) joined, with one
    arrival node per collective instance of ``coll``: ``(event, instance, arrival)``, the
    participants' kernels (index over the joined events), their instance (from 0) and each
    instance's arrival (its participants' latest recorded start)."""
    out: list[dict[str, np.ndarray]] = []
    ev_off = 0
    thread_off = 0
    lane_off = 0
    carries: list[np.ndarray] = []
    step_rows: list[pd.DataFrame] = []
    ranks: list[int] = []
    for rank, p in parts:
        ranks.append(rank)
        n = len(p["ev_eid"])
        out.append(
            {
                **{k: p[k] for k in ("ev_rank", "ev_eid", "ev_gpu", "ev_name", "ev_kind", "ev_class", "ev_step", "t")},
                "ev_parent": _shifted(p["ev_parent"], ev_off),
                "ev_thread": _shifted(p["ev_thread"], thread_off),
                "ev_launcher": _shifted(p["ev_launcher"], ev_off),
                "ev_lane": _shifted(p["ev_lane"], lane_off),
                "dst": p["dst"] + 2 * ev_off,
                "src": p["src"] + 2 * ev_off,
                "code": p["code"],
                "w": p["w"],
                "binding": p["binding"],
                "attr": p["attr"] + ev_off,
            }
        )
        carries.append(p["carries"])
        steps = p["steps"]
        step_rows.append(steps.assign(event=_shifted(steps["event"].to_numpy(), ev_off)))
        ev_off += n
        thread_off += int(p["n_threads"])
        lane_off += int(p["n_lanes"])
    cat = {k: np.concatenate([p[k] for p in out]) for k in out[0]}
    name_codes, names = pd.factorize(cat["ev_name"])
    t = cat.pop("t")
    edges = {k: cat.pop(k) for k in ("dst", "src", "code", "w", "binding", "attr")}
    n_events = ev_off
    coll_kernel = np.zeros(n_events, dtype=bool)
    if coll is not None:
        t, edges = _add_arrivals(t, edges, coll_kernel, *coll)
    order = np.argsort(edges["dst"], kind="stable")
    edges = {k: v[order] for k, v in edges.items()}
    steps = pd.concat(step_rows, ignore_index=True)
    ev_step_row, ev_rank_row = _step_rows(steps, cat["ev_rank"], cat["ev_step"], cat["ev_parent"])
    return Model(
        ranks=ranks,
        ev_rank=cat["ev_rank"],
        ev_eid=cat["ev_eid"],
        ev_gpu=cat["ev_gpu"],
        ev_name=name_codes.astype(np.int64),
        names=np.asarray(names, dtype=object),
        ev_kind=cat["ev_kind"],
        ev_class=cat["ev_class"],
        ev_parent=cat["ev_parent"],
        ev_thread=cat["ev_thread"],
        ev_launcher=cat["ev_launcher"],
        ev_lane=cat["ev_lane"],
        ev_step=cat["ev_step"],
        thread_carries=np.concatenate(carries) if carries else np.zeros(0, bool),
        t=t,
        dst=edges["dst"],
        src=edges["src"],
        code=edges["code"],
        w=edges["w"],
        binding=edges["binding"],
        attr=edges["attr"],
        coll_kernel=coll_kernel,
        steps=steps,
        ev_step_row=ev_step_row,
        ev_rank_row=ev_rank_row,
    )


def _step_rows(
    steps: pd.DataFrame, rank: np.ndarray, step: np.ndarray, parent: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per event: the row of ``steps`` it counts for (the events of a step: CPU events in its
    ProfilerStep span, GPU work launched from it; not a ProfilerStep event without children,
    whose recorded length the replay cannot shorten), and its rank's row (ranks without steps)."""
    key = pd.MultiIndex.from_arrays([steps["rank"].to_numpy(), steps["step"].to_numpy()])
    rows = pd.Series(np.arange(len(steps)), index=key)
    rows = rows[~rows.index.duplicated()]
    at = rows.reindex(pd.MultiIndex.from_arrays([rank, step])).to_numpy()
    step_row = np.where((step >= 0) & ~np.isnan(at), np.nan_to_num(at, nan=-1), -1).astype(np.int64)
    has_child = np.bincount(parent[parent >= 0], minlength=len(rank)) > 0
    own = steps["event"].to_numpy()
    own = own[own >= 0]
    step_row[own[~has_child[own]]] = -1
    no_steps = steps.loc[steps["step"] < 0]
    whole = pd.Series(no_steps.index.to_numpy(), index=no_steps["rank"].to_numpy())
    rank_row = pd.Series(rank).map(whole).fillna(-1).to_numpy().astype(np.int64)
    return step_row, rank_row


def _strings(col: pd.Series, rows: np.ndarray) -> np.ndarray:
    """The column's values at ``rows`` as str objects ("" where missing), by category."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = np.r_[np.asarray(as_text(col.cat.categories), dtype=object), np.array([""], dtype=object)]
        codes = col.cat.codes.to_numpy()[rows]
        out: np.ndarray = cats[np.where(codes >= 0, codes, len(cats) - 1)]
        return out
    vals = col.to_numpy()[rows]
    return np.asarray(["" if pd.isna(v) else str(v) for v in vals], dtype=object)


def _rank_steps(one: Trace, rank: int, ev: pd.DataFrame, g: Graph) -> pd.DataFrame:
    """The rank's steps: its ProfilerStep events (index in the rank's graph), or one row (step -1) without any."""
    it = one.iterations
    it = it.loc[it["rank"] == rank]
    cpu = ~g.is_gpu
    rows = []
    if len(it):
        cats = ev["name"].cat.categories
        codes = ev["name"].cat.codes.to_numpy()[g.pos]
        step_cat = np.r_[np.asarray(cats.str.startswith(_STEP_PREFIX), dtype=bool), False]
        cand = np.flatnonzero(cpu & step_cat[np.where(codes >= 0, codes, len(cats))])
        by_name: dict[str, int] = {}
        for i in cand.tolist():
            by_name.setdefault(str(cats[codes[i]]), i)
        for step in it["step"].tolist():
            i = by_name.get(f"{_STEP_PREFIX}{step}")
            if i is not None:
                rows.append((rank, int(step), i))
    if not rows:
        return pd.DataFrame({"rank": [rank], "step": [-1], "event": [-1]})
    return pd.DataFrame(rows, columns=["rank", "step", "event"])


def match_collectives(
    kernels: dict[int, pd.DataFrame], local: dict[int, pd.Series], starts: dict[int, pd.Series]
) -> pd.DataFrame:
    """The collective instances the replay ties the ranks with, one row per (instance, rank).

    ``kernels``: per rank, :func:`~..model.collectives.rank_collective_kernels`; ``local``:
    per rank, graph event eid -> its index in the rank's graph (the kernels not in it are
    left out); ``starts``: per rank, graph index -> its recorded start. Instances with one
    kernel per rank, on at least two ranks, consistent (no rank starts after another has
    ended, as the critical path). Columns ``rank``, ``local`` (the kernel's index in its
    rank's graph), ``key_code`` (the instance: codes in the order of the sorted keys) and
    ``start_ns`` (the kernel's start in the graph); by instance as matched.
    """
    inst, _ = match_instances({r: k.loc[k["collective"] != "unknown"] for r, k in kernels.items()})
    cols = {"rank": "int64", "local": "int64", "key_code": "int64", "start_ns": "int64"}
    none = pd.DataFrame({c: pd.Series([], dtype=d) for c, d in cols.items()})
    if not len(inst):
        return none
    inst = inst.loc[inst["kernels"] == 1]
    loc = np.full(len(inst), -1, dtype=np.int64)
    start_eid = inst["start_eid"].to_numpy()
    for r, at in inst.groupby("rank", sort=False).indices.items():
        found = local[int(r)].reindex(start_eid[at]).to_numpy()
        loc[at] = np.where(np.isnan(found), -1, np.nan_to_num(found, nan=-1)).astype(np.int64)
    inst = inst.assign(local=loc).loc[loc >= 0]
    grp = inst.groupby("key")
    ok = (grp["start_ns"].transform("max") <= grp["end_ns"].transform("min")) & (grp["local"].transform("size") >= 2)
    inst = inst.loc[ok]
    if not len(inst):
        return none
    _, key_code = np.unique(np.asarray(as_text(inst["key"].to_numpy()), dtype=object), return_inverse=True)
    rank = inst["rank"].to_numpy().astype(np.int64)
    li = inst["local"].to_numpy()
    start = np.zeros(len(inst), dtype=np.int64)
    for r, at in inst.groupby("rank", sort=False).indices.items():
        start[at] = starts[int(r)].reindex(li[at]).to_numpy()
    return pd.DataFrame({"rank": rank, "local": li, "key_code": key_code.astype(np.int64), "start_ns": start})


def _add_arrivals(
    t: np.ndarray,
    edges: dict[str, np.ndarray],
    coll_kernel: np.ndarray,
    gi: np.ndarray,
    key_code: np.ndarray,
    arrival: np.ndarray,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Add one arrival node per collective instance (``arrival``: its recorded time, the last
    start) and its participants' edges: kernel ``gi`` start -> arrival -> its end."""
    start, end = t[2 * gi], t[2 * gi + 1]
    a_node = len(t) + key_code
    coll_kernel[gi] = True
    after = end - arrival[key_code]  # >= 0: consistent instances
    # The kernel's own span edge: its time after the last arrival.
    is_span = np.isin(edges["dst"], 2 * gi + 1) & (edges["code"] == SPAN)
    own = pd.Series(after, index=2 * gi + 1)
    dst_span = edges["dst"][is_span]
    w = edges["w"].copy()
    w[is_span] = np.minimum(w[is_span], own.reindex(dst_span).to_numpy())
    edges = {**edges, "w": w}
    last = start == arrival[key_code]
    new = {
        "dst": np.concatenate([a_node, 2 * gi + 1]),
        "src": np.concatenate([2 * gi, a_node]),
        "code": np.full(2 * len(gi), COLLECTIVE, dtype=np.int8),
        "w": np.concatenate([np.zeros(len(gi), np.int64), after]),
        "binding": np.concatenate([last, np.ones(len(gi), bool)]),
        "attr": np.concatenate([np.full(len(gi), -1, np.int64), gi]),
    }
    edges = {k: np.concatenate([edges[k], new[k].astype(edges[k].dtype)]) for k in edges}
    return np.concatenate([t, arrival]), edges


def kind_is(model: Model, *kinds: EventKind) -> np.ndarray:
    """Events of the given kinds (bool per event)."""
    return np.isin(model.ev_kind, [k.value for k in kinds])
