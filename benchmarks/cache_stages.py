"""Where a cached rank's load time goes: CPU time of each stage of reading one cache entry.

    python benchmarks/cache_stages.py PATH CACHE_DIR [--reps 200]

Loads PATH once through CACHE_DIR (filling it), then reads the first file's entry ``--reps``
times, timing each stage with ``time.process_time`` (medians): the cache key, meta.json, the
five Arrow files (opened, CRC-checked, IPC reader), their structural checks, the five
frames built from them, the ``gpu_class`` classification ``Trace`` adds, and the whole
``cache.read`` (which builds no frame since wave 9: they are built on first use). Warm: the same
entry again and again (dtypes shared after the first read), so it shows each stage's
steady cost, not a fresh process's.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc

import jupyter_traceview as tv
from jupyter_traceview.loading import cache
from jupyter_traceview.loading.ingest import ReadOptions
from jupyter_traceview.loading.readers.files import discover
from jupyter_traceview.model.classify import Classifier
from jupyter_traceview.model.rank_data import RankData, RankMeta
from jupyter_traceview.model.trace import classified


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path")
    p.add_argument("cache_dir", type=Path)
    p.add_argument("--reps", type=int, default=200)
    a = p.parse_args()
    tv.load(a.path, cache=str(a.cache_dir), progress=False)
    tf = discover(a.path)[0][0]
    options = ReadOptions(bad_events="raise", pid_map=None, max_json_bytes=4 * 2**30).cache_key_fields()
    key = cache.entry_key(tf, options)
    entry = a.cache_dir / key
    clf = Classifier()
    times: dict[str, list[int]] = {}

    def timed(stage: str, f: Callable[[], Any]) -> Any:
        t = time.process_time_ns()
        out = f()
        times.setdefault(stage, []).append(time.process_time_ns() - t)
        return out

    def arrow(name: str) -> pa.RecordBatch:
        buffer = cache._file_buffer(str(entry / f"r0.{name}.arrow"))
        cache._crc32(memoryview(buffer))
        return pa.ipc.open_file(buffer).get_batch(0)

    for _ in range(a.reps):
        timed("cache key (real path, stat, fingerprint)", lambda: cache.entry_key(tf, options))
        doc = timed("meta.json (read, decode, CRC)", lambda: _meta(entry))
        tables = {}
        for name in cache._TABLES:
            batch = timed("five Arrow files (read, CRC, IPC reader)", lambda name=name: arrow(name))
            timed("five structural checks", lambda batch=batch, name=name: cache._check_batch(batch, name))
            tables[name] = timed("five frames from Arrow", lambda batch=batch: cache._from_arrow(batch))
        d = RankData(meta=RankMeta.from_json(doc["ranks"][0]), **tables)
        timed("classified (gpu_class, in Trace)", lambda d=d: classified(d, clf))
        timed("whole cache.read", lambda: cache.read(a.cache_dir, key, classifier=clf))
    print(f"{a.path}: one cached rank, CPU time per read, median of {a.reps}")
    for stage, ts in times.items():
        per = [sum(ts[i :: a.reps]) for i in range(a.reps)] if len(ts) > a.reps else ts
        print(f"  {stage:45s} {statistics.median(per) / 1e3:9.1f} us")


def _meta(entry: Path) -> Any:
    doc = cache._decode_meta((entry / "meta.json").read_bytes())
    cache._ranks_crc(doc["ranks"])
    return doc


if __name__ == "__main__":
    main()
