"""concurrency() and kernel_overlap_stats(), known by construction."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from tests import job_builder as jb
from tests.conftest import KINETO_FOLDERS


def _levels(trace: tv.Trace, rank: int = 0) -> dict[tuple[str, bool], int]:
    c = tv.concurrency(trace, ranks=rank)
    return {(r.in_flight, r.with_communication): r.time_ns for r in c.itertuples()}


def test_levels_by_construction(tmp_path: Path) -> None:
    gpu = [
        jb.compute(0, 100),  # [0, 100)
        jb.compute(50, 100, stream=8),  # [50, 150)
        jb.allreduce(80, 100),  # [80, 180)
        jb.compute(90, 5, stream=9),  # [90, 95)
        jb.compute(300, 100),  # [300, 400) after a gap of 120 us
    ]
    trace = jb.load_job(tmp_path, {0: gpu}, [(1, 0, 1000)])
    lv = _levels(trace)
    assert lv[("0", False)] == 120_000
    assert lv[("1", False)] == 50_000 + 100_000  # [0, 50) and [300, 400)
    assert lv[("2", False)] == 30_000  # [50, 80)
    assert lv[("3+", True)] == 20_000  # [80, 100) with [90, 95): 3 or 4 in flight
    assert lv[("2", True)] == 50_000  # [100, 150)
    assert lv[("1", True)] == 30_000  # [150, 180)
    assert sum(lv.values()) == 400_000
    c = tv.concurrency(trace)
    assert c["time_pct"].sum() == pytest.approx(100.0)
    assert c["in_flight"].tolist() == ["0", "1", "1", "2", "2", "3+", "3+"]
    wide = tv.concurrency(trace, cap=4)
    assert (
        dict(
            zip(
                wide["in_flight"] + wide["with_communication"].map({True: "c", False: ""}), wide["time_ns"], strict=True
            )
        )["4+c"]
        == 5_000
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    acts=st.lists(
        st.tuples(st.integers(0, 1000), st.integers(0, 200), st.sampled_from([7, 8, 9, 20])), min_size=1, max_size=20
    ),
    cap=st.integers(1, 5),
)
def test_shares_sum_to_100_and_levels_are_exact(acts: list[tuple[int, int, int]], cap: int) -> None:
    gpu = [jb.allreduce(ts, d, stream=s) if s == 20 else jb.compute(ts, d, stream=s) for ts, d, s in acts]
    with tempfile.TemporaryDirectory() as d:
        trace = jb.load_job(Path(d), {0: gpu}, [(1, 0, 2000)])
    c = tv.concurrency(trace, cap=cap)
    starts = np.array([a[0] for a in acts]) * 1000
    ends = starts + np.array([a[1] for a in acts]) * 1000
    span = ends.max() - starts.min()
    assert c["time_ns"].sum() == span
    if span > 0:
        assert c["time_pct"].sum() == pytest.approx(100.0)
    # Brute force on a 1-us grid.
    grid = np.arange(starts.min(), max(ends.max(), starts.min()), 1000)
    on = (starts[None, :] <= grid[:, None]) & (grid[:, None] < ends[None, :])
    level = np.minimum(on.sum(axis=1), cap)
    comm = (on & (np.array([a[2] for a in acts]) == 20)[None, :]).any(axis=1)
    for row in c.itertuples():
        expected = 1000 * int(((level == row.in_flight_min) & (comm == row.with_communication)).sum())
        assert row.time_ns == expected


def test_overlap_stats_by_construction(tmp_path: Path) -> None:
    gpu = [
        jb.compute(0, 100, name="gemm"),  # [0, 100)
        jb.compute(50, 100, name="gemm", stream=8),  # [50, 150): overlaps the other gemm 50 us
        jb.allreduce(120, 100),  # [120, 220): 30 us under gemm
        jb.allreduce(200, 100, stream=21),  # [200, 300): 20 us with the other all-reduce
        jb.compute(250, 10, name="add"),  # [250, 260) under the second all-reduce
    ]
    trace = jb.load_job(tmp_path, {0: gpu}, [(1, 0, 1000)])
    s = tv.kernel_overlap_stats(trace).set_index("name")
    ar = s.index[s["gpu_class"] == "communication"][0]
    assert s.loc[ar, "count"] == 2 and s.loc[ar, "total_ns"] == 200_000
    # Overlapped by *another* all-reduce: 20 us for each of the two.
    assert s.loc[ar, "comm_overlap_ns"] == 40_000
    assert s.loc[ar, "compute_overlap_ns"] == 30_000 + 10_000
    assert s.loc[ar, "exposed_ns"] == 160_000 and s.loc[ar, "exposed_pct"] == pytest.approx(80.0)
    assert s.loc["gemm", "compute_overlap_ns"] == 100_000  # 50 us each, by the other gemm
    assert s.loc["gemm", "comm_overlap_ns"] == 30_000
    assert s.loc["add", "comm_overlap_pct"] == 100.0 and s.loc["add", "compute_overlap_ns"] == 0
    assert (s["total_ns"].diff().dropna() <= 0).all()  # largest total first
    per_rank = tv.kernel_overlap_stats(trace, per="rank")
    assert per_rank["rank"].unique().tolist() == [0]


def test_hidden_communication_kernels_are_fully_hidden(tmp_path: Path) -> None:
    ranks = {r: [jb.compute(10, 500), jb.allreduce(100, 200), jb.allreduce(300, 100)] for r in range(2)}
    trace = jb.load_job(tmp_path, ranks, [(1, 0, 1000)])
    s = tv.kernel_overlap_stats(trace)
    comm = s[s["gpu_class"] == "communication"].iloc[0]
    assert comm["count"] == 4 and comm["compute_overlap_pct"] == 100.0 and comm["exposed_ns"] == 0


def test_dlrm_matches_hta(dlrm: tv.Trace) -> None:
    """Level-0 time is HTA's idle_time; the job's per-name totals are sums of kernel durations."""
    golden = Path(__file__).parents[1] / "golden" / "hta" / "dlrm_8rank_v100" / "temporal_breakdown.csv"
    hta = pd.read_csv(golden).set_index("rank")
    c = tv.concurrency(dlrm)
    idle = c[c["in_flight_min"] == 0].set_index("rank")["time_ns"]
    assert (idle == (hta["idle_time(us)"] * 1000).astype("int64")).all()
    span = c.groupby("rank")["time_ns"].sum()
    assert (span == (hta["kernel_time(us)"] * 1000).astype("int64")).all()
    s = tv.kernel_overlap_stats(dlrm)
    ev = dlrm.events()
    work = ev[ev["gpu_class"].isin(["compute", "communication", "memory"])]
    assert s["total_ns"].sum() == work["dur_ns"].sum() and s["count"].sum() == len(work)


def test_cpu_only_and_bad_options() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        assert tv.concurrency(trace).empty
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        out = tv.kernel_overlap_stats(trace)
    assert out.empty and "rank" not in out.columns and "exposed_ns" in out.columns
    with pytest.raises(tv.OptionError):
        tv.concurrency(trace, cap=0)
    with pytest.raises(tv.OptionError):
        tv.kernel_overlap_stats(trace, per="ranks")  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 60), st.integers(0, 12), st.integers(0, 3)),  # start, length (0 too), class
        min_size=1,
        max_size=40,
    )
)
def test_overlap_by_others_with_the_target_union(acts: list[tuple[int, int, int]]) -> None:
    """Covered by >= 1 target activity, read from the target class' union (zero-length
    activities included there), equals the level->=1 set of the step function it replaced."""
    from jupyter_traceview.analysis.concurrency import _overlap_by_others
    from jupyter_traceview.model import intervals as iv

    start = np.array([a[0] for a in acts], dtype=np.int64)
    end = start + np.array([a[1] for a in acts], dtype=np.int64)
    cls = np.array([a[2] for a in acts], dtype=np.int8)
    for target in range(4):
        is_t = cls == target
        want = np.zeros(len(start), dtype=np.int64)
        if is_t.any():
            pos, level, _ = iv.step_function(start[is_t], end[is_t])
            want[~is_t] = iv.coverage_of(iv.at_least(pos, level, 1), start[~is_t], end[~is_t])
            want[is_t] = iv.coverage_of(iv.at_least(pos, level, 2), start[is_t], end[is_t])
        got = _overlap_by_others(start, end, cls, target, iv.union(start[is_t], end[is_t]))
        assert np.array_equal(got, want)
