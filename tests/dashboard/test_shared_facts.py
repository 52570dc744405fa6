"""The dashboard's one store of per-rank facts, shared by its findings and every tab.

``DashboardData`` hands the findings (``findings_and_explain(rank_memo=)``) and every
analysis of the whole trace the same store (``analysis/_memo.py``): each rank's GPU
activities are computed once for all the tabs. Pinned here: every tab is what it is with a
store per analysis (as before); the activities are computed once per rank and variant; the store keeps those facts only
(``KEPT_FACTS``: not the what-if model's graphs); a time range's frames keep a store of their
own (the ranges a user selects do not grow it).
"""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import _gpu
from jupyter_traceview.dashboard.data import KEPT_FACTS, DashboardData


@pytest.fixture(scope="module")
def trace() -> tv.Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.load(tv.sample_path(), cache=False, progress=False)


def _every_tab(data: DashboardData) -> dict[str, Any]:
    data.payload()
    parts = {}
    for tab, _ in data.tabs:
        out = data.tab(tab)
        parts[tab] = {k: out.get(k) for k in ("figures", "findings", "checks", "tables", "notes")}
    return parts


def test_every_tab_is_the_same_with_one_store_as_with_a_store_per_analysis(trace: tv.Trace) -> None:
    shared = DashboardData(trace)
    shared_parts = _every_tab(shared)
    assert shared._rank_memo  # the findings and the tabs filled it
    kept = {key[0] if isinstance(key, tuple) else key for _, key in shared._rank_memo}
    assert kept <= KEPT_FACTS
    assert "activities" in kept
    apart = DashboardData(trace)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(DashboardData, "_memo_for", lambda self, time_range: None)
        apart_parts = _every_tab(apart)
    assert not apart._rank_memo
    assert shared_parts == apart_parts
    assert shared._frames.keys() == apart._frames.keys()
    for key, frame in shared._frames.items():
        if isinstance(frame, pd.DataFrame):
            pd.testing.assert_frame_equal(frame, apart._frames[key], check_exact=True)


def test_each_rank_s_activities_are_computed_once_for_every_tab(trace: tv.Trace) -> None:
    computed: list[tuple[int, bool]] = []
    original = _gpu._activities

    def counting(ev: pd.DataFrame, window: Any, work_only: bool) -> Any:
        computed.append((id(ev), work_only))
        return original(ev, window, work_only)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(_gpu, "_activities", counting)
        _every_tab(DashboardData(trace))
    assert computed
    assert len(computed) == len(set(computed)) <= len(trace.ranks)


def test_a_time_range_keeps_a_store_of_its_own(trace: tv.Trace) -> None:
    data = DashboardData(trace)
    data.tab("overview")
    kept = dict(data._rank_memo)
    lo = int(trace.t0_ns)
    data.tab("breakdown", time_range=(lo, lo + int(trace._extent_ns()) // 2))
    assert data._rank_memo == kept
