"""Time the memory analyses (after load; median of ``--runs`` calls) on traces with memory records.

    python benchmarks/synth_memory.py benchmarks/.data/memory_1m --records 1000000
    python benchmarks/bench_memory.py tests/data/cpu_memory/mlp_train ../shared/traces/h100_bert_small \
        benchmarks/.data/memory_1m [--runs 3]

Prints a Markdown table: one row per trace, one column per analysis. HTA has no memory
analyses, so there is nothing to put beside them.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

import jupyter_traceview as tv

ANALYSES = (
    "memory_timeline",
    "memory_peaks",
    "memory_peak_holders",
    "memory_by_operator",
    "memory_allocations",
    "memory_allocator_stats",
    "memory_oom_events",
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    warnings.simplefilter("ignore", tv.TraceviewWarning)
    print("| trace | memory records | " + " | ".join(ANALYSES) + " |")
    print("|---|---|" + "---|" * len(ANALYSES))
    for path in a.paths:
        trace = tv.load(path, progress=False)
        n = sum(len(trace.rank_data(r).memory) for r in trace.ranks)
        cells = []
        for name in ANALYSES:
            fn = getattr(tv, name)
            fn(trace)  # warm: imports, the trace's own caches
            times = []
            for _ in range(a.runs):
                t = time.perf_counter()
                fn(trace)
                times.append(time.perf_counter() - t)
            cells.append(f"{statistics.median(times) * 1000:.1f} ms")
        print(f"| {path.name} | {n:,} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
