"""The seal of the cache's entries: a key per cache folder, and each entry's keyed hash.

An entry is checked once, when it is written (``cache_arrow.check_rank``), then sealed; a load
trusts a sealed entry's tables without checking them again (their CRC-32 still compared),
and an entry without a valid seal is a miss. Light (no numpy, pandas or Arrow).
"""

from __future__ import annotations

import hashlib
import os
import struct
import uuid

__all__ = ["SEAL_FILE", "seal", "seal_key"]

#: The cache folder's sealing key (random bytes, made by the first write into the folder).
SEAL_FILE = ".seal"

#: Format of what is sealed (the cache's entry format is sealed with it).
_SEALED = struct.Struct("<IQI")


def seal(key: bytes, body_crc: int, body_size: int, entry_format: int) -> bytes:
    """An entry's seal: a BLAKE2b keyed by the cache folder's key, of the CRC-32 and the length
    of what precedes the trailer, and the format.

    It is what lets a load trust the entry's tables without checking them again: the writer
    checks them (``cache_arrow.check_rank``) before it seals, and an entry that was changed, or
    written by anything else (another cache folder, a hand-made file with a valid CRC-32),
    is a miss. Hashing the CRC rather than the bytes costs nothing (a keyed hash of a rank's
    330 KB would cost more than the checks it saves); it gives up only against someone who
    reads the key and forges a CRC-32: tampering by someone who can write the cache folder,
    which the cache does not defend against.
    """
    return hashlib.blake2b(_SEALED.pack(body_crc, body_size, entry_format), key=key, digest_size=16).digest()


#: The sealing keys read, by cache folder (the key file's identity: re-read when it changed).
_SEAL_KEYS: dict[str, tuple[tuple[int, int], bytes]] = {}


def seal_key(cache_dir: str, *, create: bool = False) -> bytes | None:
    """The cache folder's sealing key (:data:`SEAL_FILE`), made if ``create`` and missing (or
    not a key: a new one, and the entries sealed with the old one become misses); None where
    there is none (a folder never written to: every entry a miss)."""
    path = os.path.join(cache_dir, SEAL_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return _new_key(path, replace=False) if create else None
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        known = _SEAL_KEYS.get(path)
        if known is not None and known[0] == (st.st_ino, st.st_mtime_ns):
            return known[1]
        key = os.read(fd, 64)
    finally:
        os.close(fd)
    if len(key) != 32:
        return _new_key(path, replace=True) if create else None
    _SEAL_KEYS[path] = ((st.st_ino, st.st_mtime_ns), key)
    return key


def _new_key(path: str, *, replace: bool) -> bytes | None:
    """Make the key file at ``path`` (written aside, then linked: one key wins a race; or put
    in place of what is there, if ``replace``)."""
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, os.urandom(32))
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process's key: that one
            except OSError:
                os.replace(tmp, path)  # (a file system without hard links: the last one wins)
    except OSError:
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return seal_key(os.path.dirname(path))
