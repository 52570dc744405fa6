"""queue_length() and memory_bandwidth(): known answers, properties, and HTA's numbers."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis.counters import (
    BANDWIDTH_KIND_COLUMNS,
    BANDWIDTH_SERIES_COLUMNS,
    QUEUE_SERIES_COLUMNS,
    QUEUE_STREAM_COLUMNS,
)
from tests import kineto_builder as kb
from tests.analysis.hta_view import (
    HTA_QUEUE_NAMES,
    hta_copy_selection,
    hta_end_us,
    hta_min_us,
    hta_queue_selection,
    hta_selection,
    hta_start_us,
    read_hta,
)
from tests.conftest import KINETO_FOLDERS

US = 1000


def _load(tmp_path: Path, events: list[dict], name: str = "r.json") -> tv.Trace:
    return tv.load(kb.write(tmp_path / name, kb.doc(events)), cache=False)


# ---------------------------------------------------------------------- queue length
def _queue_events() -> list[dict]:
    return [
        # stream 7: launches at 0, 10, 20 us; the kernels start at 30, 40, 50 us
        *kb.launch("a", 0, 30, 10, corr=1),
        *kb.launch("b", 10, 40, 10, corr=2),
        *kb.launch("c", 20, 50, 10, corr=3),
        # stream 8: one launch at 15 us, its kernel starts at 25 us
        *kb.launch("d", 15, 25, 5, corr=4, stream=8),
    ]


def test_queue_series_by_construction(tmp_path: Path) -> None:
    q = tv.queue_length(_load(tmp_path, _queue_events()))
    assert list(q.columns) == list(QUEUE_SERIES_COLUMNS)
    s7 = q[q["stream"] == 7]
    assert (s7["ts_ns"] // US).tolist() == [0, 10, 20, 30, 40, 50]
    assert s7["queue_length"].tolist() == [1, 2, 3, 2, 1, 0]
    s8 = q[q["stream"] == 8]
    assert (s8["ts_ns"] // US).tolist() == [15, 25] and s8["queue_length"].tolist() == [1, 0]


def test_queue_summary_is_time_weighted(tmp_path: Path) -> None:
    trace = _load(tmp_path, _queue_events())
    s = tv.queue_length(trace, per="stream", max_queue_length=3)
    assert list(s.columns) == list(QUEUE_STREAM_COLUMNS)
    r7 = s[s["stream"] == 7].iloc[0]
    assert r7["launches"] == 3 and r7["span_ns"] == 50 * US
    # 1, 2, 3, 2, 1 for 10 us each: mean 9/5; 1 and 2 hold 20 us each, 3 holds 10 us
    assert r7["queue_length_mean"] == pytest.approx(1.8)
    assert r7["queue_length_p50"] == 2 and r7["queue_length_p90"] == 3 and r7["queue_length_max"] == 3
    assert r7["blocked_ns"] == 10 * US
    assert r7["blocked_pct"] == pytest.approx(100 * 10 / 60)  # rank span: 0 .. 60 us
    r8 = s[s["stream"] == 8].iloc[0]
    assert r8["queue_length_mean"] == pytest.approx(1.0) and r8["blocked_ns"] == 0


def test_queue_window(tmp_path: Path) -> None:
    trace = _load(tmp_path, _queue_events())
    q = tv.queue_length(trace, time_range=(25 * US, 45 * US))
    s7 = q[q["stream"] == 7]
    # the first point carries the length at the window start (launches before it count)
    assert (s7["ts_ns"] // US).tolist() == [25, 30, 40] and s7["queue_length"].tolist() == [3, 2, 1]
    s = tv.queue_length(trace, time_range=(25 * US, 45 * US), per="stream")
    r7 = s[s["stream"] == 7].iloc[0]
    assert r7["span_ns"] == 20 * US and r7["queue_length_mean"] == pytest.approx((3 * 5 + 2 * 10 + 1 * 5) / 20)
    assert r7["launches"] == 2  # kernels starting at 30 and 40 us
    with pytest.raises(ValueError, match="time_range"):
        tv.queue_length(trace, time_range=(10, 5))


def test_queue_same_instant_collapses(tmp_path: Path) -> None:
    events = [*kb.launch("a", 0, 10, 5, corr=1), *kb.launch("b", 10, 20, 5, corr=2)]
    q = tv.queue_length(_load(tmp_path, events))
    # at 10 us kernel a starts (-1) and b is launched (+1): one point would say nothing, none is kept
    assert (q["ts_ns"] // US).tolist() == [0, 20] and q["queue_length"].tolist() == [1, 0]


def test_queue_counts_launches_hta_does_not(tmp_path: Path) -> None:
    events = [
        kb.runtime("cudaGraphLaunch", 0, 5, corr=1),
        kb.kernel("g1", 10, 5, corr=1),
        kb.kernel("g2", 15, 5, corr=1),
        kb.runtime("cuLaunchKernelEx", 1, 2, corr=2),
        kb.kernel("t", 30, 5, corr=2),
        kb.runtime("cudaStreamWaitEvent", 2, 1, corr=3),
        kb.sync("Stream Wait Event", 3, 0, corr=3),  # a sync record: not queued work
    ]
    q = tv.queue_length(_load(tmp_path, events))
    # the graph launch queues both of its kernels at once
    assert (q["ts_ns"] // US).tolist() == [0, 1, 10, 15, 30] and q["queue_length"].tolist() == [2, 3, 2, 1, 0]


def test_queue_bad_per(tmp_path: Path) -> None:
    with pytest.raises(tv.OptionError, match=r"per=.* is not accepted"):
        tv.queue_length(_load(tmp_path, _queue_events()), per="kind")  # type: ignore[arg-type]


launch_st = st.tuples(
    st.integers(0, 200),  # cpu start, us
    st.integers(0, 20),  # cpu duration
    st.integers(0, 100),  # delay from cpu start to gpu start
    st.integers(0, 30),  # gpu duration
    st.sampled_from([7, 8]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(launch_st, min_size=1, max_size=25), st.randoms(use_true_random=False))
def test_queue_properties(tmp_path: Path, launches: list[tuple[int, ...]], rnd: random.Random) -> None:
    events: list[dict] = []
    for i, (cts, cdur, delay, gdur, stream) in enumerate(launches):
        events += kb.launch(f"k{i}", cts, cts + delay, gdur, corr=i + 1, cpu_dur=cdur, stream=stream)
    q = tv.queue_length(_load(tmp_path, events))
    assert (q["queue_length"] >= 0).all()
    assert (q.groupby("stream")["queue_length"].last() == 0).all()  # every launch ran
    assert q.groupby("stream")["ts_ns"].apply(lambda t: t.is_monotonic_increasing and t.is_unique).all()
    s = tv.queue_length(_load(tmp_path, events), per="stream").set_index("stream")
    # the integral of the queue length is the total time launches waited for the GPU
    waits = pd.Series([d * US for (_, _, d, _, _) in launches], index=[x[4] for x in launches]).groupby(level=0).sum()
    integral = (s["queue_length_mean"].fillna(0) * s["span_ns"]).reindex(waits.index, fill_value=0)
    np.testing.assert_allclose(integral.to_numpy(), waits.to_numpy(), rtol=1e-9, atol=1e-6)
    assert (s["launches"] == pd.Series([x[4] for x in launches]).value_counts().reindex(s.index)).all()
    # the order of events in the file does not matter
    shuffled = list(events)
    rnd.shuffle(shuffled)
    pd.testing.assert_frame_equal(tv.queue_length(_load(tmp_path, shuffled, "s.json")), q)


# ---------------------------------------------------------------------- memory bandwidth
def _copy_events() -> list[dict]:
    return [
        kb.runtime("cudaMemcpyAsync", 0, 2, corr=1),
        kb.memcpy(10, 10, corr=1, nbytes=20_000),  # HtoD [10, 20) us, 2 GB/s
        kb.runtime("cudaMemcpyAsync", 1, 2, corr=2),
        kb.memcpy(15, 10, corr=2, nbytes=10_000, stream=8),  # HtoD [15, 25) us, 1 GB/s
        kb.runtime("cudaMemcpyAsync", 2, 2, corr=3),
        kb.memcpy(12, 4, corr=3, kind="DtoH", nbytes=4_000),  # DtoH [12, 16) us, 1 GB/s
        kb.runtime("cudaMemsetAsync", 3, 2, corr=4),
        kb.memset(30, 2, corr=4, nbytes=512),  # memset [30, 32) us, 1 GB/s (recorded)
    ]


def test_bandwidth_series_by_construction(tmp_path: Path) -> None:
    b = tv.memory_bandwidth(_load(tmp_path, _copy_events()))
    assert list(b.columns) == list(BANDWIDTH_SERIES_COLUMNS)
    h = b[b["kind"] == "HtoD"]
    assert (h["ts_ns"] // US).tolist() == [10, 15, 20, 25]
    np.testing.assert_allclose(h["bandwidth_gbps"], [2.0, 3.0, 1.0, 0.0])
    assert h["active_copies"].tolist() == [1, 2, 1, 0]
    d = b[b["kind"] == "DtoH"]
    assert (d["ts_ns"] // US).tolist() == [12, 16] and d["bandwidth_gbps"].tolist() == [1.0, 0.0]
    assert b["kind"].astype(str).unique().tolist() == ["HtoD", "DtoH", "memset"]


def test_bandwidth_summary_by_construction(tmp_path: Path) -> None:
    s = tv.memory_bandwidth(_load(tmp_path, _copy_events()), per="kind")
    assert list(s.columns) == list(BANDWIDTH_KIND_COLUMNS)
    s = s.set_index("kind")
    h = s.loc["HtoD"]
    assert h["copies"] == 2 and h["unmeasured"] == 0 and h["total_bytes"] == 30_000
    assert h["busy_ns"] == 15 * US and h["peak_gbps"] == pytest.approx(3.0)
    assert h["mean_gbps"] == pytest.approx(30_000 / 15_000) and h["effective_gbps"] == pytest.approx(2.0)
    m = s.loc["memset"]
    assert m["total_bytes"] == 512 and m["busy_ns"] == 2 * US
    assert m["mean_gbps"] == pytest.approx(1.0)  # the recorded bandwidth
    assert m["effective_gbps"] == pytest.approx(512 / 2000)  # bytes over time


def test_bandwidth_window_prorates_bytes(tmp_path: Path) -> None:
    s = tv.memory_bandwidth(_load(tmp_path, _copy_events()), time_range=(15 * US, 20 * US), per="kind")
    h = s.set_index("kind").loc["HtoD"]
    # [15, 20): half of copy 1 (10 kB) and half of copy 2 (5 kB)
    assert h["total_bytes"] == 15_000 and h["busy_ns"] == 5 * US and h["peak_gbps"] == pytest.approx(3.0)


def test_bandwidth_unmeasured_copy(tmp_path: Path) -> None:
    copy = kb.memcpy(10, 5, corr=1)
    copy["args"].pop("bytes")
    copy["args"].pop("memory bandwidth (GB/s)")
    trace = _load(tmp_path, [kb.runtime("cudaMemcpyAsync", 0, 2, corr=1), copy])
    assert tv.memory_bandwidth(trace).empty
    row = tv.memory_bandwidth(trace, per="kind").iloc[0]
    assert row["copies"] == 1 and row["unmeasured"] == 1 and row["total_bytes"] == 0
    assert row["busy_ns"] == 5 * US and np.isnan(row["peak_gbps"]) and np.isnan(row["effective_gbps"])


copy_st = st.tuples(
    st.integers(0, 100),  # start, us
    st.integers(1, 40),  # duration, us
    st.integers(0, 10**7),  # bytes
    st.sampled_from(["HtoD", "DtoH", "DtoD"]),
    st.sampled_from([7, 8, 9]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(copy_st, min_size=1, max_size=25))
def test_bandwidth_properties(tmp_path: Path, copies: list[tuple]) -> None:
    events = []
    for i, (ts, dur, nbytes, kind, stream) in enumerate(copies):
        events += [
            kb.runtime("cudaMemcpyAsync", 0, 1, corr=i + 1),
            kb.memcpy(ts, dur, corr=i + 1, kind=kind, nbytes=nbytes, stream=stream),
        ]
    trace = _load(tmp_path, events)
    b = tv.memory_bandwidth(trace)
    assert (b["bandwidth_gbps"] >= 0).all()
    assert (b.groupby("kind", observed=True)["bandwidth_gbps"].last() == 0).all()  # exactly 0, no rounding residue
    s = tv.memory_bandwidth(trace, per="kind").set_index("kind")
    for kind, g in b.groupby("kind", observed=True):
        held = np.diff(g["ts_ns"].to_numpy())
        integral = float((g["bandwidth_gbps"].to_numpy()[:-1] * held).sum())  # GB/s x ns = bytes
        expected = sum(c[2] for c in copies if c[3] == kind)
        assert integral == pytest.approx(expected, rel=1e-6, abs=1e-3)
        assert s.loc[kind, "total_bytes"] == expected
        assert s.loc[kind, "peak_gbps"] == pytest.approx(g["bandwidth_gbps"].max())


def test_cpu_only_is_empty_with_a_warning() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    for fn, per, cols in (
        (tv.queue_length, "time", QUEUE_SERIES_COLUMNS),
        (tv.queue_length, "stream", QUEUE_STREAM_COLUMNS),
        (tv.memory_bandwidth, "time", BANDWIDTH_SERIES_COLUMNS),
        (tv.memory_bandwidth, "kind", BANDWIDTH_KIND_COLUMNS),
    ):
        with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
            df = fn(trace, per=per)
        assert df.empty and list(df.columns) == list(cols)


def test_dlrm_examples(dlrm: tv.Trace) -> None:
    q = tv.queue_length(dlrm, per="stream")
    assert len(q) == 32 and (q["queue_length_max"] >= 1).all() and (q["blocked_ns"] == 0).all()
    b = tv.memory_bandwidth(dlrm, per="kind")
    assert set(b["kind"].astype(str)) == {"HtoD", "DtoH", "DtoD", "memset"}
    # scoping by rank equals filtering the all-rank result
    one = tv.queue_length(dlrm, ranks=[3])
    full = tv.queue_length(dlrm)
    pd.testing.assert_frame_equal(one, full[full["rank"] == 3].reset_index(drop=True))


# ---------------------------------------------------------------------- against HTA
QUEUE_FOLDERS = [f for f in KINETO_FOLDERS if read_hta(f, "queue_length_time_series") is not None]
BW_FOLDERS = [f for f in KINETO_FOLDERS if read_hta(f, "memory_bw_time_series") is not None]
HTA_KIND = {"memset": "Memset", "unknown": "Memcpy Unknown"}


def _step_at(ts: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """A step function (change points ts, values) evaluated at ``at``; 0 before its first point."""
    idx = np.searchsorted(ts, at, side="right") - 1
    return np.where(idx >= 0, values[np.maximum(idx, 0)], 0)


@pytest.mark.parametrize("folder", QUEUE_FOLDERS)
def test_queue_series_matches_hta(folder: str) -> None:
    """At every instant where HTA's series changes, our queue length equals HTA's.

    HTA sorts +1/-1 events with an unstable sort, so within one instant its rows are in
    no defined order; the value after the last row of an instant is well defined.
    """
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    hta = read_hta(folder, "queue_length_time_series")
    assert hta is not None
    ours = tv.queue_length(hta_queue_selection(trace))
    origin = hta_min_us(trace)
    after = hta.groupby(["rank", "stream", "ts"], sort=True)["queue_length"].last().reset_index()
    for (rank, stream), h in after.groupby(["rank", "stream"]):
        o = ours[(ours["rank"] == rank) & (ours["stream"] == stream)]
        ts = hta_start_us(trace, rank, o["ts_ns"].to_numpy()) - origin  # every point is a start
        got = _step_at(ts, o["queue_length"].to_numpy(), h["ts"].to_numpy())
        np.testing.assert_array_equal(got, h["queue_length"].to_numpy())
        assert np.isin(ts, h["ts"].to_numpy()).all()
    assert set(map(tuple, ours[["rank", "stream"]].drop_duplicates().to_numpy())) == set(
        map(tuple, after[["rank", "stream"]].drop_duplicates().to_numpy())
    )


@pytest.mark.parametrize("folder", QUEUE_FOLDERS)
def test_queue_summary_matches_hta(folder: str) -> None:
    """HTA's summary is describe() over its event samples, not time-weighted: we rebuild its
    samples from our launches. Their mean depends on the undefined order of same-instant
    events; HTA's lies between the two extreme orders (decrements first / increments first),
    and equals ours where no instant mixes them."""
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    hta = read_hta(folder, "queue_length_summary")
    assert hta is not None
    sel = hta_queue_selection(trace)
    launches = tv.kernel_launch_stats(sel)
    launches = launches[launches["launch_name"].isin(HTA_QUEUE_NAMES)]
    ours = tv.queue_length(sel, per="stream")
    groups = list(launches.groupby(["rank", "stream"]))  # sorted (rank, stream): HTA's row order
    assert len(groups) == len(hta) == len(ours)
    for ((rank, _), g), (_, h), (_, o) in zip(groups, hta.iterrows(), ours.iterrows(), strict=True):
        t = np.concatenate(
            [hta_start_us(trace, rank, g["cpu_ts_ns"].to_numpy()), hta_start_us(trace, rank, g["gpu_ts_ns"].to_numpy())]
        )
        d = np.concatenate([np.ones(len(g), dtype=int), -np.ones(len(g), dtype=int)])
        low = np.cumsum(d[np.lexsort((d, t))])
        high = np.cumsum(d[np.lexsort((-d, t))])
        assert h["count"] == len(t) == 2 * o["launches"]
        assert low.mean() - 1e-9 <= h["mean"] <= high.mean() + 1e-9
        assert h["min"] == 0
        assert o["queue_length_max"] <= h["max"] <= high.max()
        if low.mean() == high.mean():
            assert h["mean"] == pytest.approx(low.mean(), rel=1e-9)


@pytest.mark.parametrize("folder", QUEUE_FOLDERS)
def test_blocked_on_full_queue_matches_hta(folder: str) -> None:
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    hta = read_hta(folder, "blocked_on_full_queue")
    assert hta is not None and hta.empty  # no real trace reaches 1024 queued launches
    assert (tv.queue_length(hta_selection(trace), per="stream")["blocked_ns"] == 0).all()


def _bw_in_hta_units(trace: tv.Trace, b: pd.DataFrame) -> pd.DataFrame:
    """Our bandwidth series in HTA's units: copy starts rounded up, copy ends rounded down."""
    parts = []
    for (rank, _), g in b.groupby(["rank", "kind"], observed=True):
        ts = g["ts_ns"].to_numpy()
        rising = np.diff(np.concatenate(([0], g["active_copies"].to_numpy()))) > 0
        us = np.where(rising, hta_start_us(trace, rank, ts), hta_end_us(trace, rank, ts))
        # HTA gives a copy that rounds to 0 us 1 us ("to avoid -ve values"): an end at the
        # same microsecond as the start just before it moves 1 us later.
        zero = np.flatnonzero(~rising[1:] & rising[:-1] & (us[1:] == us[:-1])) + 1
        us[zero] += 1
        parts.append(g.assign(ts=us))
    out = pd.concat(parts)
    out["name"] = [HTA_KIND.get(k, f"Memcpy {k}") for k in out["kind"].astype(str)]
    return out


@pytest.mark.parametrize("folder", BW_FOLDERS)
def test_bandwidth_series_matches_hta(folder: str) -> None:
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    hta = read_hta(folder, "memory_bw_time_series")
    assert hta is not None
    b = tv.memory_bandwidth(hta_copy_selection(trace))
    if folder == "hta_mi250_rocm":
        # The copies record neither bytes nor bandwidth: HTA draws them at 0 GB/s, we leave
        # them out of the series and count them as unmeasured.
        assert b.empty and (hta["memory_bw_gbps"] == 0).all()
        s = tv.memory_bandwidth(hta_selection(trace), per="kind")
        assert s["unmeasured"].tolist() == [2]
        return
    ours = _bw_in_hta_units(trace, b)
    origin = hta_min_us(trace)
    after = hta.groupby(["rank", "name", "ts"], sort=True)["memory_bw_gbps"].last().reset_index()
    for (rank, name), h in after.groupby(["rank", "name"]):
        o = ours[(ours["rank"] == rank) & (ours["name"] == name)]
        got = _step_at(o["ts"].to_numpy() - origin, o["bandwidth_gbps"].to_numpy(), h["ts"].to_numpy())
        want = h["memory_bw_gbps"].to_numpy()
        # HTA's series goes below 0 where a copy's rounded end comes before its rounded
        # start (shorter than 1 us, inside one: the sub-us memsets of h200_train). Ours is
        # never negative: those copies are left out of the comparison (hta_copy_selection).
        neg = want < 0
        assert not neg.any() or folder == "h200_train"
        assert (got >= 0).all()
        np.testing.assert_allclose(got[~neg], want[~neg], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("folder", BW_FOLDERS)
def test_bandwidth_summary_matches_hta(folder: str) -> None:
    """HTA's summary: describe() of its series points above 0 (change points, not time-weighted)."""
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    hta = read_hta(folder, "memory_bw_summary")
    assert hta is not None
    b = tv.memory_bandwidth(hta_copy_selection(trace))
    if b.empty:
        assert hta.empty
        return
    b["name"] = [HTA_KIND.get(k, f"Memcpy {k}") for k in b["kind"].astype(str)]
    samples = b[b["bandwidth_gbps"] > 0].groupby(["rank", "name"])["bandwidth_gbps"]
    ours = samples.describe().reset_index(drop=True)
    for col in ("count", "mean", "min", "50%", "max"):
        np.testing.assert_allclose(ours[col].to_numpy(), hta[col].to_numpy(), rtol=1e-6, err_msg=col)
    # our peak_gbps is HTA's max
    s = tv.memory_bandwidth(hta_copy_selection(trace), per="kind")
    s["name"] = [HTA_KIND.get(k, f"Memcpy {k}") for k in s["kind"].astype(str)]
    peak = s.dropna(subset=["peak_gbps"]).sort_values(["rank", "name"])["peak_gbps"].to_numpy()
    np.testing.assert_allclose(peak, hta["max"].to_numpy(), rtol=1e-6)


def test_weighted_quantile_paths_agree() -> None:
    """The histogram path (integer values) and the sorting path (any values) give one answer."""
    from jupyter_traceview.analysis.counters import _weighted_lower_quantile

    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 50))
        group = np.unique(np.sort(rng.integers(0, 4, n)), return_inverse=True)[1]
        v = rng.integers(0, 6, n)
        w = rng.integers(0, 5, n)
        for q in (0.5, 0.9):
            np.testing.assert_array_equal(
                _weighted_lower_quantile(group, v, w, q), _weighted_lower_quantile(group, v.astype(float), w, q)
            )


def test_iterations_give_htas_view() -> None:
    """HTA drops the last ProfilerStep; ``iterations=`` selects steps explicitly. On this
    trace (steps 551 and 552, no launch before the first step) ``iterations=[551]`` is
    exactly HTA's selection, for all three analyses."""
    trace = tv.load(KINETO_FOLDERS["hta_dlrm_2of128_ranks"], cache=False)
    hta_view = hta_selection(trace)
    for fn in (tv.kernel_launch_stats, tv.queue_length, tv.memory_bandwidth):
        pd.testing.assert_frame_equal(fn(trace, iterations=[551]), fn(hta_view))
    assert len(tv.kernel_launch_stats(trace, iterations=[551])) == 1179
    assert len(tv.kernel_launch_stats(trace)) == 2358


def test_hta_queue_misses_the_hopper_gemm_launches() -> None:
    """docs/semantics.md's figure: on h200_train HTA's queue counts 609 of the 743 launches of
    its steps; the other 134 are cuBLAS's cuLaunchKernelEx (which it does not know)."""
    trace = tv.load(KINETO_FOLDERS["h200_train"], cache=False)
    all_launches = tv.queue_length(hta_selection(trace), per="stream")["launches"].sum()
    hta_launches = tv.queue_length(hta_queue_selection(trace), per="stream")["launches"].sum()
    assert (all_launches, hta_launches) == (743, 609)
    launches = tv.kernel_launch_stats(hta_selection(trace))
    missed = launches[~launches["launch_name"].isin(HTA_QUEUE_NAMES)]
    assert set(missed["launch_name"]) == {"cuLaunchKernelEx"} and len(missed) == 134
