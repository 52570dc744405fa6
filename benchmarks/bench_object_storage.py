"""Loading from object storage on a dask cluster: synthetic ranks in a local S3 emulator.

    python benchmarks/bench_object_storage.py --ranks 64 --events 1000000 --workers 2
    python benchmarks/bench_object_storage.py --ranks 8 --events 100000 --workers 2   # a quick one

Writes ``--ranks`` synthetic rank files of ``--events`` JSON events each (benchmarks/synth.py,
gzip-compressed, once, under benchmarks/.data/), starts moto's S3 server (``moto[server]``,
tests/s3_emulator.py) in its own process on a free port, uploads them to ``s3://bench/run/``, then, in this
process (the "notebook"): a ``LocalCluster`` of ``--workers`` single-threaded worker
processes started with the emulator in their environment (``AWS_ENDPOINT_URL``...),
``tv.load("s3://bench/run/", engine="dask", client=client, cache=False)`` (the workers read
the objects themselves, in 8 MiB blocks), then ``tv.summary(trace)`` on the workers.

Reported (Markdown on stdout, JSON in benchmarks/results/object-storage-<ranks>x<events>.json):
the wall time of the upload, the load and the summary; the driver's peak resident memory
(``VmHWM``); each worker's peak resident memory (``ru_maxrss``) and its ranks, and the
table events per worker, from which the memory per rank follows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import synth  # noqa: E402 (benchmarks/synth.py)

from tests.s3_emulator import client as s3_client  # noqa: E402
from tests.s3_emulator import s3_emulator  # noqa: E402


def _vm_hwm() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _worker_peak() -> dict[str, int]:
    import jupyter_traceview  # noqa: F401 (loaded on the worker already)

    return {"peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=64)
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    a = p.parse_args()

    data = HERE / ".data" / f"synth_{a.ranks}x{a.events}_gz"
    if not data.is_dir() or len(list(data.glob("*.json.gz"))) < a.ranks:
        t = time.perf_counter()
        size = synth.generate(data, a.ranks, a.events, gz=True)
        print(f"generated {a.ranks} ranks ({size / 1e9:.2f} GB of JSON) in {time.perf_counter() - t:.0f} s")
    files = sorted(data.glob("*.json.gz"))[: a.ranks]

    result: dict[str, Any] = {"ranks": a.ranks, "events": a.events, "workers": a.workers}
    # In its own process: the emulator shares no GIL with the driver.
    with s3_emulator(process=True) as endpoint:
        os.environ.update(
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            AWS_ENDPOINT_URL=endpoint,
            AWS_DEFAULT_REGION="us-east-1",
        )
        s3 = s3_client(endpoint, key="bench", secret="bench")
        s3.create_bucket(Bucket="bench")
        t = time.perf_counter()
        for f in files:
            s3.upload_file(str(f), "bench", f"run/{f.name}")
        result["upload_s"] = time.perf_counter() - t
        result["object_bytes"] = sum(f.stat().st_size for f in files)

        import distributed

        import jupyter_traceview as tv

        cluster = distributed.LocalCluster(
            n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        )
        client = distributed.Client(cluster)
        try:
            t = time.perf_counter()
            trace = tv.load("s3://bench/run/", engine="dask", client=client, cache=False, progress=False)
            result["load_s"] = time.perf_counter() - t
            t = time.perf_counter()
            summary = tv.summary(trace)
            result["summary_s"] = time.perf_counter() - t
            result["table_events"] = int(summary["events"].sum())
            holders = client.who_has(list(trace._futures.values()))  # type: ignore[attr-defined]
            per_worker: dict[str, int] = {}
            for where in holders.values():
                for w in where:
                    per_worker[w] = per_worker.get(w, 0) + 1
            peaks = client.run(_worker_peak)
            result["workers_detail"] = [{"worker": w, "ranks": per_worker.get(w, 0), **peaks[w]} for w in sorted(peaks)]
            result["driver_peak_rss_bytes"] = _vm_hwm()
        finally:
            client.close()
            cluster.close()

    out = HERE / "results" / f"object-storage-{a.ranks}x{a.events}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    gib = 2**30
    print(f"| {a.ranks} x {a.events:,} from S3 (moto), {a.workers} workers | seconds / GiB |")
    print("|---|---|")
    print(f"| upload ({result['object_bytes'] / gib:.2f} GiB of gzip) | {result['upload_s']:.1f} s |")
    print(f"| tv.load(engine='dask') | {result['load_s']:.1f} s |")
    print(f"| tv.summary | {result['summary_s']:.1f} s |")
    print(f"| driver peak RSS | {result['driver_peak_rss_bytes'] / gib:.2f} GiB |")
    for w in result["workers_detail"]:
        print(f"| worker {w['worker']} peak RSS ({w['ranks']} ranks) | {w['peak_rss_bytes'] / gib:.2f} GiB |")
    print(f"table events: {result['table_events']:,}; JSON in {out}")


if __name__ == "__main__":
    main()
