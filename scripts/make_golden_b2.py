"""Write the operator, annotation, straggler and diff analyses' results as golden files.

    python scripts/make_golden_b2.py [--out tests/golden/ours] [FOLDER ...] [--only ANALYSIS ...]

For each folder and each analysis in :data:`ANALYSES` it writes
``<out>/<folder>/<analysis>.csv`` (an analysis that does not apply to a folder, e.g.
stragglers on a single rank, is left out: see :data:`APPLIES`).
``tests/analysis/test_golden_b2.py`` recomputes every file and compares: integers and
text exactly, floats to 1e-9 relative. Run it after an intended change of a number, and
say why in the commit; never edit the files by hand.
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

#: The operator whose kernel sequences are pinned, per folder (as scripts/hta_reference.py).
SEQUENCE_OPERATORS = {
    "dlrm_8rank_v100": "aten::linear",
    "hta_dlrm_2of128_ranks": "aten::linear",
    "h100_bert_small": "aten::linear",
    "hta_alexnet": "aten::conv2d",
    "hta_mi250_rocm": "aten::linear",
}
MULTI_RANK = {"dlrm_8rank_v100", "hta_dlrm_2of128_ranks"}


def _sequences(folder: str) -> Callable[[tv.Trace], pd.DataFrame]:
    return lambda t: tv.frequent_kernel_sequences(t, operator=SEQUENCE_OPERATORS[folder], min_kernels=1, top_k=None)


def _diff_with(other: str) -> Callable[[tv.Trace], pd.DataFrame]:
    return lambda t: tv.trace_diff(t, load(other), aggregate="mean")


#: analysis file name -> (folder -> the call that produces it).
ANALYSES: dict[str, Callable[[str], Callable[[tv.Trace], pd.DataFrame]]] = {
    "frequent_kernel_sequences": _sequences,
    "frequent_kernel_trigrams": lambda f: (
        lambda t: tv.frequent_kernel_sequences(t, operator=SEQUENCE_OPERATORS[f], length=3, top_k=None)
    ),
    "op_kernels": lambda f: lambda t: tv.op_kernels(t),
    "op_kernels_by_kernel": lambda f: lambda t: tv.op_kernels(t, by="kernel"),
    "op_kernels_outermost": lambda f: lambda t: tv.op_kernels(t, level="outermost"),
    "user_annotation_breakdown_cpu": lambda f: lambda t: tv.user_annotation_breakdown(t, kind="cpu"),
    "user_annotation_breakdown_gpu": lambda f: lambda t: tv.user_annotation_breakdown(t, kind="gpu"),
    "stragglers": lambda f: lambda t: tv.stragglers(t),
    "stragglers_collective": lambda f: lambda t: tv.stragglers(t, by="collective"),
    "stragglers_arrival": lambda f: lambda t: tv.stragglers(t, by="arrival"),
    "trace_diff_vs_hta_dlrm_2of128_ranks": lambda f: _diff_with("hta_dlrm_2of128_ranks"),
    "trace_diff_rank0_vs_rank1": lambda f: lambda t: tv.trace_diff(t.select(ranks=0), t.select(ranks=1)),
}

#: Which folders each analysis is pinned on (all, unless listed).
APPLIES: dict[str, set[str]] = {
    "frequent_kernel_sequences": set(SEQUENCE_OPERATORS),
    "frequent_kernel_trigrams": set(SEQUENCE_OPERATORS),
    "stragglers": MULTI_RANK,
    "stragglers_collective": MULTI_RANK,
    "stragglers_arrival": MULTI_RANK,
    "trace_diff_vs_hta_dlrm_2of128_ranks": {"dlrm_8rank_v100"},
    "trace_diff_rank0_vs_rank1": MULTI_RANK,
}


def cases() -> list[tuple[str, str]]:
    """Every (folder, analysis) pinned."""
    return [(f, a) for f in sorted(FOLDERS) for a in ANALYSES if f in APPLIES.get(a, set(FOLDERS))]


_LOADED: dict[str, tv.Trace] = {}


def load(folder: str) -> tv.Trace:
    """The folder's trace, parsed afresh (never from a cache), once per process."""
    if folder not in _LOADED:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tv.TraceviewWarning)
            _LOADED[folder] = tv.load(FOLDERS[folder], cache=False, progress=False)
    return _LOADED[folder]


def compute(analysis: str, folder: str) -> pd.DataFrame:
    """One analysis' result on a folder, its warnings silenced (a CPU-only trace warns)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return ANALYSES[analysis](folder)(load(folder))


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
    wanted = set(a.folders or FOLDERS)
    only = set(a.only or ANALYSES)
    written: dict[str, int] = {}
    for folder, analysis in cases():
        if folder not in wanted or analysis not in only:
            continue
        target = path(a.out, folder, analysis)
        target.parent.mkdir(parents=True, exist_ok=True)
        compute(analysis, folder).to_csv(target, index=False)
        written[folder] = written.get(folder, 0) + 1
    for folder, n in written.items():
        print(f"{folder}: wrote {n} files to {a.out / folder}")


if __name__ == "__main__":
    main()
