"""_chains: pointer jumping up parent chains equals a walk up each chain, on random forests."""

from __future__ import annotations

import numpy as np
import pytest

from jupyter_traceview.analysis._chains import depths, nearest_marked, outermost_marked, path_ranks


def _forest(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random forest (some long chains, some bushy trees), its entries shuffled so that a
    parent may come after its children; random marks and keys from a few values."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    parent = np.full(n, -1, dtype=np.int64)
    for i in range(1, n):
        r = rng.random()
        if r < 0.1:
            parent[i] = -1
        elif r < 0.6:
            parent[i] = i - 1  # chains
        else:
            parent[i] = rng.integers(0, i)
    perm = rng.permutation(n)
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n)
    shuffled = np.full(n, -1, dtype=np.int64)
    shuffled[inv] = np.where(parent >= 0, inv[np.maximum(parent, 0)], -1)
    marked = rng.random(n) < rng.random()
    key = rng.integers(0, int(rng.integers(1, 4)), size=n)
    return shuffled, marked, key


def _chain(parent: np.ndarray, i: int) -> list[int]:
    """``i`` and its ancestors, innermost first (the walk the functions must equal)."""
    out = [i]
    while parent[out[-1]] >= 0:
        out.append(int(parent[out[-1]]))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_pointer_jumping_equals_walking_up(seed: int) -> None:
    parent, marked, key = _forest(seed)
    n = len(parent)
    chains = [_chain(parent, i) for i in range(n)]
    assert depths(parent).tolist() == [len(c) - 1 for c in chains]
    outer = [next((j for j in reversed(c) if marked[j]), -1) for c in chains]
    inner = [next((j for j in c if marked[j]), -1) for c in chains]
    assert outermost_marked(parent, marked).tolist() == outer
    assert nearest_marked(parent, marked).tolist() == inner
    ranks = path_ranks(parent, key).tolist()
    paths = [tuple(int(key[j]) for j in reversed(c)) for c in chains]
    # Equal ranks exactly for equal paths; of one length, ranks in the paths' order.
    rank_of = dict(zip(paths, ranks, strict=True))
    assert len(rank_of) == len(set(ranks))
    assert all(rank_of[p] == r for p, r in zip(paths, ranks, strict=True))
    for length in {len(p) for p in paths}:
        same = sorted(p for p in rank_of if len(p) == length)
        assert [rank_of[p] for p in same] == sorted(rank_of[p] for p in same)


def test_deep_chain_and_empty() -> None:
    """100,000 nested entries (in reverse order: every parent after its child) in a few rounds."""
    n = 100_000
    parent = np.concatenate((np.arange(1, n, dtype=np.int64), [-1]))
    assert (depths(parent) == np.arange(n - 1, -1, -1)).all()
    marked = np.zeros(n, dtype=bool)
    marked[[10, 20]] = True
    outer = outermost_marked(parent, marked)
    assert (outer[:21] == 20).all() and (outer[21:] == -1).all()
    inner = nearest_marked(parent, marked)
    assert (inner[:11] == 10).all() and (inner[11:21] == 20).all() and (inner[21:] == -1).all()
    assert len(set(path_ranks(parent, np.zeros(n, dtype=np.int64)).tolist())) == n
    empty = np.zeros(0, dtype=np.int64)
    assert len(depths(empty)) == len(path_ranks(empty, empty)) == len(outermost_marked(empty, empty.astype(bool))) == 0
