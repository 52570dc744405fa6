"""The timeline's memory lanes: memory_timeline's numbers, binned without losing a peak.

Checked against brute force on random step functions, against ``tv.memory_timeline`` and
``tv.memory_peaks`` on real traces with memory records (CPU torch recordings here, the H100
BERT trace), through the wire protocol, and on traces without memory records (no lane).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis.memory.binning import bin_step as bin_counter
from jupyter_traceview.analysis.memory.binning import block_maxima
from jupyter_traceview.analysis.memory.binning import range_max as _range_max
from jupyter_traceview.errors import TraceSelectionError
from jupyter_traceview.views.timeline import protocol
from jupyter_traceview.views.timeline.index import TimelineIndex
from jupyter_traceview.views.timeline.memory import MemoryIndex

DATA = Path(__file__).resolve().parents[1] / "data"
MEMORY_TRACES = ["cpu_memory/mlp_train", "cpu_memory/leak", "h100_bert_small"]


def brute(ts: np.ndarray, v: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column by column: the maximum over [a, b) of the step function (every change counts) and its value just before b."""
    top, end = [], []
    for a, b in itertools.pairwise(edges):
        vals = [int(v[j]) for j in range(len(ts)) if a <= ts[j] < b]
        at_a = [int(v[j]) for j in range(len(ts)) if ts[j] <= a]
        if at_a:
            vals.append(at_a[-1])
        top.append(max(vals) if vals else np.nan)
        before_b = [int(v[j]) for j in range(len(ts)) if ts[j] < b]
        end.append(before_b[-1] if before_b else np.nan)
    return np.array(top, dtype=np.float64), np.array(end, dtype=np.float64)


@settings(max_examples=200, deadline=None)
@given(
    changes=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 10**12)), min_size=1, max_size=25),
    cuts=st.lists(st.integers(-5, 70), min_size=2, max_size=12, unique=True),
)
def test_binning_is_the_step_function_column_by_column(changes: list[tuple[int, int]], cuts: list[int]) -> None:
    changes.sort(key=lambda c: c[0])  # stable: same-time changes keep their order
    ts = np.array([c[0] for c in changes], dtype=np.int64)
    v = np.array([c[1] for c in changes], dtype=np.int64)
    edges = np.array(sorted(cuts), dtype=np.int64)
    top, end = bin_counter(ts, v, edges)
    want_top, want_end = brute(ts, v, edges)
    np.testing.assert_array_equal(top, want_top)
    np.testing.assert_array_equal(end, want_end)


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.integers(0, 2**40), min_size=1, max_size=300),
    cuts=st.lists(st.integers(0, 300), min_size=2, max_size=8),
    size=st.sampled_from([1, 2, 3, 5, 64]),
)
def test_block_maxima_give_each_ranges_maximum(values: list[int], cuts: list[int], size: int) -> None:
    v = np.array(values, dtype=np.float64)
    bounds = sorted({min(c, len(v)) for c in cuts})
    pairs = [(a, b) for a, b in itertools.pairwise(bounds) if b > a]
    if not pairs:
        return
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    got = _range_max(v, a, b, (size, block_maxima(v, size)))
    np.testing.assert_array_equal(got, [v[x:y].max() for x, y in pairs])


@settings(max_examples=100, deadline=None)
@given(
    changes=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**12)), min_size=1, max_size=400),
    width=st.integers(1, 40),
)
def test_zoomed_out_binning_with_blocks_is_the_same(changes: list[tuple[int, int]], width: int) -> None:
    changes.sort(key=lambda c: c[0])
    ts = np.array([c[0] for c in changes], dtype=np.int64)
    v = np.array([c[1] for c in changes], dtype=np.int64)
    edges = (np.arange(width + 1, dtype=np.int64) * (10**6 + 1)) // width
    plain = bin_counter(ts, v, edges)
    for size in (1, 2, 7):
        fast = bin_counter(ts, v, edges, blocks=(size, block_maxima(v, size)))
        np.testing.assert_array_equal(fast[0], plain[0])
        np.testing.assert_array_equal(fast[1], plain[1])


def test_a_one_nanosecond_spike_survives_every_zoom_level() -> None:
    # 1 MB allocated, a 1 GB spike lasting 1 ns in the middle of 10 s, then back.
    ts = np.array([0, 5_000_000_000, 5_000_000_001, 10_000_000_000], dtype=np.int64)
    v = np.array([2**20, 2**30, 2**20, 0], dtype=np.int64)
    for width in (1, 2, 3, 7, 100, 1999, 4096):
        for lo, hi in ((0, 10_000_000_001), (4_999_000_000, 5_000_010_000), (-(10**12), 10**12)):
            edges = lo + (np.arange(width + 1, dtype=np.int64) * (hi - lo)) // width
            top, _ = bin_counter(ts, v, edges)
            assert np.nanmax(top) == 2**30, (width, lo, hi)
    # Among a million records, zoomed out (the block maxima answer): the spike is still there.
    rng = np.random.default_rng(7)
    ts = np.sort(rng.integers(0, 10**10, 10**6))
    v = rng.integers(0, 2**30, 10**6)
    v[123_457] = 2**33
    for width in (1, 3, 640, 2400):
        edges = (np.arange(width + 1, dtype=np.int64) * 10**10) // width
        top, end = bin_counter(ts, v, edges, blocks=(64, block_maxima(v, 64)))
        assert np.nanmax(top) == 2**33
        assert end[-1] == v[-1]


@pytest.fixture(scope="module", params=MEMORY_TRACES)
def memory_trace(request: pytest.FixtureRequest) -> tv.Trace:
    return tv.load(DATA / request.param, cache=False)


def test_lanes_are_one_per_rank_and_device_of_memory_timeline(memory_trace: tv.Trace) -> None:
    lanes = MemoryIndex.of(memory_trace).lanes
    tl = tv.memory_timeline(memory_trace)
    groups = tl.groupby(["rank", "device_type", "device"], observed=True, sort=True)
    assert [(c["rank"], c["device_type"], c["device"]) for c in lanes] == [
        (r, str(t), int(d)) for r, t, d in groups.groups
    ]
    assert [c["id"] for c in lanes] == list(range(len(lanes)))
    assert [c["records"] for c in lanes] == groups.size().tolist()
    assert all(c["label"].startswith("memory · ") for c in lanes)


def test_lane_values_equal_memory_timeline_at_every_record(memory_trace: tv.Trace) -> None:
    ci = MemoryIndex.of(memory_trace)
    tl = tv.memory_timeline(memory_trace)
    t0 = memory_trace.t0_ns
    for c in ci.lanes:
        g = tl.loc[(tl["rank"] == c["rank"]) & (tl["device_type"] == c["device_type"]) & (tl["device"] == c["device"])]
        ts = g["ts_ns"].to_numpy() - t0
        # The value in force at a record's time is the last record at that time.
        last = ~pd.Series(ts).duplicated(keep="last").to_numpy()
        got = ci.values_at(c["id"], ts[last])
        np.testing.assert_array_equal(got["allocated"].to_numpy(), g["allocated_bytes"].to_numpy()[last])
        np.testing.assert_array_equal(got["reserved"].to_numpy(), g["reserved_bytes"].to_numpy()[last])
        # Before the first record: no value.
        assert np.isnan(ci.values_at(c["id"], np.array([ts[0] - 1]))["allocated"].iloc[0])


def test_lane_peaks_are_memory_peaks(memory_trace: tv.Trace) -> None:
    ci = MemoryIndex.of(memory_trace)
    peaks = tv.memory_peaks(memory_trace, per="rank")
    assert len(peaks) == len(ci.lanes)
    for c in ci.lanes:
        p = peaks.loc[
            (peaks["rank"] == c["rank"]) & (peaks["device_type"] == c["device_type"]) & (peaks["device"] == c["device"])
        ]
        assert c["peak_allocated"] == int(p["peak_allocated_bytes"].iloc[0])
        assert c["peak_ts"] == int(p["peak_ts_ns"].iloc[0]) - memory_trace.t0_ns
        assert c["peak_reserved"] == int(p["peak_reserved_bytes"].iloc[0])


@pytest.mark.parametrize("width", [2, 5, 64, 700, 3000])
def test_binned_lanes_keep_the_peak_and_match_memory_timeline_resampled(memory_trace: tv.Trace, width: int) -> None:
    ci = MemoryIndex.of(memory_trace)
    ix = TimelineIndex.of(memory_trace)
    t0 = memory_trace.t0_ns
    lo, hi = 0, ix.end_ns + 1
    edges = lo + (np.arange(width + 1, dtype=np.int64) * (hi - lo)) // width
    got = ci.window(edges, [c["id"] for c in ci.lanes])
    # memory_timeline(resample=width) over the same span: each point is the maximum of its bin.
    res = tv.memory_timeline(memory_trace, time_range=(t0 + lo, t0 + hi), resample=width)
    for c, w in zip(ci.lanes, got, strict=True):
        top, _ = w.series["allocated"]
        assert np.nanmax(top) == c["peak_allocated"]
        assert np.nanmax(w.series["reserved"][0]) == c["peak_reserved"]
        g = res.loc[
            (res["rank"] == c["rank"]) & (res["device_type"] == c["device_type"]) & (res["device"] == c["device"])
        ]
        # One binning (analysis.memory.binning.bin_step): a row exactly where the lane has a value, the same value.
        defined = ~np.isnan(top)
        np.testing.assert_array_equal(g["ts_ns"].to_numpy() - t0, edges[:-1][defined])
        np.testing.assert_array_equal(top[defined], g["allocated_bytes"].to_numpy())
        np.testing.assert_array_equal(w.series["reserved"][0][defined], g["reserved_bytes"].to_numpy())


def test_zoomed_in_windows_keep_the_peak(memory_trace: tv.Trace) -> None:
    ci = MemoryIndex.of(memory_trace)
    for c in ci.lanes:
        for span in (10, 1_000, 10**6, 10**9):
            for shift in (0.0, 0.3, 0.99):
                lo = c["peak_ts"] - int(span * shift)
                for width in (1, 3, 800):
                    edges = lo + (np.arange(width + 1, dtype=np.int64) * span) // width
                    (w,) = ci.window(edges, [c["id"]])
                    assert np.nanmax(w.series["allocated"][0]) == c["peak_allocated"]


def test_the_window_command_sends_the_lanes(memory_trace: tv.Trace) -> None:
    ix = TimelineIndex.of(memory_trace)
    ci = MemoryIndex.of(memory_trace)
    ids = [c["id"] for c in ci.lanes][::-1]
    meta, bufs = protocol.answer(
        ix, "_window", {"seq": 3, "lo": 0, "hi": ix.end_ns, "width": 257, "rows": [], "memory": ids + ids[:1]}
    )
    assert "error" not in meta, meta
    assert [m["memory"] for m in meta["memory"]] == ids  # duplicates dropped, order kept
    (buf,) = bufs
    width = meta["width"]
    # The same edges as the rows' columns (snapped to the index's grid when zoomed out).
    edges = ix.window(0, ix.end_ns, 257).edges
    assert (meta["lo"], meta["hi"]) == (edges[0], edges[-1])
    want = ci.window(edges, ids)

    def section(name: str) -> np.ndarray:
        off, n, dtype = meta["layout"][name]
        return np.frombuffer(buf, dtype=dtype, count=n, offset=off)

    for m, w in zip(meta["memory"], want, strict=True):
        assert m["count"] == width
        for series in ("allocated", "reserved"):
            for part, k in (("max", 0), ("end", 1)):
                got = section(f"mem_{series}_{part}")[m["offset"] : m["offset"] + width]
                np.testing.assert_array_equal(got, w.series[series][k])
    state = protocol.timeline_state(memory_trace, ix)
    assert [c["id"] for c in state["_memory"]] == [c["id"] for c in ci.lanes]
    assert state["_memory"][0]["peak_allocated"] == ci.lanes[0]["peak_allocated"]


def test_no_lane_without_memory_records(dlrm: tv.Trace) -> None:
    assert tv.memory_timeline(dlrm).empty
    ix = TimelineIndex.of(dlrm)
    assert MemoryIndex.of(dlrm).lanes == []
    assert protocol.timeline_state(dlrm, ix)["_memory"] == []
    meta, _ = protocol.answer(ix, "_window", {"seq": 1, "lo": 0, "hi": ix.end_ns, "width": 100, "rows": []})
    assert meta["memory"] == [] and not any(k.startswith("mem_") for k in meta["layout"])
    # Asking for a lane that does not exist is answered as an error, never raised.
    meta, bufs = protocol.answer(
        ix, "_window", {"seq": 2, "lo": 0, "hi": ix.end_ns, "width": 100, "rows": [], "memory": [0]}
    )
    assert "no memory records" in meta["error"] and bufs == []
    with pytest.raises(TraceSelectionError, match="unknown memory lane 0"):
        MemoryIndex.of(dlrm).values_at(0, np.array([0]))


def test_a_narrowed_trace_has_the_lanes_of_its_window() -> None:
    trace = tv.load(DATA / "h100_bert_small", cache=False)
    full = MemoryIndex.of(trace).find(0, "cuda", 0)
    assert full is not None
    t0 = trace.t0_ns
    part = trace.select(time_range=(t0 + full["peak_ts"] - 100_000, t0 + full["peak_ts"] + 100_000))
    lane = MemoryIndex.of(part).find(0, "CUDA", 0)
    assert lane is not None and lane["peak_allocated"] == full["peak_allocated"]
    tl = tv.memory_timeline(part, device="cuda:0")
    assert lane["records"] == len(tl)
    got = MemoryIndex.of(part).values_at(lane["id"], tl["ts_ns"].to_numpy() - part.t0_ns)
    last = ~tl["ts_ns"].duplicated(keep="last").to_numpy()
    np.testing.assert_array_equal(got["allocated"].to_numpy()[last], tl["allocated_bytes"].to_numpy()[last])


@pytest.fixture(scope="module")
def bert_on_dask(dask_client: Any) -> Any:
    trace = tv.load(DATA / "h100_bert_small", engine="dask", client=dask_client, cache=False)
    yield trace
    trace.close()


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_dask_lanes_answer_as_in_process(bert_on_dask: tv.Trace, data: Any) -> None:
    here = tv.load(DATA / "h100_bert_small")
    a, b = MemoryIndex.of(here), MemoryIndex.of(bert_on_dask)
    assert a.lanes == b.lanes
    lo = data.draw(st.integers(-1000, 4_000_000))
    span = data.draw(st.integers(1, 5_000_000))
    width = data.draw(st.integers(1, 500))
    edges = lo + (np.arange(width + 1, dtype=np.int64) * span) // width
    ids = [c["id"] for c in a.lanes]
    for x, y in zip(a.window(edges, ids), b.window(edges, ids), strict=True):
        for s in x.series:
            np.testing.assert_array_equal(x.series[s][0], y.series[s][0])
            np.testing.assert_array_equal(x.series[s][1], y.series[s][1])
