"""Where a cached rank's load time goes: CPU time of each stage of reading one cache entry.

    python benchmarks/cache_stages.py PATH CACHE_DIR [--reps 200]

Loads PATH once through CACHE_DIR (filling it), then reads the first file's entry ``--reps``
times, timing each stage with ``time.process_time`` (medians): the cache key, the entry file
(mapped, its CRC, seal and metadata checked), then what the first use of the rank's tables
does (since format 7 a load reads no stream): the rank's Arrow IPC stream opened and read,
the structural checks (layout, Arrow's full validation, categories), the five frames built
from it; the ``gpu_class`` classification ``Trace`` adds, and the whole ``cache.read``.
Warm: the same entry again and again (dtypes, layouts and checked categories remembered
after the first read), so it shows each stage's steady cost, not a fresh process's
(``benchmarks/cached_first_use.py``).
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
from jupyter_traceview.loading import cache, cache_arrow
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
    path = str(a.cache_dir / key / cache.ENTRY_FILE)
    seal = cache._seal_key(str(a.cache_dir))
    clf = Classifier()
    times: dict[str, list[int]] = {}

    def timed(stage: str, f: Callable[[], Any]) -> Any:
        t = time.process_time_ns()
        out = f()
        times.setdefault(stage, []).append(time.process_time_ns() - t)
        return out

    def stream(buffer: pa.Buffer, span: list[int]) -> pa.RecordBatch:
        start, length = span
        return pa.ipc.open_stream(buffer.slice(start, length)).read_next_batch()

    for _ in range(a.reps):
        timed("cache key (real path, stat, fingerprint)", lambda: cache.entry_key(tf, options))
        buffer = timed("entry file (mapped)", lambda: cache._file_buffer(path))
        doc = timed("CRC, seal and metadata", lambda buffer=buffer: cache._entry_doc(buffer, seal))
        meta = timed("RankMeta", lambda doc=doc: RankMeta.from_json(doc["ranks"][0]))
        start, length = doc["streams"][0]
        # (At the first use of a rank's tables since format 7: a load reads no stream.)
        batch = timed("first use: IPC stream", lambda buffer=buffer, doc=doc: stream(buffer, doc["streams"][0]))
        schema_key = timed(
            "first use: checks", lambda b=buffer, s=start, n=length: cache_arrow.schema_message(b.slice(s, n))
        )
        checked = timed("first use: checks", lambda batch=batch, k=schema_key: cache_arrow.check_rank(batch, k))
        tables = {}
        for name, names, rows in checked:
            tables[name] = timed(
                "first use: five frames from Arrow", lambda names=names, rows=rows: cache_arrow.from_arrow(names, rows)
            )
        d = RankData(meta=meta, **tables)
        timed("classified (gpu_class, in Trace)", lambda d=d: classified(d, clf))
        timed("whole cache.read", lambda: cache.read(a.cache_dir, key, classifier=clf))
    print(f"{a.path}: one cached rank, CPU time per read, median of {a.reps}")
    for stage, ts in times.items():
        per = [sum(ts[i :: a.reps]) for i in range(a.reps)] if len(ts) > a.reps else ts
        print(f"  {stage:45s} {statistics.median(per) / 1e3:9.1f} us")


if __name__ == "__main__":
    main()
