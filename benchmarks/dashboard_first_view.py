"""Time the dashboard's first view of a trace: its payload and the Overview tab, step by step.

    python benchmarks/dashboard_first_view.py PATH [--cache DIR] [--runs 3]

What ``tv.Dashboard(trace)`` computes before a user sees the Overview (the same
``DashboardData`` serves the widget, the Traces sidebar and the HTML report): the payload
(headline figures) and the Overview's steps (headline figures, findings, utilisation heatmap,
efficiency, temporal breakdown). Each run is a new process that loads PATH through the cache
folder DIR (default: the user's; the first load of a set fills it, and a big load prepares
the findings' per-rank results, ``tv.load(..., prepare=)``), then opens the dashboard.
Prints, per run, the load, the payload and each step's wall time, and the total wall and
CPU time of the first view (payload and Overview).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import jupyter_traceview as tv
from jupyter_traceview.dashboard.data import DashboardData

path, cache = sys.argv[1], sys.argv[2]
w = time.perf_counter()
trace = tv.load(path, progress=False, cache=cache if cache else True)
out = {"load_s": time.perf_counter() - w, "steps": {}}
w0, c0 = time.perf_counter(), time.process_time()
data = DashboardData(trace)
data.payload()
out["payload_s"] = time.perf_counter() - w0
marks = []
data.tab("overview", progress=lambda done, total, label: marks.append((label, time.perf_counter())))
end = time.perf_counter()
for (label, t), (_, t_next) in zip(marks, marks[1:] + [("", end)]):
    out["steps"][label] = t_next - t
out["first_view_s"] = end - w0
out["first_view_cpu_s"] = time.process_time() - c0
print(json.dumps(out))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path")
    p.add_argument("--cache", default="", help="cache folder (default: the user's)")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    for i in range(a.runs):
        r = subprocess.run(
            [sys.executable, "-c", CHILD, a.path, a.cache], capture_output=True, text=True, env=os.environ, check=True
        )
        out = json.loads(r.stdout.strip().splitlines()[-1])
        steps = ", ".join(f"{k} {v:.2f} s" for k, v in out["steps"].items())
        print(
            f"run {i + 1}: load {out['load_s']:.2f} s; first view {out['first_view_s']:.2f} s wall, "
            f"{out['first_view_cpu_s']:.2f} s CPU (payload {out['payload_s']:.2f} s; {steps}); "
            f"load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
