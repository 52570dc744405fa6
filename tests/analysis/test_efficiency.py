"""efficiency() and iteration_stats(): the POP model and per-step figures, known by construction."""

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


@pytest.fixture(scope="module")
def straggler(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    ranks, steps = jb.straggler_job(ranks=8, slow_rank=5, slowdown=1.2)
    return jb.load_job(tmp_path_factory.mktemp("straggler"), ranks, steps)


@pytest.fixture(scope="module")
def hidden(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    """Two ranks; every all-reduce runs inside a compute kernel on another stream."""
    ranks = {
        r: [
            jb.compute(10, 500),
            jb.allreduce(100, 200),
            jb.compute(600, 300),
            jb.allreduce(650, 100),
        ]
        for r in range(2)
    }
    return jb.load_job(tmp_path_factory.mktemp("hidden"), ranks, [(1, 0, 1000)])


def test_straggler_load_balance(straggler: tv.Trace) -> None:
    job = tv.efficiency(straggler).iloc[0]
    # U = 3 steps x 4 kernels x 100 us on 7 ranks, x 1.2 on rank 5.
    u, u5 = 3 * 4 * 100_000, 3 * 4 * 120_000
    assert job["useful_max_ns"] == u5 and job["useful_max_rank"] == 5
    assert job["useful_mean_ns"] == pytest.approx((7 * u + u5) / 8)
    # POP's LB is mean/max: (7 + 1.2) / (8 * 1.2) over 8 ranks; 1/1.2 only as n -> inf.
    assert job["load_balance_pct"] == pytest.approx(100 * (7 + 1.2) / (8 * 1.2))
    per_rank = tv.efficiency(straggler, per="rank").set_index("rank")
    # Each other rank's compute relative to the straggler's: exactly 1/1.2.
    assert per_rank.loc[per_rank.index != 5, "load_pct"].to_numpy() == pytest.approx(100 / 1.2)
    assert per_rank.loc[5, "load_pct"] == pytest.approx(100.0)


def test_straggler_elapsed_and_products(straggler: tv.Trace) -> None:
    job = tv.efficiency(straggler).iloc[0]
    # First GPU start 10 us, last GPU end: step 2 starts at 2000, slowest compute ends
    # 2000 + 10 + 480, the all-reduce 50 us later.
    assert job["window_start_ns"] - straggler.t0_ns == 10_000
    assert job["elapsed_ns"] == (2540 - 10) * 1000
    # The slow rank is never idle between its compute and its all-reduce: M = U + 3 x 50 us.
    assert job["busy_max_ns"] == 3 * (4 * 120_000 + 50_000)
    pe = job["load_balance_pct"] * job["communication_efficiency_pct"] * job["orchestration_efficiency_pct"] / 1e4
    assert job["parallel_efficiency_pct"] == pytest.approx(pe)
    per_rank = tv.efficiency(straggler, per="rank")
    assert job["parallel_efficiency_pct"] == pytest.approx(per_rank["parallel_efficiency_pct"].mean())


def test_straggler_per_iteration(straggler: tv.Trace) -> None:
    it = tv.efficiency(straggler, per="iteration")
    assert it["step"].tolist() == [0, 1, 2]
    assert (it["useful_max_rank"] == 5).all()
    assert it["load_balance_pct"].to_numpy() == pytest.approx(100 * (7 + 1.2) / (8 * 1.2))
    # Steps tile the ranks' time: 1000 us each, the last ending with its GPU work.
    assert it["elapsed_ns"].tolist() == [1_000_000, 1_000_000, 1_000_000]
    assert it["orchestration_efficiency_pct"].to_numpy() == pytest.approx(100 * (480 + 50) / 1000)


def test_hidden_communication_is_efficient(hidden: tv.Trace) -> None:
    job = tv.efficiency(hidden).iloc[0]
    assert job["communication_efficiency_pct"] == pytest.approx(100.0)
    assert job["load_balance_pct"] == pytest.approx(100.0)
    assert job["elapsed_ns"] == 890_000 and job["busy_max_ns"] == 800_000
    steps = tv.iteration_stats(hidden)
    assert (steps["exposed_comm_ns"] == 0).all()
    assert (steps["communication_ns"] == 300_000).all()


def test_iteration_stats_straggler(straggler: tv.Trace) -> None:
    sr = tv.iteration_stats(straggler)
    assert len(sr) == 3 * 8
    row = sr.set_index(["step", "rank"]).loc[(1, 0)]
    assert row["duration_ns"] == 1_000_000
    assert row["compute_ns"] == 400_000
    # Rank 0 waits in the all-reduce from 410 to 540 us: all of it exposed.
    assert row["communication_ns"] == row["exposed_comm_ns"] == 130_000
    assert row["gpu_busy_ns"] == 530_000 and row["idle_ns"] == 470_000
    assert row["idle_pct"] == pytest.approx(47.0)
    step = tv.iteration_stats(straggler, per="step")
    assert (step["most_compute_rank"] == 5).all()
    assert (step["compute_spread_ns"] == 80_000).all()
    assert (step["duration_ns"] == 1_000_000).all() and (step["spread_ns"] == 0).all()
    job = tv.iteration_stats(straggler, per="job").iloc[0]
    assert job["steps"] == 3 and job["jitter_pct"] == 0.0
    per_rank = tv.iteration_stats(straggler, per="rank")
    assert len(per_rank) == 8 and (per_rank["jitter_pct"] == 0).all()


def test_iteration_jitter(tmp_path: Path) -> None:
    # One rank, steps of 1000, 1000 and 1600 us of wall time; the last ends with its kernel.
    gpu = [jb.compute(10, 100), jb.compute(1010, 100), jb.compute(2010, 1590)]
    trace = jb.load_job(tmp_path, {0: gpu}, [(1, 0, 1000), (2, 1000, 1000), (3, 2000, 500)])
    sr = tv.iteration_stats(trace)
    assert sr["duration_ns"].tolist() == [1_000_000, 1_000_000, 1_600_000]
    job = tv.iteration_stats(trace, per="job").iloc[0]
    d = np.array([1000, 1000, 1600.0])
    assert job["jitter_pct"] == pytest.approx(100 * d.std() / d.mean())
    assert job["slowest_step"] == 3 and job["fastest_step"] == 1
    step = tv.iteration_stats(trace, per="step").set_index("step")
    assert step.loc[3, "vs_median_pct"] == pytest.approx(60.0)


def test_scoping(straggler: tv.Trace) -> None:
    one = tv.efficiency(straggler, iterations=1).iloc[0]
    per_it = tv.efficiency(straggler, per="iteration").set_index("step").loc[1]
    assert one["useful_max_ns"] == per_it["useful_max_ns"]
    two = tv.efficiency(straggler, ranks=[0, 1]).iloc[0]
    assert two["ranks"] == 2 and two["load_balance_pct"] == pytest.approx(100.0)
    t0 = straggler.t0_ns
    part = tv.iteration_stats(straggler, time_range=(t0, t0 + 1_500_000), ranks=0)
    assert part["duration_ns"].tolist() == [1_000_000, 500_000]


def test_cpu_only_trace_gives_empty_frames_and_warns() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    for per in ("job", "rank", "iteration"):
        with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
            out = tv.efficiency(trace, per=per)
        assert out.empty and "parallel_efficiency_pct" in out.columns
    for per in ("step_rank", "step", "rank", "job"):
        with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
            out = tv.iteration_stats(trace, per=per)
        assert out.empty and len(out.columns) > 3


def test_bad_options(straggler: tv.Trace) -> None:
    with pytest.raises(tv.OptionError, match="iteration"):
        tv.efficiency(straggler, per="iteratoin")  # type: ignore[arg-type]
    with pytest.raises(tv.TraceviewError):
        tv.iteration_stats(straggler, per="steps")  # type: ignore[arg-type]
    with pytest.raises(tv.TraceSelectionError):
        tv.efficiency(straggler, ranks=[42])


def test_dlrm_useful_time_matches_hta(dlrm: tv.Trace, data_dir: Path) -> None:
    """U per rank is HTA's compute_time (one ProfilerStep, so HTA filters nothing)."""
    golden = Path(__file__).parents[1] / "golden" / "hta" / "dlrm_8rank_v100" / "temporal_breakdown.csv"
    hta = pd.read_csv(golden).set_index("rank")
    ours = tv.efficiency(dlrm, per="rank").set_index("rank")
    assert (ours["useful_ns"] == (hta["compute_time(us)"] * 1000).astype("int64")).all()
    # M is HTA's kernel_time - idle_time (HTA counts sync records as busy; DLRM has none on GPU).
    assert (ours["busy_ns"] == ((hta["kernel_time(us)"] - hta["idle_time(us)"]) * 1000).astype("int64")).all()


def test_no_iterations_warns(tmp_path: Path) -> None:
    trace = jb.load_job(tmp_path, {0: [jb.compute(10, 100)]}, [])
    with pytest.warns(tv.TraceviewWarning, match="no ProfilerStep"):
        assert tv.efficiency(trace, per="iteration").empty
    with pytest.warns(tv.TraceviewWarning, match="no ProfilerStep"):
        assert tv.iteration_stats(trace, per="job").empty
    assert tv.efficiency(trace).iloc[0]["parallel_efficiency_pct"] == pytest.approx(100.0)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(
        st.lists(
            st.tuples(st.integers(0, 3000), st.integers(1, 400), st.sampled_from(["compute", "comm", "copy"])),
            min_size=1,
            max_size=8,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_pop_identities(jobs: list[list[tuple[int, int, str]]]) -> None:
    make = {
        "compute": lambda ts, d: jb.compute(ts, d),
        "comm": lambda ts, d: jb.allreduce(ts, d),
        "copy": lambda ts, d: jb.Gpu("Memcpy HtoD (Pinned -> Device)", ts, d, kind="memcpy", stream=jb.COPY_STREAM),
    }
    ranks = {r: [make[k](ts, d) for ts, d, k in acts] for r, acts in enumerate(jobs)}
    with tempfile.TemporaryDirectory() as d:
        trace = jb.load_job(Path(d), ranks, [(1, 0, 1000), (2, 1000, 1000), (3, 2000, 2000)])
    job = tv.efficiency(trace).iloc[0]
    per = tv.efficiency(trace, per="rank")
    useful = per["useful_ns"].to_numpy()
    assert job["useful_max_ns"] == useful.max() and job["busy_max_ns"] == per["busy_ns"].max()
    assert (per["useful_ns"] <= per["busy_ns"]).all() and (per["busy_ns"] <= job["elapsed_ns"]).all()
    if useful.max() > 0:
        factors = [
            job[f"{m}_pct"] / 100 for m in ("load_balance", "communication_efficiency", "orchestration_efficiency")
        ]
        assert job["parallel_efficiency_pct"] / 100 == pytest.approx(np.prod(factors))
        assert all(0 <= f <= 1 + 1e-12 for f in factors)
    assert job["parallel_efficiency_pct"] == pytest.approx(100 * useful.sum() / (len(useful) * job["elapsed_ns"]))
    # The steps tile each rank's time: per-step figures add up to the steps' range.
    sr = tv.iteration_stats(trace)
    for _, g in sr.groupby("rank"):
        assert g["duration_ns"].sum() == g["end_ns"].max() - g["start_ns"].min()
        assert (g["gpu_busy_ns"] >= g["compute_ns"]).all() and (g["idle_ns"] >= 0).all()
    it = tv.efficiency(trace, per="iteration")
    assert (it["useful_max_ns"] <= it["busy_max_ns"]).all() and (it["busy_max_ns"] <= it["elapsed_ns"]).all()
