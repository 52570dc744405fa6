"""The timeline's level-of-detail index against brute force on random traces, and on real ones."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.model import intervals as iv
from jupyter_traceview.views.colors import kind_code, kind_of
from jupyter_traceview.views.timeline import coordinator
from jupyter_traceview.views.timeline.index import NO_KIND, LevelOfDetail, TimelineIndex, Window, compile_pattern
from tests import kineto_builder as kb
from tests.conftest import KINETO_FOLDERS

KERNELS = ["gemm_kernel", "ncclDevKernel_AllReduce_Sum_f32", "elementwise_kernel", "Memcpy DtoD (Device -> Device)"]
OPS = ["aten::addmm", "aten::add", "aten::copy_"]


# ---------------------------------------------------------------------------- random traces
@st.composite
def rank_events(draw: st.DrawFn, rank: int) -> list[dict[str, Any]]:
    """One rank: CPU ops (nested, on two threads) launching kernels on 1-3 streams, in integer us."""
    events: list[dict[str, Any]] = []
    corr = 1000 * (rank + 1)
    streams = draw(st.lists(st.sampled_from([7, 13, 20]), min_size=1, max_size=3, unique=True))
    free = dict.fromkeys(streams, 0)
    for tid in (kb.MAIN_TID, kb.MAIN_TID + 1):
        t = draw(st.integers(0, 30))
        for _ in range(draw(st.integers(0, 6))):
            dur = draw(st.integers(4, 60))
            events.append(kb.cpu_op(draw(st.sampled_from(OPS)), t, dur, tid=tid))
            # children: runtime calls inside the op, each launching a kernel (or a copy)
            c = t + 1
            for _ in range(draw(st.integers(0, 3))):
                cd = draw(st.integers(0, 3))
                if c + cd >= t + dur:
                    break
                corr += 1
                events.append(kb.runtime("cudaLaunchKernel", c, cd, corr=corr, tid=tid))
                stream = draw(st.sampled_from(streams))
                overlap = draw(st.integers(0, 9)) == 0  # a kernel that overlaps its predecessor
                start = max(c + cd + draw(st.integers(0, 10)), free[stream] - (5 if overlap else 0))
                kd = draw(st.integers(0, 40))
                name = draw(st.sampled_from(KERNELS))
                if name.startswith("Memcpy"):
                    events.append(kb.memcpy(start, kd, corr=corr, stream=stream, kind="DtoD"))
                else:
                    events.append(kb.kernel(name, start, kd, corr=corr, stream=stream))
                free[stream] = max(free[stream], start + kd)
                c += cd + 1
            t += dur + draw(st.integers(0, 15))
    if draw(st.booleans()):
        events.append(
            kb.sync("Stream Sync", draw(st.integers(0, 200)), draw(st.integers(1, 20)), corr=1, stream=streams[0])
        )
    return events


@st.composite
def traces(draw: st.DrawFn) -> tv.Trace:
    n = draw(st.integers(1, 3))
    docs = [
        kb.doc(draw(rank_events(r)), rank=r, world_size=n, base_time_ns=1_700_000_000_000_000_000) for r in range(n)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for r, d in enumerate(docs):
            kb.write(Path(tmp) / f"rank-{r}.json", d)
        return tv.load(tmp, cache=False)


def windows(index: TimelineIndex, draw: st.DrawFn) -> tuple[int, int]:
    end = max(index.end_ns, 1)
    lo = draw(st.integers(-end // 4, end))
    hi = draw(st.integers(lo + 1, end + end // 4 + 2))
    return lo, hi


# ---------------------------------------------------------------------------- brute force
def row_frame(index: TimelineIndex, row: int) -> pd.DataFrame:
    """A row's events straight from the trace tables (relative times)."""
    info = index.rows[row]
    lane = index.lanes[info.lane]
    ev = index.trace.events(info.rank)
    if info.type == "gpu":
        m = (ev["device"] == lane.device) & (ev["stream"] == lane.stream)
    else:
        m = (ev["device"] < 0) & (ev["pid"] == lane.pid) & (ev["tid"] == lane.tid)
    m &= ev["depth"] == info.depth
    m &= ev["kind"] != "cpu_instant_event"
    out = ev.loc[m, ["eid", "ts_ns", "dur_ns", "name", "kind", "gpu_class"]].copy()
    out["start"] = out["ts_ns"] - index.t0_ns
    out["end"] = out["start"] + out["dur_ns"]
    out["ckind"] = [
        kind_code(kind_of(k, g if isinstance(g, str) else None))
        for k, g in zip(out["kind"], out["gpu_class"], strict=True)
    ]
    return out


def brute_overlap(f: pd.DataFrame, lo: int, hi: int) -> set[int]:
    """Trace.select's rule: start < hi and (end > lo or start == lo)."""
    m = (f["start"] < hi) & ((f["end"] > lo) | (f["start"] == lo))
    return set(f.loc[m, "eid"].tolist())


def brute_binned(f: pd.DataFrame, edges: np.ndarray, *, kind: int | None = None) -> np.ndarray:
    sel = f if kind is None else f.loc[f["ckind"] == kind]
    s, e = iv.union(sel["start"].to_numpy(), sel["end"].to_numpy())
    return iv.binned_coverage(s, e, edges)


def snap_tolerance(lo: int, hi: int, width: int) -> float:
    """How far snapping may move a window's edges: half a grid cell, at most 1/(2 SNAP_CELLS) of a column (+1 ns of rounding)."""
    return (hi - lo) / width / (2 * coordinator.SNAP_CELLS) + 1


def eids(index: TimelineIndex, positions: np.ndarray) -> list[int]:
    return index.eid[positions].tolist()


# ---------------------------------------------------------------------------- properties
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@SETTINGS
@given(traces(), st.data())
def test_every_drawn_event_is_in_exactly_one_row(trace: tv.Trace, data: st.DataObject) -> None:
    index = TimelineIndex(trace)
    seen: list[tuple[int, int]] = []
    for info in index.rows:
        pos = index.row_events(info.id)
        seen += [(info.rank, e) for e in eids(index, pos)]
        f = row_frame(index, info.id)
        assert sorted(eids(index, pos)) == sorted(f["eid"].tolist())
        assert (np.diff(index.start[pos]) >= 0).all(), "rows are sorted by start"
    assert len(seen) == len(set(seen))
    expected = sum(int((trace.events(r)["kind"] != "cpu_instant_event").sum()) for r in trace.ranks)
    assert len(seen) == expected


@SETTINGS
@given(traces(), st.data())
def test_window_edges_lose_and_duplicate_nothing(trace: tv.Trace, data: st.DataObject) -> None:
    index = TimelineIndex(trace)
    lo, hi = windows(index, data.draw)
    mid = data.draw(st.integers(lo + 1, hi)) if hi > lo + 1 else hi
    for info in index.rows:
        f = row_frame(index, info.id)
        got = eids(index, index.overlapping(info.id, lo, hi))
        assert len(got) == len(set(got)), "no event twice"
        assert set(got) == brute_overlap(f, lo, hi)
        if mid < hi:
            left = set(eids(index, index.overlapping(info.id, lo, mid)))
            right = set(eids(index, index.overlapping(info.id, mid, hi)))
            assert left | right == set(got), "tiling a window loses nothing"
            spanning = set(f.loc[(f["start"] < mid) & (f["end"] > mid), "eid"].tolist())
            assert left & right == spanning & set(got), "only events across the cut are in both halves"


@SETTINGS
@given(traces(), st.data())
def test_raw_rows_are_exactly_the_overlapping_events(trace: tv.Trace, data: st.DataObject) -> None:
    index = TimelineIndex(trace)
    lo, hi = windows(index, data.draw)
    width = data.draw(st.integers(1, 400))
    lod = LevelOfDetail(raw_events_per_px=data.draw(st.sampled_from([0.05, 0.5, 4.0])))
    rows = [r.id for r in index.rows]
    win = index.window(lo, hi, width, rows=rows, lod=lod)
    assert [r.row for r in win.rows] == rows
    # Zoomed far out the window snaps to a grid (by under 1/8 of a column): truth is over win's.
    assert abs(win.lo - lo) <= snap_tolerance(lo, hi, width)
    limit = max(1, int(width * lod.raw_events_per_px))
    for rw in win.rows:
        f = row_frame(index, rw.row)
        truth = brute_overlap(f, win.lo, win.hi)
        if rw.mode == "raw":
            assert rw.events is not None
            got = eids(index, rw.events)
            assert len(got) == len(set(got)) and set(got) == truth
            assert len(got) <= limit
        else:
            # Binned only when there are too many (rows whose events overlap each other count
            # candidates: events starting in the window and those that may reach into it).
            assert len(truth) > limit or not index.row_disjoint(rw.row)


@contextmanager
def small_grid() -> Iterator[None]:
    """The zoomed-out path (bin edges snapped to a grid where big tracks are tabulated) on small traces."""
    with (
        mock.patch.object(coordinator, "GRID_CELLS", 64),
        mock.patch.object(coordinator, "GRID_MIN", 1),
    ):
        yield


@SETTINGS
@given(traces(), st.data(), st.booleans())
def test_busy_time_is_conserved_across_zoom_levels(trace: tv.Trace, data: st.DataObject, grid: bool) -> None:
    with small_grid() if grid else nullcontext():
        index = TimelineIndex(trace)
        lo, hi = windows(index, data.draw)
        rows = [r.id for r in index.rows]
        # A tiny raw budget forces every non-trivial row into bins.
        lod = LevelOfDetail(raw_events_per_px=1e-6)
        totals: dict[tuple[int, int, int], set[int]] = {}
        for width in data.draw(st.lists(st.integers(1, 300), min_size=2, max_size=3)):
            win = index.window(lo, hi, width, rows=rows, summaries=trace.ranks, lod=lod)
            check_window(index, trace, win, width, lo, hi, totals)
    for (row, a, b), values in totals.items():
        assert len(values) == 1, f"row {row}: busy time over [{a}, {b}) changes with the zoom level: {values}"


def check_window(
    index: TimelineIndex,
    trace: tv.Trace,
    win: Window,
    width: int,
    lo: int,
    hi: int,
    totals: dict[tuple[int, int, int], set[int]],
) -> None:
    edges = win.edges
    assert len(edges) == width + 1 and edges[0] == win.lo and edges[-1] == win.hi
    assert (np.diff(edges) > 0).all() or (win.lo, win.hi) == (lo, hi), "snapped edges stay distinct"
    # Snapping moves edges by at most half a grid cell, a small part of a bin.
    tol = snap_tolerance(lo, hi, width)
    assert abs(win.lo - lo) <= tol and abs(win.hi - hi) <= tol
    for rw in win.rows:
        f = row_frame(index, rw.row)
        if rw.mode == "raw":
            continue
        assert rw.coverage_ns is not None and rw.kind is not None and rw.count is not None
        # Exact per column, hence the window's busy time whatever the width.
        assert np.array_equal(rw.coverage_ns, brute_binned(f, edges))
        clipped = iv.clip(f["start"].to_numpy(), f["end"].to_numpy(), win.lo, win.hi)
        assert int(rw.coverage_ns.sum()) == iv.length(*iv.union(*clipped))
        totals.setdefault((rw.row, win.lo, win.hi), set()).add(int(rw.coverage_ns.sum()))
        # The dominant kind covers the most of each column.
        per_kind = {k: brute_binned(f, edges, kind=k) for k in set(f["ckind"].tolist())}
        for k in range(width):
            best = max((c[k] for c in per_kind.values()), default=0)
            if best == 0:
                assert rw.kind[k] == NO_KIND
            else:
                assert per_kind[int(rw.kind[k])][k] == best
        # Events starting in each column.
        starts = f["start"].to_numpy()
        expect = [int(((starts >= a) & (starts < b)).sum()) for a, b in itertools.pairwise(edges)]
        assert rw.count.tolist() == expect
    for sw in win.summaries:
        assert sw.coverage_ns is not None
        ev = trace.events(sw.row)
        work = ev["kind"].isin(["kernel", "gpu_memcpy", "gpu_memset"]) & (ev["gpu_class"] != "other")
        s = ev.loc[work, "ts_ns"].to_numpy() - index.t0_ns
        e = s + ev.loc[work, "dur_ns"].to_numpy()
        if work.any():
            assert np.array_equal(sw.coverage_ns, iv.binned_coverage(*iv.union(s, e), edges))


@SETTINGS
@given(traces(), st.data())
def test_search_matches_and_find(trace: tv.Trace, data: st.DataObject) -> None:
    index = TimelineIndex(trace)
    pattern = data.draw(st.sampled_from(["nccl", "gemm|memcpy", "aten::add$", "(", "cudaLaunch"]))
    rx = compile_pattern(pattern)
    frames = [row_frame(index, r.id).assign(row=r.id) for r in index.rows]
    all_ev = pd.concat(frames) if frames else pd.DataFrame({"name": [], "start": [], "row": []})
    matching = all_ev.loc[[bool(rx.search(str(n))) for n in all_ev["name"]]]
    assert index.count_matches(pattern) == len(matching)
    t = data.draw(st.integers(-10, max(index.end_ns, 1)))
    pos = index.find(pattern, t, direction=1)
    after = matching.loc[matching["start"] > t]
    if after.empty:
        assert pos is None
    else:
        assert pos is not None and index.start[pos] == after["start"].min()
    pos = index.find(pattern, t, direction=-1)
    before = matching.loc[matching["start"] < t]
    if before.empty:
        assert pos is None
    else:
        assert pos is not None and index.start[pos] == before["start"].max()
    # Binned rows count the matches starting in each column.
    lo, hi = windows(index, data.draw)
    win = index.window(lo, hi, 50, rows=[r.id for r in index.rows], lod=LevelOfDetail(1e-6), pattern=pattern)
    for rw in win.rows:
        if rw.mode == "bins":
            assert rw.matches is not None
            m = matching.loc[matching["row"] == rw.row, "start"].to_numpy()
            expect = [int(((m >= a) & (m < b)).sum()) for a, b in itertools.pairwise(win.edges)]
            assert rw.matches.tolist() == expect


@SETTINGS
@given(traces(), st.data())
def test_range_summary_matches_brute_force(trace: tv.Trace, data: st.DataObject) -> None:
    index = TimelineIndex(trace)
    lo, hi = windows(index, data.draw)
    s = index.range_summary(lo, hi)
    span = (hi - lo) * len(trace.ranks)
    busy_all = 0
    per_kind: dict[str, int] = {}
    sources = set()
    for r in trace.ranks:
        ev = trace.events(r)
        work = ev.loc[ev["kind"].isin(["kernel", "gpu_memcpy", "gpu_memset"]) & (ev["gpu_class"] != "other")]
        sources.add("gpu" if len(work) else "cpu")
        if work.empty:  # a rank without GPU work is summarised by its top-level CPU events
            work = ev.loc[(ev["device"] < 0) & (ev["depth"] == 0) & (ev["kind"] != "cpu_instant_event")]
        if work.empty:
            continue
        codes = [
            kind_of(k, g if isinstance(g, str) else None) for k, g in zip(work["kind"], work["gpu_class"], strict=True)
        ]
        st_ = work["ts_ns"].to_numpy() - index.t0_ns
        en = st_ + work["dur_ns"].to_numpy()
        busy_all += iv.length(*iv.intersect(iv.union(st_, en), (np.array([lo]), np.array([hi]))))
        for k in set(codes):
            m = np.array([c == k for c in codes])
            per_kind[k] = per_kind.get(k, 0) + iv.length(
                *iv.intersect(iv.union(st_[m], en[m]), (np.array([lo]), np.array([hi])))
            )
    assert s["source"] == (sources.pop() if len(sources) == 1 else "mixed")
    assert s["all"]["busy_ns"] == busy_all
    assert s["all"]["pct"] == pytest.approx(100 * busy_all / span)
    got = {k["kind"]: k["busy_ns"] for k in s["kinds"]}
    assert {k: v for k, v in got.items() if v} == {k: v for k, v in per_kind.items() if v}


# ---------------------------------------------------------------------------- known answers
def test_known_trace_rows_details_and_launch_arrow(tmp_path: Path) -> None:
    events = [
        kb.step(1, 0, 100),
        kb.cpu_op("aten::mm", 10, 30),
        *kb.launch("gemm_kernel", 15, 50, 20, corr=7, stream=7),
        kb.memcpy(80, 10, corr=8, stream=20),
        *kb.metadata(kb.CPU_PID),
    ]
    trace = tv.load(kb.write(tmp_path / "rank-0.json", kb.doc(events, rank=0)), cache=False)
    index = TimelineIndex(trace)
    labels = [(ln.type, ln.label, len(ln.rows)) for ln in index.lanes]
    assert labels == [("gpu", "GPU 0 · stream 7", 1), ("gpu", "GPU 0 · stream 20", 1), ("cpu", "thread 100", 3)]
    assert index.steps() == [(1, 0, 100_000)]
    kernel = trace.events(0).query("kind == 'kernel'").iloc[0]
    d = index.details(0, int(kernel["eid"]))
    assert d["name"] == "gemm_kernel" and d["kind"] == "compute" and d["dur_ns"] == 20_000
    assert d["grid"] == [8, 1, 1] and d["block"] == [128, 1, 1]
    assert d["launch"]["name"] == "cudaLaunchKernel" and d["launch"]["start"] == 15_000
    assert d["operator"]["name"] == "aten::mm"
    # The launch is drawn on the CPU thread's row at depth 2 (step > op > launch).
    assert index.rows[d["launch"]["row"]].depth == 2 and index.rows[d["row"]].type == "gpu"
    assert set(index.kinds_present) == {"compute", "memory", "cpu_op", "runtime", "annotation"}
    s = index.range_summary(0, 100_000)
    assert s["all"]["busy_ns"] == 30_000
    assert {k["kind"]: k["busy_ns"] for k in s["kinds"]} == {"compute": 20_000, "memory": 10_000}
    assert s["top"][0] == {"name": "gemm_kernel", "short": "gemm_kernel", "time_ns": 20_000}
    with pytest.raises(tv.TraceSelectionError):
        index.details(0, 10_000)
    with pytest.raises(ValueError, match="hi > lo"):
        index.window(5, 5, 10)


def test_cpu_only_trace_summarises_the_cpu(tmp_path: Path) -> None:
    events = [kb.cpu_op("aten::add", 0, 10), kb.cpu_op("aten::mul", 20, 10), kb.cpu_op("aten::mm", 22, 3)]
    trace = tv.load(kb.write(tmp_path / "t.json", kb.doc(events)), cache=False)
    index = TimelineIndex(trace)
    s = index.range_summary(0, 30_000)
    assert s["source"] == "cpu" and s["all"]["busy_ns"] == 20_000
    win = index.window(0, 30_000, 3, summaries=[0])
    assert win.summaries[0].coverage_ns is not None
    assert win.summaries[0].coverage_ns.tolist() == [10_000, 0, 10_000]


@pytest.mark.parametrize("folder", sorted(KINETO_FOLDERS))
def test_real_traces_index_and_query(folder: str) -> None:
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    index = TimelineIndex.of(trace)
    assert TimelineIndex.of(trace) is index, "built once per trace"
    total = sum(info.events for info in index.rows)
    assert total == len(index.start)
    rows = [r.id for r in index.rows]
    win = index.window(0, max(index.end_ns, 1), 800, rows=rows, summaries=trace.ranks)
    for rw in win.rows:
        if rw.mode == "bins":
            assert rw.coverage_ns is not None
            pos = index.row_events(rw.row)
            assert rw.coverage_ns.sum() == iv.length(*iv.union(index.start[pos], index.end[pos]))
        else:
            assert rw.events is not None and len(rw.events) == index.rows[rw.row].events
    for r in trace.ranks[:2]:
        for pos in index.row_events(rows[0])[:3]:
            d = index.details(int(index.rank[pos]), int(index.eid[pos]))
            assert d["row"] == rows[0]
        assert index.range_summary(0, max(index.end_ns, 1), ranks=[r])["all"]["pct"] <= 100.0


def test_dlrm_summary_busy_matches_gpu_union(dlrm: tv.Trace) -> None:
    index = TimelineIndex.of(dlrm)
    s = index.range_summary(0, index.end_ns)
    busy = 0
    for r in dlrm.ranks:
        ev = dlrm.events(r)
        w = ev.loc[ev["kind"].isin(["kernel", "gpu_memcpy", "gpu_memset"]) & (ev["gpu_class"] != "other")]
        busy += iv.length(*iv.union(w["ts_ns"].to_numpy(), (w["ts_ns"] + w["dur_ns"]).to_numpy()))
    assert s["all"]["busy_ns"] == busy
    assert [k["kind"] for k in s["kinds"]] == ["compute", "communication", "memory"]
    assert index.count_matches("nccl") == sum(
        int(dlrm.events(r)["name"].astype(str).str.contains("nccl", case=False).sum()) for r in dlrm.ranks
    )


def test_level_of_detail_is_validated() -> None:
    with pytest.raises(ValueError, match="raw_events_per_px"):
        LevelOfDetail(raw_events_per_px=0)


def test_pattern_falls_back_to_literal_text() -> None:
    assert compile_pattern("(").search("f(x)")
    assert compile_pattern("NCCL").search("ncclKernel")
    assert re.escape("a.b") != "a.b" and compile_pattern("a.b").search("axb")


def test_index_module_imports_no_ui() -> None:
    code = (
        "import sys, jupyter_traceview, jupyter_traceview.views.timeline.index, jupyter_traceview.views.colors; "
        "bad = [m for m in ('bokeh', 'anywidget', 'ipywidgets', 'IPython', 'traitlets') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the index or the package import UI packages: {out.stdout}"
