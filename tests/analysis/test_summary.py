"""summary(): the headline figures of the timeline analyses, and the CLI table showing them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.cli import main
from tests.analysis.tiny import US, load, timeline_events
from tests.conftest import KINETO_FOLDERS

NEW = [
    "idle_pct",
    "compute_ns",
    "compute_pct",
    "comm_ns",
    "overlap_pct",
    "exposed_comm_ns",
    "exposed_comm_pct",
    "gpu_start_ns",
    "gpu_end_ns",
]
OLD = [
    "rank",
    "events",
    "cpu_ops",
    "kernels",
    "gpu_activities",
    "iterations",
    "trace_span_ns",
    "gpu_span_ns",
    "gpu_busy_ns",
    "gpu_busy_pct",
]


def test_columns_kept_and_added(dlrm: tv.Trace) -> None:
    assert list(tv.summary(dlrm).columns) == OLD + NEW


def test_by_construction(tmp_path: Path) -> None:
    row = tv.summary(load(tmp_path / "r.json", timeline_events())).iloc[0]
    assert row["gpu_span_ns"] == 210 * US and row["gpu_busy_ns"] == 120 * US
    assert row["gpu_activities"] == 6  # 3 kernels, 1 memcpy, 1 sync, 1 more kernel
    assert row["idle_pct"] == pytest.approx(100 * 90 / 210)
    assert row["compute_ns"] == 70 * US and row["compute_pct"] == pytest.approx(100 * 70 / 210)
    assert row["comm_ns"] == 70 * US and row["overlap_pct"] == pytest.approx(100 * 30 / 70)
    assert row["exposed_comm_ns"] == 40 * US and row["exposed_comm_pct"] == pytest.approx(100 * 40 / 210)


def test_agrees_with_the_analyses(dlrm: tv.Trace) -> None:
    sm = tv.summary(dlrm)
    tb = tv.temporal_breakdown(dlrm)
    ov = tv.comm_comp_overlap(dlrm)
    assert sm["gpu_span_ns"].tolist() == tb["span_ns"].tolist()
    np.testing.assert_allclose(sm["idle_pct"], tb["idle_pct"])
    np.testing.assert_allclose(sm["idle_pct"] + sm["gpu_busy_pct"], 100)
    assert sm["compute_ns"].tolist() == tb["compute_ns"].tolist()
    assert sm["comm_ns"].tolist() == ov["comm_ns"].tolist()
    np.testing.assert_allclose(sm["overlap_pct"], ov["overlap_pct"])
    assert sm["exposed_comm_ns"].tolist() == ov["exposed_comm_ns"].tolist()
    # DLRM rank 0: 5 537 us of its 13 009 us GPU span only communicates.
    assert sm.loc[0, "exposed_comm_pct"] == pytest.approx(100 * 5537 / 13009)


def test_cpu_only_rank_keeps_its_row() -> None:
    row = tv.summary(tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)).iloc[0]
    assert row["comm_ns"] == 0 and row["compute_ns"] == 0
    assert all(np.isnan(row[c]) for c in ["idle_pct", "compute_pct", "overlap_pct", "exposed_comm_pct"])


def test_cli_table_shows_the_headline_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", "--sample", "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[1]
    for title in ("GPU busy", "compute", "exposed comm", "comm overlap"):
        assert title in header
    assert lines[11] == "" and lines[10].split()[0] == "7"  # one line per rank, then the headline
    rank0 = lines[3].split()
    assert rank0[0] == "0" and rank0[-3:] == ["7.9%", "42.6%", "4.5%"]


def test_count_steps_as_distinct_ints() -> None:
    """``summary._count_steps`` (a flag per value) against ``len(distinct_ints(steps[steps >= 0]))``,
    with -1 (no step), sparse and negative values, int32 and int64."""
    from jupyter_traceview.analysis._common import distinct_ints
    from jupyter_traceview.analysis.summary import _count_steps

    rng = np.random.default_rng(5)
    cases = [np.array([], dtype=np.int32), np.array([-1, -1], dtype=np.int32), np.array([0], dtype=np.int64)]
    for _ in range(60):
        n = int(rng.integers(1, 400))
        values = rng.integers(-1, int(rng.choice([3, 50, 10**7])), size=n)
        if rng.random() < 0.2:
            values[0] = -5  # below -1: the general path
        cases.append(values.astype(rng.choice([np.int32, np.int64])))
    for steps in cases:
        assert _count_steps(steps) == len(distinct_ints(steps[steps >= 0])), steps


@pytest.mark.parametrize("name", sorted(KINETO_FOLDERS))
def test_headline_with_ranks_is_the_two_calls(name: str) -> None:
    """``headline_with_ranks`` (one summary for both, what ``traceview summary`` prints) returns
    exactly ``headline(trace)`` and ``headline(trace, per_rank=True)``, whole and narrowed."""
    import pandas as pd

    from jupyter_traceview.analysis.headline import headline_with_ranks

    trace = tv.load(KINETO_FOLDERS[name], cache=False)
    t0, t1 = trace.t0_ns, trace.t0_ns + max(1, int(tv.headline(trace)["trace_span_ns"]) // 2)
    for t in (trace, trace.select(time_range=(t0, t1)), trace.select(ranks=trace.ranks[:1])):
        h, per_rank = headline_with_ranks(t)
        assert h == tv.headline(t)
        pd.testing.assert_frame_equal(per_rank, tv.headline(t, per_rank=True))
