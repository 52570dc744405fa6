"""Binning a step function (a counter) over explicit bin edges, without losing a peak.

One function, :func:`bin_step`, serves every surface that shows a counter binned:
``memory_timeline(resample=N)`` (the Memory tab's and the report's chart) and the
timeline's memory lanes (:mod:`jupyter_traceview.views.timeline.memory`, the
widget and the HTML report's timeline).

Semantics. A counter is a step function given by its changes: ``ts`` (sorted) and
``values``, the value *after* each change, in force until the next change (several
changes at one time: the last is the value in force, but each counts for the maximum).
Before the first change it has **no value** (memory before the first record is not
known: the first record's total already includes its own allocation). Over the bins
``[edges[i], edges[i+1])``:

* **top**: the maximum of the function over the bin, that is of the value in force at
  ``edges[i]`` (the last change at or before it) and of every change inside the bin.
  A change that lasted a nanosecond still sets its bin's top, so a zoomed-out curve keeps
  every peak. NaN when the bin holds no value (it ends at or before the first change);
* **end**: the value in force just before ``edges[i+1]`` (the last change before it),
  NaN when there is none.

Values are float64 (bytes stay exact below 2**53). The cost is a binary search per edge
and, per bin, its changes; with ``blocks`` (``(size, block_maxima(values, size))``) a bin
holding many changes reads at most ``2 * size`` of them plus the maxima of the blocks it
spans, so a zoomed-out query's cost is bounded by the number of bins.
"""

from __future__ import annotations

import numpy as np

from ...errors import OptionError

__all__ = ["bin_step", "block_maxima", "even_edges", "range_max"]


def even_edges(lo: int, hi: int, n: int) -> np.ndarray:
    """``n + 1`` integer edges splitting ``[lo, hi)`` into ``n`` bins: ``lo + floor(i * (hi - lo) / n)``.

    Exact integer arithmetic (no float rounding; no int64 overflow for ``lo``, ``hi``
    within +-2**62 and ``n`` below 2**31).
    """
    if n < 1 or hi < lo:
        raise OptionError(f"even_edges needs n >= 1 and hi >= lo, got lo={lo}, hi={hi}, n={n}")
    q, r = divmod(int(hi) - int(lo), int(n))
    i = np.arange(n + 1, dtype=np.int64)
    return np.asarray(int(lo) + i * q + (i * r) // n, dtype=np.int64)


def block_maxima(values: np.ndarray, block: int) -> np.ndarray:
    """The maximum of each run of ``block`` values (the last run may be shorter), float64."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) == 0:
        return v
    return np.asarray(np.maximum.reduceat(v, np.arange(0, len(v), block)))


def range_max(v: np.ndarray, a: np.ndarray, b: np.ndarray, blocks: tuple[int, np.ndarray] | None) -> np.ndarray:
    """``max(v[a[i]:b[i]])`` for non-empty, consecutive ranges (``b[i] == a[i+1]``)."""
    if blocks is None or int(b[-1] - a[0]) <= 4 * blocks[0] * len(a):
        # Few records per column: one pass over them (consecutive ranges: each runs to the next's start).
        return np.asarray(np.maximum.reduceat(v[: int(b[-1])], a))
    size, bmax = blocks
    out = np.full(len(a), -np.inf)
    first_block = -(-a // size)  # the first block starting at or after a
    last_block = b // size  # blocks before this one end at or before b
    whole = last_block > first_block
    # Whole blocks: pairs of reduceat indices (-inf appended so that an end index is valid).
    if whole.any():
        padded = np.append(bmax, -np.inf)
        pairs = np.stack([first_block[whole], last_block[whole]], axis=1).reshape(-1)
        out[whole] = np.maximum.reduceat(padded, pairs)[::2]
    # The ends outside whole blocks (the whole range when it spans none): under 2 blocks each.
    head_end = np.where(whole, first_block * size, b)
    tail_start = np.where(whole, last_block * size, b)
    span = np.arange(size)
    for lo, hi in ((a, head_end), (tail_start, b)):
        for k in range(0, int((hi - lo).max(initial=0)), size):
            idx = lo[:, None] + k + span[None, :]
            got = np.where(idx < hi[:, None], v[np.minimum(idx, len(v) - 1)], -np.inf)
            out = np.maximum(out, got.max(axis=1))
    return out


def bin_step(
    ts: np.ndarray, values: np.ndarray, edges: np.ndarray, *, blocks: tuple[int, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A step function over the bins ``[edges[i], edges[i+1])``: ``(top, end)`` (see the module docstring).

    ``ts``: int64 times of the changes, sorted; ``values``: the value after each;
    ``edges``: sorted int64 bin edges (``len(edges) - 1`` bins). Returns two float64
    arrays of ``len(edges) - 1``, NaN where the function has no value yet.
    """
    e = np.asarray(edges, dtype=np.int64)
    width = len(e) - 1
    t = np.asarray(ts, dtype=np.int64)
    v = np.asarray(values, dtype=np.float64)
    if width < 1:
        return np.empty(0), np.empty(0)
    if not len(v):
        return np.full(width, np.nan), np.full(width, np.nan)
    # first[i]: the first record at or after edges[i].
    first = np.searchsorted(t, e, side="left")
    # In force at the bin's start: the last record at or before it.
    before = np.searchsorted(t, e[:-1], side="right") - 1
    top = np.where(before >= 0, v[np.maximum(before, 0)], -np.inf)
    a, b = first[:-1], first[1:]
    inside = b > a
    if inside.any():
        # Consecutive ranges: a non-empty bin's records run to the next non-empty one's start.
        red = range_max(v, a[inside], b[inside], blocks)
        top[inside] = np.maximum(top[inside], red)
    end_at = b - 1
    end = np.where(end_at >= 0, v[np.maximum(end_at, 0)], np.nan)
    top = np.where(np.isneginf(top), np.nan, top)
    return top, end
