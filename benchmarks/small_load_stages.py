"""CPU time of each stage of a cold ``tv.load`` of small files (issue 17: the 8-rank sample).

    python benchmarks/small_load_stages.py [PATH] [--loads 15] [--fresh N]

Loads PATH (default: the bundled sample) ``--loads`` times in this process with
``cache=False`` and prints, per stage, the CPU time of the first load (this process's first:
what ``bench_load.py``'s fresh processes time) and the median of the later ones.
``--fresh N`` does that in N fresh processes (two loads each) and prints the medians over
them: one process's first load is as noisy as the machine. A stage is
a reader function, wrapped with ``time.process_time``: nested stages are included in their
callers' time (``kineto.parse_in_pieces`` holds the scan and the columns; ``kineto.batch_tables``
holds the per-rank tables). Stages that a checkout lacks are left out, so two checkouts can
be compared (``PYTHONPATH=<checkout>``); the wrapping itself costs a few percent.
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

#: (module, attribute): the stages timed, where they exist.
STAGES = (
    ("jupyter_traceview.loading.loader", "find"),
    ("jupyter_traceview.loading.loader", "make_plan"),
    ("jupyter_traceview.loading.ingest", "_read_kineto"),
    ("jupyter_traceview.loading.readers.kineto", "parse_streamed"),
    ("jupyter_traceview.loading.ingest", "inflate_whole"),
    ("jupyter_traceview.loading.readers.kineto", "parse_in_pieces"),
    ("jupyter_traceview.loading.readers.kineto", "plan"),
    ("jupyter_traceview.loading.readers.kineto.native", "scan"),
    ("jupyter_traceview.loading.readers.kineto.native", "_part"),
    # (each where its callers look it up: the reader's modules import one another's names)
    ("jupyter_traceview.loading.readers.kineto.pieces", "decoded_part"),
    ("jupyter_traceview.loading.readers.kineto.pieces", "merge_parts"),
    ("jupyter_traceview.loading.readers.kineto.pieces", "split_and_finish"),
    ("jupyter_traceview.loading.readers.kineto.tables", "rank_tables"),
    ("jupyter_traceview.loading.ingest", "classified"),
    ("jupyter_traceview.loading.readers.kineto", "batch_tables"),
    ("jupyter_traceview.model.classify", "Classifier.class_codes"),
    ("jupyter_traceview.loading.readers.kineto.batch", "by_context"),
    ("jupyter_traceview.loading.readers.kineto.batch", "_steps"),
    ("jupyter_traceview.loading.readers.kineto.batch", "categorical"),
    ("jupyter_traceview.loading.readers.kineto.batch", "frame"),
    ("jupyter_traceview.loading.readers.derive", "nesting"),
    ("jupyter_traceview.loading.readers.op_args", "OpArgs.table"),
    ("jupyter_traceview.loading.readers.kineto.tables", "comms_table"),
    ("jupyter_traceview.loading.readers.memory", "MemoryRows.table"),
)


def _wrap(owner: Any, name: str, label: str, spent: dict[str, float]) -> None:
    real: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(real)
    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            spent[label] += time.process_time() - t

    setattr(owner, name, timed)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", nargs="?")
    p.add_argument("--loads", type=int, default=15)
    p.add_argument("--fresh", type=int, default=0, help="N fresh processes of two loads each: medians over them")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # (one process's stages, for --fresh)
    args = p.parse_args()
    if args.fresh:
        _fresh(args)
        return
    import jupyter_traceview as tv
    import jupyter_traceview.loading.loader
    import jupyter_traceview.loading.readers.kineto  # (imported before the clock, as bench_load does)

    path = args.path or tv.sample_path()
    spent: dict[str, float] = collections.defaultdict(float)
    labels = []
    for module, attr in STAGES:
        try:
            owner: Any = importlib.import_module(module)
        except ImportError:
            continue
        *outer, name = attr.split(".")
        for o in outer:
            owner = getattr(owner, o, None)
        if owner is None or not hasattr(owner, name):
            continue
        label = f"{module.rsplit('.', 1)[-1]}.{attr}"
        _wrap(owner, name, label, spent)
        labels.append(label)
    runs: list[dict[str, float]] = []
    for _ in range(max(2, args.loads)):
        spent.clear()
        t = time.process_time()
        tv.load(path, cache=False, progress=False)
        spent["total"] = time.process_time() - t
        runs.append(dict(spent))
    if args.json:
        print(json.dumps([labels, runs[0], runs[1]]))
        return
    print(f"{path}: {len(runs)} loads, load average {os.getloadavg()[0]:.1f}; CPU ms")
    print(f"{'stage':36s} {'first load':>10s} {'later (median)':>15s}")
    for label in ["total", *labels]:
        later = statistics.median(r.get(label, 0.0) for r in runs[1:])
        print(f"{label:36s} {runs[0].get(label, 0.0) * 1e3:10.1f} {later * 1e3:15.1f}")


def _fresh(args: argparse.Namespace) -> None:
    """The first and second loads' stages in ``args.fresh`` fresh processes: their medians."""
    got = []
    for _ in range(args.fresh):
        cmd = [sys.executable, __file__, *([args.path] if args.path else []), "--loads", "2", "--json"]
        got.append(json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout))
    labels = got[0][0]
    print(f"{args.path or 'the sample'}: {args.fresh} fresh processes, load average {os.getloadavg()[0]:.1f}; CPU ms")
    print(f"{'stage':36s} {'first load':>10s} {'second load':>12s}  (medians)")
    for label in ["total", *labels]:
        first = statistics.median(g[1].get(label, 0.0) for g in got)
        second = statistics.median(g[2].get(label, 0.0) for g in got)
        print(f"{label:36s} {first * 1e3:10.2f} {second * 1e3:12.2f}")


if __name__ == "__main__":
    main()
