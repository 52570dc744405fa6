"""Trace.select(time_range=...): events are clipped to the window, so analyses describe exactly it."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis import summary
from tests import kineto_builder as kb
from tests.analysis import tiny

US = 1000


@functools.cache
def _tiny() -> tv.Trace:
    """tiny.timeline_events(): GPU work [100, 310) us, busy 120 us (see its docstring)."""
    folder = Path(tempfile.mkdtemp(prefix="tv_clip_"))
    return tiny.load(folder / "t.json", tiny.timeline_events())


@functools.cache
def _dlrm() -> tv.Trace:
    return tv.load(tv.sample_path(), cache=False, progress=False).select(ranks=[0, 3])


def _busy(trace: tv.Trace) -> int:
    return int(summary(trace)["gpu_busy_ns"].sum())


def test_crossing_events_keep_their_part_inside(tmp_path: Path) -> None:
    # kernel [100, 150) us and a Stream Sync [220, 320) us; window [120, 250) us.
    trace = tiny.load(
        tmp_path / "t.json",
        [
            *kb.launch(tiny.GEMM, 10, 100, 50, corr=1),
            kb.sync("Stream Sync", 220, 100, corr=2),
            kb.memcpy(400, 5, corr=3),
        ],
    )
    t0 = trace.t0_ns
    base = trace.events(0)
    base_kernel = base.loc[base["kind"] == "kernel"].iloc[0]
    lo, hi = int(base_kernel["ts_ns"]) + 20 * US, int(base_kernel["ts_ns"]) + 150 * US
    part = trace.select(time_range=(lo, hi))
    ev = part.events(0)
    kernel = ev.loc[ev["kind"] == "kernel"].iloc[0]
    assert int(kernel["ts_ns"]) == lo and int(kernel["dur_ns"]) == 30 * US  # [120, 150)
    sync = ev.loc[ev["kind"] == "gpu_sync"].iloc[0] if (ev["kind"] == "gpu_sync").any() else None
    if sync is not None:
        assert int(sync["ts_ns"]) + int(sync["dur_ns"]) == hi  # [220, 250)
    assert not (ev["kind"] == "memcpy").any()  # [400, 405) lies outside: dropped
    assert part.t0_ns == t0  # the origin stays the trace's
    assert part.window == (lo, hi)


def test_summary_of_the_clipped_window_by_construction() -> None:
    trace = _tiny()
    acts = trace.events(0)
    first_gpu = int(acts.loc[acts["kind"] == "kernel", "ts_ns"].min())  # 100 us
    # Window [130, 215) us: gemm [130,150) + gemm [130,170) + allreduce [140,200) + memcpy [210,215)
    # busy = [130, 200) + [210, 215) = 75 us; span = 215 - 130 = 85 us.
    part = trace.select(time_range=(first_gpu + 30 * US, first_gpu + 115 * US))
    row = summary(part).iloc[0]
    assert row["gpu_busy_ns"] == 75 * US
    assert row["gpu_span_ns"] == 85 * US
    assert row["trace_span_ns"] <= 85 * US


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    a=st.integers(min_value=-50, max_value=450),
    width=st.integers(min_value=1, max_value=500),
    cut=st.floats(min_value=0.0, max_value=1.0),
)
def test_busy_over_a_split_window_adds_up_tiny(a: int, width: int, cut: float) -> None:
    trace = _tiny()
    t0 = trace.t0_ns
    lo, hi = t0 + a * US, t0 + (a + width) * US
    mid = lo + int(cut * (hi - lo))
    whole = trace.select(time_range=(lo, hi))
    parts = [trace.select(time_range=w) for w in ((lo, mid), (mid, hi)) if w[1] > w[0]]
    assert sum(_busy(p) for p in parts) == _busy(whole)
    for t in (whole, *parts):
        w0, w1 = t.window
        s = summary(t)
        assert (s["gpu_span_ns"] <= w1 - w0).all()
        assert (s["trace_span_ns"] <= w1 - w0).all()
        ev = t.events()
        assert (ev["ts_ns"] >= w0).all() and (ev["ts_ns"] + ev["dur_ns"] <= w1).all()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    a=st.integers(min_value=0, max_value=20_000),
    width=st.integers(min_value=1, max_value=20_000),
    cut=st.floats(min_value=0.0, max_value=1.0),
)
def test_busy_over_a_split_window_adds_up_dlrm(a: int, width: int, cut: float) -> None:
    """The same on a real trace (times in us from its origin)."""
    trace = _dlrm()
    t0 = trace.t0_ns
    lo, hi = t0 + a * US, t0 + (a + width) * US
    mid = lo + int(cut * (hi - lo))
    whole = trace.select(time_range=(lo, hi))
    parts = [trace.select(time_range=w) for w in ((lo, mid), (mid, hi)) if w[1] > w[0]]
    assert sum(_busy(p) for p in parts) == _busy(whole)
    s = summary(whole)
    assert (s["gpu_span_ns"] <= hi - lo).all() and (s["trace_span_ns"] <= hi - lo).all()


def test_whole_window_changes_nothing() -> None:
    trace = _dlrm()
    s = summary(trace)
    t0 = trace.t0_ns
    w = summary(trace.select(time_range=(t0 - 1, t0 + 10**12)))
    cols = ["events", "kernels", "gpu_busy_ns", "gpu_span_ns", "trace_span_ns", "compute_ns", "comm_ns"]
    assert w[cols].equals(s[cols])


def test_timeline_range_summary_agrees_with_summary_of_the_selection() -> None:
    """The widget's range summary and tv.summary(trace.select(time_range=...)) give the same busy time."""
    from jupyter_traceview.views.timeline.index import TimelineIndex

    trace = _dlrm()
    index = TimelineIndex.of(trace)
    t0 = trace.t0_ns
    for a_us, b_us in ((6_000, 15_500), (0, 3_000), (12_345, 19_876)):
        rs = index.range_summary(a_us * US, b_us * US)
        sel = trace.select(time_range=(t0 + a_us * US, t0 + b_us * US))
        assert rs["all"]["busy_ns"] == _busy(sel), (a_us, b_us)
