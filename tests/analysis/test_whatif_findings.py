"""Findings' saving_ns / saving_pct / change come from tv.what_if with the change each rule's fix implies."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.findings import FINDING_COLUMNS
from jupyter_traceview.analysis.whatif.saving import RULE_CHANGES, rule_changes

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def sample() -> tv.Trace:
    return tv.load(tv.sample_path())


def test_findings_savings_are_the_what_if_of_their_fix(sample: tv.Trace) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        f = tv.findings(sample)
    cols = list(FINDING_COLUMNS)
    assert cols[cols.index("time_at_stake_pct") + 1 : cols.index("time_at_stake_pct") + 4] == [
        "saving_ns",
        "saving_pct",
        "change",
    ]
    assert f["saving_ns"].dtype == np.int64 and f["saving_pct"].dtype == np.float64
    assert (f["saving_ns"] >= 0).all()
    with_change = 0
    for _, row in f.iterrows():
        changes = rule_changes(row["id"], tv.FindingRules().as_dict())
        if not changes:
            assert row["saving_ns"] == 0 and row["saving_pct"] == 0 and row["change"] == ""
            continue
        with_change += 1
        assert row["change"] == " + ".join(c.describe() for c in changes)
        rows = tv.what_if(sample, *changes)
        per_rank = rows.groupby("rank").agg(saving=("saving_ns", "median"), step=("measured_ns", "median"))
        named = per_rank.loc[per_rank.index.isin(row["ranks"])] if row["ranks"] else per_rank
        best = named.sort_values("saving", ascending=False, kind="stable").iloc[0]
        assert row["saving_ns"] == max(int(np.floor(best["saving"])), 0)
        assert row["saving_pct"] == pytest.approx(row["saving_ns"] / best["step"] * 100)
    assert with_change >= 3
    # Ranked by saving, then time at stake.
    key = list(zip((-f["saving_ns"]).tolist(), (-f["time_at_stake_ns"]).tolist(), strict=True))
    assert key == sorted(key)
    assert f["saving_ns"].iloc[0] > 0


def test_every_mapped_rule_exists_and_is_documented() -> None:
    from jupyter_traceview.analysis.findings.registry import all_rules

    ids = {r.id for r in all_rules()}
    assert set(RULE_CHANGES) <= ids
    doc = (Path(__file__).resolve().parents[2] / "docs" / "semantics.md").read_text()
    section = doc.split("## What-if replay", 1)[1]
    for rule_id in RULE_CHANGES:
        assert f"`{rule_id}`" in section, rule_id
    assert rule_changes("slow_iteration") == ()


def test_roofline_scaling_saves_at_most_what_removing_the_gemms_saves() -> None:
    """The H200 matmul trace (record_shapes): gemms at their roofline time save part of their time."""
    trace = tv.load(DATA / "h200_cuda" / "matmul")
    roof = tv.what_if(trace, tv.changes.ScaleKernels(family="gemm", to_roofline=True))
    gone = tv.what_if(trace, tv.changes.ScaleKernels(family="gemm", factor=0))
    assert (roof["saving_ns"] > 0).all()
    assert (roof["saving_ns"] <= gone["saving_ns"]).all()
