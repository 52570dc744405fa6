"""Per-rank results kept with a rank's cache entry, so that a later process need not recompute them.

The loader attaches a :class:`RankFacts` store to each rank it read through the cache
(:func:`attach`, keyed by the rank's ``events`` frame object: a trace narrowed to a window or
to iterations has new tables, hence no store). The analysis layer decides what goes in
(:func:`jupyter_traceview.analysis._memo.per_rank`: results of its own per-rank functions,
keyed by the function, its arguments, the rank, the classifier and a hash of the analysis
code); this module only keeps bytes: a file ``r<i>.facts`` next to the rank's Arrow files,
holding a version (the code hash), a CRC-32 and a pickled dict of pickled values.

A store is only a cache: a missing, unreadable, damaged or outdated file reads as empty and
is replaced by the next :func:`flush`; failures to write are silent. Values are handed out
as fresh copies (unpickled on every read), so that a caller changing one cannot change the
next one's.

A cache folder may be shared (``tv.load(..., cache="/team/cache")``), and unpickling runs
code, so a file is only unpickled if this user could have written it and nobody else could
have: a regular file (not a link) owned by this user and writable by no one else (on POSIX;
files are written with mode 0600), and then only with the classes in :data:`ALLOWED`
(numpy and pandas arrays and frames, Arrow string arrays: what the analyses' per-rank
results are made of). Anything else reads as a miss and is recomputed. The CRC catches
damage.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import weakref
import zlib
from collections.abc import Hashable
from typing import Any

import pandas as pd

from .own_files import read_own, write_own

__all__ = ["RankFacts", "attach", "flush", "store_of"]

try:  # ISA-L's CRC-32 (the same values, ~4x faster; isal is a dependency), as loading/cache.py
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - odd installs
    _crc32 = zlib.crc32

#: Format of a facts file (its first element).
FORMAT = 1

#: The only globals a facts file may name (module, name): what the per-rank results the
#: analyses keep are made of. Anything else (a function that runs code, a class not listed)
#: makes the value a miss. ``tests/analysis/test_persisted_facts.py`` checks that the results
#: findings keeps on the test traces unpickle with these alone.
ALLOWED = frozenset(
    {
        ("builtins", "slice"),
        ("numpy", "dtype"),
        ("numpy", "ndarray"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy._core.numeric", "_frombuffer"),
        ("pandas", "DataFrame"),
        ("pandas", "Series"),
        ("pandas", "Index"),
        ("pandas", "RangeIndex"),
        ("pandas", "StringDtype"),
        ("pandas", "CategoricalDtype"),
        ("pandas", "Categorical"),
        ("pandas._libs.internals", "_unpickle_block"),
        ("pandas.arrays", "ArrowStringArray"),
        ("pandas.core.indexes.base", "_new_Index"),
        ("pandas.core.internals.managers", "BlockManager"),
        ("pandas.core.internals.managers", "SingleBlockManager"),
        ("pyarrow.lib", "_restore_array"),
        ("pyarrow.lib", "py_buffer"),
        ("pyarrow.lib", "type_for_alias"),
    }
)


class _Unpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals in :data:`ALLOWED`."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED:
            raise pickle.UnpicklingError(f"a facts file may not name {module}.{name}")
        return super().find_class(module, name)


def _loads(data: bytes) -> Any:
    return _Unpickler(io.BytesIO(data)).load()


class RankFacts:
    """The persisted per-rank results of one rank of a cache entry (file ``path``)."""

    def __init__(self, path: str, *, tables: tuple[str, int] | None = None) -> None:
        self.path = path
        #: Where the rank's tables are (the entry's folder, the rank's index in it), for a
        #: process that computes the values from them (``analysis/_workers.py``); None if unknown.
        self.tables = tables
        self._version: str | None = None
        self._values: dict[Hashable, bytes] | None = None
        self._dirty = False

    def _load(self, version: str) -> dict[Hashable, bytes]:
        if self._values is not None and self._version == version:
            return self._values
        values: dict[Hashable, bytes] = {}
        try:
            fmt, stored_version, crc, body = _loads(read_own(self.path))
            if fmt == FORMAT and stored_version == version and _crc32(body) == crc:
                loaded = _loads(body)
                if isinstance(loaded, dict):
                    values = loaded
        except FileNotFoundError:
            pass
        except Exception:  # noqa: BLE001 - a damaged or foreign file is a miss, rewritten by flush
            values = {}
        self._version, self._values = version, values
        return values

    def get(self, version: str, key: Hashable) -> tuple[bool, Any]:
        """``(True, a copy of the value)`` if stored under ``key`` by code of ``version``, else ``(False, None)``."""
        data = self._load(version).get(key)
        if data is None:
            return False, None
        try:
            return True, _loads(data)
        except Exception:  # noqa: BLE001 - a class not allowed, or damage: a miss, recomputed
            return False, None

    def put(self, version: str, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key`` (written by the next :func:`flush`)."""
        self.put_pickled(version, key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def put_pickled(self, version: str, key: Hashable, data: bytes) -> None:
        """:meth:`put` of a value already pickled (``pickle.HIGHEST_PROTOCOL``), e.g. by a worker process."""
        values = self._load(version)
        values[key] = data
        self._dirty = True
        _DIRTY.add(self)

    def flush(self) -> None:
        """Write the values if some were added (atomically: aside, then renamed); silent on failure."""
        if not self._dirty or self._values is None:
            return
        self._dirty = False
        body = pickle.dumps(self._values, protocol=pickle.HIGHEST_PROTOCOL)
        doc = pickle.dumps((FORMAT, self._version, _crc32(body), body), protocol=pickle.HIGHEST_PROTOCOL)
        folder = os.path.dirname(self.path)
        if not os.path.isdir(folder):
            return  # the entry is gone (pruned, or never written): nothing to keep the facts with
        with contextlib.suppress(OSError):
            write_own(self.path, doc)


#: id of an events frame -> (a weak reference to it, its store).
_STORES: dict[int, tuple[weakref.ref[pd.DataFrame], RankFacts]] = {}
#: Stores with values not yet written.
_DIRTY: weakref.WeakSet[RankFacts] = weakref.WeakSet()


def attach(events: pd.DataFrame, store: RankFacts) -> None:
    """Keep ``store`` as the persisted facts of the rank whose events frame is ``events``."""
    key = id(events)

    def forget(_: object, key: int = key) -> None:
        _STORES.pop(key, None)

    _STORES[key] = (weakref.ref(events, forget), store)


def store_of(events: pd.DataFrame) -> RankFacts | None:
    """The store attached to this events frame (the very object), or None."""
    hit = _STORES.get(id(events))
    if hit is None or hit[0]() is not events:
        return None
    return hit[1]


def flush() -> None:
    """Write every store with new values."""
    for store in list(_DIRTY):
        store.flush()
    _DIRTY.clear()
