"""CPU time of each stage of the Kineto reader on one file (medians of several runs).

    python benchmarks/synth.py /tmp/synth1 --ranks 1 --events 100000
    python benchmarks/load_stages.py /tmp/synth1/rank-0.pt.trace.json [--runs 5] [--pieces]

CPU time of this process (``time.process_time``), not wall time: on a machine shared with
busy neighbours the wall time of a run varies several-fold, its CPU time far less. The
garbage collector is off, as the reader runs. "read + inflate" is reading the file (from
the page cache) and, for ``.gz`` files, inflating it; "free events" is freeing the decoded
events once the tables are built (as ``parse_kineto`` does before it returns); the rates are MB of JSON per second
of CPU time, with and without it. ``--runs`` runs are interleaved with nothing else: to
compare two checkouts, run this script alternately under each (``PYTHONPATH=<checkout>``).

By default the file is read whole (``parse_kineto``'s path: one typed decode of the whole
file). ``--pieces`` reads it as ``tv.load`` reads a plain file bigger than
``ingest.PIECE_BYTES``: in byte ranges ("pieces"), each turned into columns before the
next is read (``kineto.parse_in_pieces``): scanned by the C scanner ("native scan") and
turned into columns from its output ("native columns", ``readers/kineto/native.py``) where it is
built and reads the events, else decoded by msgspec ("msgspec decode") and turned into
columns by ``parts.decoded_part``; "read, plan, header, free"
is the rest (reading the pieces, finding the cuts, the header, freeing each piece's
events). A ``.gz`` file is inflated as it is read, piece by piece ("read + inflate":
reading and inflating; ``kineto.parse_streamed``), as ``tv.load`` does.
``TRACEVIEW_NATIVE=0`` times the msgspec path alone.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import gc
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from jupyter_traceview.loading import ingest
from jupyter_traceview.loading.readers import kineto
from jupyter_traceview.loading.readers.files import inflate_chunks, read_bytes
from jupyter_traceview.loading.readers.kineto import decode, header, native, parts, pieces, tables

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
    decode.check_surrogates(path, data)
    t1 = clock()
    doc, chunks_iter = decode.decode_typed(path, data, data.lstrip()[:1] == b"{")
    chunks = list(chunks_iter)
    t2 = clock()
    state = parts.FileState()
    columns_of_parts = [parts.decoded_part(c, state) for c in chunks]
    t3 = clock()
    columns = pieces.merge_parts(columns_of_parts, state)
    t4 = clock()
    ranks = tables.split_and_finish(path, columns, header.read_header(path, doc, None), None)
    t5 = clock()
    del doc, chunks_iter, chunks, columns_of_parts, columns  # freeing the decoded events: part of a load's CPU time
    t6 = clock()
    del ranks
    return dict(zip(STAGES, (t0 - tr, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t6 - tr), strict=True))


PIECE_STAGES = (
    "read + inflate",
    "native scan",
    "native columns",
    "msgspec decode",
    "columns (_part)",
    "merge",
    "per-rank tables",
    "read, plan, header, free",
    "total",
)


@contextlib.contextmanager
def _timed(spent: dict[str, float]) -> Iterator[None]:
    """Add the CPU time of each stage function of the piece-by-piece read to ``spent``."""
    stages: list[tuple[Any, str, str]] = [
        (native, "scan", "native scan"),
        (native, "part", "native columns"),
        (pieces, "piece_events", "msgspec decode"),
        (pieces, "decoded_part", "columns (_part)"),
        (pieces, "merge_parts", "merge"),
        (pieces, "split_and_finish", "per-rank tables"),
    ]
    originals = [getattr(mod, name) for mod, name, _ in stages]

    def wrap(f: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(f)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.process_time()
            try:
                return f(*args, **kwargs)
            finally:
                spent[label] += time.process_time() - t

        return timed

    for (mod, name, label), f in zip(stages, originals, strict=True):
        setattr(mod, name, wrap(f, label))
    try:
        yield
    finally:
        for (mod, name, _), f in zip(stages, originals, strict=True):
            setattr(mod, name, f)


def _timed_chunks(path: Path, spent: dict[str, float]) -> Iterator[bytes]:
    """``inflate_chunks(path)``, adding the CPU time of reading and inflating to ``spent``."""
    chunks = inflate_chunks(path)
    while True:
        t = time.process_time()
        chunk = next(chunks, None)
        spent["read + inflate"] += time.process_time() - t
        if chunk is None:
            return
        yield chunk


def one_run_in_pieces(path: Path) -> dict[str, float]:
    spent: dict[str, float] = collections.defaultdict(float)
    with _timed(spent):
        t0 = time.process_time()
        if path.name.endswith(".gz"):  # inflated as it is read, as tv.load reads it
            ranks = kineto.parse_streamed(path, functools.partial(_timed_chunks, path, spent), ingest.PIECE_BYTES)
            assert not isinstance(ranks, bytes), "a small file: read it whole (without --pieces)"
        else:
            read_at, size, close = kineto.open_source(path)
            try:
                ranks = kineto.parse_in_pieces(path, read_at, kineto.plan(read_at, size, ingest.PIECE_BYTES))
            finally:
                close()
        del ranks
        total = time.process_time() - t0
    spent["read, plan, header, free"] = total - sum(spent.values())
    spent["total"] = total
    return dict(spent)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", type=Path)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--pieces", action="store_true", help="read in pieces, as tv.load reads a big plain file")
    a = p.parse_args()
    size = len(read_bytes(a.path))
    gc.disable()
    if a.pieces:
        runs = [one_run_in_pieces(a.path) for _ in range(a.runs)]
        stages = PIECE_STAGES
    else:
        runs = [one_run(a.path) for _ in range(a.runs)]
        stages = STAGES
    gc.enable()
    total = statistics.median(r["total"] for r in runs)
    parse = statistics.median(r["total"] - r.get("read + inflate", 0.0) for r in runs)
    how = f"in pieces of {ingest.PIECE_BYTES / 2**20:g} MB" if a.pieces else "whole"
    scanner = "C scanner + msgspec" if native.AVAILABLE else "msgspec only"
    print(f"{a.path} ({size / 1e6:.1f} MB of JSON, read {how}, {scanner}), reader {kineto.__file__}")
    print(f"CPU time, median of {a.runs}:")
    for stage in stages:
        t = statistics.median(r.get(stage, 0.0) for r in runs)
        print(f"  {stage:24s} {t * 1e3:7.0f} ms  {t / total * 100:5.1f}%")
    print(
        f"  {'rate':24s} {size / 1e6 / total:7.0f} MB/s of CPU time"
        + ("" if a.pieces else f" ({size / 1e6 / parse:.0f} MB/s without read + inflate)")
    )


if __name__ == "__main__":
    main()
