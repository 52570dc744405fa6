"""Speed of tv.what_if: the replay graph built once per trace, then one change's replay.

    PYTHONPATH=. python benchmarks/whatif_speed.py TRACE [--repeat 3]

Prints the events, the time to build the graph and replay it without a change (the first
call on a trace), and each change's replay after it (what ``findings`` pays per fired rule).
Issue 33's target: one change <= 1 s on a 200k-event trace (a benchmark, not a test).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import jupyter_traceview as tv


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    warnings.simplefilter("ignore", tv.TraceviewWarning)
    ch = tv.changes
    changes = [
        ch.RemoveSyncs(),
        ch.RemoveDataLoading(),
        ch.RemovePython(),
        ch.ScaleKernels(family="gemm", factor=0.5),
        ch.OverlapCommunication(),
        ch.BalanceStraggler(),
        ch.GraphLaunch(),
        ch.FuseKernels(shorter_than_ns=10_000),
    ]
    first: list[float] = []
    per: dict[str, list[float]] = {type(c).__name__: [] for c in changes}
    for _ in range(a.repeat):
        trace = tv.load(a.trace)
        t0 = time.perf_counter()
        tv.what_if(trace)
        first.append(time.perf_counter() - t0)
        for c in changes:
            t0 = time.perf_counter()
            tv.what_if(trace, c)
            per[type(c).__name__].append(time.perf_counter() - t0)
    print(f"{a.trace}: {len(trace):,} events, {len(trace.ranks)} rank(s)")
    print(f"  graph + replay without a change (first call): {statistics.median(first):.2f} s")
    for name, ts in per.items():
        print(f"  {name:22s} one change: {statistics.median(ts):.2f} s")


if __name__ == "__main__":
    main()
