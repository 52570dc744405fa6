"""Write our launch, queue-length and memory-bandwidth results on every real trace folder.

    python scripts/make_golden_b1.py [--out tests/golden/ours] [folder ...]

For each folder and analysis it writes ``<out>/<folder>/<analysis>.csv``; the tests
(``tests/analysis/test_golden_b1.py``) recompute them and compare. Run it after a change
that is meant to change the numbers, and review the diff: the files are never edited by
hand. Folders where an analysis has no rows (a CPU-only trace) get a CSV with the header
only. Kernel and operator names are left out of the per-launch file (their event ids are
kept), to keep it small.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jupyter_traceview as tv  # noqa: E402

FOLDERS = {
    "dlrm_8rank_v100": ROOT / "jupyter_traceview" / "samples" / "dlrm_8rank_v100",
    "hta_dlrm_2of128_ranks": ROOT / "tests" / "data" / "hta_dlrm_2of128_ranks",
    "h100_bert_small": ROOT / "tests" / "data" / "h100_bert_small",
    "hta_alexnet": ROOT / "tests" / "data" / "hta_alexnet",
    "hta_cpu_only": ROOT / "tests" / "data" / "hta_cpu_only",
    "hta_mi250_rocm": ROOT / "tests" / "data" / "hta_mi250_rocm",
    "hta_triton": ROOT / "tests" / "data" / "hta_triton",
}

ANALYSES: dict[str, Callable[[tv.Trace], pd.DataFrame]] = {
    "kernel_launch_stats": lambda t: tv.kernel_launch_stats(t).drop(columns=["name", "operator"]),
    "kernel_launch_stats_rank": lambda t: tv.kernel_launch_stats(t, per="rank"),
    "queue_length": lambda t: tv.queue_length(t),
    "queue_length_stream": lambda t: tv.queue_length(t, per="stream"),
    "memory_bandwidth": lambda t: tv.memory_bandwidth(t),
    "memory_bandwidth_kind": lambda t: tv.memory_bandwidth(t, per="kind"),
}


def compute(folder: str) -> dict[str, pd.DataFrame]:
    """Every analysis of one folder (warnings about CPU-only ranks silenced)."""
    trace = tv.load(FOLDERS[folder], cache=False, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return {name: fn(trace) for name, fn in ANALYSES.items()}


def to_csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, float_format="%.10g", lineterminator="\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=ROOT / "tests" / "golden" / "ours")
    p.add_argument("folders", nargs="*", default=sorted(FOLDERS))
    a = p.parse_args()
    for folder in a.folders:
        out = a.out / folder
        out.mkdir(parents=True, exist_ok=True)
        for name, frame in compute(folder).items():
            (out / f"{name}.csv").write_text(to_csv(frame))
        print(f"{folder}: wrote {len(ANALYSES)} files to {out}")


if __name__ == "__main__":
    main()
