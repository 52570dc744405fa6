"""Where a first `traceview summary --sample` spends its time: imports, load, cache write, headline.

    python benchmarks/cli_phases.py [--runs 3]

Each run is a fresh Python process with an empty cache folder (``XDG_CACHE_HOME``, so
nothing is kept from before, as on a first run). It times, in wall seconds, importing numpy
and pandas, then the package's modules the command uses, then the command itself
(``cli.main(["summary", "--sample"])``, output discarded), and inside the command the load
(``tv.load``), the cache entries' writing within it (``cache.write``) and ``headline``.
Run it from a wheel install (``PYTHONDONTWRITEBYTECODE=1`` makes an editable install
recompile every module at each start). Interpreter start-up is not included: compare with
``/usr/bin/time traceview summary --sample``. Prints one line per run and the medians.
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
import contextlib, importlib, io, json, sys, time
t0 = time.perf_counter()
import numpy, pandas
t1 = time.perf_counter()
import jupyter_traceview.analysis.headline, jupyter_traceview.loading.loader
t2 = time.perf_counter()
from jupyter_traceview import cli
spent = {"load": 0.0, "cache_write": 0.0, "headline": 0.0}
def timed(module, name, key):
    mod = importlib.import_module(module)
    fn = getattr(mod, name)
    def wrapper(*a, **k):
        s = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            spent[key] += time.perf_counter() - s
    setattr(mod, name, wrapper)
timed("jupyter_traceview.loading.loader", "load", "load")
timed("jupyter_traceview.loading.cache", "write", "cache_write")
timed("jupyter_traceview.analysis.headline", "headline_with_ranks", "headline")
t3 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        cli.main(["summary", "--sample"])
    except SystemExit:
        pass
t4 = time.perf_counter()
print(json.dumps({"numpy_pandas": t1 - t0, "our_modules": t2 - t1, "command": t4 - t3, **spent}))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    rows = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "XDG_CACHE_HOME": cache}
            out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(" ".join(f"{k} {v:.3f} s" for k, v in row.items()))
    print("median: " + " ".join(f"{k} {statistics.median(r[k] for r in rows):.3f} s" for k in rows[0]))


if __name__ == "__main__":
    main()
