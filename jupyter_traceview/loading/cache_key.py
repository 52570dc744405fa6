"""Which cache entry holds a trace file read with given options: the cache's keys.

Light on purpose (no numpy, pandas or Arrow): ``traceview summary`` finds the entries of a
trace, and what it kept beside them (:mod:`.kept`), before it knows whether it needs
those packages. :mod:`.cache` reads and writes the entries these keys name.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.versions import READER_VERSION, SCHEMA_VERSION
from .readers.files import DEFAULT_MAX_JSON_BYTES, TraceFile
from .storage import RemotePath

__all__ = ["FINGERPRINT_BYTES", "ReadOptions", "default_cache_dir", "entry_key", "fingerprint", "resolve_dir"]

#: Bytes hashed at each end of a trace file for its content fingerprint.
FINGERPRINT_BYTES = 64 * 1024


@dataclass(frozen=True)
class ReadOptions:
    """Reader options: part of every cache key."""

    bad_events: str
    #: Process id (as written in the file: an int or a string) -> rank.
    pid_map: tuple[tuple[int | str, int], ...] | None
    #: The most JSON a compressed file may inflate to (not part of the cache key: it
    #: decides whether a file is read, not what is read from it).
    max_json_bytes: int = DEFAULT_MAX_JSON_BYTES

    def cache_key_fields(self) -> dict[str, Any]:
        return {"bad_events": self.bad_events, "pid_map": self.pid_map}


def default_cache_dir() -> Path:
    """The cache folder used by ``tv.load(..., cache=True)``."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("jupyter_traceview", appauthor=False))


def resolve_dir(cache: bool | str | os.PathLike[str]) -> Path | None:
    if cache is False or cache is None:
        return None
    if cache is True:
        return default_cache_dir()
    return Path(cache).expanduser()


def fingerprint(path: str | os.PathLike[str], size: int) -> str:
    """A cheap content fingerprint: SHA-256 of the file's first and last 64 KiB and its size.

    Never the whole file (a cached load must stay far faster than a parse); "" when the file
    cannot be read (the parse that follows reports why).
    """
    # SHA-256 rather than BLAKE2b: OpenSSL's runs on the CPU's SHA instructions, about twice
    # as fast (75 against 145 us for 128 KiB here), which a cached load pays once per file.
    h = hashlib.sha256(str(size).encode())
    if not hasattr(os, "readv"):  # pragma: no cover - Windows
        try:
            with open(path, "rb") as fh:
                h.update(fh.read(FINGERPRINT_BYTES))
                if size > FINGERPRINT_BYTES:
                    fh.seek(max(FINGERPRINT_BYTES, size - FINGERPRINT_BYTES))
                    h.update(fh.read(FINGERPRINT_BYTES))
        except OSError:
            return ""
        return h.hexdigest()[:32]
    # Read into this thread's one buffer (os.readv, no file object): a new 64 KiB bytes per
    # file cost its page faults again in every file of a fresh process (~36 against ~12 us).
    buf = _buffer()
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        h.update(buf[: os.readv(fd, [buf])])
        if size > FINGERPRINT_BYTES:
            os.lseek(fd, max(FINGERPRINT_BYTES, size - FINGERPRINT_BYTES), os.SEEK_SET)
            h.update(buf[: os.readv(fd, [buf])])
    except OSError:
        return ""
    finally:
        os.close(fd)
    return h.hexdigest()[:32]


_local = threading.local()


def _buffer() -> memoryview:
    buf = getattr(_local, "buffer", None)
    if buf is None:
        buf = _local.buffer = memoryview(bytearray(FINGERPRINT_BYTES))
    return buf


def entry_key(tf: TraceFile, options: dict[str, Any], real_dirs: dict[str, str] | None = None) -> str:
    """The entry of a trace file read with these reader options.

    ``real_dirs``: real paths of folders already resolved during this load (folder ->
    real path), filled here: the files of one folder resolve their folder once (a real path
    costs an lstat per component) and themselves by one lstat.
    """
    if isinstance(tf.path, RemotePath):  # an object in storage: by its URL (no secrets), size and version
        ident = [*tf.path.cache_identity(), READER_VERSION, SCHEMA_VERSION, sorted(options.items())]
        return hashlib.sha256(json.dumps(ident, default=str).encode()).hexdigest()[:32]
    ident = [
        _real_path(str(tf.path), real_dirs),
        tf.size,
        tf.mtime_ns,
        fingerprint(tf.path, tf.size),
        READER_VERSION,
        SCHEMA_VERSION,
        sorted(options.items()),
    ]
    return hashlib.sha256(json.dumps(ident, default=str).encode()).hexdigest()[:32]


def _real_path(path: str, real_dirs: dict[str, str] | None) -> str:
    """``os.path.realpath(path)``, through the real path of its folder when it is not a link itself."""
    folder, name = os.path.split(path)
    if real_dirs is None or not folder or name in ("", ".", "..") or os.path.islink(path):
        return os.path.realpath(path)
    real = real_dirs.get(folder)
    if real is None:
        real = real_dirs[folder] = os.path.realpath(folder)
    return os.path.join(real, name)
