"""Write our analyses' results on every real Kineto trace folder, as golden files for the tests.

    python scripts/make_golden.py [--out tests/golden/ours] [FOLDER ...] [--only ANALYSIS ...]

For each folder and each analysis in :data:`ANALYSES` it writes
``<out>/<folder>/<analysis>.csv``. ``tests/analysis/test_golden.py`` recomputes every file
and compares: integers exactly, floats to 1e-9 relative. Run it after an intended change of
a number, and say why in the commit; never edit the files by hand.

To pin a new analysis, add one line to :data:`ANALYSES`.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jupyter_traceview as tv  # noqa: E402

#: The real trace folders (the same as scripts/hta_reference.py and tests/conftest.py).
FOLDERS = {
    "dlrm_8rank_v100": ROOT / "jupyter_traceview" / "samples" / "dlrm_8rank_v100",
    "hta_dlrm_2of128_ranks": ROOT / "tests" / "data" / "hta_dlrm_2of128_ranks",
    "h100_bert_small": ROOT / "tests" / "data" / "h100_bert_small",
    "hta_alexnet": ROOT / "tests" / "data" / "hta_alexnet",
    "hta_cpu_only": ROOT / "tests" / "data" / "hta_cpu_only",
    "hta_mi250_rocm": ROOT / "tests" / "data" / "hta_mi250_rocm",
    "hta_triton": ROOT / "tests" / "data" / "hta_triton",
}

#: analysis file name -> the call that produces it. One line per pinned result.
ANALYSES: dict[str, Callable[[tv.Trace], pd.DataFrame]] = {
    "summary": lambda t: tv.summary(t),
    "temporal_breakdown": lambda t: tv.temporal_breakdown(t),
    "comm_comp_overlap": lambda t: tv.comm_comp_overlap(t),
    "idle_time_breakdown": lambda t: tv.idle_time_breakdown(t),
    "kernel_breakdown": lambda t: tv.kernel_breakdown(t),
    "kernel_breakdown_all": lambda t: tv.kernel_breakdown(t, top_k=None),
    "kernel_breakdown_type": lambda t: tv.kernel_breakdown(t, by="type"),
    "kernel_duration_distribution": lambda t: tv.kernel_duration_distribution(t),
}


def load(folder: str) -> tv.Trace:
    """The folder's trace, parsed afresh (never from a cache)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.load(FOLDERS[folder], cache=False, progress=False)


def compute(analysis: str, trace: tv.Trace) -> pd.DataFrame:
    """One analysis' result, its warnings silenced (a CPU-only trace warns, by design)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return ANALYSES[analysis](trace)


def path(out: Path, folder: str, analysis: str) -> Path:
    return out / folder / f"{analysis}.csv"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=ROOT / "tests" / "golden" / "ours")
    p.add_argument("--only", nargs="*", choices=sorted(ANALYSES), help="only these analyses")
    p.add_argument("folders", nargs="*", metavar="FOLDER", help=f"default: all of {', '.join(sorted(FOLDERS))}")
    a = p.parse_args(argv)
    unknown = sorted(set(a.folders) - set(FOLDERS))
    if unknown:
        p.error(f"unknown folder(s) {', '.join(unknown)}; known: {', '.join(sorted(FOLDERS))}")
    analyses = a.only or list(ANALYSES)
    for folder in a.folders or sorted(FOLDERS):
        trace = load(folder)
        for analysis in analyses:
            target = path(a.out, folder, analysis)
            target.parent.mkdir(parents=True, exist_ok=True)
            compute(analysis, trace).to_csv(target, index=False)
        print(f"{folder}: wrote {len(analyses)} files to {a.out / folder}")


if __name__ == "__main__":
    main()
