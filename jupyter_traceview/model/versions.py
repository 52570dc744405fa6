"""The versions of the table layout and of the readers' output (re-exported by :mod:`.schema`).

Kept apart from the schema, which imports numpy and pandas, so that the cache's keys
(:mod:`jupyter_traceview.loading.cache_key`) can be computed without them.
"""

from __future__ import annotations

__all__ = ["READER_VERSION", "SCHEMA_VERSION"]

#: Version of the table layout (:mod:`.schema`). Bumped when a column is added, removed or changes meaning.
SCHEMA_VERSION = 5

#: Version of the readers' output; part of the cache key, so bumping it invalidates caches.
READER_VERSION = 5
