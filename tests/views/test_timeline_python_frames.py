"""The timeline's CPU lanes draw Python frames (with_stack traces) as nested rows, coloured as Python."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import jupyter_traceview as tv
from jupyter_traceview.views.colors import kind_code
from jupyter_traceview.views.timeline.index import TimelineIndex

STACK = Path(__file__).resolve().parents[1] / "data" / "torch_cpu" / "stack" / "stack.pt.trace.json.gz"


def test_python_frames_are_drawn_in_cpu_lanes() -> None:
    trace = tv.load(STACK, cache=False)
    ev = trace.events(0)
    n_python = int((ev["kind"] == "python_function").sum())
    n_instants = int((ev["dur_ns"] == 0).sum())  # torch's "Record Window End" marker
    assert n_python > 1000
    ix = TimelineIndex.of(trace)
    rows = list(ix.rows)
    assert all(r.type == "cpu" for r in rows)
    # Every event but the instant marker is drawn, Python frames included, nested by depth.
    assert sum(r.events for r in rows) == len(ev) - n_instants
    assert max(r.depth for r in rows) >= 10
    assert np.count_nonzero(np.asarray(ix.kind) == kind_code("python")) == n_python
