"""The analyses' compiled loops (``analysis/_loops.c``) against the numpy code they replace.

``loops.native`` is the compiled module (None without it, or with ``TRACEVIEW_NATIVE=0``);
each test runs an analysis with the compiled loops (the analyses' and the interval
algebra's, ``intervals.native``) and with the numpy code (both set to None), and asks for
the same results: the distinct operator calls of the performance model, the kernels'
occupancy sums of findings, the steps counted by ``summary``, the host ranges' nesting. The hand-made cases also pin
the values, so that a wrong loop fails even where both paths were wrong the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import loops
from jupyter_traceview.model import intervals as iv
from tests.conftest import KINETO_FOLDERS

LOOPS = loops.native
INTERVALS = iv.native
needs_native = pytest.mark.skipif(
    LOOPS is None,
    reason="the compiled _loops is not built or TRACEVIEW_NATIVE=0 (tests/test_build.py says which)",
)


def a(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def both(fn: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """``fn(*args)`` with the compiled loops, then with the numpy code."""
    try:
        loops.native, iv.native = LOOPS, INTERVALS
        compiled = fn(*args)
        loops.native = iv.native = None
        fallback = fn(*args)
    finally:
        loops.native, iv.native = LOOPS, INTERVALS
    return compiled, fallback


def same(x: Any, y: Any) -> bool:
    if isinstance(x, tuple):
        return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y, strict=True))
    return bool(x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y))


# --- perfmodel.work_of_ops: the distinct operator calls


@needs_native
@pytest.mark.parametrize("distinct", [1, 7, 3000])
def test_factorize_calls_is_pandas_factorize(distinct: int) -> None:
    rng = np.random.default_rng(distinct)
    n = 20_000
    name = rng.integers(-1, 50, 400).astype(np.int16)
    rows = rng.integers(0, len(name), n).astype(np.int64)
    c1 = rng.integers(-1, max(distinct // 10, 1), n).astype(np.int8 if distinct < 100 else np.int32)
    c2 = rng.integers(-1, 3, n).astype(np.int64)
    c3 = rng.integers(-1, 2, n).astype(np.int8)
    radix = np.array([int(c1.max()) + 2, 4, 3], dtype=np.int64)
    if distinct == 1:
        name[:] = 5
        c1[:], c2[:], c3[:] = 0, -1, 1
    inv, first = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    k = LOOPS.factorize_calls(name, rows, c1, c2, c3, radix, inv, first)
    key = name[rows].astype(np.int64)
    for c, r in zip((c1, c2, c3), radix.tolist(), strict=True):
        key = key * r + c + 1
    want, uniques = pd.factorize(key, sort=True)
    assert k == len(uniques) and np.array_equal(inv, want)
    last = np.empty(k, dtype=np.int64)
    last[want] = np.arange(n)
    assert np.array_equal(first[:k], last)
    if distinct == 1:
        assert k == 1


@needs_native
def test_factorize_calls_checks_rows() -> None:
    out = np.empty(2, dtype=np.int64)
    with pytest.raises(ValueError, match="out of range"):
        LOOPS.factorize_calls(a(1, 2), a(0, 2), a(0, 0), a(0, 0), a(0, 0), a(2, 2, 2), out, out.copy())


def _work_same(trace: tv.Trace) -> None:
    from jupyter_traceview.analysis import _links as lk
    from jupyter_traceview.analysis.perfmodel import performance

    for r in trace.ranks:
        d = trace.rank_data(r)
        ops = np.flatnonzero(lk.category_mask(d.events["kind"], ["cpu_op"]))
        (code_c, work_c), (code_n, work_n) = both(
            lambda d=d, ops=ops: performance.work_of_ops(d.events, d.op_args, ops)
        )
        assert same(code_c, code_n)
        assert [repr(w) for w in work_c.tolist()] == [repr(w) for w in work_n.tolist()]


@pytest.mark.parametrize(
    "path",
    [
        *(KINETO_FOLDERS[n] for n in ("dlrm_8rank_v100", "h100_bert_small", "hta_triton")),
        *sorted((Path(__file__).parents[1] / "data" / "perfmodel_cpu").glob("*.json.gz")),
        *sorted(p for p in (Path(__file__).parents[1] / "data" / "torch_cpu").iterdir() if p.is_dir()),
    ],
    ids=str,
)
@pytest.mark.filterwarnings("ignore::jupyter_traceview.errors.TraceviewWarning")  # key_averages files beside
def test_work_of_ops_of_real_traces(path: Path) -> None:
    _work_same(tv.load(path, cache=False))


@pytest.mark.filterwarnings("ignore::jupyter_traceview.errors.TraceviewWarning")  # no peaks of a CPU trace
def test_the_matrix_and_performance_analyses_agree() -> None:
    path = sorted((Path(__file__).parents[1] / "data" / "perfmodel_cpu").glob("*.json.gz"))[0]

    def run() -> list[pd.DataFrame]:
        from jupyter_traceview.analysis.perfmodel.matrix import matrix_shapes

        trace = tv.load(path, cache=False)
        return [matrix_shapes(trace), tv.op_performance(trace), tv.op_performance(trace, by="shape"), tv.mfu(trace)]

    for x, y in zip(*both(run), strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)


# --- findings' rank_facts (the kernels' occupancy sums)


def _facts(path: Path) -> dict[int, Any]:
    from jupyter_traceview.analysis.findings.extraction import rank_facts

    trace = tv.load(path, cache=False)
    return trace.map_ranks(rank_facts, 10_000, 50_000)


@pytest.mark.parametrize("name", sorted(KINETO_FOLDERS))
def test_rank_facts_of_real_traces(name: str) -> None:
    compiled, fallback = both(_facts, KINETO_FOLDERS[name])
    assert repr(compiled) == repr(fallback)  # floats compared exactly (repr round-trips)


@needs_native
def test_occupancy_sums_by_hand() -> None:
    from jupyter_traceview.analysis.findings.extraction import _native_occupancy

    # Argument rows -> event rows 0..4: kinds 0 (kernel) or 1, classes 0 (compute) or 1, names 0-2.
    a_rows = a(0, 1, -1, 2, 3, 4, 0)
    occ = np.array([50.0, 25.0, 90.0, 0.0, 10.0, 40.0, 0.1], dtype=np.float32)
    kind = np.array([0, 0, 1, 0, -1], dtype=np.int8)
    kernel_kind = np.array([True, False, False])  # kinds 0, 1; the last entry: no kind (-1)
    cls = np.array([0, 0, 0, 1, 0], dtype=np.int8)
    name = np.array([2, 0, 0, 2, 1], dtype=np.int16)
    dur = a(100, 10, 7, 3, 5)
    sums = _native_occupancy(a_rows, occ, kind, kernel_kind, cls, 0, name, dur, 3)
    assert sums is not None
    occ_ns, occ_w, seen = sums
    # Rows 0 (twice) and 1 count; row 2 is not a kernel, 3 not compute, 4 of no kind; 3 has no occupancy.
    assert occ_ns.tolist() == [10.0, 0.0, 200.0] and seen.tolist() == [0, 2]
    assert occ_w.tolist() == [250.0, 0.0, 100.0 * 50.0 + 100.0 * float(np.float32(0.1))]
    # A name code past the outputs: declined (the numpy code then raises as it always did).
    assert _native_occupancy(a_rows, occ, kind, kernel_kind, cls, 0, name, dur, 2) is None


# --- _host.host_ranges: the host ranges' nesting (a stack sweep per thread)


def _host_arrays(trace: tv.Trace, window: tuple[int, int] | None) -> list[tuple[np.ndarray, ...]]:
    from jupyter_traceview.analysis._host import host_ranges

    out: list[tuple[np.ndarray, ...]] = []
    for r in trace.ranks:
        h = host_ranges(trace.rank_data(r).events, window)
        out.append((h.rows, h.parent, h.self_ns, h.n_children, h.exclusive_ns))
    return out


HOST_TRACES = [
    *(KINETO_FOLDERS[n] for n in ("dlrm_8rank_v100", "h100_bert_small", "hta_mi250_rocm", "h200_train")),
    *sorted(p for p in (Path(__file__).parents[1] / "data" / "torch_cpu").iterdir() if p.is_dir()),
]


@pytest.mark.parametrize("path", HOST_TRACES, ids=str)
@pytest.mark.filterwarnings("ignore::jupyter_traceview.errors.TraceviewWarning")  # key_averages files beside
def test_host_nesting_of_real_traces(path: Path) -> None:
    trace = tv.load(path, cache=False)
    ev = trace.rank_data(trace.ranks[0]).events
    ts = ev["ts_ns"].to_numpy()
    mid = int(np.median(ts)) if len(ts) else 0
    for window in (None, (mid, int(ts.max()) if len(ts) else 1), (int(ts.min()) if len(ts) else 0, mid)):
        compiled, fallback = both(_host_arrays, trace, window)
        assert same(tuple(compiled), tuple(fallback))


@needs_native
def test_host_nesting_by_hand() -> None:
    from jupyter_traceview.analysis._host import _innermost

    # One thread: 0 [0, 100] holds 1 [10, 50] and its equal twin 2; 3 [40, 80] overlaps 1 and 2
    # without nesting; 4 [45, 48] sits in 1, 2 and 3 (3 starts last: innermost); 5 [60, 60] is
    # a zero-length range in 3. Entry 6 is on another thread, at the same times as 0.
    ts = a(0, 10, 10, 40, 45, 60, 0)
    end = a(100, 50, 50, 80, 48, 60, 100)
    pid = a(1, 1, 1, 1, 1, 1, 1)
    tid = a(7, 7, 7, 7, 7, 7, 8)
    ranges = np.zeros(7, dtype=bool)
    expected = [-1, 0, 1, 0, 3, 3, -1]
    compiled, fallback = both(_innermost, pid, tid, ts, end, ranges)  # stack sweep; sparse table
    assert compiled.tolist() == fallback.tolist() == expected
    # Points: not ranges, never parents; a point equal to a range lies in it (the later twin).
    p_ts, p_end = np.append(ts, (10, 49, 85)), np.append(end, (50, 49, 101))
    is_point = np.append(ranges, (True, True, True))
    got = both(_innermost, np.append(pid, (1, 1, 1)), np.append(tid, (7, 7, 7)), p_ts, p_end, is_point)
    assert got[0][7:].tolist() == got[1][7:].tolist() == [2, 3, -1]


# --- summary: the trace span and the steps counted


@pytest.mark.parametrize(
    "steps",
    [a(-1), a(3), a(-1, -1), a(0, 0, 5, -1, 5, 2), a(-2, 4), a(7, 10**9), np.array([3, -1, 3, 1], dtype=np.int32)],
    ids=str,
)
def test_count_steps(steps: np.ndarray) -> None:
    from jupyter_traceview.analysis.summary import _count_steps

    compiled, fallback = both(_count_steps, steps)
    assert compiled == fallback == len({int(x) for x in steps if x >= 0})


@pytest.mark.parametrize("name", ["dlrm_8rank_v100", "h100_bert_small", "hta_cpu_only"])
def test_summary_of_real_traces(name: str) -> None:
    compiled, fallback = both(lambda: tv.summary(tv.load(KINETO_FOLDERS[name], cache=False)))
    pd.testing.assert_frame_equal(compiled, fallback, check_exact=True)


@needs_native
def test_native_calls_declines_what_it_does_not_take() -> None:
    from jupyter_traceview.analysis.perfmodel.performance import _native_calls

    names = np.array([0, 1], dtype=np.int16)
    rows = a(0, 1, 1)
    cols = [(np.array([0, 0, 1], dtype=np.int8), np.array(["a", "b"], dtype=object))] * 3
    found = _native_calls(LOOPS, names, rows, cols)
    assert found is not None and found[0].tolist() == [0, 1, 2] and found[1].tolist() == [0, 1, 2]
    floats = [(np.array([0.0, 0.0, 1.0]), np.array(["a", "b"], dtype=object))] * 3
    assert _native_calls(LOOPS, names, rows, floats) is None  # the numpy code then runs
    assert _native_calls(LOOPS, names, a(0, 5, 1), cols) is None  # a row past the names


def test_describe_says_why_the_loops_are_not_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """``loops.describe`` (``traceview --version``'s "Analysis loops") names each reason the
    numpy code runs: turned off, not built, another version; and the compiled module when used."""
    import importlib.util

    from jupyter_traceview.model import native_ext

    if LOOPS is not None:
        assert loops.describe().startswith("compiled (_loops)")
    monkeypatch.setenv("TRACEVIEW_NATIVE", "0")
    assert "TRACEVIEW_NATIVE=0" in loops.describe()
    assert native_ext.find(loops.NAME, lambda m: True) is None
    monkeypatch.delenv("TRACEVIEW_NATIVE")
    if importlib.util.find_spec(loops.NAME) is None:
        assert "not built" in loops.describe()
    else:
        monkeypatch.setattr(loops, "VERSION", loops.VERSION + 1)
        assert "another version" in loops.describe()  # a module of another version is not used


@needs_native
def test_turned_off_by_the_environment() -> None:
    import subprocess
    import sys

    code = "from jupyter_traceview.analysis import loops; print(loops.native is None)"
    env = {**os.environ, "TRACEVIEW_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
