"""kernel_launch_stats(): answers known by construction, and HTA's numbers on real traces."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.launch import LAUNCH_COLUMNS, RANK_COLUMNS
from tests import kineto_builder as kb
from tests.analysis.hta_view import (
    HTA_LAUNCH_STATS_NAMES,
    hta_end_us,
    hta_selection,
    hta_start_us,
    read_hta,
)
from tests.conftest import KINETO_FOLDERS


def _events() -> list[dict]:
    return [
        kb.step(1, 0, 1000),
        kb.cpu_op("aten::mm", 5, 30),
        *kb.launch("gemm", 10, 100, 50, corr=1),  # delay 100 - 15 = 85 us
        kb.cpu_op("aten::add", 40, 100),
        *kb.launch("add", 50, 300, 2, corr=2, cpu_dur=60),  # runtime and delay outlier, short
        kb.runtime("cudaGraphLaunch", 400, 10, corr=3),  # one call, two kernels
        kb.kernel("k1", 420, 5, corr=3),
        kb.kernel("k2", 425, 20, corr=3),
        kb.runtime("cudaMemcpyAsync", 500, 4, corr=4),
        kb.memcpy(503, 10, corr=4, stream=8),  # starts before the call returns: delay 0
        kb.runtime("hipLaunchKernel", 600, 3, corr=5),
        kb.kernel("hip_k", 610, 30, corr=5),
        kb.runtime("cudaStreamSynchronize", 700, 50, corr=6),
        kb.sync("Stream Sync", 705, 40, corr=6),  # a sync record is not a launch
        kb.kernel("orphan", 800, 10, corr=99),  # its launch call is not in the trace
    ]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    path = tmp_path_factory.mktemp("launch") / "r.json"
    return tv.load(kb.write(path, kb.doc(_events())), cache=False)


def test_per_launch_by_construction(small: tv.Trace) -> None:
    df = tv.kernel_launch_stats(small)
    assert list(df.columns) == list(LAUNCH_COLUMNS)
    assert df["name"].astype(str).tolist() == ["gemm", "add", "k1", "k2", "Memcpy HtoD (Pinned -> Device)", "hip_k"]
    assert df["launch_name"].astype(str).tolist() == [
        "cudaLaunchKernel",
        "cudaLaunchKernel",
        "cudaGraphLaunch",
        "cudaGraphLaunch",
        "cudaMemcpyAsync",
        "hipLaunchKernel",
    ]
    us = 1000
    assert (df["cpu_dur_ns"] // us).tolist() == [5, 60, 10, 10, 4, 3]
    assert (df["gpu_dur_ns"] // us).tolist() == [50, 2, 5, 20, 10, 30]
    assert (df["launch_delay_ns"] // us).tolist() == [85, 190, 10, 15, 0, 7]
    # the innermost enclosing event of the call: an operator, else the step annotation
    assert df["operator"].astype(str).tolist() == ["aten::mm", "aten::add", *["ProfilerStep#1"] * 4]
    assert (df["operator_eid"] >= 0).all()
    assert df["short_kernel"].tolist() == [False, True, True, False, False, False]
    assert df["runtime_outlier"].tolist() == [False, True, False, False, False, False]
    assert df["launch_delay_outlier"].tolist() == [False, True, False, False, False, False]
    assert df["stream"].tolist() == [7, 7, 7, 7, 8, 7]
    assert set(df["step"]) == {1}
    # eids link back to the events table
    ev = small.events(0).set_index("eid")
    assert (ev.loc[df["launch_eid"], "name"].astype(str).to_numpy() == df["launch_name"].astype(str).to_numpy()).all()
    assert (ev.loc[df["eid"], "ts_ns"].to_numpy() == df["gpu_ts_ns"].to_numpy()).all()


def test_per_rank_by_construction(small: tv.Trace) -> None:
    row = tv.kernel_launch_stats(small, per="rank").iloc[0]
    assert row["launches"] == 6 and row["kernels"] == 5
    assert row["short_kernels"] == 2 and row["short_kernel_pct"] == pytest.approx(100 * 2 / 6)
    assert row["launch_bound_pct"] == pytest.approx(100 * 2 / 6)  # add and k1 run shorter than their call
    assert row["runtime_outliers"] == 1 and row["launch_delay_outliers"] == 1
    assert row["cpu_dur_total_ns"] == (5 + 60 + 10 + 10 + 4 + 3) * 1000
    assert row["gpu_dur_total_ns"] == (50 + 2 + 5 + 20 + 10 + 30) * 1000
    delays = np.array([85, 190, 10, 15, 0, 7]) * 1000
    assert row["launch_delay_mean_ns"] == round(delays.mean())
    assert row["launch_delay_p50_ns"] == round(np.percentile(delays, 50))
    assert row["launch_delay_max_ns"] == 190_000
    assert row["runtime_outlier_cutoff_ns"] == 50_000 and row["launch_delay_outlier_cutoff_ns"] == 100_000


def test_thresholds_are_keywords(small: tv.Trace) -> None:
    df = tv.kernel_launch_stats(small, short_kernel_ns=30_000, runtime_outlier_ns=5_000, launch_delay_outlier_ns=0)
    assert df["short_kernel"].tolist() == [False, True, True, True, True, False]
    assert df["runtime_outlier"].tolist() == [False, True, True, True, False, False]
    assert df["launch_delay_outlier"].tolist() == [True, True, True, True, False, True]


def test_tukey_rule(small: tv.Trace) -> None:
    df = tv.kernel_launch_stats(small, outlier_rule="tukey", tukey_k=1.5)
    cpu = df["cpu_dur_ns"].to_numpy()
    q1, q3 = np.percentile(cpu, [25, 75])
    assert df["runtime_outlier"].tolist() == (cpu > np.floor(q3 + 1.5 * (q3 - q1))).tolist()
    assert df["runtime_outlier"].sum() == 1
    row = tv.kernel_launch_stats(small, per="rank", outlier_rule="tukey", tukey_k=1.5).iloc[0]
    assert row["runtime_outlier_cutoff_ns"] == np.floor(q3 + 1.5 * (q3 - q1))


def test_bad_options(small: tv.Trace) -> None:
    with pytest.raises(tv.OptionError, match=r"per=.* is not accepted"):
        tv.kernel_launch_stats(small, per="kernel")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="outlier_rule"):
        tv.kernel_launch_stats(small, outlier_rule="zscore")  # type: ignore[arg-type]
    with pytest.raises(tv.TraceSelectionError, match="rank"):
        tv.kernel_launch_stats(small, ranks=[3])


def test_scoping(dlrm: tv.Trace) -> None:
    full = tv.kernel_launch_stats(dlrm)
    one = tv.kernel_launch_stats(dlrm, ranks=[2])
    pd.testing.assert_frame_equal(
        one.drop(columns=["name", "kind", "launch_name", "operator"]),
        full[full["rank"] == 2].reset_index(drop=True).drop(columns=["name", "kind", "launch_name", "operator"]),
    )
    assert tv.kernel_launch_stats(dlrm, iterations=[10])["step"].eq(10).all()
    t0 = int(full["cpu_ts_ns"].min())
    part = tv.kernel_launch_stats(dlrm, time_range=(t0, t0 + 2_000_000))
    assert 0 < len(part) < len(full)
    assert tv.kernel_launch_stats(dlrm, time_range=(t0 - 10**9, t0 - 10**6)).empty  # empty, no warning
    # a launch in a window keeps its unclipped times
    merged = part.merge(full, on=["rank", "eid"], suffixes=("", "_full"))
    assert (merged["gpu_dur_ns"] == merged["gpu_dur_ns_full"]).all()


def test_cpu_only_warns_and_is_empty() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    for per, cols in (("launch", LAUNCH_COLUMNS), ("rank", RANK_COLUMNS)):
        with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
            df = tv.kernel_launch_stats(trace, per=per)  # type: ignore[arg-type]
        assert df.empty and list(df.columns) == list(cols)


def test_multi_rank_categories_union(tmp_path: Path) -> None:
    kb.write(tmp_path / "rank-0.json", kb.doc([*kb.launch("a", 0, 10, 5, corr=1)], rank=0, world_size=2))
    kb.write(tmp_path / "rank-1.json", kb.doc([*kb.launch("b", 0, 10, 5, corr=1)], rank=1, world_size=2))
    df = tv.kernel_launch_stats(tv.load(tmp_path, cache=False))
    assert df["name"].astype(str).tolist() == ["a", "b"] and df["rank"].tolist() == [0, 1]
    assert list(df["name"].cat.categories) == ["a", "b"]
    assert df["operator"].isna().all() and (df["operator_eid"] == -1).all()  # launched from top level


# ---------------------------------------------------------------------- against HTA
FOLDERS = [f for f in KINETO_FOLDERS if read_hta(f, "kernel_launch_stats") is not None]


def _as_hta(trace: tv.Trace, ours: pd.DataFrame) -> pd.DataFrame:
    """Our launches in HTA's units: us of the file's clock, ns traces rounded as HTA rounds."""
    parts = []
    for r, g in ours.groupby("rank"):
        cs = hta_start_us(trace, r, g["cpu_ts_ns"].to_numpy())
        ce = hta_end_us(trace, r, (g["cpu_ts_ns"] + g["cpu_dur_ns"]).to_numpy())
        gs = hta_start_us(trace, r, g["gpu_ts_ns"].to_numpy())
        ge = hta_end_us(trace, r, (g["gpu_ts_ns"] + g["gpu_dur_ns"]).to_numpy())
        parts.append(
            pd.DataFrame(
                {
                    "rank": r,
                    "correlation": g["correlation"].to_numpy(),
                    "cpu_duration": ce - cs,
                    "gpu_duration": ge - gs,
                    "launch_delay": np.maximum(0, gs - ce),
                }
            )
        )
    cols = ["rank", "correlation", "cpu_duration", "gpu_duration", "launch_delay"]
    out = pd.concat(parts) if parts else pd.DataFrame({c: [] for c in cols})
    return out[cols].astype(float).sort_values(cols).reset_index(drop=True)


@pytest.mark.parametrize("folder", FOLDERS)
def test_matches_hta_on_the_launches_hta_counts(folder: str) -> None:
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    hta = read_hta(folder, "kernel_launch_stats")
    assert hta is not None
    sel = hta_selection(trace)
    if folder == "hta_cpu_only":
        with pytest.warns(tv.TraceviewWarning):
            ours = tv.kernel_launch_stats(sel)
    else:
        ours = tv.kernel_launch_stats(sel)
    mine = _as_hta(trace, ours[ours["launch_name"].isin(HTA_LAUNCH_STATS_NAMES)])
    cols = list(mine.columns)
    theirs = hta[cols].astype(float).sort_values(cols).reset_index(drop=True)
    # Every launch, every number: identical once HTA's scope and rounding are applied.
    pd.testing.assert_frame_equal(mine, theirs)


def test_we_count_launches_hta_does_not() -> None:
    """HTA 0.5 counts only cudaLaunchKernel(ExC)/cudaMemcpyAsync/cudaMemsetAsync (see docs)."""
    expected = {"hta_mi250_rocm": (16, 0), "hta_triton": (1, 0), "h100_bert_small": (61, 39)}
    for folder, (ours_n, hta_n) in expected.items():
        trace = tv.load(KINETO_FOLDERS[folder], cache=False)
        assert len(tv.kernel_launch_stats(trace)) == ours_n
        hta = read_hta(folder, "kernel_launch_stats")
        assert hta is not None and len(hta) == hta_n


@pytest.mark.parametrize("rule", ["fixed", "tukey"])
@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "hta_alexnet", "hta_dlrm_2of128_ranks", "hta_mi250_rocm"])
def test_per_rank_row_from_the_launch_rows(folder: str, rule: str) -> None:
    """The summary row (computed on the launches unsorted, each array partitioned once for
    its percentiles) equals the figures the per-launch rows give, as the summary computed
    them before: on the launches in launch order, one ``np.percentile`` per figure."""
    from jupyter_traceview.analysis.launch import _tukey_fence

    trace = tv.load(KINETO_FOLDERS[folder], cache=False, progress=False)
    for scope in ({}, {"iterations": trace.iterations["step"].unique().tolist()[1:]} if len(trace.iterations) else {}):
        rows = tv.kernel_launch_stats(trace, per="rank", outlier_rule=rule, **scope)
        launches = tv.kernel_launch_stats(trace, outlier_rule=rule, **scope)
        assert len(rows) == launches["rank"].nunique() and (len(rows) > 0 or scope)
        for r, grp in launches.groupby("rank"):
            row = rows.set_index("rank").loc[r]
            cpu, gpu, delay = (grp[c].to_numpy() for c in ("cpu_dur_ns", "gpu_dur_ns", "launch_delay_ns"))

            def q(x: np.ndarray, p: float) -> int:
                return round(float(np.percentile(x, p)))

            want = {
                "launches": len(grp),
                "short_kernels": int(grp["short_kernel"].sum()),
                "launch_bound_pct": 100.0 * float((gpu < cpu).sum()) / len(grp),
                "runtime_outliers": int(grp["runtime_outlier"].sum()),
                "launch_delay_outliers": int(grp["launch_delay_outlier"].sum()),
                "cpu_dur_total_ns": int(cpu.sum()),
                "cpu_dur_mean_ns": round(float(cpu.mean())),
                "cpu_dur_p50_ns": q(cpu, 50),
                "cpu_dur_p99_ns": q(cpu, 99),
                "cpu_dur_max_ns": int(cpu.max()),
                "gpu_dur_total_ns": int(gpu.sum()),
                "gpu_dur_mean_ns": round(float(gpu.mean())),
                "gpu_dur_p50_ns": q(gpu, 50),
                "launch_delay_mean_ns": round(float(delay.mean())),
                "launch_delay_p50_ns": q(delay, 50),
                "launch_delay_p90_ns": q(delay, 90),
                "launch_delay_p99_ns": q(delay, 99),
                "launch_delay_max_ns": int(delay.max()),
            }
            if rule == "tukey":
                want["runtime_outlier_cutoff_ns"] = _tukey_fence(cpu, 3.0)
                want["launch_delay_outlier_cutoff_ns"] = _tukey_fence(delay, 3.0)
            assert {k: row[k] for k in want} == want, (folder, r)


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "hta_alexnet", "hta_mi250_rocm", "h100_bert_small"])
def test_per_rank_from_the_shared_activities(folder: str) -> None:
    """Inside a findings scope (shared activities), the summary rows come from the rank's
    GPU activities instead of a pass over every event: the same rows as outside, whole, in
    a window (which keeps the pass over the events) and for some ranks."""
    from jupyter_traceview.analysis._memo import shared_rank_facts

    trace = tv.load(KINETO_FOLDERS[folder], cache=False, progress=False)
    t0 = trace.t0_ns
    for kw in ({}, {"time_range": (t0 + 1_000_000, t0 + 20_000_000)}, {"ranks": trace.ranks[-1]}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tv.TraceviewWarning)
            want = tv.kernel_launch_stats(trace, per="rank", short_kernel_ns=5_000, **kw)
            with shared_rank_facts():
                got = tv.kernel_launch_stats(trace, per="rank", short_kernel_ns=5_000, **kw)
                again = tv.kernel_launch_stats(trace, per="rank", short_kernel_ns=5_000, **kw)
        pd.testing.assert_frame_equal(got, want, check_exact=True)
        pd.testing.assert_frame_equal(again, want, check_exact=True)
    assert len(want) > 0
