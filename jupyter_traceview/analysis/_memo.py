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

Inside a scope, :func:`per_rank` also keeps the results of an analysis' per-rank function
with the rank's cache entry (:mod:`..model.facts`), for the next process that loads the
trace from the cache: keyed by the function, its arguments, the rank, the classifier and
the SHA-256 of the analysis and model code (any edit recomputes them), and only for a
trace not narrowed to a window (a narrowed rank has new tables, without a store). The
value is what the same function computes: :func:`per_rank` is ``trace.map_ranks`` with a
cache in front. :func:`save_facts` writes what was added (``findings`` calls it at its end).
A scope given :class:`._workers.RankWorkers` shares the ranks to compute with worker
processes (see there); the values are the same.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import pandas as pd

from ..model import facts as _facts
from ..model.classify import rules_key
from ..model.trace import Trace

__all__ = [
    "Memo",
    "Workers",
    "code_key",
    "per_rank",
    "rank_memo",
    "read_only",
    "recording",
    "save_facts",
    "shared_rank_facts",
    "sharing",
    "worker_scope",
]

T = TypeVar("T")

#: (id of the events frame, key) -> (the events frame, value).
Memo = dict[tuple[int, Hashable], tuple[pd.DataFrame, Any]]

_MEMO: ContextVar[Memo | None] = ContextVar("jupyter_traceview_rank_memo", default=None)


class Workers(Protocol):
    """What :func:`per_rank` asks of worker processes (:class:`._workers.RankWorkers`)."""

    def far(self, trace: Trace, ranks: list[int], tables: dict[int, tuple[str, int]]) -> list[int]: ...

    def submit(
        self, trace: Trace, fn: Callable[..., Any], args: tuple[Any, ...], far: dict[int, tuple[str, int]]
    ) -> Any: ...

    def collect(
        self, handles: Any, here: Callable[[list[int]], dict[int, Any]] | None = None
    ) -> tuple[dict[int, bytes], list[int], dict[int, Any]]: ...

    def abandon(self) -> None: ...


_WORKERS: ContextVar[Workers | None] = ContextVar("jupyter_traceview_rank_workers", default=None)

#: A per-rank call: the function and its arguments, as :func:`per_rank` was given them.
Call = tuple[Callable[..., Any], tuple[Any, ...]]

_RECORDING: ContextVar[list[Call] | None] = ContextVar("jupyter_traceview_rank_calls", default=None)


@contextmanager
def shared_rank_facts(memo: Memo | None = None, *, workers: Workers | None = None) -> Iterator[Memo]:
    """Share per-rank facts between the analyses called inside (see the module docstring).

    ``memo`` is the store to use (a new one if None); pass the same dict again to reuse
    what an earlier scope computed. ``workers``: processes that :func:`per_rank` may share
    the ranks to compute with (:mod:`._workers`). Nested scopes keep the outermost store
    and workers.
    """
    outer = _MEMO.get()
    if outer is not None:
        yield outer
        return
    with _scope({} if memo is None else memo, workers) as store:
        yield store


def worker_scope(memo: Memo) -> AbstractContextManager[Memo]:
    """A worker process's scope (:mod:`._workers`): ``memo`` shared, no workers of its own,
    whatever scope the process inherited when it was forked."""
    return _scope(memo, None)


@contextmanager
def _scope(memo: Memo, workers: Workers | None) -> Iterator[Memo]:
    """``memo`` and ``workers`` in force inside (what was before, after)."""
    token = _MEMO.set(memo)
    w_token = _WORKERS.set(workers)
    try:
        yield memo
    finally:
        _WORKERS.reset(w_token)
        _MEMO.reset(token)


@contextmanager
def recording() -> Iterator[list[Call]]:
    """The calls of :func:`per_rank` whose results are kept, made inside: ``(fn, args)`` in the
    order first made, each once (for :mod:`.findings.prepare`, which makes them again on other ranks)."""
    calls: list[Call] = []
    token = _RECORDING.set(calls)
    try:
        yield calls
    finally:
        _RECORDING.reset(token)


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


@lru_cache(maxsize=1)
def code_key() -> str:
    """SHA-256 of the package version and the source (Python and C) of the analysis and model
    packages (what persisted facts depend on). If a source cannot be read, a key of this
    process only: what it keeps is never read by another (better recomputed than read from
    other code)."""
    from .._version import __version__

    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(__version__.encode())
    try:
        for sub in ("analysis", "model"):
            # The C sources too (model/_sweep.c, analysis/_loops.c): a compiled loop computes what its numpy
            # fallback computes, but a fix to one must not read results of the other.
            for path in sorted(p for p in (root / sub).rglob("*") if p.suffix in (".py", ".c")):
                h.update(str(path.relative_to(root)).encode())
                h.update(b"\0")
                h.update(path.read_bytes())
    except OSError:
        h.update(os.urandom(16))
    return h.hexdigest()


def per_rank(trace: Trace, fn: Callable[..., T], /, *args: Any, keep: bool = True) -> dict[int, T]:
    """``trace.map_ranks(fn, *args)``, the results kept with the ranks' cache entries while a
    scope is open (see the module docstring). ``fn`` must be a module-level function of a
    one-rank trace whose result depends on that rank's tables, classes and ``args`` only, and
    ``args`` plain values (their ``repr`` is part of the key). ``keep=False``: ``trace.map_ranks``
    (for results asked for one window among many, not worth keeping)."""
    if not keep or _MEMO.get() is None or trace.window is not None or trace.client is not None:
        return trace.map_ranks(fn, *args)
    calls = _RECORDING.get()
    if calls is not None and (fn, args) not in calls:
        calls.append((fn, args))
    out: dict[int, Any] = {}
    missing: list[int] = []
    stores: dict[int, tuple[_facts.RankFacts, str]] = {}
    version = what = ""
    for r in trace.ranks:
        store = _facts.store_of(trace.rank_data(r).events)
        if store is None:
            missing.append(r)
            continue
        if not version:
            version = code_key()
            what = f"{fn.__module__}.{fn.__qualname__}{args!r}|{rules_key(trace.classifier)}"
        key = f"{what}|rank {r}"
        found, value = store.get(version, key)
        if found:
            out[r] = value
        else:
            missing.append(r)
            stores[r] = (store, key)
    if missing:
        workers = _WORKERS.get()
        tables = {r: t for r, (store, _) in stores.items() if (t := store.tables) is not None}
        far = workers.far(trace, missing, tables) if workers is not None else []
        if workers is not None and far:
            # The workers' share first, then this process's, while they compute.
            handles = workers.submit(trace, fn, args, {r: tables[r] for r in far})
            try:
                computed = _some(trace, [r for r in missing if r not in set(far)], fn, args)
                # Then the ranks the workers have not started, taken over here.
                pickled, failed, taken = workers.collect(handles, lambda rs: _some(trace, rs, fn, args))
            except BaseException:
                workers.abandon()  # their answers are not wanted (and must not answer a later call)
                raise
            computed.update(taken)
            computed.update(_some(trace, failed, fn, args))
            for r, data in pickled.items():
                out[r] = pickle.loads(data)
                store, key = stores[r]
                store.put_pickled(version, key, data)
        elif len(missing) == len(trace.ranks):
            computed = trace.map_ranks(fn, *args)
        else:
            computed = _some(trace, missing, fn, args)
        for r, value in computed.items():
            out[r] = value
            if r in stores:
                store, key = stores[r]
                store.put(version, key, value)
    return {r: out[r] for r in trace.ranks}


def _some(trace: Trace, ranks: list[int], fn: Callable[..., T], args: tuple[Any, ...]) -> dict[int, T]:
    if not ranks:
        return {}
    return trace.select(ranks=ranks).map_ranks(fn, *args)


def save_facts() -> None:
    """Write the per-rank results :func:`per_rank` added to the cache entries."""
    _facts.flush()
