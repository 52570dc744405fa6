"""How a worker's heap is kept between tasks (glibc only; elsewhere nothing is done): a pool's
worker (:mod:`.pool`) and a dask worker (:mod:`.dask_engine`) reading rank files.

A worker reads file after file. Reading one allocates and frees its memory many times over
(each 4 MB piece's decoded events, the columns, the merged tables): by default glibc hands
big blocks back to the kernel on every free and takes them again, zeroed, on the next
allocation. Measured on a 290 MB rank file of the 64 x 1M set: 120,000 page faults and
0.66 s of system time against 2.97 s of user time, and 0.06-0.16 s of system time with the
heap kept (:func:`before_task`).

So a worker keeps what it freed for the next allocation, and gives it back only before a
file much smaller than the biggest one it read since it last did: a worker reading
same-sized files keeps one file's peak (which it needs again at once), and a worker does
not hold a big file's peak while it reads small ones.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
from typing import Any

__all__ = ["before_task"]

# mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Allocations up to this size come from the heap (glibc caps the threshold at 32 MiB on
#: 64-bit systems, but refuses bigger values only for secondary arenas).
_MMAP_THRESHOLD = 1 << 30
#: A task over less than this fraction of the biggest file read since the last trim trims first.
_TRIM_BELOW = 0.5

#: In a worker: the size of the biggest task input since the heap was last given back (0: none yet).
_held_for = 0


def _libc() -> Any:
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def before_task(size: int) -> None:
    """In a pool worker, before a task over ``size`` bytes of input: keep or give back the heap."""
    global _held_for
    libc = _libc()
    if libc is None:
        return
    with contextlib.suppress(AttributeError):
        if _held_for == 0:
            # The first task of this worker: keep freed memory in the heap from now on.
            if not libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD):
                libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)
            libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)
        elif size < _held_for * _TRIM_BELOW:
            libc.malloc_trim(0)
            _held_for = 0
    _held_for = max(_held_for, size, 1)
