"""CPU time per call of ``user_annotation_breakdown(kind="cpu")``, ours or HTA's, after one load.

    python benchmarks/uab_cpu.py ours PATH [--calls 30] [--load cold|cached] [--cache DIR]
    benchmarks/.venv-hta/bin/python benchmarks/uab_cpu.py hta PATH [--calls 30]

One process loads PATH once (ours parsed, as HTA does, or with ``--load cached`` from the
cache folder DIR, default a temporary one filled by another process first), makes one call
that is not counted (our first call imports ``jupyter_traceview.analysis``), then times
``--calls`` calls with ``time.process_time`` and prints one JSON line: the median and the
least CPU time per call, the minor page faults and system time per call, and the load
average.

The load matters for more than its own time: glibc raises its mmap and trim thresholds
when a big block is freed (a parse frees many), and keeps freed memory for the next
allocation after that; a process that only read cached tables still has the defaults
(128 KiB), so the call's temporaries of a few hundred KiB are given back to the kernel
and faulted in again, thousands of page faults per call on the 8 x 100k set. HTA's call is ``get_gpu_user_annotation_breakdown(
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
import resource
import statistics
import subprocess
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
    p.add_argument("--load", choices=("cold", "cached"), default="cold")
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

        cache: str | bool = False
        if a.load == "cached":
            cache = a.cache or tempfile.mkdtemp(prefix="uab-cache-")
            fill = f"import jupyter_traceview as tv; tv.load({a.path!r}, cache={cache!r}, progress=False)"
            subprocess.run([sys.executable, "-W", "ignore", "-c", fill], check=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = tv.load(a.path, cache=cache, progress=False)

        def call() -> Any:
            return tv.user_annotation_breakdown(trace, kind="cpu")

    call()
    times = []
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(a.calls):
        t = time.process_time()
        call()
        times.append(time.process_time() - t)
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "tool": a.tool,
                "median_ms": round(statistics.median(times) * 1e3, 2),
                "min_ms": round(min(times) * 1e3, 2),
                "calls": a.calls,
                "load": "cold" if a.tool == "hta" else a.load,
                "page_faults_per_call": round((after.ru_minflt - before.ru_minflt) / a.calls),
                "system_ms_per_call": round((after.ru_stime - before.ru_stime) / a.calls * 1e3, 2),
                "load_average": os.getloadavg()[0],
                "python": sys.executable,
            }
        )
    )


if __name__ == "__main__":
    main()
