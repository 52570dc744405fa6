"""Time the time-resolved analyses on a loaded trace (after load, best of N runs).

    python benchmarks/synth.py /tmp/sbeyond --ranks 64 --events 100000
    PYTHONPATH=. python benchmarks/bench_beyond.py /tmp/sbeyond [--repeat 3] [--bins 1000]

Prints one line per analysis: the best wall and CPU times over ``--repeat`` runs, and the
trace's size. Load time (and the cache) is reported separately and not counted.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jupyter_traceview as tv


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time of this process over ``repeat`` runs (s).

    CPU time is the steadier figure on a shared machine: other processes slow the wall
    clock of a single-threaded numpy computation, not its CPU time (much).
    """
    wall, cpu = [], []
    for _ in range(repeat):
        gc.collect()
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--bins", type=int, default=1000)
    p.add_argument("--only", nargs="*", help="analyses to time (default: all)")
    a = p.parse_args()

    t = time.perf_counter()
    # benchmarks/synth.py can write a rare negative duration (an inner op of a 1-2 us outer
    # op); drop those events rather than fail.
    trace = tv.load(a.folder, bad_events="drop")
    load_s = time.perf_counter() - t
    events = len(trace)
    gpu = sum(int(trace.rank_data(r).events["gpu_class"].notna().sum()) for r in trace.ranks)
    print(f"{a.folder}: {len(trace.ranks)} ranks, {events:,} events, {gpu:,} GPU activities; load {load_s:.1f} s")

    cases: dict[str, Callable[[], Any]] = {
        f"utilization_heatmap(bins={a.bins})": lambda: tv.utilization_heatmap(trace, bins=a.bins),
        f"utilization_heatmap(bins={a.bins}, kind='overlap')": lambda: tv.utilization_heatmap(
            trace, bins=a.bins, kind="overlap"
        ),
        "efficiency()": lambda: tv.efficiency(trace),
        "efficiency(per='iteration')": lambda: tv.efficiency(trace, per="iteration"),
        "concurrency()": lambda: tv.concurrency(trace),
        "kernel_overlap_stats()": lambda: tv.kernel_overlap_stats(trace),
        "iteration_stats()": lambda: tv.iteration_stats(trace),
        "nccl_summary()": lambda: tv.nccl_summary(trace),
        "findings()": lambda: tv.findings(trace),
    }
    for name, fn in cases.items():
        if a.only and not any(o in name for o in a.only):
            continue
        wall, cpu = best_of(fn, a.repeat)
        print(f"  {name:<50} wall {wall * 1000:8.1f} ms   cpu {cpu * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
