"""Property tests of the interval algebra against a brute-force model on a small integer grid."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_traceview.model import intervals as iv

GRID = 60

interval_lists = st.lists(
    st.tuples(st.integers(0, GRID), st.integers(0, 20)).map(lambda t: (t[0], min(GRID, t[0] + t[1]))),
    max_size=25,
)


def arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64)


def covered(pairs: list[tuple[int, int]]) -> np.ndarray:
    """Brute force: which unit cells [t, t+1) are covered."""
    cells = np.zeros(GRID, dtype=bool)
    for s, e in pairs:
        cells[s:e] = True
    return cells


def cells_of(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    return covered(list(zip(s.tolist(), e.tolist(), strict=True)))


@given(interval_lists)
def test_union_covers_exactly_and_is_disjoint(pairs: list[tuple[int, int]]) -> None:
    s, e = iv.union(*arrays(pairs))
    assert np.array_equal(cells_of(s, e), covered(pairs))
    assert (e >= s).all()
    assert (s[1:] > e[:-1]).all(), "sorted, disjoint and not touching"
    assert iv.length(s, e) == covered(pairs).sum()


@given(interval_lists)
def test_union_is_order_invariant(pairs: list[tuple[int, int]]) -> None:
    a = iv.union(*arrays(pairs))
    b = iv.union(*arrays(list(reversed(pairs))))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


@given(interval_lists, interval_lists)
def test_intersect_and_subtract(p: list[tuple[int, int]], q: list[tuple[int, int]]) -> None:
    a, b = iv.union(*arrays(p)), iv.union(*arrays(q))
    inter = iv.intersect(a, b)
    diff = iv.subtract(a, b)
    assert np.array_equal(cells_of(*inter), covered(p) & covered(q))
    assert np.array_equal(cells_of(*diff), covered(p) & ~covered(q))
    # Parts add up, overlap never exceeds either side.
    assert iv.length(*inter) + iv.length(*diff) == iv.length(*a)
    assert iv.length(*inter) <= min(iv.length(*a), iv.length(*b))


@given(st.lists(interval_lists, min_size=1, max_size=4))
def test_segments_label_every_cell(sets: list[list[tuple[int, int]]]) -> None:
    unions = [iv.union(*arrays(p)) for p in sets]
    s, e, m = iv.segments(*unions)
    assert (e > s).all() and (s[1:] >= e[:-1]).all()
    expected = np.zeros(GRID, dtype=np.int64)
    for i, p in enumerate(sets):
        expected |= covered(p).astype(np.int64) << i
    got = np.zeros(GRID, dtype=np.int64)
    for a, b, mask in zip(s.tolist(), e.tolist(), m.tolist(), strict=True):
        got[a:b] = mask
    assert np.array_equal(got, expected)


@given(interval_lists, st.integers(0, GRID), st.integers(0, GRID))
def test_clip(pairs: list[tuple[int, int]], lo: int, hi: int) -> None:
    s, e = iv.clip(*arrays(pairs), lo, hi)
    window = np.zeros(GRID, dtype=bool)
    window[lo:hi] = True
    assert np.array_equal(cells_of(s, e), covered(pairs) & window)


@settings(max_examples=200)
@given(interval_lists, st.lists(st.integers(0, GRID), min_size=2, max_size=12))
def test_binned_coverage(pairs: list[tuple[int, int]], edges: list[int]) -> None:
    edges_arr = np.array(sorted(edges), dtype=np.int64)
    s, e = iv.union(*arrays(pairs))
    got = iv.binned_coverage(s, e, edges_arr)
    cells = covered(pairs)
    expected = [cells[a:b].sum() for a, b in itertools.pairwise(edges_arr.tolist())]
    assert got.tolist() == expected
    # Conserved: bins spanning everything hold all the covered time.
    total = iv.binned_coverage(s, e, np.array([0, GRID]))
    assert total.tolist() == [iv.length(s, e)]


def test_empty_inputs() -> None:
    empty = np.empty(0, dtype=np.int64)
    s, e = iv.union(empty, empty)
    assert len(s) == 0 and iv.length(s, e) == 0
    assert iv.segments()[0].size == 0
    assert iv.binned_coverage(empty, empty, np.array([0, 10, 20])).tolist() == [0, 0]


@given(interval_lists)
def test_at_least_two_is_the_step_function_at_two(pairs: list[tuple[int, int]]) -> None:
    """``at_least_two`` (prefix maxima in start order) against the step function it replaces,
    on intervals in start order and shuffled, zero-length and equal starts included."""
    s, e = arrays(pairs)
    order = np.argsort(s, kind="stable")
    for a, b in ((s[order], e[order]), (s, e)):
        pos, level, _ = iv.step_function(a, b)
        ws, we = iv.at_least(pos, level, 2)
        gs, ge = iv.at_least_two(a, b)
        assert np.array_equal(gs, ws) and np.array_equal(ge, we)
        assert gs.dtype == ge.dtype == np.int64
    # And against brute force: cells covered by two or more intervals.
    twice = np.zeros(GRID, dtype=np.int64)
    for lo, hi in pairs:
        twice[lo:hi] += 1
    assert np.array_equal(cells_of(*iv.at_least_two(s, e)), twice >= 2)


@given(interval_lists, interval_lists)
def test_overlap_length_is_the_intersections_length(p: list[tuple[int, int]], q: list[tuple[int, int]]) -> None:
    """``overlap_length`` (coverage of one union summed over the other's intervals) against
    the length of the intersection it replaces, and brute force."""
    a, b = iv.union(*arrays(p)), iv.union(*arrays(q))
    got = iv.overlap_length(a, b)
    assert got == iv.length(*iv.intersect(a, b)) == int((covered(p) & covered(q)).sum())
    assert isinstance(got, int)


@given(interval_lists)
def test_union_of_sorted_starts_as_with_the_sort(pairs: list[tuple[int, int]]) -> None:
    """``union`` skips the sort when the starts come in order: the same union as sorting
    first (stable, as before), for sorted, reversed and unsorted inputs, and the inputs
    are left as they were."""
    s, e = arrays(pairs)
    order = np.argsort(s, kind="stable")
    want = iv.union(s[order], e[order])  # sorted input: the path without the sort
    for a, b in ((s, e), (s[::-1].copy(), e[::-1].copy()), (s[order], e[order])):
        before = (a.copy(), b.copy())
        got = iv.union(a, b)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert got[0].dtype == got[1].dtype == np.int64
        assert np.array_equal(a, before[0]) and np.array_equal(b, before[1])
    # Equal starts with different ends, in start order.
    got = iv.union(np.array([0, 0, 5, 5], dtype=np.int64), np.array([3, 1, 5, 9], dtype=np.int64))
    assert got[0].tolist() == [0, 5] and got[1].tolist() == [3, 9]


@given(interval_lists, interval_lists)
def test_coverage_of_by_brute_force(p: list[tuple[int, int]], q: list[tuple[int, int]]) -> None:
    """``coverage_of``: the time of each query interval (any order, overlapping, empty)
    covered by a union, cell by cell; int64."""
    u = iv.union(*arrays(p))
    cells = covered(p)
    qs, qe = arrays(q)
    got = iv.coverage_of(u, qs, qe)
    assert got.dtype == np.int64
    assert got.tolist() == [int(cells[a:b].sum()) for a, b in q]
