"""The call-tree icicle: boxes inside their parents, as wide as their inclusive time, linking to their first call."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jupyter_traceview import charts
from jupyter_traceview.analysis import loops
from jupyter_traceview.charts.call_tree import icicle_layout


def _tree() -> pd.DataFrame:
    """thread (100) > a (60: b 30, c 40 -> scaled to fit 60), d (40)."""
    return pd.DataFrame(
        {
            "rank": 0,
            "node_id": [0, 1, 2, 3, 4],
            "parent_id": [-1, 0, 0, 1, 1],
            "depth": [0, 1, 1, 2, 2],
            "name": ["thread 1", "a", "d", "c", "b"],
            "kind": ["thread", "python_function", "cpu_op", "cpu_op", "cpu_op"],
            "tid": 1,
            "calls": [1, 2, 1, 1, 3],
            "inclusive_ns": [100, 60, 40, 40, 30],
            "exclusive_ns": [0, 0, 40, 40, 30],
            "first_ts_ns": [0, 0, 60, 5, 1],
            "first_dur_ns": [100, 30, 40, 20, 10],
            "first_eid": [10, 11, 12, 13, 14],
        }
    )


def test_layout_nests_and_scales() -> None:
    lay = icicle_layout(_tree()).set_index("name")
    assert (lay.loc["thread 1", "x0_ns"], lay.loc["thread 1", "x1_ns"]) == (0, 100)
    assert (lay.loc["a", "x0_ns"], lay.loc["a", "x1_ns"]) == (0, 60)
    assert (lay.loc["d", "x0_ns"], lay.loc["d", "x1_ns"]) == (60, 100)
    # c and b (70 together) overflow a (60): scaled by 60/70, c first (lower node id).
    assert np.isclose(lay.loc["c", "x1_ns"] - lay.loc["c", "x0_ns"], 40 * 60 / 70)
    assert np.isclose(lay.loc["b", "x0_ns"], 40 * 60 / 70) and np.isclose(lay.loc["b", "x1_ns"], 60)


def test_chart_boxes_link_to_first_calls() -> None:
    fig = charts.call_tree_chart(_tree())
    (src,) = {id(r.data_source): r.data_source for r in fig.renderers if r.data_source.tags}.values()
    assert src.tags == [f"{charts.LINK_TAG}:event"]
    assert list(src.data["link_eid"]) == [10, 11, 12, 13, 14]
    assert list(src.data["name"]) == ["thread 1", "a", "d", "c", "b"]
    assert "traceview-empty" in (charts.call_tree_chart(_tree().iloc[0:0]).tags or [])


def _levels_reference(tree: pd.DataFrame) -> pd.DataFrame:
    """The layout as the chart computed it before ``_loops.icicle``: level by level (nodes x depth)."""
    ids = tree["node_id"].to_numpy()
    pos = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, dtype=np.int64)
    pos[ids] = np.arange(len(ids))
    parent = tree["parent_id"].to_numpy()
    incl = tree["inclusive_ns"].to_numpy().astype(np.float64)
    depth = tree["depth"].to_numpy()
    x0 = np.zeros(len(tree))
    width = incl.copy()
    for d in range(int(depth.max()) + 1 if len(tree) else 0):
        at = np.flatnonzero(depth == d)
        at = at[np.argsort(ids[at], kind="stable")]
        if d == 0:
            x0[at] = np.concatenate(([0.0], np.cumsum(width[at])[:-1]))
            continue
        p = pos[parent[at]]
        order = np.lexsort((ids[at], p))
        at, p = at[order], p[order]
        sums = pd.Series(incl[at]).groupby(p).transform("sum").to_numpy()
        scale = np.where(sums > width[p], width[p] / np.maximum(sums, 1.0), 1.0)
        width[at] = incl[at] * scale
        before = pd.Series(width[at]).groupby(p).cumsum().to_numpy() - width[at]
        x0[at] = x0[p] + before
    out = tree.copy()
    out["x0_ns"] = x0
    out["x1_ns"] = x0 + width
    return out


def _random_tree(rng: np.random.Generator, n: int, chain: bool, proper: bool = False) -> pd.DataFrame:
    """A random forest in shuffled rows: nodes attach to a random earlier node (or, in a
    ``chain``, mostly to the previous one), with inclusive times that often overflow their
    parent (scaled boxes, widths that are not whole numbers) and span 1 ns to 10**15 ns;
    ``proper``: every node's time is its children's plus its own (no box scaled)."""
    parent = np.full(n, -1, dtype=np.int64)
    for i in range(1, n):
        if rng.random() < 0.05:
            continue  # another root
        parent[i] = i - 1 if chain and rng.random() < 0.8 else rng.integers(0, i)
    depth = np.zeros(n, dtype=np.int64)
    for i in range(n):
        depth[i] = depth[parent[i]] + 1 if parent[i] >= 0 else 0
    big = rng.random(n) < 0.3
    incl = np.where(big, rng.integers(1, 10**15, n), rng.integers(0, 1000, n))
    if proper:
        incl = np.where(big, rng.integers(0, 10**12, n), rng.integers(0, 1000, n))
        for i in range(n - 1, 0, -1):  # children come after their parent
            if parent[i] >= 0:
                incl[parent[i]] += incl[i]
    ids = rng.permutation(n) + rng.integers(0, 5)  # node ids need not start at 0
    rows = rng.permutation(n)
    return pd.DataFrame(
        {
            "node_id": ids[rows],
            "parent_id": np.where(parent >= 0, ids[np.maximum(parent, 0)], -1)[rows],
            "depth": depth[rows],
            "inclusive_ns": incl[rows],
        }
    )


@pytest.mark.parametrize("native", [True, False], ids=["compiled", "numpy"])
def test_layout_is_bit_identical_to_the_level_by_level_one(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if native and loops.native is None:
        pytest.skip("the analyses' loops are not compiled")
    if not native:
        monkeypatch.setattr(loops, "native", None)
    rng = np.random.default_rng(37)
    trees = [_random_tree(rng, int(rng.integers(1, 400)), chain=bool(k % 2), proper=k % 4 > 1) for k in range(80)]
    trees.append(_tree())
    for tree in trees:
        got, want = icicle_layout(tree), _levels_reference(tree)
        assert got["x0_ns"].to_numpy().tobytes() == want["x0_ns"].to_numpy().tobytes()
        assert got["x1_ns"].to_numpy().tobytes() == want["x1_ns"].to_numpy().tobytes()
    assert any((t["depth"] > 50).any() for t in trees)


@pytest.mark.parametrize("native", [True, False], ids=["compiled", "numpy"])
def test_the_chart_of_a_300k_deep_chain_is_drawn(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """300,000 nested calls (issue 37) are laid out in one pass, not one per level (nodes x
    depth). The top 50 are wide, the rest 1 ns (too narrow to draw): a cheap chart."""
    if not native:
        monkeypatch.setattr(loops, "native", None)
    n = 300_000
    ids = np.arange(n)
    incl = np.where(ids < 50, 10**6, 1)
    tree = pd.DataFrame(
        {
            "rank": 0,
            "node_id": ids,
            "parent_id": ids - 1,
            "depth": ids,
            "name": "aten::mm",
            "kind": "cpu_op",
            "tid": 1,
            "calls": 1,
            "inclusive_ns": incl,
            "exclusive_ns": 1,
            "first_ts_ns": ids,
            "first_dur_ns": incl,
            "first_eid": ids,
        }
    )
    lay = icicle_layout(tree)
    assert (lay["x0_ns"] == 0).all() and (lay["x1_ns"] == incl).all()
    fig = charts.call_tree_chart(tree)
    (src,) = {id(r.data_source): r.data_source for r in fig.renderers if r.data_source.tags}.values()
    assert list(src.data["link_eid"]) == list(range(50))
