"""Derived per-rank results computed by a load's worker processes, kept with the cache entries.

A big trace's first ``findings`` call (the dashboard's first view) spends most of its time
on per-rank work whose results are kept with the ranks' cache entries
(:mod:`..model.facts`). A load that reads its files in worker processes can do that work
there, right after a worker has read a file and written its cache entry, while the rank's
tables are still in memory and the other core is busy with the next file: see
``tv.load(..., prepare=)``.

What to compute is not this layer's to know (the analyses sit above it): it runs the
functions declared as entry points of the group :data:`GROUP`, each ``fn(trace)`` of a
:class:`~..model.trace.Trace` holding the file's ranks, with each rank's store attached
(:func:`..model.facts.attach`). This package declares one,
``jupyter_traceview.analysis.findings.prepare:prepare``, in its ``pyproject.toml``.

What they keep is only a cache: a function that fails (or an entry point that does not
load) leaves nothing, and the analysis computes the values when it is called, as it would
have without. The load itself never fails because of them.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..model import facts
from ..model.classify import Classifier
from ..model.rank_data import RankData, when_built
from ..model.trace import Trace
from . import cache as _cache

__all__ = ["GROUP", "MIN_BYTES", "functions", "run"]

#: The entry point group of the functions a load runs on the ranks it reads.
GROUP = "jupyter_traceview.prepare"

#: ``prepare=None`` (the default) prepares a load that reads at least this much JSON in worker
#: processes: where a first ``findings`` call takes seconds. Below it, the call is fast and
#: the load's own time matters more (a small load would pay more for starting the functions'
#: modules in its workers than the call saves).
MIN_BYTES = 512 << 20


@lru_cache(maxsize=1)
def functions() -> tuple[str, ...]:
    """The declared functions, as ``module:attribute`` (sorted; none if the package's metadata
    cannot be read, e.g. a source tree that was never installed)."""
    from importlib.metadata import entry_points

    try:
        return tuple(sorted({ep.value for ep in entry_points(group=GROUP)}))
    except Exception:  # noqa: BLE001 - broken metadata of some other package: nothing to run
        return ()


def _resolve(spec: str) -> Callable[[Trace], Any]:
    module, _, attr = spec.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    fn: Callable[[Trace], Any] = obj
    return fn


def run(
    specs: Sequence[str],
    ranks: list[RankData],
    *,
    cache_dir: str,
    key: str,
    classifier: Classifier,
    source: str | None,
) -> None:
    """Run each function of ``specs`` on the ranks a file gave (the cache entry ``key`` of
    ``cache_dir``, just written), their results kept in the entry's stores; silent on failure."""
    if not specs or not ranks:
        return
    stores = _cache.fact_stores(Path(cache_dir), key, len(ranks))
    for d, store in zip(ranks, stores, strict=True):
        when_built(d, "events", functools.partial(facts.attach, store=store))
    try:
        trace = Trace(ranks, classifier=classifier, source=source, _classified=True)
        for spec in specs:
            _resolve(spec)(trace)
    except Exception:  # noqa: BLE001 - a cache only: the analysis computes what is missing
        pass
    finally:
        facts.flush()
