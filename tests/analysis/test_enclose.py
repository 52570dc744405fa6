"""The enclosure sweeps of ``analysis/_enclose.py`` against the definition, pair by pair.

Each sweep answers a question that the (point, range) pairs would answer; here the pairs
are listed by brute force on small random frames (many equal starts, equal ranges,
improper nesting, several threads, clipped-like ties) and the sweeps, compiled and numpy,
must give the same answers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jupyter_traceview.analysis import _enclose as en
from jupyter_traceview.analysis import loops

LOOPS = loops.native


def frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    ts = np.sort(rng.integers(0, 12, n))
    dur = rng.integers(0, 8, n)
    # Rows in start order, longer first at equal starts mostly (as a rank's table), but
    # not always (a clipped copy keeps rows whose starts became equal in any order).
    if rng.random() < 0.5:
        o = np.lexsort((-dur, ts))
        ts, dur = ts[o], dur[o]
    return pd.DataFrame(
        {
            "pid": rng.integers(0, 2, n),
            "tid": rng.integers(0, 2, n),
            "ts_ns": ts.astype(np.int64),
            "dur_ns": dur.astype(np.int64),
        }
    )


def pairs(ev: pd.DataFrame, ranges: np.ndarray, points: np.ndarray, scope: str) -> list[tuple[int, int]]:
    pid, tid = ev["pid"].to_numpy(), ev["tid"].to_numpy()
    ts = ev["ts_ns"].to_numpy()
    end = ts + ev["dur_ns"].to_numpy()
    out = []
    for i, p in enumerate(points.tolist()):
        if p < 0:
            continue
        for r in ranges.tolist():
            same = pid[r] == pid[p] and (scope == "process" or tid[r] == tid[p])
            if same and ts[r] <= ts[p] and end[p] <= end[r]:
                out.append((i, r))
    return out


def run_both(fn, *args, **kw):  # type: ignore[no-untyped-def]
    try:
        loops.native = LOOPS
        compiled = fn(*args, **kw)
        loops.native = None
        fallback = fn(*args, **kw)
    finally:
        loops.native = LOOPS
    return compiled, fallback


@pytest.mark.parametrize("seed", range(60))
def test_sweeps_answer_as_the_pairs_do(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    ev = frame(rng, n)
    ranges = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
    points = rng.integers(-1, n, int(rng.integers(0, n + 1))).astype(np.int64)
    scope = "process" if seed % 3 == 0 else "thread"
    got = pairs(ev, ranges, points, scope)
    inner = np.full(len(points), -1, dtype=np.int64)
    outer = np.full(len(points), -1, dtype=np.int64)
    for i, r in got:
        inner[i] = max(inner[i], r)
        outer[i] = r if outer[i] < 0 else min(outer[i], r)
    for fn, want in ((en.innermost, inner), (en.outermost, outer)):
        for res in run_both(fn, ev, ranges, points, scope=scope):
            assert np.array_equal(res, want), (fn.__name__, seed)
    weights = rng.integers(1, 1000, len(points)).astype(np.int64)
    sums = np.zeros(len(ranges), dtype=np.int64)
    later = np.zeros(len(ranges), dtype=bool)
    pos = {r: j for j, r in enumerate(ranges.tolist())}
    for i, r in got:
        sums[pos[r]] += weights[i]
        later[pos[r]] |= points[i] > r
    for res in run_both(en.enclosed_sums, ev, ranges, points, weights, scope=scope):
        assert np.array_equal(res, sums), seed
    for res in run_both(en.encloses_later, ev, ranges, points, scope=scope):
        assert np.array_equal(res, later), seed


def test_identical_ranges_need_no_pairs() -> None:
    """200,000 identical events, each a range and a point: 4e10 pairs, answered in linear
    memory (the sums would need 320 GB as pairs)."""
    n = 200_000
    ev = pd.DataFrame(
        {
            "pid": np.ones(n, np.int64),
            "tid": np.ones(n, np.int64),
            "ts_ns": np.full(n, 10, np.int64),
            "dur_ns": np.full(n, 5, np.int64),
        }
    )
    rows = np.arange(n, dtype=np.int64)
    for inner, outer, sums, later in zip(
        run_both(en.innermost, ev, rows, rows),
        run_both(en.outermost, ev, rows, rows),
        run_both(en.enclosed_sums, ev, rows, rows, np.ones(n, np.int64)),
        run_both(en.encloses_later, ev, rows, rows),
        strict=True,
    ):
        assert (inner == n - 1).all() and (outer == 0).all()
        assert (sums == n).all()
        assert later[:-1].all() and not later[-1]
