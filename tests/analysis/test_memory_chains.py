"""Memory records' enclosing operators (issue 37): past ``WALK_LEVELS`` levels ``op_rows``
jumps along the parent chains (``_chains``) instead of walking them one level at a time;
the pairs, and their order, are the walk's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jupyter_traceview.analysis.memory import _records
from jupyter_traceview.analysis.memory._records import op_rows


def _events(rng: np.random.Generator, n: int, chain: bool, offset: int) -> pd.DataFrame:
    """A random forest of events (``chain``: mostly nested in the previous one), operators and
    other ranges mixed; eids start at ``offset`` (not the row: a table of part of a rank)."""
    parent = np.full(n, -1, dtype=np.int64)
    for i in range(1, n):
        if rng.random() < 0.03:
            continue
        parent[i] = i - 1 if chain and rng.random() < 0.9 else rng.integers(0, i)
    kinds = np.array(["cpu_op", "user_annotation", "python_function", "kernel"])
    kind = kinds[rng.choice(4, n, p=[0.3, 0.1, 0.4, 0.2])]
    return pd.DataFrame(
        {
            "eid": np.arange(n, dtype=np.int64) + offset,
            "parent_eid": np.where(parent >= 0, parent + offset, -1),
            "kind": pd.Categorical(kind, categories=kinds),
        }
    )


def _outermost_from_all_levels(
    ev: pd.DataFrame, start: np.ndarray, kinds: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """The outermost operator per record as memory.operators found it before: the last of the
    all-levels pairs of each record."""
    rec_i, top_r = op_rows(ev, start, all_levels=True, kinds=kinds)
    top = np.full(len(start), -1, dtype=np.int64)
    if len(rec_i):
        _, first_rev = np.unique(rec_i[::-1], return_index=True)
        last = len(rec_i) - 1 - first_rev
        top[rec_i[last]] = top_r[last]
    got = np.flatnonzero(top >= 0)
    return got, top[got]


@pytest.mark.parametrize("jump_after", [0, 1, 4])
def test_jumping_gives_the_walks_pairs_in_its_order(jump_after: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(37)
    for k in range(30):
        ev = _events(rng, int(rng.integers(1, 300)), chain=bool(k % 2), offset=0 if k % 3 else 5)
        start = rng.integers(0, len(ev), int(rng.integers(0, 50)))
        for kinds in [_records.OP_KINDS, ("cpu_op",)]:
            monkeypatch.setattr(_records, "WALK_LEVELS", 10**9)
            inner = op_rows(ev, start, kinds=kinds)
            outer = _outermost_from_all_levels(ev, start, kinds)
            walked_outer = op_rows(ev, start, outermost=True, kinds=kinds)
            monkeypatch.setattr(_records, "WALK_LEVELS", jump_after)
            for want, got in [
                (inner, op_rows(ev, start, kinds=kinds)),
                (outer, op_rows(ev, start, outermost=True, kinds=kinds)),
                (outer, walked_outer),
            ]:
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_a_300k_deep_chain() -> None:
    """Records under 300,000 nested ranges, operators only at the top 10 levels: the
    innermost and outermost operators without a walk of 300,000 levels (it must not hang)."""
    n = 300_000
    kinds = np.array(["cpu_op", "python_function", "cpu_instant_event"])
    kind = np.r_[np.zeros(10, dtype=np.int64), np.ones(n - 10, dtype=np.int64), 2, 2]
    ev = pd.DataFrame(
        {
            "eid": np.arange(n + 2, dtype=np.int64),
            "parent_eid": np.r_[-1, np.arange(n - 1), n - 1, 0],
            "kind": pd.Categorical(kinds[kind], categories=kinds),
        }
    )
    start = np.array([n, n + 1])
    i, r = op_rows(ev, start)
    assert i.tolist() == [1, 0] and r.tolist() == [0, 9]  # nearest levels first
    i, r = op_rows(ev, start, outermost=True)
    assert i.tolist() == [0, 1] and r.tolist() == [0, 0]
