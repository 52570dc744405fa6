"""The compiled interval loops (``model/_sweep.c``) against the numpy code they replace.

``intervals.native`` is the compiled module (None without it, or with ``TRACEVIEW_NATIVE=0``);
each test runs a function with it and with the numpy fallback (``native`` set to None) and
asks for the same arrays, dtype and length included: on hand-made edge cases (empty, one
interval, nested, touching, zero-length, negative lengths, unsorted starts, int64 extremes
where numpy's arithmetic wraps), on random inputs, on real traces' GPU activities and on the
analyses ``findings`` runs. The hand-made cases also pin the values, so that a wrong loop
fails even where both paths were wrong the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis import _gpu, threads
from jupyter_traceview.model import intervals as iv
from jupyter_traceview.model import trace as trace_mod
from tests.conftest import KINETO_FOLDERS

NATIVE = iv.native
needs_native = pytest.mark.skipif(
    NATIVE is None,
    reason="the compiled _sweep is not built or TRACEVIEW_NATIVE=0 (tests/test_build.py says which)",
)

I64 = np.iinfo(np.int64)


def a(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def both(fn: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """``fn(*args)`` with the compiled loops, then with the numpy code."""
    try:
        iv.native = NATIVE
        compiled = fn(*args)
        iv.native = None
        fallback = fn(*args)
    finally:
        iv.native = NATIVE
    return compiled, fallback


def same(x: Any, y: Any) -> bool:
    if isinstance(x, tuple):
        return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y, strict=True))
    return bool(x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y))


# (starts, ends) -> (union, at_least_two), worked out by hand.
CASES = {
    "empty": (a(), a(), (a(), a()), (a(), a())),
    "one": (a(5), a(9), (a(5), a(9)), (a(), a())),
    "one zero-length": (a(5), a(5), (a(5), a(5)), (a(), a())),
    "disjoint": (a(0, 10), a(5, 20), (a(0, 10), a(5, 20)), (a(), a())),
    "touching merge": (a(0, 5), a(5, 9), (a(0), a(9)), (a(), a())),
    "nested": (a(0, 2, 3), a(10, 4, 8), (a(0), a(10)), (a(2), a(8))),
    "overlapping": (a(0, 4, 6), a(5, 8, 12), (a(0), a(12)), (a(4, 6), a(5, 8))),
    "unsorted": (a(6, 0, 4), a(12, 5, 8), (a(0), a(12)), (a(4, 6), a(5, 8))),
    "equal starts": (a(3, 3, 3), a(7, 5, 9), (a(3), a(9)), (a(3), a(7))),
    "zero-length inside": (a(0, 4), a(10, 4), (a(0), a(10)), (a(), a())),
    "negative length": (a(0, 8), a(5, 2), (a(0, 8), a(5, 5)), (a(), a())),
    "extremes": (
        a(I64.min, 0, I64.max - 5),
        a(I64.min + 3, I64.max, I64.max),
        (a(I64.min, 0), a(I64.min + 3, I64.max)),
        (a(I64.max - 5), a(I64.max)),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_union_and_at_least_two_by_hand(case: str) -> None:
    s, e, want_union, want_two = CASES[case]
    for fn, want in ((iv.union, want_union), (iv.at_least_two, want_two)):
        compiled, fallback = both(fn, s, e)
        assert same(fallback, want), (case, fn.__name__, fallback)
        assert same(compiled, want), (case, fn.__name__, compiled)


def test_inputs_are_left_as_they_were() -> None:
    s, e = a(6, 0, 4), a(12, 5, 8)
    s.flags.writeable = e.flags.writeable = False  # shared arrays of a findings scope are read-only
    for fn in (iv.union, iv.at_least_two):
        compiled, fallback = both(fn, s, e)
        assert same(compiled, fallback)
    assert same((s, e), (a(6, 0, 4), a(12, 5, 8)))


def test_other_dtypes_and_strided_inputs() -> None:
    s = np.array([0, 99, 4, 99, 6], dtype=np.int32)[::2]
    e = np.array([5.0, 8.0, 12.0])
    for fn in (iv.union, iv.at_least_two):
        compiled, fallback = both(fn, s, e)
        assert same(compiled, fallback)
    compiled, fallback = both(iv.coverage_of, (a(0, 10), a(4, 20)), s, e)
    assert same(compiled, fallback) and compiled.tolist() == [4, 0, 2]


COVERAGE = {
    # union, queries (starts, ends), covered time of each
    "inside, across, outside": (
        (a(10, 30), a(20, 40)),
        a(12, 0, 50, 15, 35),
        a(18, 100, 60, 35, 36),
        [6, 20, 0, 10, 1],
    ),
    "at the edges": ((a(10, 30), a(20, 40)), a(10, 20, 40, 0), a(20, 30, 41, 10), [10, 0, 0, 0]),
    "zero-length queries": ((a(10), a(20)), a(15, 10, 20), a(15, 10, 20), [0, 0, 0]),
    "negative-length queries": ((a(10), a(20)), a(18, 25), a(12, 5), [-6, -10]),
    "unordered queries": (
        (a(0, 100, 200), a(50, 150, 250)),
        a(210, 0, 120, 40),
        a(260, 10, 130, 110),
        [40, 10, 10, 20],
    ),
    "one-interval union": ((a(0), a(1)), a(0, -5), a(1, 5), [1, 1]),
}


@pytest.mark.parametrize("case", sorted(COVERAGE))
def test_coverage_of_by_hand(case: str) -> None:
    union, qs, qe, want = COVERAGE[case]
    compiled, fallback = both(iv.coverage_of, union, qs, qe)
    assert fallback.tolist() == want
    assert same(compiled, fallback)


def test_coverage_of_wraps_as_numpy_does() -> None:
    # Queries far apart: numpy's int64 arithmetic wraps; the loop must give the same numbers.
    union = (a(0, 10), a(5, 20))
    qs, qe = a(I64.min, 3, I64.min + 1), a(I64.max, I64.max, 2)
    compiled, fallback = both(iv.coverage_of, union, qs, qe)
    assert same(compiled, fallback)


def test_coverage_of_a_union_out_of_order_is_numpys_answer() -> None:
    # Not a union (starts out of order): the compiled loop declines, numpy answers as always.
    compiled, fallback = both(iv.coverage_of, (a(30, 10), a(40, 20)), a(0, 15), a(50, 35))
    assert same(compiled, fallback)


interval_lists = st.lists(st.tuples(st.integers(-50, 50), st.integers(-3, 30)), max_size=40)


SUBTRACT = {
    # a, b, a - b
    "nothing to take": ((a(0, 20), a(10, 30)), (a(), a()), (a(0, 20), a(10, 30))),
    "from nothing": ((a(), a()), (a(0), a(5)), (a(), a())),
    "holes and edges": ((a(0, 20), a(10, 30)), (a(-5, 4, 9, 25), a(2, 6, 21, 40)), (a(2, 6, 21), a(4, 9, 25))),
    "b touching a": ((a(10), a(20)), (a(0, 20), a(10, 25)), (a(10), a(20))),
    "all of it": ((a(10, 30), a(20, 40)), (a(0), a(50)), (a(), a())),
    # Not strict unions: the numpy code's answer (zero-length and touching intervals).
    "zero-length in a": ((a(5, 10), a(5, 20)), (a(12), a(14)), (a(10, 14), a(12, 20))),
    "touching in b": ((a(0), a(20)), (a(5, 8), a(8, 10)), (a(0, 10), a(5, 20))),
}


@pytest.mark.parametrize("case", sorted(SUBTRACT))
def test_subtract_by_hand(case: str) -> None:
    ua, ub, want = SUBTRACT[case]
    compiled, fallback = both(iv.subtract, ua, ub)
    assert same(fallback, want), fallback
    assert same(compiled, want), compiled


@settings(max_examples=300, deadline=None)
@given(interval_lists, st.booleans(), interval_lists)
def test_random_inputs_agree(pairs: list[tuple[int, int]], in_order: bool, queries: list[tuple[int, int]]) -> None:
    s = np.array([p[0] for p in pairs], dtype=np.int64)
    e = s + np.array([p[1] for p in pairs], dtype=np.int64)
    if in_order:
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    for fn in (iv.union, iv.at_least_two):
        compiled, fallback = both(fn, s, e)
        assert same(compiled, fallback)
    qs = np.array([q[0] for q in queries], dtype=np.int64)
    qe = qs + np.array([q[1] for q in queries], dtype=np.int64)
    for union in (iv.union(s, e), iv.at_least_two(s, e), (np.sort(s), np.sort(e))):
        compiled, fallback = both(iv.coverage_of, union, qs, qe)
        assert same(compiled, fallback)
    for ua in (iv.union(s, e), iv.union(qs, qe)):
        for ub in (iv.union(qs, qe), iv.at_least_two(s, e), iv.union(s, e)):
            compiled, fallback = both(iv.subtract, ua, ub)
            assert same(compiled, fallback)


@needs_native
def test_the_compiled_loops_check_their_arguments() -> None:
    out = np.empty(3, dtype=np.int64)
    with pytest.raises(TypeError, match="int64"):
        NATIVE.union_sorted(np.zeros(3, dtype=np.int32), a(1, 2, 3), out, out.copy())
    with pytest.raises(ValueError, match="one length"):
        NATIVE.union_sorted(a(1, 2, 3), a(1, 2), out, out.copy())
    with pytest.raises(ValueError):
        NATIVE.at_least_two_sorted(a(1), a(2), out, out.copy())
    with pytest.raises(ValueError):
        NATIVE.coverage(a(), a(), a(1), a(2), out, out.copy())
    ro = a(0, 0, 0)
    ro.flags.writeable = False
    with pytest.raises((TypeError, BufferError, ValueError)):
        NATIVE.union_sorted(a(1, 2, 3), a(1, 2, 3), ro, out)


@needs_native
def test_turned_off_by_the_environment() -> None:
    import subprocess
    import sys

    code = "from jupyter_traceview.model import intervals as iv; print(iv.native is None)"
    env = {**os.environ, "TRACEVIEW_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize("name", ["dlrm_8rank_v100", "h100_bert_small", "hta_mi250_rocm", "hta_triton"])
def test_real_gpu_activities_agree(name: str) -> None:
    trace = tv.load(KINETO_FOLDERS[name], cache=False)
    for r in trace.ranks:
        acts = _gpu.activities(trace, r)
        for cls in (None, _gpu.COMPUTE, _gpu.COMM):
            keep = np.ones(len(acts), dtype=bool) if cls is None else acts.cls == cls
            s, e = acts.ts[keep], acts.end[keep]
            union, fallback = both(iv.union, s, e)
            assert same(union, fallback)
            assert same(*both(iv.at_least_two, s, e))
            assert same(*both(iv.coverage_of, union, acts.ts, acts.end))
            assert same(*both(iv.coverage_of, iv.at_least_two(s, e), s, e))


def _outputs(name: str) -> list[Any]:
    trace = tv.load(KINETO_FOLDERS[name], cache=False)  # a fresh trace: no memo of the other path
    return [
        tv.summary(trace),
        tv.kernel_overlap_stats(trace),
        tv.iteration_stats(trace),
        tv.efficiency(trace),
        tv.thread_activity(trace),
        tv.findings(trace),
    ]


@pytest.mark.parametrize("name", ["dlrm_8rank_v100", "h100_bert_small"])
def test_the_analyses_findings_runs_agree(name: str) -> None:
    compiled, fallback = both(_outputs, name)
    for x, y in zip(compiled, fallback, strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)


# --- threads.thread_states: the compiled per-thread unions against the numpy code


def _events(rows: list[tuple[int, int, str, str, int, int]]) -> pd.DataFrame:
    """A minimal events table: (ts, dur, kind, name, pid, tid) per row."""
    kinds = ["cpu_op", "cuda_runtime", "user_annotation", "python_function", "kernel", "gpu_memcpy"]
    names = sorted({r[3] for r in rows} | {"x"})
    return pd.DataFrame(
        {
            "ts_ns": np.array([r[0] for r in rows], dtype=np.int64),
            "dur_ns": np.array([r[1] for r in rows], dtype=np.int64),
            "kind": pd.Categorical([r[2] for r in rows], categories=kinds),
            "name": pd.Categorical([r[3] for r in rows], categories=names),
            "pid": np.array([r[4] for r in rows], dtype=np.int64),
            "tid": np.array([r[5] for r in rows], dtype=np.int64),
        }
    )


def _states_same(ev: pd.DataFrame, window: tuple[int, int] | None = None) -> dict[Any, Any]:
    compiled, fallback = both(lambda: threads.thread_states(ev, window))
    assert list(compiled) == list(fallback)  # the threads, in the same order
    for key, states in compiled.items():
        assert list(states) == list(fallback[key])
        for name, u in states.items():
            assert same(u, fallback[key][name]), (key, name, u, fallback[key][name])
    return compiled


THREAD_CASES = {
    "no events": [],
    "one event": [(5, 10, "cpu_op", "mm", 1, 7)],
    "no host event": [(5, 10, "kernel", "k", 1, 7)],
    "only an annotation": [(5, 10, "user_annotation", "step", 1, 7)],
    "nested and overlapping": [
        (0, 100, "cpu_op", "a", 1, 1),
        (10, 20, "cpu_op", "b", 1, 1),
        (50, 80, "cpu_op", "c", 1, 1),
        (100, 5, "cuda_runtime", "launch", 1, 1),
        (200, 0, "cpu_op", "zero", 1, 1),
    ],
    "out of order, interleaved threads": [
        (50, 10, "cpu_op", "a", 1, 2),
        (0, 10, "cpu_op", "a", 1, 1),
        (5, 30, "cpu_op", "a", 1, 2),
        (40, 10, "cpu_op", "a", 2, 1),
        (30, 5, "cpu_op", "a", 1, 1),
        (1, 3, "python_function", "f", 1, 1),
        (0, 90, "user_annotation", "DataLoader next", 1, 2),
        (90, 20, "user_annotation", "DataLoader next", 1, 2),
        (95, 1, "python_function", "g", 1, 2),
        (200, 50, "python_function", "g", 1, 2),
    ],
    "negative duration": [(10, -5, "cpu_op", "a", 1, 1), (0, 3, "cpu_op", "a", 1, 1)],
    "negative duration in order": [
        (0, 10, "cpu_op", "a", 1, 1),
        (20, -15, "cpu_op", "a", 1, 1),
        (30, 5, "cpu_op", "a", 1, 1),
    ],
    "one thread out of order among others in order": [
        (0, 10, "cpu_op", "a", 1, 1),
        (5, 10, "cpu_op", "a", 1, 2),
        (20, 10, "cpu_op", "a", 1, 1),
        (2, 1, "cpu_op", "a", 1, 2),
        (40, 10, "python_function", "f", 1, 1),
        (60, 10, "cpu_op", "a", 1, 2),
        (30, 5, "python_function", "f", 1, 1),
    ],
}


@pytest.mark.parametrize("case", sorted(THREAD_CASES))
@pytest.mark.parametrize("window", [None, (8, 60)])
def test_thread_states_by_case(case: str, window: tuple[int, int] | None) -> None:
    _states_same(_events(THREAD_CASES[case]), window)


def test_thread_states_by_hand() -> None:
    got = _states_same(_events(THREAD_CASES["out of order, interleaved threads"]))
    assert list(got) == [(1, 2), (1, 1), (2, 1)]  # in order of first row
    assert same(got[(1, 2)]["op"], (a(5, 50), a(35, 60)))
    assert same(got[(1, 2)]["dataloader"], (a(0, 35, 60), a(5, 50, 110)))  # touching runs merged, minus ops
    assert same(got[(1, 2)]["python"], (a(200), a(250)))
    assert same(got[(1, 1)]["op"], (a(0, 30), a(10, 35)))
    assert same(got[(1, 1)]["python"], (a(), a()))  # inside an operator
    got = _states_same(_events(THREAD_CASES["negative duration in order"]))
    assert same(got[(1, 1)]["op"], (a(0, 20, 30), a(10, 10, 35)))  # ends: the running maximum, as iv.union


def test_thread_states_many_threads() -> None:
    # More threads than the compiled loop's first hash table holds; threads revisited.
    rows = [(i * 10 + (i % 7), 5 + i % 3, "cpu_op", "a", i % 3, (i * 37) % 101) for i in range(2000)]
    got = _states_same(_events(rows))
    assert len(got) == len({(r[4], r[5]) for r in rows})


@pytest.mark.parametrize("name", sorted(KINETO_FOLDERS))
def test_thread_states_of_real_traces(name: str) -> None:
    trace = tv.load(KINETO_FOLDERS[name], cache=False)
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        _states_same(ev)
        if len(ev):
            lo, hi = int(ev["ts_ns"].min()), int((ev["ts_ns"] + ev["dur_ns"]).max())
            _states_same(ev, (lo + (hi - lo) // 4, lo + 3 * (hi - lo) // 4))


# --- Trace.iterations (trace._iterations_of) and trace._span_per_group


def _iterations_same(d: Any) -> pd.DataFrame:
    compiled, fallback = both(lambda: trace_mod._iterations_of(d))
    pd.testing.assert_frame_equal(compiled, fallback, check_exact=True)
    return compiled


@pytest.mark.parametrize("name", sorted(KINETO_FOLDERS))
def test_iterations_of_real_traces(name: str) -> None:
    trace = tv.load(KINETO_FOLDERS[name], cache=False)
    for r in trace.ranks:
        _iterations_same(trace.rank_data(r))


@needs_native
def test_the_compiled_iterations_run_on_real_columns() -> None:
    # Not silently the fallback: the loop takes the columns as a rank table stores them.
    trace = tv.load(KINETO_FOLDERS["dlrm_8rank_v100"], cache=False)
    d = trace.rank_data(trace.ranks[0])
    ev = d.events
    names, kinds = ev["name"].array, ev["kind"].array
    step_name = np.append(np.asarray(names.categories.str.startswith("ProfilerStep#"), dtype=bool), False)
    step_kind = np.append(np.asarray(kinds.categories.isin(["user_annotation", "cpu_op"]), dtype=bool), False)
    act_kind = np.append(np.asarray(kinds.categories.isin(trace_mod._ACTIVITY), dtype=bool), False)
    columns = (np.asarray(names.codes), np.asarray(kinds.codes), ev["step"].to_numpy(), ev["ts_ns"].to_numpy())
    found = trace_mod._native_iterations(*columns, ev["dur_ns"].to_numpy(), step_name, step_kind, act_kind)
    assert found is not None and len(found) == 6
    steps = found[0]
    its = trace_mod._iterations_of(d)
    assert steps.tolist() == its["step"].tolist() and len(steps) >= 1
    assert found[1].tolist() == its["start_ns"].tolist()


def _rank(rows: list[tuple[int, int, str, str, int]]) -> Any:
    """A rank (what _iterations_of reads of one: its events and its number) of (ts, dur, kind,
    name, step) rows."""
    from types import SimpleNamespace

    kinds = ["cpu_op", "user_annotation", "kernel", "gpu_memcpy", "cuda_runtime"]
    names = sorted({r[3] for r in rows} | {"x"})
    ev = pd.DataFrame(
        {
            "ts_ns": np.array([r[0] for r in rows], dtype=np.int64),
            "dur_ns": np.array([r[1] for r in rows], dtype=np.int64),
            "kind": pd.Categorical([r[2] for r in rows], categories=kinds),
            "name": pd.Categorical([r[3] for r in rows], categories=names),
            "step": np.array([r[4] for r in rows], dtype=np.int32),
        }
    )
    return SimpleNamespace(meta=SimpleNamespace(rank=3), events=ev)


ITERATION_CASES = {
    "no events": [],
    "no step": [(0, 5, "cpu_op", "mm", -1), (1, 2, "kernel", "k", -1)],
    "steps, a step without GPU work, work outside steps": [
        (0, 100, "user_annotation", "ProfilerStep#7", 7),
        (10, 5, "kernel", "k", 7),
        (120, 10, "gpu_memcpy", "c", 7),
        (100, 50, "cpu_op", "ProfilerStep#8", 8),
        (130, 5, "cuda_runtime", "launch", 8),
        (300, 5, "kernel", "k", -1),
        (400, 5, "kernel", "k", 9),
        (5, 3, "kernel", "ProfilerStep#7", 7),
    ],
    "step rows out of order, a step split in two": [
        (500, 10, "user_annotation", "ProfilerStep#2", 2),
        (0, 10, "user_annotation", "ProfilerStep#1", 1),
        (20, 10, "user_annotation", "ProfilerStep#1", 1),
        (5, 100, "kernel", "k", 1),
        (505, 1, "kernel", "k", 2),
        (2, 1, "kernel", "k", 1),
    ],
}


@pytest.mark.parametrize("case", sorted(ITERATION_CASES))
def test_iterations_by_case(case: str) -> None:
    _iterations_same(_rank(ITERATION_CASES[case]))


def test_iterations_by_hand() -> None:
    its = _iterations_same(_rank(ITERATION_CASES["steps, a step without GPU work, work outside steps"]))
    assert its["step"].tolist() == [7, 8]
    assert its["start_ns"].tolist() == [0, 100] and its["end_ns"].tolist() == [100, 150]
    # Step 8 launched nothing: -1, as floats; the kernel named like a step is not a step row.
    assert its["gpu_start_ns"].tolist() == [5.0, -1.0] and its["gpu_end_ns"].tolist() == [130.0, -1.0]
    its = _iterations_same(_rank(ITERATION_CASES["step rows out of order, a step split in two"]))
    assert its["step"].tolist() == [1, 2] and its["start_ns"].tolist() == [0, 500]
    assert its["end_ns"].tolist() == [30, 510] and its["gpu_end_ns"].tolist() == [105, 506]


def test_span_per_group() -> None:
    group, ts, dur = a(2, 0, 2, 0), a(10, 5, 3, 7), a(1, 10, 1, -20)
    for g in (group, a(2, 0, -1, 0)):  # a negative group: numpy's index wraps (the loop declines)
        compiled, fallback = both(lambda g=g: trace_mod._span_per_group(g, ts, dur, 3))
        assert same(compiled, fallback)
    start, end = trace_mod._span_per_group(group, ts, dur, 3)
    assert start.tolist() == [5, I64.max, 3] and end.tolist() == [15, I64.min, 11]


def test_sweep_build_says_why_the_loops_are_not_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sweep_build.describe`` (``traceview --version``) names each reason the numpy code runs:
    turned off, not built, another version; and the compiled module when it is used."""
    from jupyter_traceview.model import sweep_build

    if sweep_build.AVAILABLE:
        assert sweep_build.describe().startswith("compiled (_sweep)")
        assert iv.native is sweep_build.SWEEP
    monkeypatch.setattr(sweep_build, "AVAILABLE", False)
    monkeypatch.setenv("TRACEVIEW_NATIVE", "0")
    assert "TRACEVIEW_NATIVE=0" in sweep_build.describe()
    assert sweep_build._module() is None
    monkeypatch.delenv("TRACEVIEW_NATIVE")
    import importlib.util

    if importlib.util.find_spec("jupyter_traceview.model._sweep") is None:
        assert "not built" in sweep_build.describe()
    else:
        monkeypatch.setattr(sweep_build, "VERSION", sweep_build.VERSION + 1)
        assert sweep_build._module() is None  # a module of another version is not used
        assert "another version" in sweep_build.describe()
