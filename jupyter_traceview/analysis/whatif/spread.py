"""The distributed replay (``engine="dask"``): each rank's graph built and replayed where the rank lives.

The replay graph (:mod:`.model`) is every rank's own graph plus one *arrival* node per
collective instance matched across ranks: each participant's kernel start feeds it
(weight 0), and it feeds each participant's kernel end (weight: the kernel's time after
the last arrival). That node is the only tie between ranks, so a rank's replay needs,
from the others, one number per instance it joins: its *release*, the latest arrival
of the other participants. Here each rank's share of the graph (its events, edges and
its own copies of the arrival nodes of its instances) is built and kept on the worker
holding the rank (:meth:`~jupyter_traceview.Trace.keep_ranks`); only the collective
kernels (to match them) and, per round, each instance's ready times travel.

The rounds (a fixed-point iteration, Jacobi's): with releases ``R``, each rank replays
its share, an arrival node starting from its release (the latest of it and the rank's
own ready time: its kernel's replayed start plus the edge's weight), and reports its
ready time per instance; the driver sets each participant's release to the latest ready
time of the *other* participants, and goes on until no release changes. The in-process
replay gives an arrival node the latest ready time over all participants, so a fixed
point is that replay's solution; when the whole graph is acyclic the solution is unique
(by induction in topological order: an arrival depends only on arrivals before it), the
iteration reaches it from any start within (number of instances + 1) rounds, and every
round from then on gives it: the result is the in-process replay's, to the nanosecond.
A change starts from the releases of the replay without a change, which reproduces the
trace in one round; a change converges in as many rounds as the chain of instances
whose binding rank it changes (benchmarks/README.md measures them).

Acyclicity is checked, not assumed: each rank's share must replay without a cycle, and
the instances must have one order agreeing with every rank's (each rank orders its
arrival nodes by their depth in its share; the union of those orders must be acyclic).
Where either fails (recorded times that contradict each other close a cycle, which the
in-process replay breaks by dropping edges across ranks), the replay falls back on the
in-process one: the whole graph gathered here. ``docs/semantics.md`` (*What-if replay*).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...model.collectives import rank_collective_kernels
from ...model.trace import Trace
from .apply import Edit, apply_change, lateness, straggler_of
from .changes import Change
from .model import Model, assemble, match_collectives, rank_part
from .replay import Prepared

__all__ = ["Spread"]

_MIN = np.iinfo(np.int64).min


#: Rounds whose next releases are solved here from how each ready time derived (then Jacobi's).
_GUIDED = 8


class Cyclic(Exception):
    """The graph has a cycle: the distributed replay gives way to the in-process one."""


# ---------------------------------------------------------------------- on the workers
@dataclass
class Share:
    """A rank's share of the model, kept where the rank lives."""

    model: Model
    measured: np.ndarray  # per step row of the rank: its recorded duration


@dataclass
class Edited:
    """A rank's share edited by some changes, ready to replay with any releases."""

    share: Share
    graph: Prepared | None  # None: the share has a cycle
    n_nodes: int
    arrival_nodes: np.ndarray  # the share's arrival nodes, by instance
    own_src: np.ndarray  # per arrival node: the rank's kernel start feeding it (-1: edge dropped)
    own_w: np.ndarray
    depth: np.ndarray  # per arrival node: its depth in the share (edges on the longest path to it)


def _kernels(one: Trace, part: dict[str, Any] | None) -> tuple[pd.DataFrame, pd.Series, pd.Series] | None:
    """The rank's collective kernels, and for those in its graph: eid -> graph index, graph index -> start."""
    if part is None:
        return None
    k = rank_collective_kernels(one)
    local = pd.Series(np.arange(len(part["ev_eid"]), dtype=np.int64), index=part["ev_eid"])
    local = local[local.index.isin(k["eid"].to_numpy())]
    starts = pd.Series(part["t"][2 * local.to_numpy()], index=local.to_numpy())
    return k, local, starts


def _share(one: Trace, part: dict[str, Any], rows: pd.DataFrame, straggler: int | None) -> Share:
    """The rank's share: its graph with its instances' arrival nodes (``rows``: by instance,
    ``local`` kernel, ``arrival`` recorded, ``lateness_ns`` of the rank)."""
    (rank,) = one.ranks
    coll = None
    if len(rows):
        coll = (
            rows["local"].to_numpy(),
            np.arange(len(rows), dtype=np.int64),
            rows["arrival"].to_numpy().astype(np.int64),
        )
    m = assemble([(rank, part)], coll)
    if len(rows):
        m.arrival_lateness = rows["lateness_ns"].to_numpy().astype(np.int64)
        m.straggler = straggler
    from . import step_times

    return Share(m, step_times(m, m.t))


def _rows_of(one: Trace, share: Share) -> tuple[pd.DataFrame, np.ndarray]:
    """The rank's step rows (``rank``, ``step``, ``event``) and their recorded durations."""
    return share.model.steps, share.measured


def _edit(one: Trace, share: Share, changes: tuple[Change, ...]) -> Edited:
    m = share.model
    e = Edit.of(m)
    for c in changes:
        apply_change(m, e, c, one)
    k = e.keep
    dst, src, w = m.dst[k], e.src[k], e.w[k]
    n = len(m.t)
    first = 2 * m.n_events
    arrival_nodes = np.arange(first, n, dtype=np.int64)
    own_src = np.full(len(arrival_nodes), -1, dtype=np.int64)
    own_w = np.zeros(len(arrival_nodes), dtype=np.int64)
    into = dst >= first
    own_src[dst[into] - first] = src[into]
    own_w[dst[into] - first] = w[into]
    # Depths (edges on the longest path) order the arrival nodes as the share does.
    depth, acyclic = Prepared(np.zeros(n, np.int64), dst, src, np.ones(len(dst), np.int64)).run()
    graph = Prepared(m.t, dst, src, w) if acyclic else None
    return Edited(share, graph, n, arrival_nodes, own_src, own_w, depth[arrival_nodes])


def _round(one: Trace, ed: Edited, release: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """The rank's share replayed with ``release``: per instance its ready time, the instance
    (the rank's index) whose arrival that time derives from (-1: none) and how long after
    that arrival; its steps' durations; its arrival nodes' depths. None: the share has a cycle."""
    if ed.graph is None:
        return None
    k = len(ed.arrival_nodes)
    origin = np.full(ed.n_nodes, -1, dtype=np.int64)
    origin[ed.arrival_nodes] = np.arange(k, dtype=np.int64)
    t, _ = ed.graph.run((ed.arrival_nodes, release), origin)
    has = ed.own_src >= 0
    src = np.maximum(ed.own_src, 0)
    ready = np.where(has, t[src] + ed.own_w, _MIN)
    came = np.where(has, origin[src], -1)
    after = np.where(came >= 0, ready - t[ed.arrival_nodes[np.maximum(came, 0)]], 0) if k else np.zeros(0, np.int64)
    from . import step_times

    return ready, came, after, step_times(ed.share.model, t), ed.depth


# ---------------------------------------------------------------------- the driver
class Spread:
    """The distributed replay of a trace: the shares kept on the workers, the coupling here."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        parts = trace.keep_ranks(rank_part, {r: () for r in trace.ranks})
        got = trace.gather_ranks(trace.keep_ranks(_kernels, {r: (parts[r],) for r in trace.ranks}))
        self.ranks = [r for r in trace.ranks if got[r] is not None]
        inst = pd.DataFrame({"rank": [], "local": [], "key_code": [], "start_ns": []}, dtype=np.int64)
        if len(self.ranks) >= 2:
            kernels = {r: got[r][0] for r in self.ranks}
            inst = match_collectives(kernels, {r: got[r][1] for r in self.ranks}, {r: got[r][2] for r in self.ranks})
        inst = inst.sort_values(["rank", "key_code"], kind="stable").reset_index(drop=True)
        kc = inst["key_code"].to_numpy()
        n_keys = int(kc.max()) + 1 if len(kc) else 0
        arrival = np.full(n_keys, _MIN, dtype=np.int64)
        np.maximum.at(arrival, kc, inst["start_ns"].to_numpy())
        late = lateness(kc, inst["start_ns"].to_numpy())
        straggler = straggler_of(inst["rank"].to_numpy(), late) if len(inst) else None
        inst = inst.assign(arrival=arrival[kc], lateness_ns=late)
        self.inst = inst
        self.arrival = arrival
        self.rows = {r: inst.loc[inst["rank"] == r] for r in self.ranks}
        self.shares = trace.keep_ranks(_share, {r: (parts[r], self.rows[r], straggler) for r in self.ranks})
        del parts
        steps = trace.gather_ranks(trace.keep_ranks(_rows_of, {r: (self.shares[r],) for r in self.ranks}))
        self.steps = pd.concat([steps[r][0] for r in self.ranks], ignore_index=True)
        self.measured = np.concatenate([steps[r][1] for r in self.ranks]) if self.ranks else np.zeros(0, np.int64)
        # The releases of the replay without a change (recorded, until that replay is done).
        self.base_release = self._releases(inst["start_ns"].to_numpy())
        self.rounds: dict[tuple[Change, ...], int] = {}

    def _releases(self, ready: np.ndarray) -> np.ndarray:
        """Per participant row: the latest ready time of the other participants of its instance
        (the recorded arrival where no participant has an edge into it)."""
        kc = self.inst["key_code"].to_numpy()
        n = len(self.arrival)
        top = np.full(n, _MIN, dtype=np.int64)
        np.maximum.at(top, kc, ready)
        is_top = ready == top[kc]
        count = np.bincount(kc[is_top], minlength=n)
        second = np.full(n, _MIN, dtype=np.int64)
        np.maximum.at(second, kc[~is_top], ready[~is_top])
        out = np.where(is_top & (count[kc] == 1), second[kc], top[kc])
        none = top[kc] == _MIN
        out[none] = self.arrival[kc[none]]
        return np.asarray(out, dtype=np.int64)

    def _split(self, values: np.ndarray) -> dict[int, np.ndarray]:
        ranks = self.inst["rank"].to_numpy()
        return {r: values[ranks == r] for r in self.ranks}

    def step_times(self, changes: tuple[Change, ...]) -> np.ndarray:
        """Each step's replayed duration with ``changes`` (rows of :attr:`steps`).

        Raises :class:`Cyclic` where the graph has a cycle."""
        t = self.trace
        edited = t.keep_ranks(_edit, {r: (self.shares[r], changes) for r in self.ranks})
        release = self.base_release
        for k in range(_GUIDED + len(self.arrival) + 2):
            parts = self._split(release)
            got = t.gather_ranks(t.keep_ranks(_round, {r: (edited[r], parts[r]) for r in self.ranks}))
            if k == 0 and (any(g is None for g in got.values()) or not self._ordered({r: got[r][4] for r in got})):
                raise Cyclic
            ready, came, after = (
                np.concatenate([got[r][i] for r in self.ranks]) if self.ranks else np.zeros(0, np.int64)
                for i in range(3)
            )
            new = self._releases(ready)
            if np.array_equal(new, release):
                self.rounds[changes] = k + 1
                if not changes:
                    self.base_release = release
                return np.concatenate([got[r][3] for r in self.ranks])
            guided = self._guess(ready, came, after) if k < _GUIDED else None
            release = new if guided is None else guided
        raise Cyclic  # not reached for an acyclic graph (see the module docstring)

    def _guess(self, ready: np.ndarray, came: np.ndarray, after: np.ndarray) -> np.ndarray | None:
        """The releases if every ready time keeps deriving from the arrival it derived from
        in the last round (the same time after it), or keeps its time where it derived from
        none: the longest paths of that small graph, solved here (None if it is cyclic)."""
        inst = self.inst
        kc = inst["key_code"].to_numpy()
        n_keys, n_part = len(self.arrival), len(inst)
        # ``came`` is the rank's own index of the instance: its row among the rank's rows.
        first = np.r_[0, np.cumsum([len(self.rows[r]) for r in self.ranks])][:-1]
        row_first = np.repeat(first, [len(self.rows[r]) for r in self.ranks])
        src_key = np.where(came >= 0, kc[row_first + np.maximum(came, 0)], -1)
        part = n_keys + np.arange(n_part, dtype=np.int64)
        live = ready != _MIN
        dep = live & (src_key >= 0)
        dst = np.concatenate([part[dep], kc[live]])
        src = np.concatenate([src_key[dep], part[live]])
        w = np.concatenate([after[dep], np.zeros(int(live.sum()), np.int64)])
        tt = np.concatenate([self.arrival, np.where(live, ready, _MIN)])
        values, acyclic = Prepared(tt, dst, src, w).run()
        if not acyclic:
            return None
        return self._releases(np.where(live, values[part], _MIN))

    def _ordered(self, depths: dict[int, np.ndarray]) -> bool:
        """Whether one order of the instances agrees with every rank's order of its arrival
        nodes by depth (then the whole graph is acyclic: see the module docstring)."""
        n = len(self.arrival)
        src: list[np.ndarray] = []
        dst: list[np.ndarray] = []
        nodes = n
        for r in self.ranks:
            kc = self.rows[r]["key_code"].to_numpy()
            d = depths[r]
            if len(kc) < 2:
                continue
            levels, group = np.unique(d, return_inverse=True)
            # One virtual node between consecutive depth levels: level i -> v_i -> level i + 1.
            v = nodes + np.arange(len(levels) - 1)
            nodes += len(levels) - 1
            before = group < len(levels) - 1
            src.append(kc[before])
            dst.append(v[group[before]])
            after = group > 0
            src.append(v[group[after] - 1])
            dst.append(kc[after])
        if not src:
            return True
        s, d = np.concatenate(src), np.concatenate(dst)
        _, acyclic = Prepared(np.zeros(nodes, np.int64), d, s, np.zeros(len(s), np.int64)).run()
        return acyclic
