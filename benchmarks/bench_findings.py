"""CPU time of ``findings`` and ``user_annotation_breakdown`` after a cached load (median of ``--runs``).

    python benchmarks/synth.py benchmarks/.data/synth_8x100000 --ranks 8 --events 100000
    python benchmarks/bench_findings.py benchmarks/.data/synth_8x100000 [--runs 3]

Process CPU time rather than wall time: on a shared machine the wall clock measures the
neighbours. The first ``tv.load`` fills the Arrow cache; the timed calls run on the second.
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import jupyter_traceview as tv

CALLS: dict[str, Callable[[tv.Trace], object]] = {
    'user_annotation_breakdown(kind="cpu")': lambda t: tv.user_annotation_breakdown(t, kind="cpu"),
    "findings": tv.findings,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    print("| trace | " + " | ".join(CALLS) + " |")
    print("|---|" + "---|" * len(CALLS))
    for path in args.paths:
        tv.load(path, progress=False)  # fill the cache
        trace = tv.load(path, progress=False)
        cells = []
        for fn in CALLS.values():
            times = []
            for _ in range(args.runs):
                t = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fn(trace)
                times.append(time.process_time() - t)
            cells.append(f"{statistics.median(times):.2f} s")
        print(f"| {path.name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
