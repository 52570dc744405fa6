"""CPU time of each stage of the Kineto reader on one file (medians of several runs).

    python benchmarks/synth.py /tmp/synth1 --ranks 1 --events 100000
    python benchmarks/load_stages.py /tmp/synth1/rank-0.pt.trace.json [--runs 5]

CPU time of this process (``time.process_time``), not wall time: on a machine shared with
busy neighbours the wall time of a run varies several-fold, its CPU time far less. The
garbage collector is off, as the reader runs. "read + inflate" is reading the file (from
the page cache) and, for ``.gz`` files, inflating it; "free events" is freeing the decoded
events once the tables are built (as ``parse_kineto`` does before it returns); the rates are MB of JSON per second
of CPU time, with and without it. ``--runs`` runs are interleaved with nothing else: to
compare two checkouts, run this script alternately under each (``PYTHONPATH=<checkout>``).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path

from jupyter_traceview.loading.readers import kineto
from jupyter_traceview.loading.readers.files import read_bytes

STAGES = (
    "read + inflate",
    "surrogate scan",
    "typed decode",
    "columns (_part)",
    "merge",
    "per-rank tables",
    "free events",
    "total",
)


def one_run(path: Path) -> dict[str, float]:
    clock = time.process_time
    tr = clock()
    data = read_bytes(path)
    t0 = clock()
    kineto._check_surrogates(path, data)
    t1 = clock()
    doc, chunks_iter = kineto._decode_typed(path, data, data.lstrip()[:1] == b"{")
    chunks = list(chunks_iter)
    t2 = clock()
    state = kineto._FileState()
    parts = [kineto._part(c, state) for c in chunks]
    t3 = clock()
    columns = kineto._merge(parts, state)
    t4 = clock()
    ranks = kineto._split_and_finish(path, columns, kineto._header(path, doc, None), None)
    t5 = clock()
    del doc, chunks_iter, chunks, parts, columns  # freeing the decoded events: part of a load's CPU time
    t6 = clock()
    del ranks
    return dict(zip(STAGES, (t0 - tr, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t6 - tr), strict=True))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", type=Path)
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    size = len(read_bytes(a.path))
    gc.disable()
    runs = [one_run(a.path) for _ in range(a.runs)]
    gc.enable()
    total = statistics.median(r["total"] for r in runs)
    parse = statistics.median(r["total"] - r["read + inflate"] for r in runs)
    print(f"{a.path} ({size / 1e6:.1f} MB of JSON), reader {kineto.__file__}")
    print(f"CPU time, median of {a.runs}:")
    for stage in STAGES:
        t = statistics.median(r[stage] for r in runs)
        print(f"  {stage:16s} {t * 1e3:7.0f} ms  {t / total * 100:5.1f}%")
    print(
        f"  {'rate':16s} {size / 1e6 / total:7.0f} MB/s of CPU time ({size / 1e6 / parse:.0f} MB/s without read + inflate)"
    )


if __name__ == "__main__":
    main()
