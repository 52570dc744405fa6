"""The call-tree icicle: boxes inside their parents, as wide as their inclusive time, linking to their first call."""

from __future__ import annotations

import numpy as np
import pandas as pd

from jupyter_traceview import charts
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
