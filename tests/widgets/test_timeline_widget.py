"""tv.Timeline driven from Python: synced traits, the selection, commands and their buffers (no browser)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import traitlets

import jupyter_traceview as tv
from jupyter_traceview.model import intervals as iv
from jupyter_traceview.views import colors
from jupyter_traceview.views.timeline.index import LevelOfDetail, TimelineIndex
from jupyter_traceview.widgets import timeline as timeline_module
from jupyter_traceview.widgets.timeline import Timeline, TimelineSelection

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _front_end(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests need no browser: where the bundle is not built (a plain checkout), use a stand-in.

    ``pip install .`` / ``scripts/test.sh`` build the real one, which the Galata tests load.
    """
    if not timeline_module._ESM.exists():
        stand_in = tmp_path_factory.mktemp("static") / "timeline.js"
        stand_in.write_text("export default { render() {} };\n")
        monkeypatch.setattr(timeline_module, "_ESM", stand_in)


def decode(meta: dict[str, Any], buf: bytes) -> dict[str, np.ndarray]:
    """The sections of a window response, as the front end reads them (js/timeline/protocol.ts)."""
    dtypes = {"f8": np.float64, "f4": np.float32, "u4": np.uint32, "u1": np.uint8}
    out = {}
    for name, (offset, length, dtype) in meta["layout"].items():
        assert offset % 8 == 0, "sections are 8-byte aligned"
        out[name] = np.frombuffer(buf, dtype=dtypes[dtype], count=length, offset=offset)
    return out


def test_traits_mirror_the_trace(dlrm: tv.Trace) -> None:
    tl = Timeline(dlrm)
    ix = tl.index
    assert tl._all_ranks == list(dlrm.ranks) == tl.ranks
    assert tl.collapsed == [], "8 ranks open expanded"
    assert len(tl._rows) == len(ix.rows) and len(tl._lanes) == len(ix.lanes)
    assert tl._t0_ns == str(dlrm.t0_ns) and tl.t0_ns == dlrm.t0_ns
    # The whole trace shown: every event, zero-length markers included (past the index's
    # drawn events: the sample has a marker at +23.0 ms), as Fit shows it.
    assert tl.x_range == tl._span == [0.0, float(max(ix.end_ns, dlrm._extent_ns()))]
    assert tl._span[1] > ix.end_ns
    tl.x_range = [0.0, 1000.0]
    tl.fit()
    assert tl.x_range == tl._span
    assert tl._steps == [{"step": 10, "start": 0.0, "end": pytest.approx(20_823_000.0)}]
    assert tl._palette == colors.palette()
    assert tl._kinds == ["compute", "communication", "memory", "cpu_op", "runtime", "annotation"]
    assert json.dumps(tl.get_state(), default=str), "every synced trait serialises"


def test_many_ranks_open_collapsed(tmp_path: Path) -> None:
    from tests import kineto_builder as kb

    for r in range(17):
        kb.write(tmp_path / f"rank-{r}.json", kb.doc(kb.launch("k", 0, 5, 3, corr=1), rank=r, world_size=17))
    tl = Timeline(tv.load(tmp_path, cache=False))
    assert tl.collapsed == list(range(17))


def test_selection_is_built_from_synced_traits(dlrm: tv.Trace) -> None:
    tl = Timeline(dlrm)
    seen: list[TimelineSelection] = []
    tl.observe(lambda change: seen.append(change["new"]), names="selection")
    assert tl.selection == TimelineSelection() and tl.selection.empty
    tl.selected_event = {"rank": 0, "eid": 459}  # what the front end writes on click
    assert tl.selection.rank == 0 and tl.selection.event == 459
    assert tl.selection.stream == 7 and tl.selection.thread is None
    assert tl.selection.name is not None and tl.selection.name.startswith("void gemmSN_TN_kernel")
    tl.selected_range = [1_000.0, 2_000_000.0]  # shift+drag
    assert tl.selection.range == (dlrm.t0_ns + 1_000, dlrm.t0_ns + 2_000_000)
    assert len(seen) == 2 and seen[-1] == tl.selection
    # The range is absolute: it narrows the trace directly.
    narrowed = dlrm.select(time_range=tl.selection.range)
    assert narrowed.window == tl.selection.range
    # A CPU event: thread, no stream.
    cpu = dlrm.events(1).query("kind == 'cpu_op'").iloc[0]
    tl.selected_event = {"rank": 1, "eid": int(cpu["eid"])}
    assert tl.selection.stream is None and tl.selection.thread == int(cpu["tid"])
    tl.selected_event = {}
    tl.selected_range = []
    assert tl.selection.empty and len(seen) == 5
    with pytest.raises(traitlets.TraitError):
        tl.selection = TimelineSelection(rank=3)


def test_selection_of_an_unknown_event_keeps_only_the_range(dlrm: tv.Trace) -> None:
    tl = Timeline(dlrm)
    tl.selected_range = [0.0, 10.0]
    tl.selected_event = {"rank": 0, "eid": 10**9}
    assert tl.selection == TimelineSelection(range=(dlrm.t0_ns, dlrm.t0_ns + 10))


def test_show_range_highlight_and_fit(dlrm: tv.Trace) -> None:
    tl = Timeline(dlrm)
    t0 = tl.t0_ns
    tl.show_range(t0 + 1_000_000, t0 + 3_000_000, ranks=[2, 0])
    assert tl.x_range == [1_000_000.0, 3_000_000.0] and tl.ranks == [0, 2]
    tl.show_range(t0, t0 + 10)
    assert tl.ranks == [0, 2], "ranks stay unless given"
    tl.fit()
    assert tl.x_range == tl._span  # the whole trace, as the toolbar's Fit (zero-length markers included)
    with pytest.raises(tv.TraceSelectionError, match="unknown rank 9"):
        tl.show_range(t0, t0 + 10, ranks=[9])
    with pytest.raises(ValueError, match="does not overlap the trace"):
        tl.show_range(0, 5_000_000)  # relative times by mistake
    with pytest.raises(ValueError, match="end_ns > start_ns"):
        tl.show_range(t0 + 5, t0 + 5)
    n = tl.highlight("nccl")
    assert tl.search == "nccl" and n == tl._search_count == tl.index.count_matches("nccl") > 0
    assert tl.highlight(None) == 0 and tl.search == ""


def test_show_range_with_a_focus_keeps_the_other_ranks(dlrm: tv.Trace) -> None:
    tl = Timeline(dlrm)
    t0 = tl.t0_ns
    assert tl.focus_rank is None and tl.cpu_collapsed == list(range(8)) and tl.pinned == []
    tl.show_range(t0 + 1_000_000, t0 + 3_000_000, focus=5)
    assert tl.focus_rank == 5 and tl.ranks == list(range(8)), "every rank stays, 5 is emphasised"
    tl.show_range(t0, t0 + 10, ranks=[0, 1], focus=6)
    assert tl.ranks == [0, 1, 6] and tl.focus_rank == 6, "the focus joins the visible set"
    tl.show_range(t0, t0 + 10)
    assert tl.focus_rank is None and tl.ranks == [0, 1, 6]
    with pytest.raises(tv.TraceSelectionError, match="unknown rank 9"):
        tl.show_range(t0, t0 + 10, focus=9)
    assert Timeline(dlrm, ranks=[2], focus=3).ranks == [2, 3]


def test_options_are_checked(dlrm: tv.Trace) -> None:
    with pytest.raises(TypeError, match="needs a Trace"):
        Timeline("run/")  # type: ignore[arg-type]
    with pytest.raises(traitlets.TraitError):
        Timeline(dlrm, color_by="rainbow")
    tl = Timeline(dlrm, ranks=[3], cpu=False, color_by="name", height=300)
    assert tl.ranks == [3] and tl.show_cpu is False and tl.color_by == "name" and tl.height == 300


def test_window_command_answers_with_binary_buffers(dlrm: tv.Trace) -> None:
    tl = Timeline(dlrm, lod=LevelOfDetail(raw_events_per_px=0.5))
    ix = tl.index
    rows = [r.id for r in ix.rows if r.rank == 0]
    msg = {
        "seq": 7,
        "lo": -100.5,
        "hi": float(ix.end_ns) + 0.5,
        "width": 300,
        "rows": rows,
        "summaries": [0, 1],
        "pattern": "nccl",
        "name_colors": True,
    }
    meta, buffers = tl._window(msg, [])
    assert meta["seq"] == 7 and meta["width"] == 300 and len(buffers) == 1
    # Zoomed out, the window snaps to the index's grid: by less than a grid cell.
    win = ix.window(-101, ix.end_ns + 1, 300, rows=rows, summaries=[0, 1], pattern="nccl", with_name_colors=True)
    assert (meta["lo"], meta["hi"]) == (win.lo, win.hi)
    tol = (ix.end_ns + 102) / 300 / 8 + 1  # snapped to a grid by at most 1/8 of a column
    assert abs(win.lo + 101) <= tol and abs(win.hi - ix.end_ns - 1) <= tol
    s = decode(meta, buffers[0])
    modes = {r["row"]: r["mode"] for r in meta["rows"]}
    assert set(modes) == set(rows)
    for r, rw in zip(meta["rows"], win.rows, strict=True):
        sl = slice(r["offset"], r["offset"] + r["count"])
        if r["mode"] == "raw":
            want = ix.overlapping(r["row"], meta["lo"], meta["hi"])
            assert s["ev_eid"][sl].astype(np.int64).tolist() == ix.eid[want].tolist()
            assert s["ev_start"][sl].tolist() == ix.start[want].astype(float).tolist()
            names = [meta["names"][i] for i in s["ev_name"][sl]]
            assert names == [ix.names[i] for i in ix.name[want]]
            assert [meta["name_match"][i] for i in s["ev_name"][sl]] == ["nccl" in n.lower() for n in names]
            assert [meta["name_colors"][i] for i in s["ev_name"][sl]] == [colors.name_color_index(n) for n in names]
        else:
            assert rw.coverage_ns is not None and rw.kind is not None
            busy = s["bin_frac"][sl].astype(np.float64) * np.diff(win.edges)
            assert np.allclose(busy, rw.coverage_ns, rtol=1e-6)
            assert s["bin_kind"][sl].tolist() == rw.kind.tolist()
            pos = ix.row_events(r["row"])
            assert rw.coverage_ns.sum() == iv.length(*iv.union(ix.start[pos], ix.end[pos]))
    assert "raw" in modes.values() and "bins" in modes.values(), "both levels of detail on rank 0 at 300 px"
    assert [m["rank"] for m in meta["summaries"]] == [0, 1]
    assert len(s["bin_match"]) == len(s["bin_frac"]) == len(s["bin_color"])
    # Zoomed in, float bounds widen to whole ns and nothing snaps.
    meta, _ = tl._window(dict(msg, lo=1e6 - 0.5, hi=1.2e6 + 0.5), [])
    assert (meta["lo"], meta["hi"]) == (999_999, 1_200_001)


def test_commands_report_errors_instead_of_raising(dlrm: tv.Trace) -> None:
    tl = Timeline(dlrm)
    meta, buffers = tl._window({"seq": 1, "lo": 5, "hi": 10, "width": 0}, [])
    assert "width" in meta["error"] and buffers == []
    meta, _ = tl._window({"seq": 2, "lo": 0, "hi": 10, "width": 10, "rows": [10**6]}, [])
    assert "unknown timeline row" in meta["error"]
    assert "no event" in tl._details({"rank": 0, "eid": 10**9}, [])[0]["error"]
    assert "unknown rank" in tl._summary({"lo": 0, "hi": 10, "ranks": [42]}, [])[0]["error"]
    assert "error" in tl._find({}, [])[0]


def test_details_find_and_summary_commands(dlrm: tv.Trace) -> None:
    tl = Timeline(dlrm)
    d, _ = tl._details({"rank": 0, "eid": 459}, [])
    assert d["grid"] == [32, 2, 1] and d["block"] == [128, 1, 1]
    assert d["operator"]["name"] == "aten::addmm" and d["launch"]["name"] == "cudaLaunchKernel"
    found, _ = tl._find({"pattern": "nccl", "t": -1, "direction": 1}, [])
    first = min(
        int(tl.index.start[p])
        for p in range(len(tl.index.start))
        if "nccl" in tl.index.names[int(tl.index.name[p])].lower()
    )
    assert found["found"] and found["start"] == first
    assert tl.index.rows[found["row"]].rank == found["rank"]
    assert tl._find({"pattern": "no such kernel", "t": 0, "direction": 1}, [])[0] == {"found": False}
    s, _ = tl._summary({"lo": 0, "hi": float(tl.index.end_ns), "ranks": [0]}, [])
    assert s["ranks"] == [0] and s["source"] == "gpu" and 0 < s["all"]["pct"] <= 100


def test_index_is_shared_by_timelines_of_one_trace(dlrm: tv.Trace) -> None:
    assert Timeline(dlrm).index is Timeline(dlrm).index is TimelineIndex.of(dlrm)


def test_missing_front_end_says_how_to_build_it(dlrm: tv.Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeline_module, "_ESM", Path("/nonexistent/timeline.js"))
    with pytest.raises(tv.TraceviewError, match="pip install"):
        Timeline(dlrm)


def test_package_import_stays_free_of_ui_modules() -> None:
    code = (
        "import sys, jupyter_traceview as tv; "
        "before = [m for m in ('anywidget', 'ipywidgets') if m in sys.modules]; "
        "tv.Timeline; after = [m for m in ('anywidget', 'ipywidgets') if m in sys.modules]; "
        "print(before, after)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[] ['anywidget', 'ipywidgets']", "tv.Timeline is imported lazily"


def test_palette_is_one_file_shared_with_the_front_end() -> None:
    p = colors.palette()
    assert [k["key"] for k in p["kinds"]] == list(colors.KINDS)
    assert len(p["names"]["light"]) == len(p["names"]["dark"])
    for k in p["kinds"]:
        assert colors.kind_color(k["key"], "dark") == k["dark"]
    assert colors.kind_of("kernel", "communication") == "communication"
    assert colors.kind_of("cuda_sync", "other") == "sync"
    assert colors.kind_of("cuda_runtime") == "runtime" and colors.kind_of("weird") == "other"
    assert colors.name_color("ncclKernel") == colors.name_color("ncclKernel")
    with pytest.raises(ValueError, match="unknown colour kind"):
        colors.kind_code("purple")
    # The TypeScript reads the same file (tests) and gets it from the widget (runtime).
    assert "jupyter_traceview/views/colors.json" in (ROOT / "js" / "tests" / "protocol.test.ts").read_text()


def test_typescript_model_mirrors_the_python_traits() -> None:
    """js/timeline/messages.ts declares every synced trait of Timeline, under the same name."""
    import re

    import anywidget

    source = (ROOT / "js" / "timeline" / "messages.ts").read_text()
    body = source.split("export interface TimelineModel {", 1)[1].split("}", 1)[0]
    declared = set(re.findall(r"^\s*(\w+)\s*:", body, flags=re.MULTILINE))
    synced = set(Timeline.class_trait_names(sync=True)) - set(anywidget.AnyWidget.class_trait_names(sync=True))
    assert declared == synced
    assert "widgets/timeline.py" in source, "the interface names the Python file it mirrors"
