"""Wall time against CPU time of one cold load, split between this process and its workers.

    python benchmarks/pool_cpu.py PATH [PATH ...] [--engine auto|serial|process] [--threaded]

On a machine shared with other work, wall times say little; CPU times say where the work
goes. Prints one JSON line: wall seconds; CPU seconds (user + system) of this process and of
its pool's workers (a fork pool's; ``--threaded`` starts a thread first, as a Jupyter kernel
has, so the workers come from a forkserver, whose CPU is not counted here); the workers'
system time and page faults; the peak RSS above the baseline of this process and of the
biggest worker; the load average. ``ideal`` is the total CPU over the cores: the wall time a
perfectly parallel load would take on an otherwise idle machine. Several paths are loaded
as one list (``tv.load([...])``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import threading
import time
import warnings


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+")
    p.add_argument("--engine", default="auto")
    p.add_argument("--threaded", action="store_true", help="start a thread first (a forkserver pool)")
    a = p.parse_args()
    import jupyter_traceview as tv
    import jupyter_traceview.loading.loader
    import jupyter_traceview.loading.readers.kineto  # imported before the clock starts

    if a.threaded:
        threading.Thread(target=threading.Event().wait, daemon=True).start()
    path = a.paths[0] if len(a.paths) == 1 else a.paths
    load = os.getloadavg()[0]
    me0, ch0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tv.load(path, cache=False, engine=a.engine, progress=False)
    wall = time.perf_counter() - t
    me, ch = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_main = me.ru_utime + me.ru_stime - me0.ru_utime - me0.ru_stime
    cpu_workers = ch.ru_utime + ch.ru_stime - ch0.ru_utime - ch0.ru_stime
    cores = os.cpu_count() or 1
    print(
        json.dumps(
            {
                "paths": [os.path.basename(os.path.normpath(x)) for x in a.paths],
                "engine": a.engine,
                "wall_s": round(wall, 3),
                "cpu_main_s": round(cpu_main, 3),
                "cpu_workers_s": round(cpu_workers, 3),
                "ideal_s": round((cpu_main + cpu_workers) / cores, 3),
                "workers_sys_s": round(ch.ru_stime - ch0.ru_stime, 3),
                "workers_page_faults": ch.ru_minflt - ch0.ru_minflt,
                "main_peak_above_base_mb": round((me.ru_maxrss - me0.ru_maxrss) / 1024),
                "worker_peak_mb": round(ch.ru_maxrss / 1024),
                "load_average": round(load, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
