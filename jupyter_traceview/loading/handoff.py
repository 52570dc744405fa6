"""Handing a worker's tables to the loading process through shared memory instead of a pipe.

A pool worker returns a rank's tables (tens of MB per rank at a million events). Sent back
pickled through the pool's pipe, they are copied four times (into the pickle, through the
pipe in 64 KB writes and reads, out of the pickle) and the loading process spends about as
long receiving and unpickling a rank as a worker spends sending it (measured: 0.15 s of
this process's CPU per rank of the 64 x 1M set, 10 s for the set). Here the worker pickles
with protocol 5, writing the arrays' buffers (out of band) straight into one file in
``/dev/shm``, and returns only the small pickle and the file's name; this process maps the
file and unpickles over the mapping: the arrays are the file's pages, never copied again.

The mapping is shared and writable (the arrays are ordinary writable arrays; nobody else
has the file: it is unlinked once mapped) and populated at once, so that its pages count in
this process's resident memory as pickled arrays would. Everything that cannot go this way
(no ``/dev/shm``, a full one, a buffer that is not contiguous) goes through the pipe as
before: the result is the same object either way.

The files live in one folder per load (:func:`scratch_folder`), removed with whatever a
dying worker or an interrupted load left in it; folders that a killed process left behind
are removed by the next load, and so are this process's own that are no longer in use (a
worker of a failed load that wrote a file while its folder was being removed left it
behind: in a long-lived kernel it would hold shared memory until the kernel exits).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Handed", "dump", "load", "scratch_folder"]

#: Scratch folders are named ``traceview-pool-<pid>-*`` (the loading process's id).
_PREFIX = "traceview-pool-"
#: Each buffer starts at a multiple of this (numpy's and Arrow's alignment).
_ALIGN = 64
#: This process's scratch folders in use (by loads in other threads), under :data:`_LOCK`.
_ACTIVE: set[str] = set()
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Handed:
    """A worker's result in a shared-memory file: the pickle without its buffers, and where they are."""

    path: str
    head: bytes
    #: (offset, length) of each out-of-band buffer in the file, in pickling order.
    spans: tuple[tuple[int, int], ...]
    size: int


def _shm() -> str | None:
    if sys.platform != "linux" or not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK):
        return None
    return "/dev/shm"


@contextlib.contextmanager
def scratch_folder() -> Iterator[str | None]:
    """A folder in ``/dev/shm`` for one load's hand-backs (None where there is none); removed on exit."""
    where = _shm()
    if where is None:
        yield None
        return
    folder: str | None = None
    with _LOCK:
        _remove_orphans(where)
        with contextlib.suppress(OSError):
            folder = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=where)
            _ACTIVE.add(folder)
    if folder is None:
        yield None
        return
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        with _LOCK:
            _ACTIVE.discard(folder)


def _remove_orphans(where: str) -> None:
    """Remove the scratch folders of loading processes that no longer run (killed mid-load),
    and this process's that no load uses (left by a late write of a dying worker)."""
    me = os.getpid()
    with contextlib.suppress(OSError):
        for entry in os.scandir(where):
            if not entry.name.startswith(_PREFIX):
                continue
            pid = entry.name[len(_PREFIX) :].split("-", 1)[0]
            if not pid.isdigit():
                continue
            if (int(pid) == me and entry.path not in _ACTIVE) or (int(pid) != me and not _alive(int(pid))):
                shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists (another user's)
    return True


def dump(obj: Any, folder: str | None) -> Any:
    """In a worker: ``obj`` as a :class:`Handed` in ``folder``; ``obj`` itself where that cannot be done."""
    if folder is None:
        return obj
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    if not buffers:
        return obj
    try:
        views = [b.raw() for b in buffers]
    except BufferError:  # a buffer that is not contiguous
        return obj
    spans = []
    offset = 0
    for v in views:
        offset = -(-offset // _ALIGN) * _ALIGN
        spans.append((offset, v.nbytes))
        offset += v.nbytes
    size = max(offset, 1)
    path = None
    try:
        fd, path = tempfile.mkstemp(dir=folder, suffix=".bin")
        with os.fdopen(fd, "wb", buffering=0) as fh:
            for (at, _), v in zip(spans, views, strict=True):
                if fh.tell() != at:
                    fh.write(bytes(at - fh.tell()))
                fh.write(v)
            fh.truncate(size)
    except OSError:  # /dev/shm full, or the folder already removed (the load was cancelled)
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return obj
    finally:
        for v in views:
            v.release()
    return Handed(path=path, head=head, spans=tuple(spans), size=size)


def load(result: Any) -> Any:
    """In the loading process: the object a worker's :func:`dump` handed back (anything else as it is)."""
    if not isinstance(result, Handed):
        return result
    fd = os.open(result.path, os.O_RDWR)
    try:
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        mapped = mmap.mmap(fd, result.size, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
        os.unlink(result.path)
    view = memoryview(mapped)
    return pickle.loads(result.head, buffers=[view[at : at + n] for at, n in result.spans])


def discard(result: Any) -> None:
    """Remove a handed-back result's file without loading it (a cancelled load)."""
    if isinstance(result, Handed):
        with contextlib.suppress(OSError):
            os.unlink(result.path)
