"""CPU time per call of ``user_annotation_breakdown(kind="cpu")``, ours or HTA's, after one load.

    python benchmarks/uab_cpu.py ours PATH [--calls 30] [--cache DIR]
    benchmarks/.venv-hta/bin/python benchmarks/uab_cpu.py hta PATH [--calls 30]

One process loads PATH once (ours through the cache folder DIR, default a temporary one
filled by a first load; HTA parses it), makes one call that is not counted (our first call
imports ``jupyter_traceview.analysis``), then times ``--calls`` calls with
``time.process_time`` and prints one JSON line: the median and the least CPU time per call,
and the load average. HTA's call is ``get_gpu_user_annotation_breakdown(
use_gpu_annotation=False, visualize=False)``, the equivalent of ours with ``kind="cpu"``
(see ``scripts/hta_reference.py``). Interleave runs of the two tools (and of two checkouts,
``PYTHONPATH=<checkout>``) on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tool", choices=("ours", "hta"))
    p.add_argument("path")
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--cache", default=None)
    a = p.parse_args()
    call: Callable[[], Any]
    if a.tool == "hta":
        from hta.trace_analysis import TraceAnalysis

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            ta = TraceAnalysis(trace_dir=a.path)

        def call() -> Any:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                return ta.get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False)
    else:
        import warnings

        import jupyter_traceview as tv

        cache = a.cache or tempfile.mkdtemp(prefix="uab-cache-")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tv.load(a.path, cache=cache, progress=False)  # fills the cache
            trace = tv.load(a.path, cache=cache, progress=False)

        def call() -> Any:
            return tv.user_annotation_breakdown(trace, kind="cpu")

    call()
    times = []
    for _ in range(a.calls):
        t = time.process_time()
        call()
        times.append(time.process_time() - t)
    print(
        json.dumps(
            {
                "tool": a.tool,
                "median_ms": round(statistics.median(times) * 1e3, 2),
                "min_ms": round(min(times) * 1e3, 2),
                "calls": a.calls,
                "load_average": os.getloadavg()[0],
                "python": sys.executable,
            }
        )
    )


if __name__ == "__main__":
    main()
