"""Write our results of the time-resolved analyses on every real trace folder (golden files).

    python scripts/make_golden_beyond.py [--out tests/golden/ours]

For each folder and analysis it writes ``<out>/<folder>/<analysis>.csv``. The test
``tests/test_golden_beyond.py`` recomputes them and compares, so a change of any number
shows up as a diff of these files: regenerate them with this script (never by hand) when
the change is intended, and review the diff.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd

import jupyter_traceview as tv

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "dlrm_8rank_v100": ROOT / "jupyter_traceview" / "samples" / "dlrm_8rank_v100",
    "hta_dlrm_2of128_ranks": ROOT / "tests" / "data" / "hta_dlrm_2of128_ranks",
    "h100_bert_small": ROOT / "tests" / "data" / "h100_bert_small",
    "hta_alexnet": ROOT / "tests" / "data" / "hta_alexnet",
    "hta_cpu_only": ROOT / "tests" / "data" / "hta_cpu_only",
    "hta_mi250_rocm": ROOT / "tests" / "data" / "hta_mi250_rocm",
    "hta_triton": ROOT / "tests" / "data" / "hta_triton",
}


def most_frequent_kernel(trace: tv.Trace) -> str | None:
    """The GPU activity name that runs most often (ties: the first by name)."""
    ev = trace.events()
    names = ev.loc[ev["gpu_class"].notna(), "name"].astype(str)
    if names.empty:
        return None
    counts = names.value_counts()
    top = counts[counts == counts.max()].index
    return str(sorted(top)[0])


def analyses(trace: tv.Trace) -> dict[str, Callable[[], pd.DataFrame]]:
    """The golden outputs of one trace: file stem -> how to compute it."""
    out: dict[str, Callable[[], pd.DataFrame]] = {
        "utilization_heatmap": lambda: tv.utilization_heatmap(trace, bins=100),
        "utilization_heatmap_overlap": lambda: tv.utilization_heatmap(trace, bins=100, kind="overlap"),
        "utilization_heatmap_rank_start": lambda: tv.utilization_heatmap(
            trace, bins=50, kind="compute", align="rank_start"
        ),
        "concurrency": lambda: tv.concurrency(trace),
        "kernel_overlap_stats": lambda: tv.kernel_overlap_stats(trace, per="rank"),
        "efficiency": lambda: tv.efficiency(trace),
        "efficiency_rank": lambda: tv.efficiency(trace, per="rank"),
        "efficiency_iteration": lambda: tv.efficiency(trace, per="iteration"),
        "iteration_stats": lambda: tv.iteration_stats(trace),
        "iteration_stats_step": lambda: tv.iteration_stats(trace, per="step"),
        "nccl_summary": lambda: tv.nccl_summary(trace, per="rank"),
        "collective_calls": lambda: tv.collective_calls(trace),
    }
    name = most_frequent_kernel(trace)
    if name is not None:
        out["kernel_pace"] = lambda: tv.kernel_pace(trace, name=name)
    return out


def compute(trace: tv.Trace) -> dict[str, pd.DataFrame]:
    """Every golden frame of a trace (warnings, e.g. on CPU-only traces, silenced)."""
    frames = {}
    for stem, fn in analyses(trace).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tv.TraceviewWarning)
            frames[stem] = fn()
    return frames


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=ROOT / "tests" / "golden" / "ours")
    a = p.parse_args()
    for folder, path in FOLDERS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tv.TraceviewWarning)
            trace = tv.load(path, cache=False)
        target = a.out / folder
        target.mkdir(parents=True, exist_ok=True)
        for stem, frame in compute(trace).items():
            frame.to_csv(target / f"{stem}.csv", index=False)
        print(f"{folder}: {len(trace.ranks)} rank(s) -> {target}")


if __name__ == "__main__":
    main()
