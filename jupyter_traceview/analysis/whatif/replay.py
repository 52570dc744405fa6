"""Replaying the graph: every node's time as the latest of its dependencies (longest paths in a DAG).

The nodes are visited in a topological order (Kahn's algorithm), compiled
(``_loops.replay``) where the extension is built, else in Python (the same algorithm;
tests/analysis/test_whatif_replay.py compares both). Recorded times can contradict each
other by a clock tolerance (a sync's return recorded before the copy it waited for ends),
which can close a cycle; the edges of a cycle that did not bind their node, then those
going back in recorded time, are dropped until the graph is acyclic.
"""

from __future__ import annotations

import numpy as np

from .. import loops

__all__ = ["Prepared", "longest_times", "replay_python"]

_MIN = np.iinfo(np.int64).min


def _csr(
    dst: np.ndarray, src: np.ndarray, w: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    by_dst = np.argsort(dst, kind="stable")
    in_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=in_ptr[1:])
    by_src = np.argsort(src, kind="stable")
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=out_ptr[1:])
    return (
        in_ptr,
        np.ascontiguousarray(src[by_dst], dtype=np.int64),
        np.ascontiguousarray(w[by_dst], dtype=np.int64),
        out_ptr,
        np.ascontiguousarray(dst[by_src], dtype=np.int64),
    )


def replay_python(
    in_ptr: np.ndarray,
    in_src: np.ndarray,
    in_w: np.ndarray,
    out_ptr: np.ndarray,
    out_dst: np.ndarray,
    base: np.ndarray,
    out: np.ndarray,
    origin: np.ndarray | None = None,
) -> int:
    """What ``_loops.replay`` computes, in Python (the fallback)."""
    n = len(base)
    ip, isrc, iw = in_ptr.tolist(), in_src.tolist(), in_w.tolist()
    op, odst, b = out_ptr.tolist(), out_dst.tolist(), base.tolist()
    deg = [ip[i + 1] - ip[i] for i in range(n)]
    res = [_MIN] * n
    org = origin.tolist() if origin is not None else None
    queue = [i for i in range(n) if deg[i] == 0]
    done = 0
    head = 0
    while head < len(queue):
        x = queue[head]
        head += 1
        best = b[x]
        frm = -1
        for e in range(ip[x], ip[x + 1]):
            u = res[isrc[e]]
            if u != _MIN and u + iw[e] > best:
                best = u + iw[e]
                frm = isrc[e]
        res[x] = best
        if org is not None and org[x] < 0:
            org[x] = org[frm] if frm >= 0 else -1
        done += 1
        for e in range(op[x], op[x + 1]):
            y = odst[e]
            deg[y] -= 1
            if deg[y] == 0:
                queue.append(y)
    out[:] = np.asarray(res, dtype=np.int64)
    if origin is not None and org is not None:
        origin[:] = np.asarray(org, dtype=np.int64)
    return done


class Prepared:
    """A graph ready to replay many times (its edges by destination and by source)."""

    def __init__(self, t: np.ndarray, dst: np.ndarray, src: np.ndarray, w: np.ndarray) -> None:
        n = len(t)
        self.t = t
        self.arrays = _csr(dst, src, w, n)
        self.has_in = np.bincount(dst, minlength=n) > 0

    def run(
        self, lower: tuple[np.ndarray, np.ndarray] | None = None, origin: np.ndarray | None = None
    ) -> tuple[np.ndarray, bool]:
        """Every node's replayed time, and whether the graph is acyclic (if not, the nodes a
        cycle holds, and those after them, are left at ``_MIN``): a node without an incoming
        edge keeps its time ``t``; ``lower = (nodes, values)``: these nodes start from
        ``values`` instead (the latest of it and their incoming edges). ``origin`` (written):
        on entry ``>= 0`` for the nodes that are origins, -1 elsewhere; on return, each node's
        origin: the one its time derives from, along the edges that set it (-1: none)."""
        n = len(self.t)
        base = np.full(n, _MIN, dtype=np.int64)
        base[~self.has_in] = self.t[~self.has_in]
        if lower is not None:
            base[lower[0]] = lower[1]
        out = np.empty(n, dtype=np.int64)
        native = getattr(loops.native, "replay", None) if loops.native is not None else None
        if native is not None:
            done = int(native(*self.arrays, base, out) if origin is None else native(*self.arrays, base, out, origin))
        else:
            done = replay_python(*self.arrays, base, out, origin)
        return out, done == n


def longest_times(
    t: np.ndarray,
    dst: np.ndarray,
    src: np.ndarray,
    w: np.ndarray,
    binding: np.ndarray,
) -> np.ndarray:
    """The replayed time of every node: ``max(src time + w)`` over its edges; its recorded time ``t``
    where it has none. Edges closing a cycle are dropped (see the module docstring)."""
    n = len(t)
    keep = np.ones(len(dst), dtype=bool)
    out = np.empty(n, dtype=np.int64)
    for attempt in range(3):
        out, acyclic = Prepared(t, dst[keep], src[keep], w[keep]).run()
        if acyclic:
            return out
        stuck = out == _MIN
        among = keep & stuck[dst] & stuck[src]
        if attempt == 0:
            keep &= ~(among & ~binding)
        elif attempt == 1:
            keep &= ~(among & (t[src] >= t[dst]))
        else:
            break
    # Still cyclic: the nodes left keep their recorded times.
    left = out == _MIN
    out[left] = t[left]
    return out
