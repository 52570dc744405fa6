"""Per-rank facts computed once and shared by the analyses, while a scope asks for it.

:func:`findings` runs a dozen analyses over the same ranks; each starts from the same
per-rank facts (the rank's GPU activities, its eid -> row table, the busy union). Inside
:func:`shared_rank_facts` those are computed once per rank table and handed to every
analysis that asks; outside it (an analysis called on its own) they are computed as
before. Nothing else changes: the analyses stay pure functions of the trace, and a memo
only returns what the computation it stands for would return.

The memo is keyed on the rank's ``events`` frame *object* (rank tables are immutable: a
trace narrowed to some ranks shares its tables; one narrowed to a window or to
iterations has new ones, which get their own entries) and holds a reference to it, so an
id is never reused while the scope lives. Its memory is bounded by the scope: the
caller owns the dict, and it is dropped with the scope (:class:`findings.Context` keeps
one for a findings call). Shared arrays are made read-only, so that a caller changing one
in place fails loudly instead of corrupting the next analysis' input.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np
import pandas as pd

__all__ = ["Memo", "rank_memo", "read_only", "shared_rank_facts", "sharing"]

T = TypeVar("T")

#: (id of the events frame, key) -> (the events frame, value).
Memo = dict[tuple[int, Hashable], tuple[pd.DataFrame, Any]]

_MEMO: ContextVar[Memo | None] = ContextVar("jupyter_traceview_rank_memo", default=None)


@contextmanager
def shared_rank_facts(memo: Memo | None = None) -> Iterator[Memo]:
    """Share per-rank facts between the analyses called inside (see the module docstring).

    ``memo`` is the store to use (a new one if None); pass the same dict again to reuse
    what an earlier scope computed. Nested scopes keep the outermost store.
    """
    outer = _MEMO.get()
    if outer is not None:
        yield outer
        return
    store: Memo = {} if memo is None else memo
    token = _MEMO.set(store)
    try:
        yield store
    finally:
        _MEMO.reset(token)


def sharing() -> bool:
    """Whether a :func:`shared_rank_facts` scope is open."""
    return _MEMO.get() is not None


def rank_memo(events: pd.DataFrame, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, once per (rank events frame, key) while a scope is open; else every time."""
    memo = _MEMO.get()
    if memo is None:
        return compute()
    k = (id(events), key)
    hit = memo.get(k)
    if hit is not None and hit[0] is events:
        value: T = hit[1]
        return value
    value = compute()
    memo[k] = (events, value)
    return value


def read_only(a: np.ndarray) -> np.ndarray:
    """``a`` marked read-only (in place), for arrays a memo shares."""
    a.flags.writeable = False
    return a
