"""Time the operator, annotation, straggler and diff analyses on a trace folder.

    python benchmarks/synth.py /tmp/sb --ranks 1 --events 1000000
    python benchmarks/operators_speed.py /tmp/sb [--repeat 5]

Prints one line per call: the best of ``--repeat`` runs after a warm-up, in ms, after the
trace is loaded (the load is timed apart). HTA 0.5 took 34 s for its frequent kernel
sequences and 19 s for its ATen op -> kernels table on a 216k-event trace (issue 3).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jupyter_traceview as tv  # noqa: E402


def _calls(trace: tv.Trace, operator: str) -> dict[str, Callable[[], pd.DataFrame]]:
    return {
        f"frequent_kernel_sequences(operator={operator!r}, min_kernels=1)": lambda: tv.frequent_kernel_sequences(
            trace, operator=operator, min_kernels=1
        ),
        f"frequent_kernel_sequences(operator={operator!r}, length=3)": lambda: tv.frequent_kernel_sequences(
            trace, operator=operator, length=3
        ),
        "frequent_kernel_sequences(operator='ProfilerStep', match='substring')": lambda: tv.frequent_kernel_sequences(
            trace, operator="ProfilerStep", match="substring"
        ),
        "op_kernels()": lambda: tv.op_kernels(trace),
        "op_kernels(by='kernel')": lambda: tv.op_kernels(trace, by="kernel"),
        "op_kernels(level='all')": lambda: tv.op_kernels(trace, level="all"),
        "user_annotation_breakdown(kind='cpu')": lambda: tv.user_annotation_breakdown(trace, kind="cpu"),
        "stragglers()": lambda: tv.stragglers(trace),
        "compare(trace, trace)": lambda: tv.compare(trace, trace),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", type=Path)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--operator", default="aten::linear")
    a = p.parse_args()
    t0 = time.perf_counter()
    trace = tv.load(a.path, cache=False, progress=False)
    print(f"load: {time.perf_counter() - t0:.2f} s, {len(trace):,} events, {len(trace.ranks)} rank(s)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        for name, call in _calls(trace, a.operator).items():
            call()
            best = float("inf")
            for _ in range(a.repeat):
                s = time.perf_counter()
                call()
                best = min(best, time.perf_counter() - s)
            print(f"{best * 1000:9.1f} ms  {name}")


if __name__ == "__main__":
    main()
