"""Files of this user's alone, for what the cache keeps beside its entries.

A cache folder may be shared (``tv.load(..., cache="/team/cache")``), so what is read back
from files kept there (per-rank facts, :mod:`.facts`; the CLI's figures,
:mod:`jupyter_traceview.loading.kept`) is only trusted from a file this user could have
written and nobody else could have: a regular file (not a link) owned by this user and
writable by no one else (on POSIX). :func:`write_own` writes such files (mode 0600,
atomically). Light: no numpy or pandas.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid

__all__ = ["read_own", "write_own"]


def read_own(path: str, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path`` if only this user could have written it (see the module
    docstring) and it holds at most ``max_bytes``; OSError (a miss) otherwise."""
    # O_NONBLOCK: a FIFO planted under the name is refused below, not waited on at open.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        if hasattr(os, "geteuid") and (st.st_uid != os.geteuid() or st.st_mode & 0o022):
            raise OSError(f"{path} is not this user's alone")
        if max_bytes is not None and st.st_size > max_bytes:
            raise OSError(f"{path} holds more than {max_bytes} bytes")
        return fh.read()


def write_own(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` with mode 0600, atomically (aside, then renamed); OSError on failure."""
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
