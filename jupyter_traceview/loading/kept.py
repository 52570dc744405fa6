"""Small JSON documents kept beside a trace's cache entries (``traceview summary``'s output).

A document is kept in the cache entry of the trace's first file that has one
(``<cache>/<entry>/kept.<name>.<digest>.json``), so that it goes when that entry goes
(pruned, cleared, found damaged, written again). Its digest covers the caller's key (the
command, its options, a hash of the code that made the document) and the identity of
every file of the trace, as the cache's own keys see it (real path, size, modification
time, content fingerprint; :func:`.cache_key.entry_key`) together with the names of the
files :func:`~.readers.files.discover` skipped: a changed, added or removed file, other
options or other code give another digest, hence a miss.

As with the per-rank facts (:mod:`jupyter_traceview.model.facts`), a file is only read if
this user could have written it and nobody else could have (:mod:`..model.own_files`:
a regular file of this user's, written 0600, writable by no one else); it carries a
CRC-32 of its document. A missing, foreign, damaged or oversized file is a miss; failures
to write are silent. Light: no numpy, pandas or Arrow.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..model.own_files import read_own, write_own
from .cache_key import entry_key
from .readers.files import TraceFile

__all__ = ["KEPT_FORMAT", "MAX_KEPT_BYTES", "Kept"]

#: Format of a kept file; others are misses.
KEPT_FORMAT = 1
#: Kept files above this size are not read (a miss).
MAX_KEPT_BYTES = 16 * 2**20


class Kept:
    """Where the document ``name`` under ``key`` is kept for the trace of ``files``.

    ``options`` are the reader options of the cache's keys
    (``ReadOptions.cache_key_fields()``), ``skipped`` the paths discovery skipped.
    """

    def __init__(
        self,
        cache_dir: Path,
        files: Sequence[TraceFile],
        options: dict[str, Any],
        name: str,
        key: str,
        skipped: Sequence[os.PathLike[str] | str] = (),
    ) -> None:
        real_dirs: dict[str, str] = {}
        self._entries = [os.path.join(cache_dir, entry_key(tf, options, real_dirs)) for tf in files]
        ident = [KEPT_FORMAT, name, key, [os.path.basename(e) for e in self._entries], sorted(map(str, skipped))]
        self.digest = hashlib.sha256(json.dumps(ident).encode()).hexdigest()
        self._file = f"kept.{name}.{self.digest[:32]}.json"

    def _path(self) -> str | None:
        """The file in the first entry that exists (None: no entry to keep it with)."""
        for entry in self._entries:
            if os.path.isdir(entry):
                return os.path.join(entry, self._file)
        return None

    def read(self) -> Any | None:
        """The kept document, or None (a miss)."""
        path = self._path()
        if path is None:
            return None
        try:
            doc = json.loads(read_own(path, MAX_KEPT_BYTES))
            if not isinstance(doc, dict) or doc.get("format") != KEPT_FORMAT or doc.get("digest") != self.digest:
                return None
            body = doc["body"]
            if not isinstance(body, str) or zlib.crc32(body.encode()) != doc["crc32"]:
                return None
            return json.loads(body)
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return None  # missing, foreign, oversized or damaged: a miss

    def write(self, value: Any) -> None:
        """Keep ``value`` (JSON-ready); silent if there is no entry or it cannot be written."""
        path = self._path()
        if path is None:
            return
        body = json.dumps(value)
        doc = {"format": KEPT_FORMAT, "digest": self.digest, "crc32": zlib.crc32(body.encode()), "body": body}
        with contextlib.suppress(OSError):
            write_own(path, json.dumps(doc).encode())
