"""A cached load and the first analysis after it, each in a fresh process: what laziness moves.

    python benchmarks/cached_first_use.py [PATH] [--runs 7] [--analysis summary|headline] [--cache DIR]

Each run is a fresh Python process that imports the loader (as ``bench_load.py``'s probe
does, before the clock), then times ``tv.load(PATH, cache=DIR)`` and the first
``tv.<analysis>(trace)`` after it, in CPU time of the process (``time.process_time``: on a
machine shared with busy neighbours the wall time of a run varies several-fold, its CPU
time far less) and wall time. The cache is filled by a first run that is not counted. The
cache builds a rank's pandas frames when an analysis first reads them (``model.rank_data
.Deferred``), so the load alone gets cheaper and the first analysis pays for the frames it
reads: compare "load + analysis" too. Reported: medians over the runs. To compare two
checkouts, run this script alternately under each (``PYTHONPATH=<checkout>``, run from
outside both) with a cache folder each. PATH defaults to the bundled 8-rank sample.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PROBE = r"""
import json, sys, time
import jupyter_traceview as tv
import jupyter_traceview.loading.loader, jupyter_traceview.loading.readers.kineto
path, cache, analysis = sys.argv[1], sys.argv[2], sys.argv[3]
path = path or tv.sample_path()
w0, c0 = time.perf_counter(), time.process_time()
trace = tv.load(path, cache=cache, progress=False)
w1, c1 = time.perf_counter(), time.process_time()
getattr(tv, analysis)(trace)
w2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"load_cpu": c1 - c0, "load_wall": w1 - w0, "first_cpu": c2 - c1, "first_wall": w2 - w1}))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path", nargs="?", default="", help="a trace file or folder (default: the bundled sample)")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--analysis", default="summary", choices=["summary", "headline"])
    p.add_argument("--cache", default=None, help="cache folder (default: a new temporary one)")
    a = p.parse_args()
    cache = a.cache or tempfile.mkdtemp(prefix="tv-cached-first-use-")
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # byte code written once, as an installed package has it

    def run() -> dict[str, float]:
        out = subprocess.run(
            [sys.executable, "-c", PROBE, a.path, cache, a.analysis],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return dict(json.loads(out.stdout.strip().splitlines()[-1]))

    run()  # fills the cache (and the analyses' kept per-rank results)
    runs = [run() for _ in range(a.runs)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    def med(key: str) -> float:
        return 1e3 * statistics.median(r[key] for r in runs)

    both = 1e3 * statistics.median(r["load_cpu"] + r["first_cpu"] for r in runs)
    print(f"{a.runs} runs, load average {load:.1f}; medians, ms")
    print(f"load:              {med('load_cpu'):7.1f} CPU  {med('load_wall'):7.1f} wall")
    print(f"first {a.analysis + ':':12} {med('first_cpu'):7.1f} CPU  {med('first_wall'):7.1f} wall")
    print(f"load + {a.analysis + ':':11} {both:7.1f} CPU")


if __name__ == "__main__":
    main()
