"""A rank's folded CPU row (views/timeline/fold.py) against brute force from the trace's tables."""

from __future__ import annotations

import itertools
from contextlib import nullcontext
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.model import intervals as iv
from jupyter_traceview.views.colors import kind_code, kind_of
from jupyter_traceview.views.timeline import coordinator, protocol
from jupyter_traceview.views.timeline.index import NO_KIND, TimelineIndex
from jupyter_traceview.views.timeline.pattern import compile_pattern
from tests import kineto_builder as kb
from tests.conftest import KINETO_FOLDERS
from tests.views.test_timeline_index import SETTINGS, small_grid, traces, windows

NOT_WORK = {kind_code("sync"), kind_code("annotation")}


# ---------------------------------------------------------------------------- brute force
def cpu_events(index: TimelineIndex, rank: int) -> pd.DataFrame:
    """The rank's drawn CPU events straight from its table (relative times), with their thread and colour kind."""
    ev = index.trace.events(rank)
    # What the timeline draws: no instant events, no zero-length markers of kind "other".
    m = (ev["device"] < 0) & (ev["kind"] != "cpu_instant_event") & ~((ev["kind"] == "other") & (ev["dur_ns"] == 0))
    out = ev.loc[m, ["eid", "ts_ns", "dur_ns", "name", "kind", "gpu_class", "pid", "tid", "depth"]].copy()
    out["start"] = out["ts_ns"] - index.t0_ns
    out["end"] = out["start"] + out["dur_ns"]
    out["ckind"] = [
        kind_code(kind_of(k, g if isinstance(g, str) else None))
        for k, g in zip(out["kind"], out["gpu_class"], strict=True)
    ]
    out["name"] = out["name"].astype(str)
    return out.reset_index(drop=True)


def brute_fold(f: pd.DataFrame) -> pd.DataFrame:
    """The outermost work events: work (not annotation or sync) not starting inside a shallower work event of its thread."""
    work = f.loc[~f["ckind"].isin(NOT_WORK)]
    if work.empty:
        return f.loc[f["depth"] == 0]
    keep = []
    for _, g in work.groupby(["pid", "tid"]):
        s, e, d = g["start"].to_numpy(), g["end"].to_numpy(), g["depth"].to_numpy()
        ee = np.maximum(e, s + 1)  # an instant event lasts 1 ns
        # i starts inside j, a shallower work event.
        enclosed = (d[None, :] < d[:, None]) & (s[None, :] <= s[:, None]) & (s[:, None] < ee[None, :])
        keep.append(g.loc[~enclosed.any(axis=1)])
    return pd.concat(keep)


def overlapping(f: pd.DataFrame, lo: int, hi: int) -> pd.DataFrame:
    """Trace.select's rule: start < hi and (end > lo or start == lo)."""
    return f.loc[(f["start"] < hi) & ((f["end"] > lo) | (f["start"] == lo))]


def check_fold_window(index: TimelineIndex, rank: int, lo: int, hi: int, width: int) -> None:
    win = index.window(lo, hi, width, folds=[rank])
    (fold,) = win.folds
    assert fold.row == rank and fold.mode == "bins"
    assert fold.coverage_ns is not None and fold.kind is not None and fold.count is not None
    edges = win.edges
    folded = brute_fold(cpu_events(index, rank))
    s, e = iv.union(folded["start"].to_numpy(), folded["end"].to_numpy())
    np.testing.assert_array_equal(fold.coverage_ns, iv.binned_coverage(s, e, edges))
    starts = np.sort(folded["start"].to_numpy())
    first = np.searchsorted(starts, edges, side="left")
    np.testing.assert_array_equal(fold.count, np.diff(first))
    # The kind covering most of each column (where one kind covers strictly most).
    codes = sorted(folded["ckind"].unique().tolist())
    per = np.array(
        [
            iv.binned_coverage(*iv.union(*folded.loc[folded["ckind"] == c, ["start", "end"]].to_numpy().T), edges)
            for c in codes
        ]
    ).reshape(len(codes), len(edges) - 1)
    if len(codes):
        top = np.sort(per, axis=0)
        clear = (top[-1] > 0) & ((top[-2] < top[-1]) if len(codes) > 1 else True)
        expect = np.asarray(codes)[per.argmax(axis=0)]
        np.testing.assert_array_equal(fold.kind[clear], expect[clear])
        assert (fold.kind[per.sum(axis=0) == 0] == NO_KIND).all()


def check_fold_matches(index: TimelineIndex, rank: int, lo: int, hi: int, width: int, pattern: str) -> None:
    """While searching, the folded row counts the matches of every CPU event of the rank (any thread, any depth)."""
    win = index.window(lo, hi, width, folds=[rank], pattern=pattern)
    (fold,) = win.folds
    assert fold.matches is not None
    f = cpu_events(index, rank)
    rx = compile_pattern(pattern)
    m = f.loc[[bool(rx.search(n)) for n in f["name"]], "start"].to_numpy()
    expect = [int(((m >= a) & (m < b)).sum()) for a, b in itertools.pairwise(win.edges)]
    assert fold.matches.tolist() == expect
    # Without a search the row carries no matches (nothing is dimmed).
    (plain,) = index.window(lo, hi, width, folds=[rank]).folds
    assert plain.matches is None


def check_fold_summary(index: TimelineIndex, rank: int, lo: int, hi: int) -> None:
    f = cpu_events(index, rank)
    folded = brute_fold(f)
    got = index.fold_summary(rank, lo, hi, top=100)
    inside = overlapping(folded, lo, hi)
    clipped = (np.minimum(inside["end"], hi) - np.maximum(inside["start"], lo)).clip(lower=0)
    assert got["threads"] == f.groupby(["pid", "tid"]).ngroups
    assert got["active"] == inside.groupby(["pid", "tid"]).ngroups
    assert got["events"] == len(inside)
    assert got["thread_ns"] == int(clipped.sum())
    s, e = iv.union(folded["start"].to_numpy(), folded["end"].to_numpy())
    assert got["busy_ns"] == int(iv.binned_coverage(s, e, np.array([lo, hi]))[0])
    by_name = clipped.groupby(inside["name"]).sum()
    counts = inside.groupby("name").size()
    assert {t["name"]: (t["time_ns"], t["events"]) for t in got["top"]} == {
        n: (int(by_name[n]), int(counts[n])) for n in counts.index
    }
    times = [t["time_ns"] for t in got["top"]]
    assert times == sorted(times, reverse=True)


# ---------------------------------------------------------------------------- tests
def test_known_trace_folds_the_work_under_annotations(tmp_path: Path) -> None:
    """Thread A: a step annotation over aten::mm (with a runtime call inside) and aten::add;
    thread B: aten::copy_. The folded row is mm, add and copy_, whatever their depth."""
    other = kb.MAIN_TID + 1
    events = [
        kb.step(1, 0, 100),
        kb.cpu_op("aten::mm", 10, 30),
        kb.runtime("cudaLaunchKernel", 15, 3, corr=7),
        kb.cpu_op("aten::add", 50, 10),
        kb.cpu_op("aten::copy_", 30, 40, tid=other),
        *kb.metadata(kb.CPU_PID),
    ]
    trace = tv.load(kb.write(tmp_path / "rank-0.json", kb.doc(events, rank=0)), cache=False)
    with mock.patch.object(coordinator, "GRID_CELLS", 2**40):  # no grid: column edges exactly where asked
        index = TimelineIndex(trace)
    t0 = index.start[index.row_events(0)].min()  # the step starts the trace
    us = 1000
    whole = index.fold_summary(0, t0, t0 + 100 * us)
    assert (whole["threads"], whole["active"], whole["events"]) == (2, 2, 3)
    assert whole["busy_ns"] == 60 * us  # [10, 70) us: any thread busy
    assert whole["thread_ns"] == 80 * us  # 30 + 10 + 40
    assert [(t["name"], t["time_ns"], t["events"]) for t in whole["top"]] == [
        ("aten::copy_", 40 * us, 1),
        ("aten::mm", 30 * us, 1),
        ("aten::add", 10 * us, 1),
    ]
    part = index.fold_summary(0, t0 + 35 * us, t0 + 55 * us)
    assert (part["busy_ns"], part["thread_ns"], part["events"], part["active"]) == (20 * us, 30 * us, 3, 2)
    # The window's folded row: 10 columns of 10 us; the step annotation is not work.
    win = index.window(t0, t0 + 100 * us, 10, folds=[0])
    (fold,) = win.folds
    assert fold.coverage_ns is not None and fold.count is not None and fold.kind is not None
    np.testing.assert_array_equal(fold.coverage_ns, np.array([0, 10, 10, 10, 10, 10, 10, 0, 0, 0]) * us)
    np.testing.assert_array_equal(fold.count, [0, 1, 0, 1, 0, 1, 0, 0, 0, 0])
    assert set(fold.kind[1:7].tolist()) == {kind_code("cpu_op")}
    assert (fold.kind[[0, 7, 8, 9]] == NO_KIND).all()


def test_annotations_only_fold_their_top_level_events(tmp_path: Path) -> None:
    events = [kb.step(1, 0, 50), kb.annotation("phase", 10, 20), kb.step(2, 60, 30), *kb.metadata(kb.CPU_PID)]
    trace = tv.load(kb.write(tmp_path / "rank-0.json", kb.doc(events, rank=0)), cache=False)
    index = TimelineIndex.of(trace)
    s = index.fold_summary(0, 0, index.end_ns)
    assert s["events"] == 2 and s["busy_ns"] == 80_000
    check_fold_summary(index, 0, 0, index.end_ns)


@SETTINGS
@given(traces(), st.data(), st.booleans())
def test_fold_matches_brute_force(trace: tv.Trace, data: st.DataObject, grid: bool) -> None:
    with small_grid() if grid else nullcontext():
        index = TimelineIndex(trace)
    for rank in trace.ranks:
        lo, hi = windows(index, data.draw)
        width = data.draw(st.integers(1, 300))
        check_fold_window(index, rank, lo, hi, width)
        check_fold_matches(index, rank, lo, hi, width, data.draw(st.sampled_from(["aten::", "mm$", "cuda", "nccl"])))
        check_fold_summary(index, rank, lo, hi)


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "h100_bert_small", "hta_cpu_only"])
def test_real_traces_fold(folder: str) -> None:
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    index = TimelineIndex.of(trace)
    end = max(index.end_ns, 1)
    for rank in trace.ranks[:2]:
        for lo, hi, width in [(0, end, 800), (end // 3, end // 3 + end // 50, 1200)]:
            check_fold_window(index, rank, lo, hi, width)
            check_fold_matches(index, rank, lo, hi, width, "aten::(mm|addmm|linear)")
            check_fold_summary(index, rank, lo, hi)


def test_window_answer_and_fold_command(dlrm: tv.Trace) -> None:
    index = TimelineIndex.of(dlrm)
    msg = {"seq": 3, "lo": 0, "hi": index.end_ns, "width": 400, "rows": [], "summaries": [1], "folds": [2, 5]}
    meta, _ = protocol.answer_window(index, msg)  # type: ignore[arg-type]
    assert "error" not in meta
    assert [(f["rank"], f["offset"]) for f in meta["folds"]] == [(2, 400), (5, 800)]  # type: ignore[typeddict-item]
    assert meta["summaries"][0]["offset"] == 0  # type: ignore[typeddict-item]
    fold, _ = protocol.answer(index, "_fold", {"rank": 2, "lo": 0, "hi": index.end_ns})
    assert fold == index.fold_summary(2, 0, index.end_ns)
    bad, _ = protocol.answer(index, "_fold", {"rank": 99, "lo": 0, "hi": 10})
    assert "error" in bad
