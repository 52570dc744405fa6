"""Drop the given files' pages from the OS page cache (Linux, no root needed), so that the next
load reads them from disk: ``python benchmarks/evict_page_cache.py /work/bench-data/synth_64x1000000``.

Every regular file under each path given gets ``posix_fadvise(DONTNEED)`` (its clean pages
are dropped; pages another process has dirty stay). Check with ``fincore -b -n -o RES FILES``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    n = 0
    for arg in sys.argv[1:]:
        root = Path(arg)
        for path in [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            n += 1
    print(f"dropped the cached pages of {n} file(s)")


if __name__ == "__main__":
    main()
