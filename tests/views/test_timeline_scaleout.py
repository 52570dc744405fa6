"""The timeline index on a DaskTrace: per-rank parts on the workers, the same answers as in process.

The in-process index and the one whose per-rank parts live on dask workers run the same
per-rank code; these tests check that what the coordinator assembles (rows, windows, event
columns, details, search, range summaries, the widget's binary answers) is identical, and
that the coordinator's memory does not grow with the number of events per rank.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.views.timeline import coordinator, rank_index
from jupyter_traceview.views.timeline.index import LevelOfDetail, RowWindow, TimelineIndex, Window, build_rank_index
from tests import kineto_builder as kb
from tests.views.test_timeline_index import rank_events

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]
PATTERNS = ["nccl", "gemm|memcpy", "aten::add$", "(", "cudaLaunch", "no such name"]


# ---------------------------------------------------------------------------- comparison
def same_row_window(a: RowWindow, b: RowWindow) -> None:
    assert (a.row, a.mode) == (b.row, b.mode)
    for f in ("events", "coverage_ns", "kind", "count", "matches", "name_color"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None), f
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), f"row {a.row}: {f}"


def same_window(a: Window, b: Window) -> None:
    assert (a.lo, a.hi) == (b.lo, b.hi) and np.array_equal(a.edges, b.edges)
    assert len(a.rows) == len(b.rows) and len(a.summaries) == len(b.summaries)
    for x, y in zip(a.rows, b.rows, strict=True):
        same_row_window(x, y)
    for x, y in zip(a.summaries, b.summaries, strict=True):
        same_row_window(x, y)


def same_columns(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for c in a:
        assert a[c].dtype == b[c].dtype and np.array_equal(a[c], b[c]), c


def same_structure(a: TimelineIndex, b: TimelineIndex) -> None:
    assert a.t0_ns == b.t0_ns and a.end_ns == b.end_ns
    assert a.rows == b.rows and a.lanes == b.lanes
    assert a.names == b.names and np.array_equal(a.name_colors, b.name_colors)
    assert np.array_equal(a.row_ptr, b.row_ptr)
    assert a.steps() == b.steps() and a.kinds_present == b.kinds_present
    assert len(a.start) == len(b.start)


def queries(a: TimelineIndex, b: TimelineIndex, draw: Any, *, n_windows: int = 4) -> None:
    """Random windows, lookups, searches and range summaries: a and b answer the same."""
    end = max(a.end_ns, 1)
    all_rows = [r.id for r in a.rows]
    ranks = sorted({r.rank for r in a.rows}) or list(a.trace.ranks)
    for _ in range(n_windows):
        span = draw(st.sampled_from([end * 1.5, end, end / 10, end / 1000, 1_000.0]))
        lo = draw(st.integers(int(-span / 4), end))
        hi = lo + max(1, int(span))
        width = draw(st.sampled_from([1, 7, 300, 1800, 4000]))
        rows = draw(st.lists(st.sampled_from(all_rows), max_size=12)) if all_rows else []
        summaries = draw(st.lists(st.sampled_from(ranks), max_size=4, unique=True))
        pattern = draw(st.sampled_from([None, *PATTERNS]))
        kw: dict[str, Any] = {
            "rows": rows,
            "summaries": summaries,
            "pattern": pattern,
            "with_name_colors": draw(st.booleans()),
            "lod": LevelOfDetail(draw(st.sampled_from([0.05, 0.5, 4.0]))),
        }
        wa, wb = a.window(lo, hi, width, **kw), b.window(lo, hi, width, **kw)
        same_window(wa, wb)
        raw = [r.events for r in wb.rows if r.events is not None]
        pos = np.concatenate(raw) if raw else np.empty(0, dtype=np.int64)
        same_columns(a.event_columns(pos), b.event_columns(pos))
        for r in wb.rows[:3]:
            assert np.array_equal(a.overlapping(r.row, wb.lo, wb.hi), b.overlapping(r.row, wb.lo, wb.hi))
    n = len(a.start)
    for p in draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=4)) if n else []:
        rank, eid = int(b.rank[p]), int(b.eid[p])
        assert (int(a.rank[p]), int(a.eid[p])) == (rank, eid)
        assert a.details(rank, eid) == b.details(rank, eid)
        assert a.position_of(rank, eid) == b.position_of(rank, eid) == p
    for pattern in draw(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=3, unique=True)):
        assert a.count_matches(pattern) == b.count_matches(pattern)
        some = draw(st.lists(st.sampled_from(all_rows), max_size=6)) if all_rows else []
        assert a.count_matches(pattern, rows=some) == b.count_matches(pattern, rows=some)
        t = draw(st.integers(-10, end + 10))
        for direction in (1, -1):
            for rows_arg in (None, some):
                pa = a.find(pattern, t, direction=direction, rows=rows_arg)
                pb = b.find(pattern, t, direction=direction, rows=rows_arg)
                assert pa == pb
                if pb is not None:
                    same_columns(a.event_columns(np.array([pa])), b.event_columns(np.array([pb])))
    lo = draw(st.integers(-end // 4, end))
    hi = draw(st.integers(lo + 1, end + end // 4 + 2))
    subset = draw(st.lists(st.sampled_from(list(a.trace.ranks)), min_size=1, max_size=3))
    assert a.range_summary(lo, hi) == b.range_summary(lo, hi)
    assert a.range_summary(lo, hi, ranks=subset, top=3) == b.range_summary(lo, hi, ranks=subset, top=3)


# ---------------------------------------------------------------------------- the DLRM sample
@pytest.fixture(scope="module")
def dask_dlrm(dask_client: object) -> Iterator[tv.Trace]:
    trace = tv.load(tv.sample_path(), engine="dask", client=dask_client, cache=False)
    yield trace
    trace.close()


def test_dask_index_keeps_the_parts_on_the_workers(dask_dlrm: tv.Trace, dask_client: Any) -> None:
    ix = TimelineIndex(dask_dlrm)
    parts = ix._parts
    assert not isinstance(parts, rank_index.LocalParts)
    futures = list(parts.futures.values())  # type: ignore[union-attr]
    assert len(futures) == 8 and all(isinstance(f, distributed.Future) for f in futures)
    # Each part is built on the worker that holds its rank's tables.
    where = dask_client.who_has(futures)
    data_where = dask_client.who_has(list(dask_dlrm._futures.values()))  # type: ignore[attr-defined]
    for f, d in zip(futures, dask_dlrm._futures.values(), strict=True):  # type: ignore[attr-defined]
        assert set(where[f.key]) & set(data_where[d.key])
    # The notebook holds no per-event array: the largest is the coarse summary grid.
    longest = max(len(a) for a in ix._local_arrays())
    assert longest <= ix._coarse_cells + 1 < len(ix.start)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_dlrm_answers_are_identical_in_process_and_on_dask(dask_dlrm: tv.Trace, dlrm: tv.Trace, data: Any) -> None:
    a, b = TimelineIndex.of(dlrm), TimelineIndex.of(dask_dlrm)
    same_structure(a, b)
    queries(a, b, data.draw)


def test_dlrm_overview_and_zoom_levels(dask_dlrm: tv.Trace, dlrm: tv.Trace) -> None:
    """The requests the front end makes: collapsed ranks over the whole trace, and deep zooms."""
    a, b = TimelineIndex.of(dlrm), TimelineIndex.of(dask_dlrm)
    end = a.end_ns
    ranks = list(dlrm.ranks)
    rows = [r.id for r in a.rows]
    for lo, hi, width in [
        (-end // 4, end + end // 4, 1800),
        (0, end, 300),
        (0, end, 9000),
        (end // 3, end // 3 + 50_000, 1200),
    ]:
        for pattern in (None, "nccl"):
            wa = a.window(lo, hi, width, rows=rows, summaries=ranks, pattern=pattern, with_name_colors=True)
            same_window(wa, b.window(lo, hi, width, rows=rows, summaries=ranks, pattern=pattern, with_name_colors=True))
    # The overview is answered by the coordinator alone: no task reaches the workers.
    with mock.patch.object(b._parts, "call", side_effect=AssertionError("asked the workers")):
        win = b.window(-end // 4, end + end // 4, 1800, summaries=ranks)
    assert len(win.summaries) == 8 and all(s.coverage_ns is not None and s.coverage_ns.sum() > 0 for s in win.summaries)


def test_one_task_per_rank_in_view(dask_dlrm: tv.Trace, dask_client: Any) -> None:
    ix = TimelineIndex.of(dask_dlrm)
    rows = [r.id for r in ix.rows if r.rank in (2, 5)]
    assert len(rows) > 4
    submit = dask_client.submit
    with mock.patch.object(dask_client, "submit", side_effect=submit) as spy:
        win = ix.window(
            ix.end_ns // 2, ix.end_ns // 2 + ix.end_ns // 50, 1200, rows=rows, summaries=[5, 6], pattern="nccl"
        )
    assert spy.call_count == 3, "ranks 2, 5 and 6: one task each"
    assert [r.row for r in win.rows] == rows and [s.row for s in win.summaries] == [5, 6]
    # The raw events' columns came back with the window: encoding it asks nothing more.
    raw = [r.events for r in win.rows if r.mode == "raw" and r.events is not None and len(r.events)]
    assert raw
    with mock.patch.object(dask_client, "submit", side_effect=AssertionError("asked the workers")):
        ix.event_columns(np.concatenate(raw))


def test_widget_commands_give_the_same_bytes(
    dask_dlrm: tv.Trace, dlrm: tv.Trace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tv.Timeline on a DaskTrace: the same synced state and the same command answers, byte for byte."""
    from jupyter_traceview.widgets import timeline as timeline_module

    if not timeline_module._ESM.exists():  # no browser here: a stand-in for the unbuilt bundle
        stand_in = tmp_path / "timeline.js"
        stand_in.write_text("export default { render() {} };\n")
        monkeypatch.setattr(timeline_module, "_ESM", stand_in)
    ta, tb = tv.Timeline(dlrm), tv.Timeline(dask_dlrm)
    for trait in ("_rows", "_lanes", "_steps", "_span", "_kinds", "_t0_ns", "x_range", "ranks", "collapsed"):
        assert getattr(ta, trait) == getattr(tb, trait), trait
    end = float(ta.index.end_ns)
    rows = [r.id for r in ta.index.rows]
    for msg in (
        {"seq": 1, "lo": -end / 4, "hi": end * 1.25, "width": 1800, "rows": rows, "summaries": [0, 3], "folds": [1, 5]},
        {"seq": 2, "lo": end / 3, "hi": end / 3 + 40_000, "width": 1500, "rows": rows, "pattern": "nccl"},
        {"seq": 3, "lo": 0, "hi": end, "width": 600, "rows": rows[:9], "name_colors": True, "pattern": "gemm"},
    ):
        (ma, ba), (mb, bb) = ta._window(msg, []), tb._window(msg, [])
        for key in ("kernel_ms", "kernel_cpu_ms", "kernel_at_ms"):  # timings differ
            ma.pop(key), mb.pop(key)
        assert ma == mb and ba == bb
    fold = {"rank": 5, "lo": end / 3, "hi": end / 2}
    assert ta._fold(fold, []) == tb._fold(fold, [])
    eids = dlrm.events(4).query("kind == 'kernel'")["eid"].tolist()[:5]
    for eid in eids:
        assert ta._details({"rank": 4, "eid": eid}, []) == tb._details({"rank": 4, "eid": eid}, [])
    for t, d in ((0, 1), (end / 2, 1), (end / 2, -1)):
        msg = {"pattern": "nccl", "t": t, "direction": d, "rows": None}
        assert ta._find(msg, []) == tb._find(msg, [])
    msg = {"lo": end / 5, "hi": end / 2, "ranks": [1, 6]}
    assert ta._summary(msg, []) == tb._summary(msg, [])


# ---------------------------------------------------------------------------- random traces
@st.composite
def rank_docs(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 4))
    return [
        kb.doc(draw(rank_events(r)), rank=r, world_size=n, base_time_ns=1_700_000_000_000_000_000) for r in range(n)
    ]


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(rank_docs(), st.data(), st.booleans())
def test_random_traces_answer_the_same(dask_client: Any, docs: list[dict[str, Any]], data: Any, grid: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for r, d in enumerate(docs):
            kb.write(Path(tmp) / f"rank-{r}.json", d)
        local = tv.load(tmp, cache=False, engine="serial")
        remote = tv.load(tmp, cache=False, engine="dask", client=dask_client)
    try:
        # A small grid takes the zoomed-out paths (fine and coarse snapping, tabulated tracks).
        patches = (
            [mock.patch.object(coordinator, "GRID_CELLS", 64), mock.patch.object(coordinator, "GRID_MIN", 1)]
            if grid
            else []
        )
        for p in patches:
            p.start()
        try:
            a, b = TimelineIndex(local), TimelineIndex(remote)
        finally:
            for p in patches:
                p.stop()
        same_structure(a, b)
        queries(a, b, data.draw, n_windows=3)
    finally:
        remote.close()


# ---------------------------------------------------------------------------- memory
@pytest.fixture(scope="module")
def synth_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import synth

    out = {}
    for events in (20_000, 160_000):
        folder = tmp_path_factory.mktemp(f"synth{events}")
        synth.generate(folder, 2, events, seed=3, gz=True, workers=1)
        out[events] = folder
    return out


def test_coordinator_memory_does_not_grow_with_events(dask_client: Any, synth_traces: dict[int, Path]) -> None:
    sizes = {}
    for events, folder in synth_traces.items():
        trace = tv.load(folder, engine="dask", client=dask_client, cache=False)
        try:
            ix = TimelineIndex(trace)
            ix.window(0, ix.end_ns, 1800, summaries=[0, 1])
            ix.window(0, ix.end_ns // 7, 1800, rows=[r.id for r in ix.rows], pattern="nccl")
            ix.count_matches("gemm")
            ix._recent.clear()  # the columns of the last answers (bounded by the windows, not the trace)
            arrays = ix._local_arrays()
            per_rank = len(ix.start) // 2
            cells = ix._coarse_cells
            # No array grows with the events: the longest is a summary tabulated on the coarse grid.
            assert max(len(a) for a in arrays) <= max(cells + 1, len(ix.names) + 1, len(ix.rows) + 1) < per_rank
            views = ix._local_arrays(ix._views)
            tracks = sum(2 + len(v[1]) for v in ix._views.values())
            # A summary track is its intervals (up to a quarter of the grid's cells) or a table.
            summary_bytes = sum(a.nbytes for a in views)
            assert summary_bytes <= tracks * (cells + 1) * 8
            # The rest is per name (name tables, per-rank name maps and counts) and per row.
            other = sum(a.nbytes for a in arrays) - summary_bytes
            assert other <= 64 * (len(ix.names) * 2 + len(ix.rows) + 2)
            sizes[events] = len(ix.start)
        finally:
            trace.close()
    assert sizes[160_000] > 6 * sizes[20_000]


def test_build_rank_index_is_the_per_rank_part(dlrm: tv.Trace) -> None:
    """An in-process index holds the parts that build_rank_index makes, rows renumbered."""
    ix = TimelineIndex.of(dlrm)
    part = build_rank_index(dlrm.rank_data(3), ix.t0_ns)
    local = ix._parts.parts[3]  # type: ignore[union-attr]
    assert np.array_equal(part.start, local.start) and np.array_equal(part.eid, local.eid)
    rows3 = [r for r in ix.rows if r.rank == 3]
    lane_base = min(r.lane for r in rows3)
    renumbered = [dataclasses.replace(r, id=r.id + rows3[0].id, lane=r.lane + lane_base) for r in part.info().rows]
    assert renumbered == rows3


def test_report_details_are_identical_in_process_and_on_dask(dask_dlrm: tv.Trace, dlrm: tv.Trace) -> None:
    from jupyter_traceview.views.timeline.details import timeline_details

    a = timeline_details(TimelineIndex.of(dlrm), cells=256)
    b = timeline_details(TimelineIndex.of(dask_dlrm), cells=256)
    assert a is not None and a == b
