"""temporal_breakdown and comm_comp_overlap: answers by construction, bad input, and HTA.

HTA parity: on every folder HTA loads, HTA's number is reproduced by applying HTA's rules
to our data (``hta_rules.hta_view``), and the rules that make our number differ are named
per folder: with those rules off, the view gives exactly our number (docs/semantics.md).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb
from tests.analysis import hta_rules as hr
from tests.analysis.tiny import ALLREDUCE, GEMM, US, cpu_only_events, load, timeline_events
from tests.conftest import KINETO_FOLDERS

# ---------------------------------------------------------------- by construction


def test_temporal_breakdown_by_construction(tmp_path: Path) -> None:
    row = tv.temporal_breakdown(load(tmp_path / "r.json", timeline_events())).iloc[0]
    assert row["span_ns"] == 210 * US
    assert row["idle_ns"] == 90 * US
    assert row["compute_ns"] == 70 * US
    assert row["non_compute_ns"] == 50 * US
    assert row["idle_pct"] == pytest.approx(100 * 90 / 210)
    assert row["compute_pct"] == pytest.approx(100 * 70 / 210)
    assert row["non_compute_pct"] == pytest.approx(100 * 50 / 210)


def test_sync_records_are_not_work(tmp_path: Path) -> None:
    # A Stream Sync after the last kernel neither extends the span nor counts as busy.
    events = [*kb.launch(GEMM, 0, 100, 10, corr=1), kb.sync("Stream Sync", 110, 500, corr=2)]
    row = tv.temporal_breakdown(load(tmp_path / "r.json", events)).iloc[0]
    assert (row["span_ns"], row["idle_ns"], row["compute_ns"]) == (10 * US, 0, 10 * US)


def test_comm_comp_overlap_by_construction(tmp_path: Path) -> None:
    row = tv.comm_comp_overlap(load(tmp_path / "r.json", timeline_events())).iloc[0]
    assert row["comm_ns"] == 70 * US
    assert row["compute_ns"] == 70 * US
    assert row["overlap_ns"] == 30 * US
    assert row["exposed_comm_ns"] == 40 * US
    assert row["overlap_pct"] == pytest.approx(100 * 30 / 70)


def test_overlap_on_one_stream_of_comm_is_not_double_counted(tmp_path: Path) -> None:
    # Two all-reduces on two streams overlap each other and one compute kernel: the
    # communication time is their union (150), the overlap the part under compute (50).
    events = [
        *kb.launch(ALLREDUCE, 0, 100, 100, corr=1, stream=20),
        *kb.launch(ALLREDUCE, 1, 150, 100, corr=2, stream=21),
        *kb.launch(GEMM, 2, 200, 100, corr=3, stream=7),
    ]
    row = tv.comm_comp_overlap(load(tmp_path / "r.json", events)).iloc[0]
    assert (row["comm_ns"], row["overlap_ns"], row["exposed_comm_ns"]) == (150 * US, 50 * US, 100 * US)


def test_no_communication_gives_nan_overlap(tmp_path: Path) -> None:
    row = tv.comm_comp_overlap(load(tmp_path / "r.json", kb.launch(GEMM, 0, 10, 5, corr=1))).iloc[0]
    assert row["comm_ns"] == 0 and row["overlap_ns"] == 0 and np.isnan(row["overlap_pct"])


def test_time_range_clips(tmp_path: Path) -> None:
    trace = load(tmp_path / "r.json", timeline_events())
    t0 = trace.rank_data(0).events["ts_ns"].min()  # the step starts at 0 us
    row = tv.temporal_breakdown(trace, time_range=(t0 + 130 * US, t0 + 215 * US)).iloc[0]
    # Window [130, 215): work [130,200) and memcpy [210,215); compute [130,170).
    assert row["span_ns"] == 85 * US
    assert row["idle_ns"] == 10 * US
    assert row["compute_ns"] == 40 * US


def test_rank_column_and_multi_rank(tmp_path: Path) -> None:
    kb.write(tmp_path / "run" / "rank0.json", kb.doc(kb.launch(GEMM, 0, 10, 5, corr=1), rank=0, world_size=2))
    kb.write(tmp_path / "run" / "rank1.json", kb.doc(kb.launch(GEMM, 0, 10, 7, corr=1), rank=1, world_size=2))
    trace = tv.load(tmp_path / "run", cache=False)
    tb = tv.temporal_breakdown(trace)
    assert tb["rank"].tolist() == [0, 1] and tb["compute_ns"].tolist() == [5 * US, 7 * US]
    assert tv.temporal_breakdown(trace, ranks=1)["rank"].tolist() == [1]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("fn", [tv.temporal_breakdown, tv.comm_comp_overlap])
def test_cpu_only_gives_empty_frame_and_warning(tmp_path: Path, fn) -> None:
    trace = load(tmp_path / "r.json", cpu_only_events())
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        out = fn(trace)
    assert out.empty and "rank" in out.columns and len(out.columns) >= 6


def test_real_cpu_only_trace() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    with pytest.warns(tv.TraceviewWarning):
        out = tv.temporal_breakdown(trace)
    assert list(out.columns) == [
        "rank",
        "idle_ns",
        "compute_ns",
        "non_compute_ns",
        "span_ns",
        "idle_pct",
        "compute_pct",
        "non_compute_pct",
    ]
    assert out.dtypes["idle_ns"] == np.int64 and out.dtypes["idle_pct"] == np.float64


@pytest.mark.parametrize("fn", [tv.temporal_breakdown, tv.comm_comp_overlap])
def test_unknown_rank_or_iteration(dlrm: tv.Trace, fn) -> None:
    with pytest.raises(tv.TraceSelectionError, match="unknown rank 9"):
        fn(dlrm, ranks=[9])
    with pytest.raises(tv.TraceSelectionError, match="unknown iteration 3"):
        fn(dlrm, iterations=3)


def test_iterations_scope(dlrm: tv.Trace) -> None:
    pd.testing.assert_frame_equal(tv.temporal_breakdown(dlrm, iterations=10), tv.temporal_breakdown(dlrm))


# ---------------------------------------------------------------- HTA

#: HTA's rules that make its temporal breakdown / overlap differ from ours, per folder
#: (docs/semantics.md says why, with both numbers).
TEMPORAL_DIFFERENCES: dict[str, tuple[str, ...]] = {
    "dlrm_8rank_v100": (),
    "hta_dlrm_2of128_ranks": ("drop_last_step",),
    "h100_bert_small": ("round_to_us",),
    "hta_alexnet": ("syncs_are_work", "wait_event_is_compute"),
    "hta_mi250_rocm": ("round_to_us",),
    "hta_triton": ("stream_cpu_ops", "round_to_us"),
    "h200_train": ("drop_last_step", "round_to_us"),
}
OVERLAP_DIFFERENCES: dict[str, tuple[str, ...]] = {
    "dlrm_8rank_v100": (),
    "hta_dlrm_2of128_ranks": ("drop_last_step",),
}
HTA_TEMPORAL = [f for f in KINETO_FOLDERS if hr.hta_csv(f, "temporal_breakdown") is not None]
HTA_OVERLAP = [f for f in KINETO_FOLDERS if hr.hta_csv(f, "comm_comp_overlap") is not None]


def close_pct(ours: pd.Series, hta: pd.Series) -> bool:
    """Within 0.5 percentage points (NaN matches NaN)."""
    a, b = ours.to_numpy(dtype=float), hta.to_numpy(dtype=float)
    return bool(np.all((np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= 0.5)))


def close_us(ours_ns: pd.Series, hta_us: pd.Series) -> bool:
    """Within 1% relative or 1 us (HTA rounds to the microsecond)."""
    a, b = ours_ns.to_numpy(dtype=float) / US, hta_us.to_numpy(dtype=float)
    return bool(np.all(np.abs(a - b) <= np.maximum(0.01 * np.abs(b), 1.0)))


def temporal_matches(ours: pd.DataFrame, hta: pd.DataFrame) -> bool:
    return (
        ours["rank"].tolist() == hta["rank"].tolist()
        and close_us(ours["span_ns"], hta["kernel_time(us)"])
        and close_us(ours["idle_ns"], hta["idle_time(us)"])
        and close_us(ours["compute_ns"], hta["compute_time(us)"])
        and close_us(ours["non_compute_ns"], hta["non_compute_time(us)"])
        and close_pct(ours["idle_pct"], hta["idle_time_pctg"])
        and close_pct(ours["compute_pct"], hta["compute_time_pctg"])
        and close_pct(ours["non_compute_pct"], hta["non_compute_time_pctg"])
    )


@pytest.fixture(scope="module")
def traces() -> dict[str, tv.Trace]:
    out = {}
    for f in HTA_TEMPORAL + HTA_OVERLAP:
        out[f] = tv.load(KINETO_FOLDERS[f], cache=False)
    return out


def test_every_hta_folder_is_classified() -> None:
    assert set(HTA_TEMPORAL) == set(TEMPORAL_DIFFERENCES)
    assert set(HTA_OVERLAP) <= set(KINETO_FOLDERS)


@pytest.mark.parametrize("folder", HTA_TEMPORAL)
def test_temporal_hta_rules_reproduce_hta(traces: dict[str, tv.Trace], folder: str) -> None:
    hta = hr.hta_csv(folder, "temporal_breakdown")
    assert hta is not None
    assert temporal_matches(tv.temporal_breakdown(hr.hta_view(traces[folder], hr.TEMPORAL)), hta)


@pytest.mark.parametrize("folder", HTA_TEMPORAL)
def test_temporal_differs_from_hta_only_by_the_named_rules(traces: dict[str, tv.Trace], folder: str) -> None:
    trace = traces[folder]
    hta = hr.hta_csv(folder, "temporal_breakdown")
    named = TEMPORAL_DIFFERENCES[folder]
    ours = tv.temporal_breakdown(trace)
    # Without the named rules, HTA's other rules change nothing on this trace ...
    rest = dataclasses.replace(hr.TEMPORAL, **{r: False for r in named})
    pd.testing.assert_frame_equal(tv.temporal_breakdown(hr.hta_view(trace, rest)), ours)
    # ... so ours equals HTA's where no rule is named, and differs where one is.
    if named:
        exact = np.array_equal(ours["span_ns"] // US, hta["kernel_time(us)"]) and np.array_equal(
            ours["compute_ns"] // US, hta["compute_time(us)"]
        )
        assert not exact
    else:
        assert temporal_matches(ours, hta)


def test_temporal_dlrm_equals_hta_to_the_microsecond(dlrm: tv.Trace) -> None:
    hta = hr.hta_csv("dlrm_8rank_v100", "temporal_breakdown")
    ours = tv.temporal_breakdown(dlrm)
    assert (ours["idle_ns"] // US).tolist() == hta["idle_time(us)"].tolist()
    assert (ours["compute_ns"] // US).tolist() == hta["compute_time(us)"].tolist()
    assert (ours["non_compute_ns"] // US).tolist() == hta["non_compute_time(us)"].tolist()
    assert ours["idle_pct"].round(2).tolist() == hta["idle_time_pctg"].tolist()


@pytest.mark.parametrize("folder", HTA_OVERLAP)
def test_overlap_hta_rules_reproduce_hta(traces: dict[str, tv.Trace], folder: str) -> None:
    hta = hr.hta_csv(folder, "comm_comp_overlap")
    assert hta is not None
    trace = traces[folder]
    if folder == "hta_cpu_only":
        # HTA gives NaN for the rank; we leave the rank out, with a warning.
        assert hta["comp_comm_overlap_pctg"].isna().all()
        with pytest.warns(tv.TraceviewWarning):
            assert tv.comm_comp_overlap(trace).empty
        return
    view = tv.comm_comp_overlap(hr.hta_view(trace, hr.OVERLAP))
    assert view["rank"].tolist() == hta["rank"].tolist()
    assert close_pct(view["overlap_pct"], hta["comp_comm_overlap_pctg"])
    ours = tv.comm_comp_overlap(trace)
    if OVERLAP_DIFFERENCES.get(folder):
        assert not close_pct(ours["overlap_pct"], hta["comp_comm_overlap_pctg"])
        rest = dataclasses.replace(hr.OVERLAP, **{r: False for r in OVERLAP_DIFFERENCES[folder]})
        pd.testing.assert_frame_equal(tv.comm_comp_overlap(hr.hta_view(trace, rest)), ours)
    else:
        assert close_pct(ours["overlap_pct"], hta["comp_comm_overlap_pctg"])


def test_selecting_the_steps_hta_keeps_gives_hta_numbers(traces: dict[str, tv.Trace]) -> None:
    """HTA drops the last ProfilerStep of hta_dlrm_2of128_ranks (552); asking us for step
    551 alone gives HTA's numbers to the microsecond."""
    trace = traces["hta_dlrm_2of128_ranks"]
    hta = hr.hta_csv("hta_dlrm_2of128_ranks", "temporal_breakdown")
    assert hta is not None
    one = tv.temporal_breakdown(trace, iterations=551)
    assert (one["span_ns"] // US).tolist() == hta["kernel_time(us)"].tolist()
    assert (one["idle_ns"] // US).tolist() == hta["idle_time(us)"].tolist()
    assert temporal_matches(one, hta) and not temporal_matches(tv.temporal_breakdown(trace), hta)
    ov = tv.comm_comp_overlap(trace, iterations=551)
    assert ov["overlap_pct"].round(2).tolist() == [11.81, 20.05]
