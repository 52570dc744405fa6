"""analysis._memo: per-rank facts shared inside a scope give exactly what each analysis computes alone.

The shared path (activities, unions and eid tables computed once per rank table inside
``shared_rank_facts``, as ``findings`` runs its analyses) is pinned against the analyses
run without it, on real traces, with windows and iterations mixed in one scope so that a
memo keyed too loosely (a window or a variant forgotten) would hand one call's facts to
another and fail here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import _links as lk
from jupyter_traceview.analysis._gpu import COMM, COMPUTE, OTHER, activities
from jupyter_traceview.analysis._memo import rank_memo, shared_rank_facts, sharing
from jupyter_traceview.analysis.findings.extraction import rank_facts
from jupyter_traceview.analysis.launch import rows_of
from jupyter_traceview.analysis.perfmodel.matrix import matrix_shapes
from jupyter_traceview.model import intervals as iv
from tests.conftest import KINETO_FOLDERS, analysis_scopes

ANALYSES: dict[str, Callable[..., Any]] = {
    "summary": tv.summary,
    "efficiency": tv.efficiency,
    "efficiency_rank": lambda t, **kw: tv.efficiency(t, per="rank", **kw),
    "efficiency_iteration": lambda t, **kw: tv.efficiency(t, per="iteration", **kw),
    "iteration_stats": lambda t, **kw: tv.iteration_stats(t, per="step", **kw),
    "kernel_overlap_stats": lambda t, **kw: tv.kernel_overlap_stats(t, per="rank", **kw),
    "concurrency": tv.concurrency,
    "temporal_breakdown": tv.temporal_breakdown,
    "comm_comp_overlap": tv.comm_comp_overlap,
    "idle_time_breakdown": tv.idle_time_breakdown,
    "kernel_breakdown": tv.kernel_breakdown,
    "kernel_launch_stats": lambda t, **kw: tv.kernel_launch_stats(t, per="rank", **kw),
    "stragglers": tv.stragglers,
    "stragglers_arrival": lambda t, **kw: tv.stragglers(t, by="arrival", **kw),
    "nccl_summary": tv.nccl_summary,
    "user_annotation_breakdown": lambda t, **kw: tv.user_annotation_breakdown(t, kind="cpu", **kw),
    "op_kernels": tv.op_kernels,
    "matrix_shapes": lambda t, time_range=None, **kw: matrix_shapes(t.select(**kw) if kw else t, time_range=time_range),
    "rank_facts": lambda t, **kw: _rank_facts(t.select(**kw) if kw else t),
}


def _rank_facts(trace: tv.Trace) -> dict[int, Any]:
    return {r: rank_facts(trace.select(ranks=[r]), 10_000, 50_000) for r in trace.ranks}


def _same(a: object, b: object) -> None:
    if isinstance(a, pd.DataFrame):
        assert isinstance(b, pd.DataFrame)
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    else:
        assert repr(a) == repr(b)


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "h100_bert_small", "hta_dlrm_2of128_ranks", "hta_alexnet"])
def test_analyses_inside_a_shared_scope_are_unchanged(folder: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        trace = tv.load(KINETO_FOLDERS[folder], cache=False, progress=False)
        scopes = analysis_scopes(trace)
        alone = {(name, i): fn(trace, **kw) for name, fn in ANALYSES.items() for i, kw in enumerate(scopes)}
        with shared_rank_facts() as memo:
            # Scopes interleaved: each analysis meets facts memoised for the other scopes.
            for i, kw in enumerate(scopes):
                for name, fn in ANALYSES.items():
                    _same(fn(trace, **kw), alone[(name, i)])
            assert memo  # the scope did share something
        # A second pass reads the memo only.
        with shared_rank_facts(memo):
            for name, fn in ANALYSES.items():
                _same(fn(trace), alone[(name, 0)])


def test_findings_use_the_scope_and_agree_with_their_analyses(dlrm: tv.Trace) -> None:
    from jupyter_traceview.analysis.findings.config import FindingRules
    from jupyter_traceview.analysis.findings.context import Context

    ctx = Context(dlrm, FindingRules(), ranks=None, iterations=None, time_range=None)
    assert ctx._rank_memo  # rank_facts shared its activities
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        _same(ctx.summary(), tv.summary(dlrm).set_index("rank", drop=False))
        _same(ctx.stragglers("arrival"), tv.stragglers(dlrm, by="arrival"))
    assert not sharing()  # the scope closes with each computation


def test_rank_memo_computes_once_per_table_and_key_inside_a_scope(dlrm: tv.Trace) -> None:
    ev0, ev1 = dlrm.rank_data(0).events, dlrm.rank_data(1).events
    calls: list[str] = []

    def compute(tag: str) -> Callable[[], str]:
        return lambda: calls.append(tag) or tag

    assert rank_memo(ev0, "k", compute("a")) == "a"
    assert rank_memo(ev0, "k", compute("a")) == "a"
    assert calls == ["a", "a"]  # no scope: computed every time
    calls.clear()
    with shared_rank_facts() as memo:
        assert sharing()
        assert rank_memo(ev0, "k", compute("a")) == "a"
        assert rank_memo(ev0, "k", compute("b")) == "a"  # memoised
        assert rank_memo(ev1, "k", compute("c")) == "c"  # another table
        assert rank_memo(ev0, ("k", 1), compute("d")) == "d"  # another key
        with shared_rank_facts() as inner:
            assert inner is memo  # nested: the outer store
            assert rank_memo(ev0, "k", compute("e")) == "a"
    assert calls == ["a", "c", "d"]
    assert not sharing()
    assert rank_memo(ev0, "k", compute("f")) == "f"  # gone with the scope
    with shared_rank_facts(memo):  # the store handed back in: reused
        assert rank_memo(ev0, "k", compute("g")) == "a"


def test_a_selected_copy_of_a_table_is_not_confused_with_it(dlrm: tv.Trace) -> None:
    window = dlrm.select(time_range=(dlrm.t0_ns + 2_000_000, dlrm.t0_ns + 9_000_000))
    with shared_rank_facts():
        full = activities(dlrm, 0, work_only=True)
        part = activities(window, 0, work_only=True)
        assert len(part) < len(full)
        assert activities(dlrm, 0, work_only=True) is full
        assert activities(window, 0, work_only=True) is part
        assert activities(dlrm, 0) is not full  # the other variant
    alone = activities(window, 0, work_only=True)
    assert np.array_equal(part.ts, alone.ts) and np.array_equal(part.end, alone.end)


@pytest.mark.parametrize("work_only", [False, True])
def test_shared_activities_are_read_only_with_the_same_unions(dlrm: tv.Trace, work_only: bool) -> None:
    alone = activities(dlrm, 1, work_only=work_only)
    with shared_rank_facts():
        acts = activities(dlrm, 1, work_only=work_only)
        for f in ("ts", "end", "cls", "stream", "name", "launch_eid", "rows"):
            assert np.array_equal(getattr(acts, f), getattr(alone, f))
            with pytest.raises(ValueError, match="read-only"):
                getattr(acts, f)[:1] = 0
        for classes in [(), (COMPUTE,), (COMM,), (COMPUTE, COMM), (OTHER,)]:
            keep = np.isin(acts.cls, classes) if classes else (acts.cls >= 0) & (acts.cls < OTHER)
            want = iv.union(acts.ts[keep], acts.end[keep])
            got = acts.union(*classes)
            assert acts.union(*classes) is got  # memoised
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            assert np.array_equal(got[0], alone.union(*classes)[0])
        table = lk.eid_rows(dlrm.rank_data(1).events)
        assert lk.eid_rows(dlrm.rank_data(1).events) is table
        assert not table.flags.writeable
    assert np.array_equal(table, lk.eid_rows(dlrm.rank_data(1).events))
    assert activities(dlrm, 1, work_only=work_only).ts.flags.writeable  # outside a scope: own arrays


def test_both_variants_share_the_unions_of_work_only() -> None:
    """A union of work classes is computed once for both variants of a rank; one that
    includes sync records (class ``other``: in the full variant only) is not shared."""
    trace = tv.load(KINETO_FOLDERS["hta_alexnet"], cache=False, progress=False)  # has sync records
    r = trace.ranks[0]
    with shared_rank_facts():
        full, work = activities(trace, r), activities(trace, r, work_only=True)
        assert full.union(COMPUTE) is work.union(COMPUTE)
        assert full.union() is work.union()
        other_full, other_work = full.union(OTHER), work.union(OTHER)
        assert len(other_full[0]) > 0 and len(other_work[0]) == 0
        assert full.union(COMPUTE, OTHER)[0].tolist() != work.union(COMPUTE, OTHER)[0].tolist()
    for acts in (activities(trace, r), activities(trace, r, work_only=True)):
        for classes in [(), (COMPUTE,), (OTHER,), (COMPUTE, OTHER)]:
            keep = np.isin(acts.cls, classes) if classes else (acts.cls >= 0) & (acts.cls < OTHER)
            assert np.array_equal(acts.union(*classes)[0], iv.union(acts.ts[keep], acts.end[keep])[0])


def test_lookup_as_defined() -> None:
    """``_links.lookup`` (one gather, misses set after): the row of each eid, -1 for -1,
    out-of-range and absent eids; through a read-only shared table too."""
    rng = np.random.default_rng(3)
    for n in (0, 1, 50):
        eids = np.sort(rng.choice(200, size=n, replace=False)).astype(np.int64)
        ev = pd.DataFrame({"eid": eids})
        table = lk.eid_rows(ev)
        asked = rng.integers(-3, 260, size=300)
        want = np.array([int(np.flatnonzero(eids == e)[0]) if e in set(eids.tolist()) else -1 for e in asked])
        assert np.array_equal(lk.lookup(table, asked), want)
        with shared_rank_facts():
            assert np.array_equal(lk.lookup(lk.eid_rows(ev), asked), want)


def test_eid_rows_of_a_full_table_and_of_a_selection() -> None:
    """``eid_rows`` of a rank's full table (eid = row: the identity, without the scatter) and
    of narrowed tables (a window's rows, eids not from 0) against the table built by scattering."""

    def scattered(eids: np.ndarray) -> np.ndarray:
        table = np.full(int(eids.max()) + 1 if len(eids) else 0, -1, dtype=np.int64)
        table[eids] = np.arange(len(eids), dtype=np.int64)
        return table

    dlrm = tv.load(tv.sample_path(), progress=False)
    ev = dlrm.rank_data(1).events
    lo, hi = int(ev["ts_ns"].min()), int(ev["ts_ns"].max())
    narrowed = dlrm.select(time_range=(lo + (hi - lo) // 3, hi - (hi - lo) // 3)).rank_data(1).events
    for frame in (ev, narrowed, pd.DataFrame({"eid": np.array([2, 3, 4], dtype=np.int64)}), ev.iloc[:0]):
        eids = frame["eid"].to_numpy()
        want = scattered(eids)
        got = lk.eid_rows(frame)
        assert got.dtype == np.int64 and np.array_equal(got, want)
    assert len(narrowed) < len(ev) and len(scattered(narrowed["eid"].to_numpy())) > len(narrowed)


def test_rows_of_as_through_the_table() -> None:
    """``launch.rows_of`` (no table: eid is the row, else a search) gives ``lookup(eid_rows(ev), eids)`` on a
    rank's full table, a narrowed one and tables whose eids do not start at 0, for eids in and
    out of the frame, -1 and beyond the last."""
    dlrm = tv.load(tv.sample_path(), progress=False)
    ev = dlrm.rank_data(1).events
    lo, hi = int(ev["ts_ns"].min()), int(ev["ts_ns"].max())
    narrowed = dlrm.select(time_range=(lo + (hi - lo) // 3, hi - (hi - lo) // 3)).rank_data(1).events
    rng = np.random.default_rng(7)
    frames = (ev, narrowed, pd.DataFrame({"eid": np.array([2, 3, 4], dtype=np.int64)}), ev.iloc[:0])
    for frame in frames:
        n = len(ev)
        asked = np.concatenate(([-1, 0, 1, n - 1, n, n + 5, 2**40], rng.integers(-3, n + 3, size=500)))
        want = lk.lookup(lk._eid_rows(frame), asked)
        got = rows_of(frame, asked)
        assert got.dtype == np.int64 and np.array_equal(got, want)
        assert np.array_equal(rows_of(frame, asked.tolist()), want)  # any integer sequence
    assert (rows_of(narrowed, narrowed["eid"].to_numpy()) == np.arange(len(narrowed))).all()
