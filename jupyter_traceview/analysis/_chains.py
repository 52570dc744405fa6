"""Parent chains (a forest given as a ``parent`` array, -1 at the roots) walked by pointer jumping.

A chain is as long as the nesting is deep, and the depth grows with the events where ranges
nest (300,000 identical operators nest 300,000 deep): a walk up the chains one level at a
time costs events x depth. Pointer jumping doubles the step at each round (``jump[i]``
becomes ``jump[jump[i]]``): ceil(log2(depth + 1)) vectorised rounds, O(n log depth) in all
(:func:`path_ranks`: O(n log n log depth), one sort per round). The entries may be in any
order (a parent may come after its children).
"""

from __future__ import annotations

import numpy as np

__all__ = ["chain_sums", "depths", "nearest_marked", "outermost_marked", "path_ranks"]


def depths(parent: np.ndarray) -> np.ndarray:
    """Per entry, the number of its ancestors (0 at the top)."""
    parent = np.asarray(parent, dtype=np.int64)
    return chain_sums(parent, (parent >= 0).astype(np.int64))


def chain_sums(parent: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per entry, the sum of ``values`` (int64) over its chain: itself and every ancestor."""
    acc = np.array(values, dtype=np.int64)  # the sum up to jump[i] (exclusive), or the whole once -1
    jump = np.array(parent, dtype=np.int64)
    live = np.flatnonzero(jump >= 0)
    while len(live):
        j = jump[live]
        add, nxt = acc[j], jump[j]
        acc[live] += add
        jump[live] = nxt
        live = live[nxt >= 0]
    return acc


def _marked(parent: np.ndarray, marked: np.ndarray, outer: bool) -> np.ndarray:
    """Per entry, the outermost (``outer``) or innermost marked entry of its chain, itself included."""
    parent = np.asarray(parent, dtype=np.int64)
    # best[i]: the answer among i and its ancestors below jump[i] (all of them once jump[i] is -1).
    best = np.where(np.asarray(marked, dtype=bool), np.arange(len(parent), dtype=np.int64), -1)
    jump = parent.copy()
    live = np.flatnonzero(jump >= 0)
    while len(live):
        j = jump[live]
        above, nxt = best[j], jump[j]
        mine = best[live]
        best[live] = np.where(above >= 0, above, mine) if outer else np.where(mine >= 0, mine, above)
        jump[live] = nxt
        live = live[nxt >= 0]
    return best


def outermost_marked(parent: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """Per entry, its outermost marked ancestor, itself included (-1 if none)."""
    return _marked(parent, marked, outer=True)


def nearest_marked(parent: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """Per entry, its innermost marked ancestor, itself included (-1 if none)."""
    return _marked(parent, marked, outer=False)


def _pair_ranks(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Dense ranks of the pairs ``(hi, lo)`` in lexicographic order."""
    n = len(hi)
    out = np.empty(n, dtype=np.int64)
    if not n:
        return out
    o = np.lexsort((lo, hi))
    h, lw = hi[o], lo[o]
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = (h[1:] != h[:-1]) | (lw[1:] != lw[:-1])
    out[o] = np.cumsum(new) - 1
    return out


def path_ranks(parent: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Per entry, a dense rank of its *path*: the keys of its chain, from the top down to itself.

    Equal ranks exactly for equal paths; of two paths of the same length (entries of one
    depth), the lexicographically smaller has the smaller rank. By doubling: after round
    ``k`` an entry's rank stands for the keys of itself and its ``2**k - 1`` nearest
    ancestors; the next round ranks the pairs (rank of ``jump[i]``, rank of ``i``).
    """
    parent = np.asarray(parent, dtype=np.int64)
    rank = np.unique(np.asarray(key, dtype=np.int64), return_inverse=True)[1].astype(np.int64).reshape(-1)
    jump = parent.copy()
    has = jump >= 0
    while has.any():
        at = np.maximum(jump, 0)
        rank = _pair_ranks(np.where(has, rank[at], -1), rank)
        jump = np.where(has, jump[at], -1)
        has = jump >= 0
    return rank
