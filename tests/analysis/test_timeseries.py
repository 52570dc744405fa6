"""utilization_heatmap() and kernel_pace(): exact coverage per bin, alignment, pace."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.model import intervals as iv
from tests import job_builder as jb
from tests.conftest import KINETO_FOLDERS


def _hidden_job(folder: Path) -> tv.Trace:
    ranks = {
        r: [
            jb.compute(10, 500),
            jb.compute(30, 40, stream=8),
            jb.allreduce(100 + 10 * r, 200),
            jb.compute(600, 300),
            jb.allreduce(650, 100),
            jb.Gpu("Memcpy HtoD (Pinned -> Device)", 950, 20, kind="memcpy", stream=jb.COPY_STREAM),
        ]
        for r in range(3)
    }
    return jb.load_job(folder, ranks, [(1, 0, 1000)])


def test_hidden_communication_is_fully_overlapped(tmp_path: Path) -> None:
    trace = _hidden_job(tmp_path)
    comm = tv.utilization_heatmap(trace, bins=37, kind="communication")
    overlap = tv.utilization_heatmap(trace, bins=37, kind="overlap")
    assert comm["busy_ns"].sum() == 3 * 300_000
    # Wherever communication runs, it runs under compute: overlap == communication, bin by bin.
    assert (overlap["busy_ns"].to_numpy() == comm["busy_ns"].to_numpy()).all()
    busy = comm["busy_ns"].to_numpy() > 0
    assert (overlap["busy_pct"].to_numpy()[busy] == comm["busy_pct"].to_numpy()[busy]).all()


def test_kinds_and_bins_by_construction(tmp_path: Path) -> None:
    trace = _hidden_job(tmp_path)
    # One axis from the first activity (10 us) to the last end (970 us): 96 us per bin.
    hm = tv.utilization_heatmap(trace, bins=10, kind="all", ranks=0)
    assert hm["bin_start_ns"].tolist() == [96_000 * k for k in range(10)]
    assert hm["bin_end_ns"].iloc[-1] == 960_000
    assert (hm["origin_ns"] == trace.t0_ns + 10_000).all()
    # Compute [10, 510) and [600, 900), memcpy [950, 970): bin 0 [10, 106) fully busy.
    assert hm["busy_ns"].iloc[0] == 96_000 and hm["busy_pct"].iloc[0] == 100.0
    # Bin 5 [490, 586): busy 490..500 (relative), i.e. [500, 510) absolute minus origin -> 20 us.
    assert hm["busy_ns"].iloc[5] == 20_000
    assert hm["busy_ns"].sum() == (500 + 300 + 20) * 1000
    mem = tv.utilization_heatmap(trace, bins=10, kind="memory", ranks=0)
    assert mem["busy_ns"].sum() == 20_000 and mem["busy_ns"].iloc[-1] == 20_000
    width = tv.utilization_heatmap(trace, bin_ns=100_000, ranks=0)
    assert len(width) == 10 and width["bin_end_ns"].iloc[-1] == 1_000_000


def test_alignment(tmp_path: Path) -> None:
    # Rank 1's clock runs 1 ms ahead: same work, shifted.
    work = [jb.compute(20, 100), jb.compute(300, 50)]
    ranks = {0: work, 1: [jb.compute(g.ts + 1000, g.dur) for g in work]}
    steps = {0: [(4, 10, 500)], 1: [(4, 1010, 500)]}
    trace = jb.load_job(tmp_path, ranks, steps)
    common = tv.utilization_heatmap(trace, bins=20)
    assert common.groupby("rank")["origin_ns"].nunique().eq(1).all()
    assert common.loc[common["rank"] == 0, "busy_ns"].to_numpy()[-5:].sum() == 0
    for align in ("rank_start", 4):
        hm = tv.utilization_heatmap(trace, bins=20, align=align)
        a = hm.loc[hm["rank"] == 0, "busy_ns"].to_numpy()
        b = hm.loc[hm["rank"] == 1, "busy_ns"].to_numpy()
        assert (a == b).all() and a.sum() == 150_000
    by_step = tv.utilization_heatmap(trace, bins=20, align=4)
    assert (by_step["origin_ns"] - trace.t0_ns).unique().tolist() == [0, 1_000_000]  # t0 is rank 0's step start
    assert by_step["bin_start_ns"].iloc[0] == 10_000  # the first kernel is 10 us into the step
    with pytest.raises(tv.TraceSelectionError, match="iteration 5"):
        tv.utilization_heatmap(trace, align=5)


def test_rank_without_the_step_is_left_out(tmp_path: Path) -> None:
    ranks = {0: [jb.compute(20, 100)], 1: [jb.compute(20, 100)]}
    trace = jb.load_job(tmp_path, ranks, {0: [(4, 10, 500)], 1: [(5, 10, 500)]})
    with pytest.warns(tv.TraceviewWarning, match="ProfilerStep#4"):
        hm = tv.utilization_heatmap(trace, bins=4, align=4)
    assert hm["rank"].unique().tolist() == [0]


def test_devices_are_separate_rows(tmp_path: Path) -> None:
    from tests import kineto_builder as kb

    events = [
        *kb.launch("gemm", 1, 10, 100, corr=1, device=0),
        *kb.launch("gemm", 2, 50, 100, corr=2, device=1),
    ]
    trace = tv.load(kb.write(tmp_path / "r.json", kb.doc(events)), cache=False)
    hm = tv.utilization_heatmap(trace, bins=4)
    assert hm.groupby("device")["busy_ns"].sum().to_dict() == {0: 100_000, 1: 100_000}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    acts=st.lists(
        st.tuples(st.integers(0, 2000), st.integers(0, 300), st.sampled_from([7, 8, 20])), min_size=1, max_size=25
    ),
    bins=st.integers(1, 300),
)
def test_heatmap_conserves_busy_time(acts: list[tuple[int, int, int]], bins: int) -> None:
    gpu = [jb.allreduce(ts, dur, stream=s) if s == 20 else jb.compute(ts, dur, stream=s) for ts, dur, s in acts]
    with tempfile.TemporaryDirectory() as d:
        trace = jb.load_job(Path(d), {0: gpu}, [(1, 0, 3000)])
    starts = np.array([a[0] for a in acts], dtype=np.int64) * 1000
    ends = starts + np.array([a[1] for a in acts], dtype=np.int64) * 1000
    comm = np.array([a[2] == 20 for a in acts])
    expected = {
        "all": iv.length(*iv.union(starts, ends)),
        "communication": iv.length(*iv.union(starts[comm], ends[comm])),
        "overlap": iv.length(*iv.intersect(iv.union(starts[comm], ends[comm]), iv.union(starts[~comm], ends[~comm]))),
    }
    for kind, total in expected.items():
        hm = tv.utilization_heatmap(trace, bins=bins, kind=kind)  # type: ignore[arg-type]
        assert hm["busy_ns"].sum() == total
        assert len(hm) == bins
        assert ((hm["busy_pct"] >= 0) & (hm["busy_pct"] <= 100)).all()
        width = hm["bin_end_ns"] - hm["bin_start_ns"]
        assert (hm["busy_ns"] <= width).all() and (width >= 1).all()


def test_dlrm_overlap_matches_hta(dlrm: tv.Trace) -> None:
    """Overlap / communication summed over bins is HTA's comp_comm_overlap_pctg."""
    golden = Path(__file__).parents[1] / "golden" / "hta" / "dlrm_8rank_v100" / "comm_comp_overlap.csv"
    hta = pd.read_csv(golden).set_index("rank")["comp_comm_overlap_pctg"]
    comm = tv.utilization_heatmap(dlrm, bins=100, kind="communication").groupby("rank")["busy_ns"].sum()
    overlap = tv.utilization_heatmap(dlrm, bins=100, kind="overlap").groupby("rank")["busy_ns"].sum()
    assert (100 * overlap / comm).round(2).to_numpy() == pytest.approx(hta.to_numpy())


def test_time_range_clips(dlrm: tv.Trace) -> None:
    t0 = dlrm.t0_ns
    full = tv.utilization_heatmap(dlrm, bins=10, ranks=0)["busy_ns"].sum()
    a = tv.utilization_heatmap(dlrm, bins=10, ranks=0, time_range=(t0, t0 + 15_000_000))["busy_ns"].sum()
    b = tv.utilization_heatmap(dlrm, bins=10, ranks=0, time_range=(t0 + 15_000_000, t0 + 10**9))["busy_ns"].sum()
    assert a + b == full


def test_heatmap_bad_options(dlrm: tv.Trace) -> None:
    with pytest.raises(tv.OptionError, match="did you mean 'overlap'"):
        tv.utilization_heatmap(dlrm, kind="overlapp")  # type: ignore[arg-type]
    with pytest.raises(tv.OptionError):
        tv.utilization_heatmap(dlrm, bins=0)
    with pytest.raises(tv.OptionError):
        tv.utilization_heatmap(dlrm, align="end")  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # OptionError is a ValueError too
        tv.utilization_heatmap(dlrm, bin_ns=-5)


def test_pace_by_construction(tmp_path: Path) -> None:
    gpu = [jb.compute(10 + 100 * i, 10 + i, name="k") for i in range(5)] + [jb.compute(5, 3, name="other")]
    trace = jb.load_job(tmp_path, {0: gpu, 1: gpu[:2]}, [(1, 0, 1000)])
    pace = tv.kernel_pace(trace, name="k")
    assert pace["rank"].tolist() == [0] * 5 + [1] * 2
    r0 = pace[pace["rank"] == 0]
    assert r0["occurrence"].tolist() == [0, 1, 2, 3, 4]
    assert r0["dur_ns"].tolist() == [10_000, 11_000, 12_000, 13_000, 14_000]
    assert r0["gap_ns"].tolist() == [-1, 100_000, 100_000, 100_000, 100_000]
    assert r0["t_ns"].tolist() == [10_000 + 100_000 * i for i in range(5)]
    assert (pace["step"] == 1).all() and (pace["stream"] == jb.COMPUTE_STREAM).all()
    both = tv.kernel_pace(trace, name="^(k|other)$", match="regex")
    assert set(both["name"]) == {"k", "other"} and len(both) == 5 + 1 + 2


def test_pace_unknown_name_lists_close_matches(dlrm: tv.Trace) -> None:
    with pytest.raises(tv.TraceSelectionError) as err:
        tv.kernel_pace(dlrm, name="volta_sgemm_128x32_nx")
    message = str(err.value)
    assert message.startswith("unknown kernel 'volta_sgemm_128x32_nx'; the trace has: ")
    first = message.split("the trace has: ")[1].split(", ")[:3]
    assert "volta_sgemm_128x32_nt" in first and all(n.startswith("volta_sgemm") for n in first)
    pace = tv.kernel_pace(dlrm, name="volta_sgemm_128x32_nt")
    assert len(pace) == 56 and set(pace["rank"]) == set(range(8))


def test_cpu_only_trace_gives_empty_frames_and_warns() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        hm = tv.utilization_heatmap(trace)
    assert hm.empty and list(hm.columns)[:3] == ["rank", "device", "bin"]
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        pace = tv.kernel_pace(trace, name="anything")
    assert pace.empty and "dur_ns" in pace.columns


def test_many_bins_on_a_long_trace(tmp_path: Path) -> None:
    # Three hours between two kernels, a million bins: k * span would overflow int64.
    hours = 3 * 3600 * 1e6
    trace = jb.load_job(tmp_path, {0: [jb.compute(10, 100), jb.compute(hours, 100)]})
    hm = tv.utilization_heatmap(trace, bins=1_000_000)
    assert hm["busy_ns"].sum() == 200_000
    assert hm["bin_end_ns"].iloc[-1] == int(hours + 100 - 10) * 1000
    assert (np.diff(hm["bin_start_ns"].to_numpy()) > 0).all()
