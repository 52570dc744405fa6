"""tv.Timeline on a trace with PM sampling's counter tracks: its lanes listed and answered (no browser).

``tests/data/pm_sampling/rank0.pt.trace.json``: see tests/views/test_timeline_counters.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.views.timeline import protocol
from jupyter_traceview.views.timeline.index import TimelineIndex
from jupyter_traceview.views.timeline.memory import MemoryIndex
from jupyter_traceview.views.timeline.messages import WindowRequest
from jupyter_traceview.widgets import timeline as timeline_module
from jupyter_traceview.widgets.timeline import Timeline

PM = Path(__file__).resolve().parents[1] / "data" / "pm_sampling" / "rank0.pt.trace.json"


@pytest.fixture(autouse=True)
def _front_end(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No browser: where the bundle is not built (a plain checkout), a stand-in (as test_timeline_widget.py)."""
    if not timeline_module._ESM.exists():
        stand_in = tmp_path_factory.mktemp("static") / "timeline.js"
        stand_in.write_text("export default { render() {} };\n")
        monkeypatch.setattr(timeline_module, "_ESM", stand_in)


@pytest.fixture(scope="module")
def pm() -> tv.Trace:
    return tv.load(PM, cache=False)


def test_the_timeline_widget_lists_and_answers_the_counter_lanes(pm: tv.Trace) -> None:
    tl = Timeline(pm)
    assert [(c["kind"], c["unit"], c["label"]) for c in tl._memory] == [
        ("counter", "%", "GPU 0 · SM Active (%)"),
        ("counter", "", "GPU 0 · dram__bytes_read.sum"),
    ]
    ix = tl.index
    msg = WindowRequest(
        seq=1, lo=0, hi=ix.end_ns, width=64, rows=[], summaries=[], pattern="", name_colors=False, memory=[0, 1]
    )
    meta, buffers = tl._window(msg, [])
    assert "error" not in meta, meta
    assert [m["memory"] for m in meta["memory"]] == [0, 1]
    (buf,) = buffers
    off, n, dtype = meta["layout"]["mem_allocated_max"]
    got = np.frombuffer(buf, dtype=dtype, count=n, offset=off)
    edges = ix.window(0, ix.end_ns, 64).edges
    want = MemoryIndex.of(pm).window(edges, [0, 1])
    np.testing.assert_array_equal(got[:64], want[0].series["allocated"][0])
    np.testing.assert_array_equal(got[64:128], want[1].series["allocated"][0])
    assert np.nanmax(got[:64]) == 95.5 and np.nanmax(got[64:128]) == 4096.0
    state = protocol.timeline_state(pm, TimelineIndex.of(pm))
    assert state["_memory"] == tl._memory
