"""The distributed what-if replay (``whatif/spread.py``) gives the in-process replay's steps.

Each rank's share of the graph is replayed on its own, the ranks tied by the releases of the
collectives they join, iterated to a fixed point. The tests compare it, change by change,
with the replay of the whole graph: in this process (``Spread`` works on any trace) on the
8-rank sample and on a synthetic 4-rank trace with bucketed all-reduces and a straggler, and
through ``tv.what_if`` on the Dask engine (a two-process LocalCluster).
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import loops
from jupyter_traceview.analysis.whatif import _model, _steps, step_times
from jupyter_traceview.analysis.whatif import spread as sp_mod
from jupyter_traceview.analysis.whatif.replay import Prepared, replay_python

C = tv.changes
#: Every change type, some with options, and a combination.
CHANGES: list[tuple[Any, ...]] = [
    (),
    (C.RemoveSyncs(),),
    (C.RemoveDataLoading(),),
    (C.RemovePython(),),
    (C.RemovePython(floor_ns=2_000),),
    (C.ScaleKernels(family="gemm", factor=0.5),),
    (C.ScaleKernels(pattern="nccl", factor=2.0),),
    (C.ScaleKernels(family="gemm", to_roofline=True),),
    (C.OverlapCommunication(),),
    (C.BalanceStraggler(),),
    (C.BalanceStraggler(rank=3),),
    (C.GraphLaunch(),),
    (C.GraphLaunch(whole_step=True),),
    (C.FuseKernels(shorter_than_ns=10_000),),
    (C.RemoveSyncs(), C.BalanceStraggler(), C.ScaleKernels(factor=0.8)),
]
IDS = [" + ".join(type(c).__name__ for c in ch) or "none" for ch in CHANGES]
ONE_OF_EACH = [
    ch for i, ch in enumerate(CHANGES) if len(ch) == 1 and type(ch[0]) not in {type(c[0]) for c in CHANGES[1:i]}
]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """benchmarks/synth.py: 4 ranks, bucketed NCCL all-reduces, rank 1 computing 15 % slower."""
    out = tmp_path_factory.mktemp("synth")
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, str(root / "benchmarks" / "synth.py"), str(out), "--ranks", "4", "--events", "12000"],
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture(scope="module")
def synthetic_trace(synthetic: Path) -> tv.Trace:
    return tv.load(synthetic, cache=False)


def _compare(trace: tv.Trace, changes: tuple[Any, ...]) -> sp_mod.Spread:
    m = _model(trace)
    assert m is not None
    spread: sp_mod.Spread = trace._cached("test_spread", lambda: sp_mod.Spread(trace))
    np.testing.assert_array_equal(spread.step_times(changes), _steps(m, trace, changes))
    np.testing.assert_array_equal(spread.measured, step_times(m, m.t))
    assert spread.steps[["rank", "step"]].equals(m.steps[["rank", "step"]])
    return spread


@pytest.mark.parametrize("changes", CHANGES, ids=IDS)
def test_the_sample_replayed_rank_by_rank_is_the_whole_replay(dlrm: tv.Trace, changes: tuple[Any, ...]) -> None:
    spread = _compare(dlrm, changes)
    assert len(spread.arrival) > 0, "the sample's ranks meet in collectives"


@pytest.mark.parametrize("changes", CHANGES, ids=IDS)
def test_a_synthetic_straggler_job_replayed_rank_by_rank_is_the_whole_replay(
    synthetic_trace: tv.Trace, changes: tuple[Any, ...]
) -> None:
    spread = _compare(synthetic_trace, changes)
    assert len(spread.arrival) > 10
    if changes:
        # A change is solved in a few rounds (far fewer than the instances: the guided ones).
        assert spread.rounds[changes] < len(spread.arrival)


def test_the_fixed_point_is_reached_from_any_start(synthetic_trace: tv.Trace) -> None:
    # The fixed point is unique on an acyclic graph: starting from releases far off (all of
    # them at the first recorded arrival, or a second later) gives the same steps.
    m = _model(synthetic_trace)
    assert m is not None
    want = _steps(m, synthetic_trace, (C.BalanceStraggler(),))
    for shift in (None, 1_000_000_000):
        spread = sp_mod.Spread(synthetic_trace)
        first = int(spread.arrival.min())
        spread.base_release = np.full(len(spread.base_release), first if shift is None else first + shift)
        np.testing.assert_array_equal(spread.step_times((C.BalanceStraggler(),)), want)


def test_instances_ordered_one_way_by_a_rank_and_the_other_way_by_another_are_a_cycle() -> None:
    # Rank 0 reaches instance 1 after instance 0; rank 1 the other way round: no order agrees.
    def fake(depths_order: list[list[int]]) -> SimpleNamespace:
        rows = {r: pd.DataFrame({"key_code": keys}) for r, keys in enumerate(depths_order)}
        return SimpleNamespace(arrival=np.zeros(2, np.int64), ranks=list(rows), rows=rows)

    agree = fake([[0, 1], [0, 1]])
    assert sp_mod.Spread._ordered(agree, {0: np.array([1, 5]), 1: np.array([3, 4])})  # type: ignore[arg-type]
    crossed = fake([[0, 1], [0, 1]])
    assert not sp_mod.Spread._ordered(crossed, {0: np.array([1, 5]), 1: np.array([4, 3])})  # type: ignore[arg-type]
    # Equal depths on a rank say nothing about the order.
    tied = fake([[0, 1], [0, 1]])
    assert sp_mod.Spread._ordered(tied, {0: np.array([2, 2]), 1: np.array([4, 3])})  # type: ignore[arg-type]


def test_the_replay_reports_the_origin_of_each_time_compiled_and_in_python() -> None:
    # 0 (origin) -> 2 (w 5); 1 (a source, t 100) -> 2 (w 1): 2 = 101 from 1, no origin;
    # 3 (origin) -> 4 (w 50) and 2 -> 4 (w 0): 4 = 3's time + 50, origin 3; 4 -> 5: origin 3.
    t = np.array([0, 100, 0, 10, 0, 0], dtype=np.int64)
    dst = np.array([2, 2, 4, 4, 5])
    src = np.array([0, 1, 3, 2, 4])
    w = np.array([5, 1, 50, 0, 7])
    graph = Prepared(t, dst, src, w)
    lower = (np.array([0, 3]), np.array([0, 200], dtype=np.int64))
    marks = np.array([0, -1, -1, 1, -1, -1], dtype=np.int64)
    origin = marks.copy()
    times, acyclic = graph.run(lower, origin)
    assert acyclic
    assert times.tolist() == [0, 100, 101, 200, 250, 257]
    assert origin.tolist() == [0, -1, -1, 1, 1, 1]
    py_origin = marks.copy()
    out = np.empty(6, dtype=np.int64)
    base = np.array([0, 100, np.iinfo(np.int64).min, 200, np.iinfo(np.int64).min, np.iinfo(np.int64).min])
    assert replay_python(*graph.arrays, base, out, py_origin) == 6
    assert out.tolist() == times.tolist()
    assert py_origin.tolist() == origin.tolist()
    if loops.native is not None:
        # Without the origin array the compiled replay works as before.
        assert graph.run(lower)[0].tolist() == times.tolist()


# ---------------------------------------------------------------------- the Dask engine
def test_dask_what_if_keeps_each_rank_graph_on_its_worker(dask_client: object, dlrm: tv.Trace) -> None:
    trace = tv.load(tv.sample_path(), engine="dask", client=dask_client, cache=False)
    # Every change type once (the in-process tests above take each through the same code).
    for changes in ONE_OF_EACH:
        pd.testing.assert_frame_equal(tv.what_if(trace, *changes), tv.what_if(dlrm, *changes))
    spread = trace._cache["whatif_spread"]
    assert isinstance(spread, sp_mod.Spread)
    assert "whatif_model" not in trace._cache  # no rank's graph in this process
    shares = dict(spread.shares)
    tv.what_if(trace, C.ScaleKernels(factor=0.7))
    # A further change replays the graphs kept on the workers: none is built again.
    assert trace._cache["whatif_spread"] is spread
    assert all(spread.shares[r] is shares[r] for r in shares)


def test_dask_what_if_on_a_synthetic_straggler_job(
    dask_client: object, synthetic: Path, synthetic_trace: tv.Trace
) -> None:
    trace = tv.load(synthetic, engine="dask", client=dask_client, cache=False)
    for changes in [(), (C.BalanceStraggler(),), (C.RemoveSyncs(), C.OverlapCommunication())]:
        pd.testing.assert_frame_equal(tv.what_if(trace, *changes), tv.what_if(synthetic_trace, *changes))
    assert "whatif_model" not in trace._cache


def test_dask_what_if_falls_back_on_the_whole_graph_where_it_has_a_cycle(
    dask_client: object, dlrm: tv.Trace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cyclic(self: sp_mod.Spread, changes: tuple[Any, ...]) -> np.ndarray:
        raise sp_mod.Cyclic

    monkeypatch.setattr(sp_mod.Spread, "step_times", cyclic)
    trace = tv.load(tv.sample_path(), engine="dask", client=dask_client, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        got = tv.what_if(trace, C.BalanceStraggler())
    pd.testing.assert_frame_equal(got, tv.what_if(dlrm, C.BalanceStraggler()))
    assert "whatif_model" in trace._cache  # gathered here
