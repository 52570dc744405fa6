"""call_tree: a merged tree with known inclusive and exclusive times, and the real with_stack trace."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.call_tree import CALL_TREE_COLUMNS
from tests import kineto_builder as kb

US = 1000
TORCH_CPU = Path(__file__).resolve().parents[1] / "data" / "torch_cpu"


def _py(name: str, ts: float, dur: float, **kw: object) -> dict:
    return kb.cpu_op(name, ts, dur, cat="python_function", **kw)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    """Main thread (us)::

        ProfilerStep#1 [0, 100)
          train.py(9): step [10, 60)
            aten::linear [15, 35)
              aten::addmm [20, 30)
            aten::relu [40, 45)
          train.py(9): step [70, 90)
            aten::linear [72, 82)
        ProfilerStep#2 [100, 150)
          train.py(9): step [105, 145)
            aten::linear [110, 140)
              aten::addmm [115, 125)

    Thread 7: aten::add [0, 20).
    Merged: step* (2 calls, 150) > train.py(9): step (3 calls, 110; excl 110 - 60 - 5 = 45)
    > aten::linear (3 calls, 60; excl 60 - 20 = 40) > aten::addmm (2 calls, 20).
    """
    events = [
        kb.step(1, 0, 100),
        _py("train.py(9): step", 10, 50),
        kb.cpu_op("aten::linear", 15, 20),
        kb.cpu_op("aten::addmm", 20, 10),
        kb.cpu_op("aten::relu", 40, 5),
        _py("train.py(9): step", 70, 20),
        kb.cpu_op("aten::linear", 72, 10),
        kb.step(2, 100, 50),
        _py("train.py(9): step", 105, 40),
        kb.cpu_op("aten::linear", 110, 30),
        kb.cpu_op("aten::addmm", 115, 10),
        kb.cpu_op("aten::add", 0, 20, tid=7),
    ]
    path = tmp_path_factory.mktemp("tree") / "r.json"
    return tv.load(kb.write(path, kb.doc(events)), cache=False)


def _paths(tree: pd.DataFrame) -> dict[str, pd.Series]:
    by_id = tree.set_index("node_id")
    out = {}
    for nid, row in by_id.iterrows():
        parts = []
        cur = nid
        while cur >= 0:
            parts.append(str(by_id.loc[cur, "name"]))
            cur = int(by_id.loc[cur, "parent_id"])
        out[" / ".join(reversed(parts[:-1]))] = row  # without the thread root's name
    return out


def test_by_construction(tiny: tv.Trace) -> None:
    tree = tv.call_tree(tiny)
    assert list(tree.columns) == list(CALL_TREE_COLUMNS)
    assert (tree["parent_id"] < tree["node_id"]).all()
    roots = tree.loc[tree["kind"] == "thread"]
    assert sorted(roots["tid"].tolist()) == [7, kb.MAIN_TID]
    assert (roots["parent_id"] == -1).all() and (roots["depth"] == 0).all()
    p = _paths(tree.loc[tree["tid"] == kb.MAIN_TID])
    got = {k: (r.calls, r.inclusive_ns // US, r.exclusive_ns // US, r.depth) for k, r in p.items()}
    step = "ProfilerStep*"
    frame = f"{step} / train.py(9): step"
    assert got == {
        "": (1, 150, 0, 0),
        step: (2, 150, 40, 1),
        frame: (3, 110, 45, 2),
        f"{frame} / aten::linear": (3, 60, 40, 3),
        f"{frame} / aten::linear / aten::addmm": (2, 20, 20, 4),
        f"{frame} / aten::relu": (1, 5, 5, 3),
    }
    first = p[f"{frame} / aten::linear"]
    assert first.first_ts_ns - tiny.t0_ns == 15 * US and first.first_dur_ns == 20 * US
    assert str(tiny.events(0).set_index("eid").loc[first.first_eid, "name"]) == "aten::linear"
    add = tree.loc[tree["name"] == "aten::add"].iloc[0]
    assert (add.tid, add.inclusive_ns, add.depth) == (7, 20 * US, 1)


def test_scope(tiny: tv.Trace) -> None:
    tree = tv.call_tree(tiny, iterations=2)
    lin = tree.loc[tree["name"] == "aten::linear"].iloc[0]
    assert (lin.calls, lin.inclusive_ns, lin.exclusive_ns) == (1, 30 * US, 20 * US)


def test_with_stack_trace_adds_up() -> None:
    """On the real with_stack trace: exclusive + children = inclusive where nesting is proper,
    exclusive is never negative, and operator nodes sum to cpu_op_breakdown's totals."""
    trace = tv.load(TORCH_CPU / "stack" / "stack.pt.trace.json.gz", cache=False)
    tree = tv.call_tree(trace)
    assert (tree["exclusive_ns"] >= 0).all()
    kids = tree.groupby("parent_id")["inclusive_ns"].sum()
    ids = tree.set_index("node_id")
    gap = ids["exclusive_ns"] + kids.reindex(ids.index).fillna(0) - ids["inclusive_ns"]
    # Only where ProfilerStep ranges overlap profiler.step()'s frame (improper nesting).
    assert (gap.iloc[1:] != 0).sum() <= 8
    assert {"python_function", "cpu_op", "user_annotation"} <= set(tree["kind"])
    ops = tv.cpu_op_breakdown(trace).set_index("name")
    per_name = tree.loc[tree["kind"] == "cpu_op"].groupby("name")["inclusive_ns"].sum()
    # A name nested in itself counts once per call in both (torch counts nested calls too).
    assert (per_name == ops["total_ns"].reindex(per_name.index)).all()
    conv = tree.loc[tree["name"] == "aten::mkldnn_convolution"]
    assert len(conv) == 1 and "Conv2d" in "".join(
        tree.set_index("node_id").loc[_ancestors(tree, int(conv["node_id"].iloc[0])), "name"]
    )


def _ancestors(tree: pd.DataFrame, nid: int) -> list[int]:
    parent = dict(zip(tree["node_id"], tree["parent_id"], strict=True))
    out = []
    while parent[nid] >= 0:
        nid = int(parent[nid])
        out.append(nid)
    return out
