"""Write our analyses' results on every real trace folder, as golden files for the tests.

    python scripts/make_golden.py [--out tests/golden/ours] [FOLDER ...] [--only ANALYSIS ...]

For each folder and each analysis in :data:`ANALYSES` it writes
``<out>/<folder>/<analysis>.csv``. ``tests/analysis/test_golden.py`` recomputes every file
and compares: integers and text exactly, floats to 1e-9 relative. Run it after an intended
change of a number, and say why in the commit; never edit the files by hand.

To pin a new analysis, add one line to :data:`ANALYSES` (and to :data:`APPLIES` if it only
makes sense on some folders).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jupyter_traceview as tv  # noqa: E402
from scripts.trace_folders import FOLDERS, SEQUENCE_OPERATORS  # noqa: E402

MULTI_RANK = {"dlrm_8rank_v100", "hta_dlrm_2of128_ranks"}

Analysis = Callable[[tv.Trace], pd.DataFrame]


def every(fn: Analysis) -> Callable[[str], Analysis]:
    """An analysis called the same way on every folder."""
    return lambda folder: fn


def _sequences(folder: str) -> Analysis:
    return lambda t: tv.frequent_kernel_sequences(t, operator=SEQUENCE_OPERATORS[folder], min_kernels=1, top_k=None)


def _trigrams(folder: str) -> Analysis:
    return lambda t: tv.frequent_kernel_sequences(t, operator=SEQUENCE_OPERATORS[folder], length=3, top_k=None)


def most_frequent_kernel(trace: tv.Trace) -> str:
    """The GPU activity name that runs most often (ties: the first by name)."""
    ev = trace.events()
    counts = ev.loc[ev["gpu_class"].notna(), "name"].astype(str).value_counts()
    return str(sorted(counts[counts == counts.max()].index)[0])


def findings_table(trace: tv.Trace) -> pd.DataFrame:
    """tv.findings with its list and dict columns as JSON text (keys sorted): deterministic CSV cells."""
    f = tv.findings(trace)
    return f.assign(
        ranks=f["ranks"].map(json.dumps), evidence=f["evidence"].map(lambda e: json.dumps(e, sort_keys=True))
    )


def _compare_with(other: str) -> Callable[[str], Analysis]:
    """tv.compare's causes, this folder's run as the baseline of ``other`` (another world size)."""
    return lambda folder: lambda t: tv.compare(t, load(other)).causes


def _halves(t: tv.Trace) -> pd.DataFrame:
    """tv.compare's causes of a run's first half of steps against its second half (matched in order)."""
    ids = sorted(int(i) for i in t.iterations["step"].unique())
    half = len(ids) // 2
    return tv.compare(t.select(iterations=ids[:half]), t.select(iterations=ids[half:])).causes


#: analysis file name -> (folder -> the call that produces it). One line per pinned result.
ANALYSES: dict[str, Callable[[str], Analysis]] = {
    "summary": every(lambda t: tv.summary(t)),
    "temporal_breakdown": every(lambda t: tv.temporal_breakdown(t)),
    "comm_comp_overlap": every(lambda t: tv.comm_comp_overlap(t)),
    "idle_time_breakdown": every(lambda t: tv.idle_time_breakdown(t)),
    "kernel_breakdown": every(lambda t: tv.kernel_breakdown(t)),
    "kernel_breakdown_all": every(lambda t: tv.kernel_breakdown(t, top_k=None)),
    "kernel_breakdown_type": every(lambda t: tv.kernel_breakdown(t, by="type")),
    "kernel_duration_distribution": every(lambda t: tv.kernel_duration_distribution(t)),
    "kernel_launch_stats": every(lambda t: tv.kernel_launch_stats(t).drop(columns=["name", "operator"])),
    "kernel_launch_stats_rank": every(lambda t: tv.kernel_launch_stats(t, per="rank")),
    "queue_length": every(lambda t: tv.queue_length(t)),
    "queue_length_stream": every(lambda t: tv.queue_length(t, per="stream")),
    "memory_bandwidth": every(lambda t: tv.memory_bandwidth(t)),
    "memory_bandwidth_kind": every(lambda t: tv.memory_bandwidth(t, per="kind")),
    "frequent_kernel_sequences": _sequences,
    "frequent_kernel_trigrams": _trigrams,
    "op_kernels": every(lambda t: tv.op_kernels(t)),
    "op_kernels_by_kernel": every(lambda t: tv.op_kernels(t, by="kernel")),
    "op_kernels_outermost": every(lambda t: tv.op_kernels(t, level="outermost")),
    "user_annotation_breakdown_cpu": every(lambda t: tv.user_annotation_breakdown(t, kind="cpu")),
    "user_annotation_breakdown_gpu": every(lambda t: tv.user_annotation_breakdown(t, kind="gpu")),
    "stragglers": every(lambda t: tv.stragglers(t)),
    "stragglers_collective": every(lambda t: tv.stragglers(t, by="collective")),
    "stragglers_arrival": every(lambda t: tv.stragglers(t, by="arrival")),
    "compare_vs_hta_dlrm_2of128_ranks": _compare_with("hta_dlrm_2of128_ranks"),
    "compare_halves": every(_halves),
    "utilization_heatmap": every(lambda t: tv.utilization_heatmap(t, bins=100)),
    "utilization_heatmap_overlap": every(lambda t: tv.utilization_heatmap(t, bins=100, kind="overlap")),
    "utilization_heatmap_rank_start": every(
        lambda t: tv.utilization_heatmap(t, bins=50, kind="compute", align="rank_start")
    ),
    "concurrency": every(lambda t: tv.concurrency(t)),
    "kernel_overlap_stats": every(lambda t: tv.kernel_overlap_stats(t, per="rank")),
    "efficiency": every(lambda t: tv.efficiency(t)),
    "efficiency_rank": every(lambda t: tv.efficiency(t, per="rank")),
    "efficiency_iteration": every(lambda t: tv.efficiency(t, per="iteration")),
    "iteration_stats": every(lambda t: tv.iteration_stats(t)),
    "iteration_stats_step": every(lambda t: tv.iteration_stats(t, per="step")),
    "nccl_summary": every(lambda t: tv.nccl_summary(t, per="rank")),
    "collective_calls": every(lambda t: tv.collective_calls(t)),
    "kernel_pace": every(lambda t: tv.kernel_pace(t, name=most_frequent_kernel(t))),
    "critical_path": every(lambda t: tv.critical_path(t)),
    "critical_path_categories": every(lambda t: tv.critical_path(t, view="categories")),
    "findings": every(findings_table),
    "memory_peaks": every(lambda t: tv.memory_peaks(t)),
    "memory_peak_holders": every(lambda t: tv.memory_peak_holders(t, per="rank")),
    "memory_by_operator": every(lambda t: tv.memory_by_operator(t)),
    "memory_allocator_stats": every(lambda t: tv.memory_allocator_stats(t)),
}

#: Which folders an analysis is pinned on (all, unless listed here).
APPLIES: dict[str, set[str]] = {
    "frequent_kernel_sequences": set(SEQUENCE_OPERATORS),
    "frequent_kernel_trigrams": set(SEQUENCE_OPERATORS),
    "stragglers": MULTI_RANK,
    "stragglers_collective": MULTI_RANK,
    "stragglers_arrival": MULTI_RANK,
    "compare_vs_hta_dlrm_2of128_ranks": {"dlrm_8rank_v100"},
    # The folders with two steps or more.
    "compare_halves": {"h200_train", "hta_dlrm_2of128_ranks", "hta_mi250_rocm"},
    "kernel_pace": set(FOLDERS) - {"hta_cpu_only"},
    # The real traces with memory records (profile_memory=True).
    "memory_peaks": {"h100_bert_small"},
    "memory_peak_holders": {"h100_bert_small"},
    "memory_by_operator": {"h100_bert_small"},
    "memory_allocator_stats": {"h100_bert_small"},
}

_LOADED: dict[str, tv.Trace] = {}


def cases() -> list[tuple[str, str]]:
    """Every (folder, analysis) pinned."""
    return [(f, a) for f in sorted(FOLDERS) for a in ANALYSES if f in APPLIES.get(a, set(FOLDERS))]


def load(folder: str) -> tv.Trace:
    """The folder's trace, parsed afresh (never from a cache), once per process."""
    if folder not in _LOADED:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tv.TraceviewWarning)
            _LOADED[folder] = tv.load(FOLDERS[folder], cache=False, progress=False)
    return _LOADED[folder]


def compute(analysis: str, folder: str) -> pd.DataFrame:
    """One analysis' result on a folder, its warnings silenced (a CPU-only trace warns, by design)."""
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
        compute(analysis, folder).to_csv(target, index=False, lineterminator="\n")
        written[folder] = written.get(folder, 0) + 1
    for folder, n in written.items():
        print(f"{folder}: wrote {n} files to {a.out / folder}")


if __name__ == "__main__":
    main()
