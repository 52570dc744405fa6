"""call_tree and compare's operator paths on random nestings equal a walk up each range's chain.

Random nested ranges (operators, annotations, ProfilerStep ranges, Python frames, ranges
equal to their parent) on three threads; the references below build the same answers in
plain Python, one range and one ancestor at a time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis._host import host_ranges
from jupyter_traceview.analysis.compare import parts
from jupyter_traceview.analysis.cpu_ops import STEP_KEY
from tests import kineto_builder as kb

_NAMES = (
    ("aten::mm", "cpu_op"),
    ("aten::add", "cpu_op"),
    ("block", "user_annotation"),
    ("ProfilerStep#1", "user_annotation"),
    ("ProfilerStep#2", "user_annotation"),
    ("m.py(1): f", "python_function"),
)


def _nest(rng: np.random.Generator, lo: int, hi: int, level: int, tid: int, out: list[dict]) -> None:
    """Random ranges inside [lo, hi) on ``tid``, each with random ranges inside it."""
    t = lo
    while level < 7 and t < hi:
        t += int(rng.integers(0, 3))
        if t >= hi:
            return
        length = hi - t if rng.random() < 0.25 else int(rng.integers(1, hi - t + 1))
        name, cat = _NAMES[int(rng.integers(0, len(_NAMES)))]
        out.append(kb.cpu_op(name, t, length, tid=tid, cat=cat))
        _nest(rng, t, t + length, level + 1, tid, out)
        t += length


def _trace(tmp_path: Path, seed: int) -> tv.Trace:
    rng = np.random.default_rng(seed)
    events: list[dict] = []
    for tid in (1, 2, 3):
        _nest(rng, 0, 120, 0, tid, events)
    return tv.load(kb.write(tmp_path / f"r{seed}.json", kb.doc(events)), cache=False)


def _union(spans: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for s, e in sorted(spans):
        if reach is None or s > reach:
            total, reach = total + e - s, e
        elif e > reach:
            total, reach = total + e - reach, e
    return total


def _reference_tree(trace: tv.Trace) -> list[tuple]:
    """call_tree's rows for rank 0: paths from the ranges' chains, numbered breadth first,
    siblings by inclusive time (longest first), then first call."""
    ev = trace.rank_data(0).events
    h = host_ranges(ev)
    eid, pid, tid = (ev[c].to_numpy()[h.rows] for c in ("eid", "pid", "tid"))
    label = []
    for code, kind in zip(h.name_codes.tolist(), h.kind.tolist(), strict=True):
        name = str(h.names[code])
        step = kind == "user_annotation" and name.startswith("ProfilerStep#")
        label.append((STEP_KEY if step else name, str(kind)))
    nodes: dict[tuple, dict] = {}
    top: dict[tuple, list[tuple[int, int]]] = {}
    for i in range(len(h)):
        chain = [i]
        while h.parent[chain[-1]] >= 0:
            chain.append(int(h.parent[chain[-1]]))
        thread = (int(pid[i]), int(tid[i]))
        nodes.setdefault((thread,), {"calls": 1, "incl": 0, "excl": 0, "first": i})
        path = (thread, *(label[j] for j in reversed(chain)))
        node = nodes.setdefault(path, {"calls": 0, "incl": 0, "excl": 0, "first": i})
        node["calls"] += 1
        node["incl"] += int(h.dur[i])
        node["excl"] += int(h.exclusive_ns[i])
        if len(chain) == 1:
            top.setdefault((thread,), []).append((int(h.ts[i]), int(h.end[i])))
    for root, spans in top.items():
        nodes[root]["incl"] = _union(spans)

    def order(paths: list[tuple]) -> list[tuple]:
        return sorted(paths, key=lambda p: (-nodes[p]["incl"], int(h.ts[nodes[p]["first"]]), nodes[p]["first"]))

    level = order([p for p in nodes if len(p) == 1])
    rows: list[tuple] = []
    ids: dict[tuple, int] = {}
    while level:
        for p in level:
            ids[p] = len(rows)
            f = nodes[p]["first"]
            kind = "thread" if len(p) == 1 else p[-1][1]
            node_name = None if len(p) == 1 else p[-1][0]
            excl = 0 if len(p) == 1 else nodes[p]["excl"]
            parent = ids[p[:-1]] if len(p) > 1 else -1
            first = (int(h.ts[f]), int(h.dur[f]), int(eid[f]))
            rows.append(
                (parent, len(p) - 1, node_name, kind, int(tid[f]), nodes[p]["calls"], nodes[p]["incl"], excl, *first)
            )
        level = [c for p in level for c in order([q for q in nodes if len(q) == len(p) + 1 and q[:-1] == p])]
    return rows


@pytest.mark.parametrize("seed", range(12))
def test_call_tree_equals_walking_the_chains(tmp_path: Path, seed: int) -> None:
    trace = _trace(tmp_path, seed)
    tree = tv.call_tree(trace)
    assert tree["node_id"].tolist() == list(range(len(tree)))
    cols = ["parent_id", "depth", "name", "kind", "tid", "calls", "inclusive_ns", "exclusive_ns"]
    cols += ["first_ts_ns", "first_dur_ns", "first_eid"]
    got = [tuple(r) for r in tree[cols].itertuples(index=False)]
    got = [(*r[:2], None if r[3] == "thread" else r[2], *r[3:]) for r in got]
    assert got == _reference_tree(trace)


@pytest.mark.parametrize("seed", range(12))
def test_compare_operator_paths_equal_walking_the_chains(tmp_path: Path, seed: int) -> None:
    ev = _trace(tmp_path, seed).rank_data(0).events
    parent = parts._parents(ev)
    kind = [str(k) for k in ev["kind"].tolist()]
    name = [str(x) for x in ev["name"].tolist()]
    outer, tops, keys = [], [], []
    for i in range(len(ev)):
        chain = [i]
        while parent[chain[-1]] >= 0:
            chain.append(int(parent[chain[-1]]))
        outer.append(next((j for j in reversed(chain) if kind[j] == "cpu_op"), -1))
        if outer[-1] == i:
            tops.append(i)
            levels = [name[j] for j in chain[1:] if kind[j] == "user_annotation" and "ProfilerStep#" not in name[j]]
            keys.append(parts.OPERATOR + " > ".join([*reversed(levels[: parts._MAX_PATH]), name[i]]))
    assert parts._outermost_op(ev).tolist() == outer
    got_tops, got_keys = parts._top_operators(ev)
    assert got_tops.tolist() == tops
    assert got_keys.tolist() == keys
