"""kernel_breakdown and kernel_duration_distribution: by construction, bad input, and HTA."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb
from tests.analysis import hta_rules as hr
from tests.analysis.tiny import ALLREDUCE, GEMM, RELU, US, cpu_only_events, load, timeline_events
from tests.conftest import KINETO_FOLDERS

COPY = "void at::native::copy_kernel"


def load_ranks(root: Path, per_rank: list[list[dict[str, Any]]]) -> tv.Trace:
    n = len(per_rank)
    for r, events in enumerate(per_rank):
        kb.write(root / f"rank{r}.json", kb.doc(events, rank=r, world_size=n))
    return tv.load(root, cache=False)


def kernels(name: str, durations: list[float], *, start: float = 100, corr0: int = 1, **kw: Any) -> list[dict]:
    """Back-to-back launches of ``name`` with these durations (us), 10 us apart."""
    out: list[dict] = []
    t = start
    for i, d in enumerate(durations):
        out += kb.launch(name, t - 50, t, d, corr=corr0 + i, **kw)
        t += d + 10
    return out


# ---------------------------------------------------------------- by type


def test_by_type_by_construction(tmp_path: Path) -> None:
    df = tv.kernel_breakdown(load(tmp_path / "r.json", timeline_events()), by="type")
    assert list(df.columns) == ["rank", "kernel_type", "time_ns", "busy_pct"]
    got = dict(zip(df["kernel_type"].astype(str), df["time_ns"], strict=True))
    assert got == {
        "compute": 40 * US,
        "compute overlapping communication": 30 * US,
        "communication": 40 * US,
        "memory": 10 * US,
    }
    assert df["busy_pct"].sum() == pytest.approx(100)
    # Sorted by time, ties in label order.
    assert df["kernel_type"].astype(str).tolist()[:2] == ["compute", "communication"]


def test_by_type_three_way_overlap(tmp_path: Path) -> None:
    events = [
        *kb.launch(GEMM, 0, 100, 100, corr=1, stream=7),  # [100, 200)
        *kb.launch(ALLREDUCE, 1, 150, 100, corr=2, stream=20),  # [150, 250)
        kb.runtime("cudaMemcpyAsync", 2, 1, corr=3),
        kb.memcpy(180, 40, corr=3, stream=8),  # [180, 220)
    ]
    df = tv.kernel_breakdown(load(tmp_path / "r.json", events), by="type")
    got = dict(zip(df["kernel_type"].astype(str), df["time_ns"] // US, strict=True))
    assert got == {
        "compute": 50,
        "compute overlapping communication": 30 - 0,  # [150,180)
        "compute overlapping communication overlapping memory": 20,  # [180,200)
        "communication overlapping memory": 20,  # [200,220)
        "communication": 30,  # [220,250)
    }


def test_by_type_windows_add_up(tmp_path: Path) -> None:
    trace = load(tmp_path / "r.json", timeline_events())
    t0 = trace.rank_data(0).events["ts_ns"].min()
    whole = tv.kernel_breakdown(trace, by="type").set_index("kernel_type")["time_ns"]
    a = tv.kernel_breakdown(trace, by="type", time_range=(t0, t0 + 155 * US)).set_index("kernel_type")["time_ns"]
    b = tv.kernel_breakdown(trace, by="type", time_range=(t0 + 155 * US, t0 + 400 * US))
    b = b.set_index("kernel_type")["time_ns"]
    assert a.add(b, fill_value=0).astype(int).sort_index().equals(whole.sort_index())


# ---------------------------------------------------------------- by kernel


def test_by_kernel_by_construction(tmp_path: Path) -> None:
    events = [
        *kernels(RELU, [10, 20, 30], corr0=1),
        *kernels(GEMM, [100], start=300, corr0=10),
        *kernels(COPY, [5, 5], start=500, corr0=20),
        *kernels(ALLREDUCE, [40], start=600, corr0=30, stream=20),
    ]
    trace = load(tmp_path / "r.json", events)
    df = tv.kernel_breakdown(trace, top_k=1)
    assert list(df.columns) == [
        "rank",
        "kernel_type",
        "name",
        "count",
        "sum_ns",
        "mean_ns",
        "min_ns",
        "max_ns",
        "std_ns",
        "type_share_pct",
    ]
    assert df[["kernel_type", "name"]].astype(str).values.tolist() == [
        ["compute", GEMM],
        ["compute", "others"],
        ["communication", ALLREDUCE],
    ]
    others = df.iloc[1]
    durations = np.array([10, 20, 30, 5, 5]) * US
    assert others["count"] == 5 and others["sum_ns"] == durations.sum()
    assert others["mean_ns"] == pytest.approx(durations.mean())
    assert (others["min_ns"], others["max_ns"]) == (5 * US, 30 * US)
    assert others["std_ns"] == pytest.approx(durations.std(ddof=1))
    assert others["type_share_pct"] == pytest.approx(100 * 70 / 170)
    gemm = df.iloc[0]
    assert (gemm["count"], gemm["sum_ns"], gemm["std_ns"]) == (1, 100 * US, 0.0)
    # HTA's "others" would describe per-name totals (RELU 60, COPY 10): mean 35, max 60.
    hta = hr.hta_others(trace.events(0).query("kind == 'kernel' and gpu_class == 'compute'"), num_kernels=1)
    row = hta.set_index("name").loc["others"]
    assert (row["mean"], row["max"], row["min"]) == (35, 60, 10)


def test_top_k_none_keeps_every_kernel(tmp_path: Path) -> None:
    events = [*kernels(RELU, [10, 20, 30]), *kernels(GEMM, [100], start=300, corr0=10)]
    df = tv.kernel_breakdown(load(tmp_path / "r.json", events), top_k=None)
    assert sorted(df["name"].astype(str)) == sorted([RELU, GEMM])
    assert tv.kernel_breakdown(load(tmp_path / "r2.json", events), top_k=0)["name"].astype(str).tolist() == ["others"]


def test_top_k_is_chosen_over_all_ranks(tmp_path: Path) -> None:
    # Rank 0 spends most time in RELU, rank 1 in GEMM; over both, GEMM leads: top_k=1
    # shows GEMM on both ranks, so their rows line up.
    trace = load_ranks(
        tmp_path / "run",
        [
            [*kernels(RELU, [50]), *kernels(GEMM, [10], start=300, corr0=10)],
            [*kernels(RELU, [5]), *kernels(GEMM, [100], start=300, corr0=10)],
        ],
    )
    df = tv.kernel_breakdown(trace, top_k=1)
    assert df[["rank", "name"]].astype(str).values.tolist() == [
        ["0", GEMM],
        ["0", "others"],
        ["1", GEMM],
        ["1", "others"],
    ]


def test_counts_and_sums_cover_every_activity(dlrm: tv.Trace) -> None:
    df = tv.kernel_breakdown(dlrm)
    ev = dlrm.events()
    work = ev[ev["gpu_class"].isin(["compute", "communication", "memory"])]
    assert df["count"].sum() == len(work)
    assert df["sum_ns"].sum() == work["dur_ns"].sum()
    per = df.groupby(["rank", "kernel_type"], observed=True)["type_share_pct"].sum()
    np.testing.assert_allclose(per, 100)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"by": "name"}, "by=.name. is not accepted"), ({"top_k": -1}, "top_k"), ({"top_k": 2.5}, "top_k")],
)
def test_bad_options(dlrm: tv.Trace, kwargs: dict, match: str) -> None:
    with pytest.raises(tv.OptionError, match=match):
        tv.kernel_breakdown(dlrm, **kwargs)


@pytest.mark.parametrize(
    "call",
    [
        lambda t: tv.kernel_breakdown(t),
        lambda t: tv.kernel_breakdown(t, by="type"),
        lambda t: tv.kernel_duration_distribution(t),
    ],
)
def test_cpu_only(tmp_path: Path, call) -> None:
    trace = load(tmp_path / "r.json", cpu_only_events())
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        df = call(trace)
    assert df.empty and "rank" in df.columns and "kernel_type" in df.columns


def test_unknown_iteration_or_rank(dlrm: tv.Trace) -> None:
    with pytest.raises(tv.TraceSelectionError, match="unknown iteration 11"):
        tv.kernel_breakdown(dlrm, iterations=[10, 11])
    with pytest.raises(tv.TraceSelectionError, match="unknown rank 12"):
        tv.kernel_duration_distribution(dlrm, ranks=[0, 12])
    with pytest.raises(tv.TraceSelectionError, match="unknown iteration 9"):
        tv.kernel_breakdown(dlrm, by="type", iterations=9)


# ---------------------------------------------------------------- duration distribution


def test_distribution_flags_the_slow_rank(tmp_path: Path) -> None:
    means = [10, 11, 12, 13, 40]
    trace = load_ranks(
        tmp_path / "run",
        [[*kernels(GEMM, [m - 1, m + 1]), *kernels(RELU, [1, 1], start=500, corr0=10)] for m in means],
    )
    df = tv.kernel_duration_distribution(trace, top_k=1)
    assert df["name"].astype(str).unique().tolist() == [GEMM]
    assert df["rank"].tolist() == [0, 1, 2, 3, 4]
    assert df["mean_ns"].tolist() == [m * US for m in means]
    assert (df["median_mean_ns"] == 12 * US).all()
    # |mean - median| = 2, 1, 0, 1, 28 us: MAD 1 us.
    np.testing.assert_allclose(df["robust_z"], [0.6745 * d for d in (-2, -1, 0, 1, 28)])
    assert df["outlier"].tolist() == [False, False, False, False, True]
    assert df["deviation_pct"].iloc[4] == pytest.approx(100 * 28 / 12)
    assert df["std_ns"].tolist() == [pytest.approx(np.sqrt(2) * US)] * 5


def test_distribution_needs_three_ranks_and_a_real_difference(tmp_path: Path) -> None:
    two = load_ranks(tmp_path / "two", [kernels(GEMM, [10]), kernels(GEMM, [90])])
    df = tv.kernel_duration_distribution(two)
    assert df["robust_z"].isna().all() and not df["outlier"].any()
    # MAD 0 (four equal ranks): any difference has an infinite z, but 4 % is not flagged.
    small = load_ranks(tmp_path / "small", [kernels(GEMM, [100])] * 4 + [kernels(GEMM, [104])])
    df = tv.kernel_duration_distribution(small)
    assert np.isinf(df["robust_z"].iloc[4]) and not df["outlier"].any()
    big = load_ranks(tmp_path / "big", [kernels(GEMM, [100])] * 4 + [kernels(GEMM, [110])])
    assert tv.kernel_duration_distribution(big)["outlier"].tolist() == [False] * 4 + [True]


def test_distribution_on_dlrm(dlrm: tv.Trace) -> None:
    df = tv.kernel_duration_distribution(dlrm, top_k=3)
    assert df["name"].nunique() == 3
    # The all-reduce of ranks 4 and 5 averages 78 and 65 us against a median of 570 us.
    ar = df[df["name"].astype(str).str.startswith("ncclKernel_AllReduce")]
    assert ar.loc[ar["outlier"], "rank"].tolist() == [4, 5]


# ---------------------------------------------------------------- HTA

LABELS = {"COMPUTATION": "compute", "COMMUNICATION": "communication", "MEMORY": "memory"}
#: HTA's rules that make its kernel breakdown differ from ours, per folder.
KERNEL_DIFFERENCES: dict[str, tuple[str, ...]] = {
    "dlrm_8rank_v100": (),
    "hta_dlrm_2of128_ranks": ("drop_last_step",),
    "h100_bert_small": ("round_to_us",),
    "hta_alexnet": ("wait_event_is_compute",),
    "hta_mi250_rocm": ("round_to_us",),
    "hta_triton": ("stream_cpu_ops", "round_to_us"),
    "h200_train": ("drop_last_step", "round_to_us"),
}
#: HTA's breakdown by kernel type merges intervals: a negative duration adds nothing there.
BY_TYPE = dataclasses.replace(hr.KERNELS, negative_durations=False)
HTA_FOLDERS = [f for f in KINETO_FOLDERS if hr.hta_csv(f, "kernel_breakdown.0") is not None and f != "hta_cpu_only"]


def _label(hta_type: str) -> str:
    return " overlapping ".join(LABELS[p] for p in hta_type.split(" overlapping "))


@pytest.fixture(scope="module")
def traces() -> dict[str, tv.Trace]:
    return {f: tv.load(KINETO_FOLDERS[f], cache=False) for f in HTA_FOLDERS}


def by_type_summed(trace: tv.Trace) -> pd.Series:
    df = tv.kernel_breakdown(trace, by="type")
    return df.groupby(df["kernel_type"].astype(str))["time_ns"].sum() / US


def hta_by_type(folder: str) -> pd.Series:
    hta = hr.hta_csv(folder, "kernel_breakdown.0")
    assert hta is not None
    hta = hta[hta["sum"] > 0]  # HTA lists zero-length segments too
    return pd.Series(hta["sum"].to_numpy(dtype=float), index=hta["kernel_type"].map(_label))


def by_kernel(trace: tv.Trace) -> pd.DataFrame:
    df = tv.kernel_breakdown(trace, top_k=None)
    df = df.assign(kernel_type=df["kernel_type"].astype(str), name=df["name"].astype(str))
    return df.set_index(["rank", "kernel_type", "name"]).sort_index()


def hta_by_kernel(folder: str) -> pd.DataFrame:
    hta = hr.hta_csv(folder, "kernel_breakdown_all.1")
    assert hta is not None
    hta = hta.assign(kernel_type=hta["kernel_type"].map(LABELS))
    return hta.set_index(["rank", "kernel_type", "name"]).sort_index()


def by_kernel_matches(ours: pd.DataFrame, hta: pd.DataFrame) -> bool:
    if list(ours.index) != list(hta.index):
        return False
    pairs = [("sum_ns", "sum (us)"), ("max_ns", "max (us)"), ("min_ns", "min (us)"), ("mean_ns", "mean (us)")]
    for o, h in [*pairs, ("std_ns", "stddev")]:
        a, b = ours[o].to_numpy(dtype=float) / US, hta[h].to_numpy(dtype=float)
        if not np.all(np.abs(a - b) <= np.maximum(0.01 * np.abs(b), 0.01)):
            return False
    return True


def test_folders() -> None:
    assert set(HTA_FOLDERS) == set(KERNEL_DIFFERENCES)


@pytest.mark.parametrize("folder", HTA_FOLDERS)
def test_by_type_against_hta(traces: dict[str, tv.Trace], folder: str) -> None:
    """HTA adds the segments of all ranks: the sum over ranks of ours, on HTA's events."""
    trace = traces[folder]
    hta = hta_by_type(folder).sort_index()
    view = by_type_summed(hr.hta_view(trace, BY_TYPE)).sort_index()
    pd.testing.assert_index_equal(view.index, hta.index)
    np.testing.assert_allclose(view, hta, rtol=0.01, atol=1)
    ours = by_type_summed(trace).sort_index()
    named = KERNEL_DIFFERENCES[folder]
    rest = dataclasses.replace(BY_TYPE, **{r: False for r in named})
    pd.testing.assert_series_equal(by_type_summed(hr.hta_view(trace, rest)).sort_index(), ours)
    if named:
        assert not (ours.index.equals(hta.index) and np.array_equal(ours.to_numpy() // 1, hta.to_numpy()))
    else:
        np.testing.assert_allclose(ours, hta, rtol=0.01, atol=1)


@pytest.mark.parametrize("folder", HTA_FOLDERS)
def test_by_kernel_against_hta(traces: dict[str, tv.Trace], folder: str) -> None:
    """Every kernel's sum, max, min, mean and std per rank (HTA's frame with no 'others')."""
    trace = traces[folder]
    hta = hta_by_kernel(folder)
    assert by_kernel_matches(by_kernel(hr.hta_view(trace, hr.KERNELS)), hta)
    named = KERNEL_DIFFERENCES[folder]
    ours = by_kernel(trace)
    rest = dataclasses.replace(hr.KERNELS, **{r: False for r in named})
    pd.testing.assert_frame_equal(by_kernel(hr.hta_view(trace, rest)), ours)
    assert by_kernel_matches(ours, hta) is (not named)


def test_hta_others_row_describes_per_name_totals(dlrm: tv.Trace) -> None:
    """HTA's 'others' statistics are those of per-name totals, not of kernels (rank 0)."""
    hta = hr.hta_csv("dlrm_8rank_v100", "kernel_breakdown.1")
    assert hta is not None
    row = hta[(hta["name"] == "others") & (hta["rank"] == 0) & (hta["kernel_type"] == "COMPUTATION")].iloc[0]
    compute = dlrm.events(0).query("gpu_class == 'compute'")
    # HTA's rule, applied to our events, gives HTA's row ...
    rep = hr.hta_others(compute).set_index("name").loc["others"]
    for ours_col, hta_col in [("sum", "sum (us)"), ("max", "max (us)"), ("min", "min (us)"), ("mean", "mean (us)")]:
        assert rep[ours_col] == pytest.approx(row[hta_col])
    assert rep["std"] == pytest.approx(row["stddev"])
    # ... while our 'others' row (the same 139 kernels here) has per-kernel statistics.
    ours = tv.kernel_breakdown(dlrm, ranks=0)
    others = ours[(ours["name"] == "others") & (ours["kernel_type"] == "compute")].iloc[0]
    assert others["sum_ns"] == row["sum (us)"] * US
    members = compute[~compute["name"].isin(ours["name"].astype(str))]
    assert others["count"] == len(members) == 139
    assert others["mean_ns"] == pytest.approx(members["dur_ns"].mean())
    assert others["max_ns"] == members["dur_ns"].max() == 19 * US  # HTA: 29 us, a per-name total
    assert others["mean_ns"] != pytest.approx(row["mean (us)"] * US)


def test_hta_kept_rows_lose_their_statistics_past_num_kernels(dlrm: tv.Trace) -> None:
    """With more than 10 compute kernels, HTA's kept rows get max = min = mean = sum, std 0."""
    hta = hr.hta_csv("dlrm_8rank_v100", "kernel_breakdown.1")
    assert hta is not None
    gemm = "volta_sgemm_128x32_nt"
    row = hta[(hta["name"] == gemm) & (hta["rank"] == 0)].iloc[0]
    assert (row["sum (us)"], row["max (us)"], row["min (us)"], row["mean (us)"], row["stddev"]) == (47, 47, 47, 47, 0)
    rep = hr.hta_others(dlrm.events(0).query("gpu_class == 'compute'")).set_index("name").loc[gemm]
    assert (rep["sum"], rep["max"], rep["min"], rep["mean"], rep["std"]) == (47, 47, 47, 47, 0)
    ours = tv.kernel_breakdown(dlrm, ranks=0).set_index("name").loc[gemm]
    assert (ours["count"], ours["sum_ns"], ours["min_ns"], ours["max_ns"]) == (7, 47 * US, 5 * US, 9 * US)
    assert ours["mean_ns"] == pytest.approx(47 * US / 7)
