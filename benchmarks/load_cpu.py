"""CPU time of one ``tv.load`` in a fresh process, cold or cached (issue 17's per-rank fixed cost).

    python benchmarks/load_cpu.py PATH CACHE_DIR cached   # the cache filled first, outside the clock
    python benchmarks/load_cpu.py PATH CACHE_DIR cold     # cache=False

Prints one JSON line: CPU time of this process (``time.process_time``) and wall time of the
call, and the package it loaded (compare two checkouts by running this alternately under
``PYTHONPATH=<checkout>``, each with its own CACHE_DIR: cache formats differ). The loader and
the reader are imported before the clock starts, as ``bench_load.py``'s probe does; a cached
load timed here is the first of its process (nothing warm but the OS page cache).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time


def main() -> None:
    path, cache_dir, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode not in ("cold", "cached"):
        raise SystemExit("mode must be cold or cached")
    if mode == "cached":  # fill the cache in another process, so that this one starts cold
        fill = f"import jupyter_traceview as tv; tv.load({path!r}, cache={cache_dir!r}, progress=False)"
        subprocess.run([sys.executable, "-c", fill], check=True)
    import jupyter_traceview as tv
    import jupyter_traceview.loading.loader
    import jupyter_traceview.loading.readers.kineto

    cache: str | bool = cache_dir if mode == "cached" else False
    cpu, wall = time.process_time(), time.perf_counter()
    trace = tv.load(path, cache=cache, progress=False)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(json.dumps({"mode": mode, "cpu_s": cpu, "wall_s": wall, "ranks": len(trace.ranks), "package": tv.__file__}))


if __name__ == "__main__":
    main()
