"""Derived per-rank results computed by a load's worker processes, kept with the cache entries.

A big trace's first ``findings`` call (the dashboard's first view) spends most of its time
on per-rank work whose results are kept with the ranks' cache entries
(:mod:`..model.facts`). A load that reads its files in worker processes can do that work
there, right after a worker has read a file and written its cache entry, while the rank's
tables are still in memory and the other core is busy with the next file: see
``tv.load(..., prepare=)``.

What to compute is not this layer's to know (the analyses sit above it): the package root
installs the functions (:func:`set_prepare_functions`), as it installs a trace's headline
function in the model (``model/display_hook.py``); importing any part of the package imports
the root first, so they are installed before any load. Each is ``fn(trace)`` of a
:class:`~..model.trace.Trace` holding one file's ranks, each rank with its cache entry's
store attached (:func:`..model.facts.attach`). The root installs one: what a default
``findings`` call computes per rank (``analysis/findings/prepare.py``).

What they keep is only a cache: a function that fails leaves what it had finished, and the
analysis computes the rest when it is called, as it would have without. The load itself
never fails because of them. This module imports nothing heavy at its top, for the root.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model.classify import Classifier
    from ..model.rank_data import RankData
    from ..model.trace import Trace
    from .ingest import ReadOptions
    from .readers.files import TraceFile

__all__ = ["MIN_BYTES", "prepare_functions", "read_prepared", "run", "set_prepare_functions"]

#: ``prepare=None`` (the default) prepares a load that reads at least this much JSON in worker
#: processes: where a first ``findings`` call takes seconds. Below it, the call is fast and
#: the load's own time matters more (a small load would pay more for importing the analyses
#: in its workers than the call saves).
MIN_BYTES = 512 << 20

#: A function preparing one file's ranks: ``fn(trace)``.
PrepareFunction = Callable[["Trace"], Any]

_functions: tuple[PrepareFunction, ...] = ()


def set_prepare_functions(functions: Sequence[PrepareFunction]) -> None:
    """Install the functions a load runs on the ranks of each file it reads (replacing those
    installed before; none: nothing is prepared). Each must be a module-level function: a
    pool's workers receive it by reference (pickled), so one that does not pickle raises
    ``TypeError`` here rather than failing a load."""
    for fn in functions:
        try:
            pickle.dumps(fn)
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise TypeError(f"a prepare function must be a module-level function, got {fn!r} ({exc})") from None
    global _functions
    _functions = tuple(functions)


def prepare_functions() -> tuple[PrepareFunction, ...]:
    """The installed functions, in order."""
    return _functions


def run(
    functions: Sequence[PrepareFunction],
    ranks: list[RankData],
    *,
    cache_dir: str,
    key: str,
    classifier: Classifier,
    source: str | None,
) -> None:
    """Run each of ``functions`` on the ranks a file gave (the cache entry ``key`` of
    ``cache_dir``, just written), their results kept in the entry's stores; silent on failure."""
    if not functions or not ranks:
        return
    from pathlib import Path

    from ..model import facts
    from ..model.trace import Trace
    from . import cache as _cache

    _cache.attach_facts(Path(cache_dir), key, ranks)  # as the load does for the user's trace
    try:
        trace = Trace(ranks, classifier=classifier, source=source, _classified=True)
        for fn in functions:
            fn(trace)
    except Exception:  # noqa: BLE001 - a cache only: the analysis computes what is missing
        pass
    finally:
        facts.flush()


def read_prepared(
    tf: TraceFile,
    options: ReadOptions,
    cache_dir: str | None,
    classifier: Classifier,
    functions: Sequence[PrepareFunction],
    source: str | None,
) -> list[RankData]:
    """:func:`..ingest.read_file` (in a pool's worker, or in the loading process), then the
    ranks' derived results prepared by ``functions`` (:func:`run`; none without a cache)."""
    from . import cache as _cache
    from .ingest import read_file

    ranks = read_file(tf, options, cache_dir, classifier)
    if functions and cache_dir is not None:
        key = _cache.entry_key(tf, options.cache_key_fields())
        run(functions, ranks, cache_dir=cache_dir, key=key, classifier=classifier, source=source)
    return ranks
