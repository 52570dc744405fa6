"""Write HTA's results on every real Kineto trace folder, as reference files for the tests.

Run it with the Python of a separate virtual environment holding Holistic Trace Analysis
(``bash benchmarks/hta_env.sh`` makes one in ``benchmarks/.venv-hta``)::

    benchmarks/.venv-hta/bin/python scripts/hta_reference.py [--out tests/golden/hta]

For each folder and each HTA analysis it writes ``<out>/<folder>/<analysis>.csv`` (one file
per returned frame; per-rank dicts are concatenated with a ``rank`` column), or
``<analysis>.error.txt`` with HTA's exception when HTA fails on that trace. It never
imports jupyter_traceview: the references are HTA's numbers, untouched. Tests compare
ours with them (see ``docs/semantics.md`` for every intended difference).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from scripts.trace_folders import FOLDERS, SEQUENCE_OPERATORS  # noqa: E402  (plain paths: no jupyter_traceview)


def _frames(result: Any) -> dict[str, Any]:
    """HTA returns a frame, a tuple of frames, or {rank: frame}: name the frames."""
    import pandas as pd

    if result is None:
        return {}
    if isinstance(result, pd.DataFrame):
        return {"": result}
    if isinstance(result, tuple):
        out = {}
        for i, part in enumerate(result):
            for k, v in _frames(part).items():
                out[f"{i}{k}"] = v
        return out
    if isinstance(result, dict):
        parts = []
        for rank, frame in sorted(result.items()):
            if isinstance(frame, pd.DataFrame):
                f = frame.copy()
                f.insert(0, "rank", rank)
                parts.append(f)
        return {"": pd.concat(parts, ignore_index=True)} if parts else {}
    if isinstance(result, list):
        return {"": pd.DataFrame({"value": result})}
    raise TypeError(f"unexpected HTA result type {type(result).__name__}")


def calls(name: str, ranks: list[int], tmp: str) -> dict[str, Callable[[Any], Any]]:
    c: dict[str, Callable[[Any], Any]] = {
        "temporal_breakdown": lambda ta: ta.get_temporal_breakdown(visualize=False),
        "comm_comp_overlap": lambda ta: ta.get_comm_comp_overlap(visualize=False),
        "kernel_breakdown": lambda ta: ta.get_gpu_kernel_breakdown(visualize=False),
        "kernel_breakdown_all": lambda ta: ta.get_gpu_kernel_breakdown(
            visualize=False, duration_ratio=1.0, num_kernels=10**9
        ),
        "idle_time_breakdown": lambda ta: ta.get_idle_time_breakdown(
            ranks=ranks, visualize=False, show_idle_interval_stats=True
        ),
        "kernel_launch_stats": lambda ta: ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False),
        "queue_length_summary": lambda ta: ta.get_queue_length_summary(ranks=ranks),
        "queue_length_time_series": lambda ta: ta.get_queue_length_time_series(ranks=ranks),
        "blocked_on_full_queue": lambda ta: ta.get_time_spent_blocked_on_full_queue(
            ta.get_queue_length_time_series(ranks=ranks)
        ),
        "memory_bw_summary": lambda ta: ta.get_memory_bw_summary(ranks=ranks),
        "memory_bw_time_series": lambda ta: ta.get_memory_bw_time_series(ranks=ranks),
        "gpu_user_annotation_breakdown": lambda ta: ta.get_gpu_user_annotation_breakdown(visualize=False),
        "user_annotation_breakdown": lambda ta: ta.get_gpu_user_annotation_breakdown(
            use_gpu_annotation=False, visualize=False
        ),
        "aten_op_kernels_and_delay": lambda ta: ta.get_aten_op_kernels_and_delay(ranks=ranks),
        "profiler_steps": lambda ta: ta.get_profiler_steps(),
        "potential_stragglers": lambda ta: ta.get_potential_stragglers(num_candidates=3),
    }
    op = SEQUENCE_OPERATORS.get(name)
    if op:
        c["frequent_kernel_sequences"] = lambda ta: ta.get_frequent_cuda_kernel_sequences(
            operator_name=op, output_dir=tmp, rank=ranks[0], top_k=10
        )
    return c


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=ROOT / "tests" / "golden" / "hta")
    p.add_argument("folders", nargs="*", default=sorted(FOLDERS))
    a = p.parse_args()
    import hta
    from hta.trace_analysis import TraceAnalysis

    version = getattr(hta, "__version__", "unknown")
    for name in a.folders:
        folder = FOLDERS[name]
        out = a.out / name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        (out / "HTA_VERSION").write_text(f"{version}\n")
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                ta = TraceAnalysis(trace_dir=str(folder))
        except Exception:  # noqa: BLE001 - recorded, not raised
            (out / "load.error.txt").write_text(traceback.format_exc())
            print(f"{name}: HTA could not load it", file=sys.stderr)
            continue
        ranks = sorted(ta.t.traces)
        with tempfile.TemporaryDirectory() as tmp:
            for analysis, fn in calls(name, ranks, tmp).items():
                try:
                    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                        frames = _frames(fn(ta))
                except Exception:  # noqa: BLE001 - recorded, not raised
                    (out / f"{analysis}.error.txt").write_text(traceback.format_exc().splitlines()[-1] + "\n")
                    print(f"{name}: {analysis}: HTA failed", file=sys.stderr)
                    continue
                if not frames:
                    (out / f"{analysis}.none.txt").write_text("HTA returned None or nothing\n")
                for suffix, frame in frames.items():
                    suffix = f".{suffix}" if suffix else ""
                    frame.to_csv(out / f"{analysis}{suffix}.csv", index=frame.index.name is not None)
        print(f"{name}: wrote {len(os.listdir(out))} files to {out}")


if __name__ == "__main__":
    main()
