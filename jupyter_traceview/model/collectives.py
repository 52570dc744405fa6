"""Communication kernels of each rank, grouped into collective instances and matched across ranks.

Used by clock alignment (:mod:`jupyter_traceview.model.clock`) and the cross-rank critical path.
The per-rank step (:func:`rank_collective_kernels`) runs where the rank lives (it is a
``map_ranks`` function); :func:`match_instances` combines the small per-rank frames.

How a communication kernel (``gpu_class == "communication"``, kind ``kernel``) gets its
collective and its identity:

1. **Sequence number.** A kernel whose own ``comms`` row (recent PyTorch writes
   ``Collective name``, ``Seq`` and ``Process Group Name`` on NCCL kernels) or whose
   enclosing ``record_param_comms`` operator (reached through the launch call and its
   parents) carries a sequence number is the instance ``seq:<process group>:<seq>``.
   Every kernel with that key on a rank belongs to the one instance.
2. **Order.** Otherwise the collective comes from the nearest enclosing ``comms`` row
   (``nccl:all_reduce`` annotations of older traces, ``record_param_comms``), else from
   the kernel name (``ncclKernel_AllReduce_RING_LL_Sum_float`` -> ``all_reduce``,
   ``ncclDevKernel_SendRecv`` -> ``send_recv``). Kernels launched under one enclosing
   ``comms`` event form one instance (an all-to-all may launch several); the instances of
   one collective kind are numbered in order of start on each rank, and instance ``n`` of
   ``all_reduce`` on one rank is matched with instance ``n`` on every other rank. This
   assumes every rank runs the same sequence of collectives of a kind (one process group
   per kind, as in data parallelism); a kind whose count differs between ranks is not
   matched.

Point-to-point kinds (``send``, ``recv``, ``send_recv``) are matched only by sequence
number: their order on a rank says nothing about which peer they pair with.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from .rank_data import RankData
from .schema import EventKind, GpuClass
from .trace import Trace

__all__ = [
    "POINT_TO_POINT",
    "SYNCHRONISING",
    "kernel_collective",
    "match_instances",
    "rank_collective_kernels",
]

#: Collectives that end together on every rank of the group (no rank can finish before
#: the last one has contributed): the ones clock alignment uses by default.
SYNCHRONISING = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "barrier")
#: Pairwise kinds: matched only through sequence numbers.
POINT_TO_POINT = ("send", "recv", "send_recv")

KERNEL_COLUMNS = {
    "eid": "int64",
    "ts_ns": "int64",
    "end_ns": "int64",
    "stream": "int64",
    "collective": "str",
    "key": "str",
    "matched_by": "str",
}


_KNOWN_KINDS = frozenset(SYNCHRONISING) | frozenset(POINT_TO_POINT) | {"broadcast", "reduce", "gather", "scatter"}


_COLLECTIVES = (
    ("allreduce", "all_reduce"),
    ("reducescatter", "reduce_scatter"),
    ("allgather", "all_gather"),
    ("alltoall", "all_to_all"),
    ("broadcast", "broadcast"),
    ("barrier", "barrier"),
    ("sendrecv", "send_recv"),
    ("send", "send"),
    ("recv", "recv"),
    ("gather", "gather"),
    ("scatter", "scatter"),
    ("reduce", "reduce"),
)


def normalize_collective(name: str) -> str:
    """all_reduce, all_gather, reduce_scatter, all_to_all, ... from a recorded collective name."""
    squashed = name.lower().replace("_", "").replace(" ", "")
    for needle, label in _COLLECTIVES:
        if needle in squashed:
            return label
    return name.lower().strip("_") or "unknown"


def kernel_collective(name: str, *, fallback: str = "unknown") -> str:
    """The collective of a communication kernel from its name.

    ``ncclKernel_AllReduce_RING_LL_Sum_float(...)`` -> ``all_reduce``,
    ``ncclDevKernel_AllGather_RING_LL`` -> ``all_gather``, ``ncclDevKernel_SendRecv`` ->
    ``send_recv`` (RCCL names alike). Other kernels (``ncclDevKernel_Generic``, DeepEP,
    NVSHMEM, ...): ``"unknown"`` with ``fallback="unknown"``; with ``fallback="name"`` the
    kernel's own name up to its argument or template list, so that kernels of one kind
    still group together.
    """
    head = name.split("(", 1)[0]
    for marker in ("Kernel_", "kernel_"):
        if marker in head and ("nccl" in head or "rccl" in head):
            label = normalize_collective(head.split(marker, 1)[1])
            if label in _KNOWN_KINDS:
                return label
            break
    if fallback == "name":
        return re.split(r"[(<]", name, maxsplit=1)[0].strip()
    return "unknown"


def _empty_kernels() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=d) for c, d in KERNEL_COLUMNS.items()})


#: :func:`rank_collective_kernels` of each rank's tables, per window, computed once per
#: RankData (a trace narrowed with ``select(ranks=...)``, as every per-rank step is, shares
#: its ranks' tables; a reclassified trace has new ones): clock alignment, the critical path,
#: the what-if replay and the timeline's collective view all read this one result.
_KERNELS: weakref.WeakKeyDictionary[RankData, dict[tuple[int, int] | None, pd.DataFrame]] = weakref.WeakKeyDictionary()


def rank_collective_kernels(trace: Trace) -> pd.DataFrame:
    """The communication kernels of a one-rank trace with their collective instance.

    Columns: ``eid``, ``ts_ns``, ``end_ns``, ``stream``, ``collective`` (normalised kind),
    ``key`` (instance key: ``seq:<pg>:<seq>``, or ``order:<collective>:<n>``) and
    ``matched_by`` (``seq`` or ``order``). Clipped to ``trace.window`` like every analysis.
    Computed once per rank table and window (a shallow copy of the kept frame each call: do
    not change its values in place).
    """
    (rank,) = trace.ranks
    d = trace.rank_data(rank)
    per_window = _KERNELS.setdefault(d, {})
    found = per_window.get(trace.window)
    if found is None:
        found = per_window[trace.window] = _collective_kernels_of(d, trace.window)
    return found.copy(deep=False)


def _collective_kernels_of(d: RankData, window: tuple[int, int] | None) -> pd.DataFrame:
    """What :func:`rank_collective_kernels` returns for rank tables ``d`` clipped to ``window``."""
    ev = d.events
    is_comm = (ev["kind"] == EventKind.KERNEL.value).to_numpy() & (
        ev["gpu_class"] == GpuClass.COMMUNICATION.value
    ).to_numpy()
    if not is_comm.any():
        return _empty_kernels()
    k = ev.loc[is_comm, ["eid", "ts_ns", "dur_ns", "name", "stream", "launch_eid"]]
    ts = k["ts_ns"].to_numpy()
    end = ts + k["dur_ns"].to_numpy()
    if window is not None:
        lo, hi = window
        ts, end = np.clip(ts, lo, hi), np.clip(end, lo, hi)
    eids = k["eid"].to_numpy()

    comms = d.comms
    comm_eids = comms["eid"].to_numpy()
    # Position of every eid in the (possibly narrowed) events table, for parent walks.
    all_eids = ev["eid"].to_numpy()
    size = int(all_eids.max()) + 1
    pos = np.full(size, -1, dtype=np.int64)
    pos[all_eids] = np.arange(len(all_eids))
    parent = ev["parent_eid"].to_numpy()
    is_comm_row = np.zeros(size, dtype=bool)
    is_comm_row[comm_eids[comm_eids < size]] = True

    # The nearest enclosing comms event of each kernel's launch call (walking up the parents).
    enclosing = np.full(len(eids), -1, dtype=np.int64)
    cur = k["launch_eid"].to_numpy().copy()
    todo = np.flatnonzero((cur >= 0) & (cur < size))
    for _ in range(256):  # nesting depth bound
        todo = todo[pos[cur[todo]] >= 0]
        if not len(todo):
            break
        hit = is_comm_row[cur[todo]]
        enclosing[todo[hit]] = cur[todo[hit]]
        todo = todo[~hit]
        cur[todo] = parent[pos[cur[todo]]]
        todo = todo[(cur[todo] >= 0) & (cur[todo] < size)]

    # The comms facts of each kernel's own eid and of its enclosing comms event: numpy
    # lookups in the sorted distinct eids (the first row of a duplicated eid, as
    # drop_duplicates keeps), each column converted once (this runs per rank).
    u_eid, first = np.unique(comms["eid"].to_numpy(), return_index=True)
    # a sentinel past every eid (no collective, no pg, seq -1) for the eids not found
    u_eid = np.append(u_eid.astype(np.int64), np.iinfo(np.int64).max)
    u_coll = np.append(comms["collective"].astype(object).to_numpy()[first], np.array([None], dtype=object))
    u_pg = np.append(comms["pg_name"].astype(object).to_numpy()[first], np.array([None], dtype=object))
    u_seq = np.append(comms["seq"].to_numpy().astype(np.int64)[first], -1)

    def lookup(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(has a collective, collective, pg_name, seq) of the comms rows of eids ``x`` (-1: none)."""
        at = np.searchsorted(u_eid, x)
        at = np.where(u_eid[at] == x, at, len(u_eid) - 1)  # not a comms eid: the sentinel
        coll = u_coll[at]
        has: np.ndarray = ~pd.isna(coll)
        pg, seq = u_pg[at], u_seq[at]
        return has, coll, pg, seq

    own_has, own_coll, own_pg, own_seq = lookup(eids)
    encl_has, encl_coll, encl_pg, encl_seq = lookup(enclosing)
    names = k["name"].cat.remove_unused_categories()
    per_name = np.array([kernel_collective(str(c)) for c in names.cat.categories.tolist()] + ["unknown"], dtype=object)
    codes = names.cat.codes.to_numpy()
    by_name = per_name[np.where(codes >= 0, codes, len(per_name) - 1)]
    collective = np.where(own_has, own_coll, np.where(encl_has, encl_coll, by_name))
    use_own = own_seq >= 0
    seq = np.where(use_own, own_seq, encl_seq)
    pg = np.where(use_own, own_pg, encl_pg)
    has_seq = seq >= 0
    coll_text = [str(c) for c in collective.tolist()]
    keys = [
        f"seq:{'' if pd.isna(g) else g}:{q}" if h else ""
        for g, q, h in zip(pg.tolist(), seq.tolist(), has_seq.tolist(), strict=True)
    ]
    # Order keys: one instance per enclosing comms event (or per kernel without one),
    # numbered by first start within its collective kind (the collective of the group's
    # first kernel).
    ts64, end64 = ts.astype(np.int64), end.astype(np.int64)
    order = np.flatnonzero(~has_seq)
    if len(order):
        group = np.where(enclosing[order] >= 0, enclosing[order], -2 - eids[order].astype(np.int64))
        u_group, first_row, inv = np.unique(group, return_index=True, return_inverse=True)
        first_ts = np.full(len(u_group), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first_ts, inv, ts64[order])
        n_of = np.empty(len(u_group), dtype=np.int64)
        seen: dict[str, int] = {}
        for j in np.lexsort((u_group, first_ts)).tolist():
            c = coll_text[int(order[first_row[j]])]
            n_of[j] = seen.get(c, 0)
            seen[c] = n_of[j] + 1
        for i, j in zip(order.tolist(), inv.tolist(), strict=True):
            keys[i] = f"order:{coll_text[i]}:{n_of[j]}"
    return pd.DataFrame(
        {
            "eid": eids.astype(np.int64),
            "ts_ns": ts64,
            "end_ns": end64,
            "stream": k["stream"].to_numpy().astype(np.int64),
            "collective": pd.array(coll_text, dtype="str"),
            "key": pd.array(keys, dtype="str"),
            "matched_by": pd.array(np.where(has_seq, "seq", "order").tolist(), dtype="str"),
        }
    )


def match_instances(
    kernels: Mapping[int, pd.DataFrame],
    *,
    collectives: Iterable[str] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Collective instances present on at least two ranks, one row per (instance, rank).

    ``kernels`` maps rank -> :func:`rank_collective_kernels` frame. ``collectives`` keeps
    only those kinds (None: every kind, point-to-point ones only when matched by sequence
    number). Returns the frame (columns ``key``, ``collective``, ``matched_by``, ``rank``,
    ``start_ns`` (first kernel start of the instance on the rank), ``end_ns`` (last end),
    ``start_eid`` (the kernel that starts first), ``kernels``) and notes on what could
    not be matched (for messages).
    """
    notes: list[str] = []
    parts = []
    for rank, k in kernels.items():
        if len(k):
            parts.append(k.assign(rank=rank))
    if not parts:
        return _empty_instances(), notes
    allk = pd.concat(parts, ignore_index=True)
    p2p = allk["collective"].isin(POINT_TO_POINT) & (allk["matched_by"] == "order")
    if p2p.any():
        notes.append(
            f"{int(p2p.sum())} point-to-point kernel(s) ({', '.join(sorted(set(allk.loc[p2p, 'collective'])))}) "
            "without sequence numbers were left out: their order does not say which peer they pair with"
        )
        allk = allk.loc[~p2p]
    unknown = allk["collective"] == "unknown"
    if unknown.any():
        notes.append(f"{int(unknown.sum())} communication kernel(s) of unknown collective were left out")
        allk = allk.loc[~unknown]
    wanted = None if collectives is None else set(collectives)
    if wanted is not None:
        other = ~allk["collective"].isin(wanted)
        if other.any():
            kinds = allk.loc[other, "collective"].value_counts()
            listed = ", ".join(f"{k} ({n} kernels)" for k, n in kinds.items())
            notes.append(f"kinds not asked for were left out: {listed}")
            allk = allk.loc[~other]
    if not len(allk):
        return _empty_instances(), notes
    allk = allk.sort_values(["rank", "ts_ns"], kind="stable")
    inst = (
        allk.groupby(["key", "rank"], sort=False)
        .agg(
            collective=("collective", "first"),
            matched_by=("matched_by", "first"),
            start_ns=("ts_ns", "min"),
            end_ns=("end_ns", "max"),
            start_eid=("eid", "first"),
            kernels=("eid", "size"),
        )
        .reset_index()
    )
    # Order matching needs the same number of instances of a kind on every rank.
    by_order = inst["matched_by"] == "order"
    if by_order.any():
        counts = inst.loc[by_order].groupby(["collective", "rank"]).size().unstack("rank")
        ranks_with_kernels = sorted(inst["rank"].unique().tolist())
        bad = []
        for kind, row in counts.iterrows():
            present = row.dropna()
            if len(present) != len(ranks_with_kernels) or present.nunique() != 1:
                bad.append(str(kind))
                detail = ", ".join(f"rank {int(r)}: {int(c)}" for r, c in row.fillna(0).items())
                notes.append(
                    f"{kind} was not matched by order: ranks hold different numbers of them ({detail}); "
                    "traces with sequence numbers (recent PyTorch) match exactly"
                )
        if bad:
            inst = inst.loc[~(by_order & inst["collective"].isin(bad))]
    n_ranks = inst.groupby("key")["rank"].transform("size")
    inst = inst.loc[n_ranks >= 2]
    cols = ["key", "collective", "matched_by", "rank", "start_ns", "end_ns", "start_eid", "kernels"]
    return inst[cols].reset_index(drop=True).astype(_INSTANCE_COLUMNS), notes


_INSTANCE_COLUMNS = {
    "key": "str",
    "collective": "str",
    "matched_by": "str",
    "rank": "int64",
    "start_ns": "int64",
    "end_ns": "int64",
    "start_eid": "int64",
    "kernels": "int64",
}


def _empty_instances() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=d) for c, d in _INSTANCE_COLUMNS.items()})
