"""Loading from object storage on a dask cluster: synthetic ranks in a local S3 emulator.

    python benchmarks/bench_object_storage.py --ranks 64 --events 1000000 --workers 2 --from-one
    python benchmarks/bench_object_storage.py --ranks 8 --events 100000 --workers 2   # a quick one

Writes ``--ranks`` synthetic rank files of ``--events`` JSON events each (benchmarks/synth.py,
gzip-compressed, once, under benchmarks/.data/ or ``--data DIR``; ``--from-one`` derives every
rank from rank 0, ``synth.py --from-one``: minutes instead of ~25 at 64 x 1M), starts moto's S3 server
(``moto[server]``, tests/s3_emulator.py) in its own process on a free port, uploads them to ``s3://bench/run/``, then, in this
process (the "notebook"): a ``LocalCluster`` of ``--workers`` single-threaded worker
processes started with the emulator in their environment (``AWS_ENDPOINT_URL``...),
``tv.load("s3://bench/run/", engine="dask", client=client, cache=False)`` (the workers read
the objects themselves, in 8 MiB blocks), then ``tv.summary(trace)`` on the workers.

Reported (Markdown on stdout, JSON in benchmarks/results/object-storage-<ranks>x<events>.json):
the wall time of the upload, the load and the summary; the driver's peak resident memory
(``VmHWM``); each worker's peak resident memory (``ru_maxrss``) and its ranks, and the
table events per worker, from which the memory per rank follows; the CPU time (user +
system) of the load and of the summary in the driver (this process, the dask scheduler
included), in each worker and in the S3 emulator's process; the 1-minute load average
(sampled every second) during the load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import synth  # noqa: E402 (benchmarks/synth.py)

from tests.s3_emulator import client as s3_client  # noqa: E402
from tests.s3_emulator import s3_emulator  # noqa: E402


def _emulator_pid() -> int:
    """The process id of the S3 emulator this process started (its child running moto.server)."""
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as fh:
            for pid in fh.read().split():
                with open(f"/proc/{pid}/cmdline", "rb") as cmd:
                    if b"moto.server" in cmd.read():
                        return int(pid)
    raise RuntimeError("the S3 emulator's process was not found among this process's children")


def _vm_hwm() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _worker_peak() -> dict[str, int]:
    import jupyter_traceview  # noqa: F401 (loaded on the worker already)

    return {"peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def _cpu() -> float:
    """CPU seconds (user + system) this process has used."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _pid_cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _LoadAverage:
    """The 1-minute load average, sampled every second while in the ``with`` block."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(1.0):
                return

    def __enter__(self) -> _LoadAverage:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, float]:
        return {"min": min(self.samples), "median": statistics.median(self.samples), "max": max(self.samples)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=64)
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--data", type=Path, help="the folder of gzip rank files (written there when missing)")
    p.add_argument("--from-one", action="store_true", help="write the ranks with synth.py --from-one")
    a = p.parse_args()

    data = a.data or HERE / ".data" / f"synth_{a.ranks}x{a.events}_gz{'_from_one' if a.from_one else ''}"
    if not data.is_dir() or len(list(data.glob("*.json.gz"))) < a.ranks:
        t = time.perf_counter()
        size = synth.generate(data, a.ranks, a.events, gz=True, from_one=a.from_one)
        print(f"generated {a.ranks} ranks ({size / 1e9:.2f} GB of JSON) in {time.perf_counter() - t:.0f} s")
    files = sorted(data.glob("*.json.gz"), key=lambda f: int(f.name.split("-")[1].split(".")[0]))[: a.ranks]

    result: dict[str, Any] = {"ranks": a.ranks, "events": a.events, "workers": a.workers, "from_one": a.from_one}
    # In its own process: the emulator shares no GIL with the driver.
    with s3_emulator(process=True) as endpoint:
        os.environ.update(
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            AWS_ENDPOINT_URL=endpoint,
            AWS_DEFAULT_REGION="us-east-1",
        )
        server_pid = _emulator_pid()
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
            # CPU of each process before, after the load and after the summary.
            cpu = [(_cpu(), _pid_cpu(server_pid), client.run(_cpu))]
            with _LoadAverage() as loadavg:
                t = time.perf_counter()
                trace = tv.load("s3://bench/run/", engine="dask", client=client, cache=False, progress=False)
                result["load_s"] = time.perf_counter() - t
            cpu.append((_cpu(), _pid_cpu(server_pid), client.run(_cpu)))
            result["load_average"] = loadavg.summary()
            t = time.perf_counter()
            summary = tv.summary(trace)
            result["summary_s"] = time.perf_counter() - t
            cpu.append((_cpu(), _pid_cpu(server_pid), client.run(_cpu)))
            for phase, (before, after) in (("load", cpu[:2]), ("summary", cpu[1:])):
                result[f"{phase}_cpu_s"] = {
                    "driver": after[0] - before[0],
                    "s3_emulator": after[1] - before[1],
                    "workers": {w: after[2][w] - before[2][w] for w in sorted(after[2])},
                }
            result["table_events"] = int(summary["events"].sum())
            holders = client.who_has(list(trace._futures.values()))  # type: ignore[attr-defined]
            per_worker: dict[str, int] = {}
            for where in holders.values():
                for w in where:
                    per_worker[w] = per_worker.get(w, 0) + 1
            peaks = client.run(_worker_peak)
            result["workers_detail"] = [
                {
                    "worker": w,
                    "ranks": per_worker.get(w, 0),
                    "load_cpu_s": result["load_cpu_s"]["workers"].get(w),
                    "summary_cpu_s": result["summary_cpu_s"]["workers"].get(w),
                    **peaks[w],
                }
                for w in sorted(peaks)
            ]
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
    la = result["load_average"]
    print(f"| tv.load(engine='dask') | {result['load_s']:.1f} s |")
    print(
        f"| load average during the load (min / median / max) | {la['min']:.1f} / {la['median']:.1f} / {la['max']:.1f} |"
    )
    print(f"| tv.summary | {result['summary_s']:.1f} s |")
    for phase in ("load", "summary"):
        c = result[f"{phase}_cpu_s"]
        print(f"| {phase} CPU: driver / S3 emulator | {c['driver']:.1f} s / {c['s3_emulator']:.1f} s |")
    print(f"| driver peak RSS | {result['driver_peak_rss_bytes'] / gib:.2f} GiB |")
    for w in result["workers_detail"]:
        print(
            f"| worker {w['worker']} ({w['ranks']} ranks): load CPU, summary CPU, peak RSS | "
            f"{w['load_cpu_s']:.1f} s, {w['summary_cpu_s']:.1f} s, {w['peak_rss_bytes'] / gib:.2f} GiB |"
        )
    print(f"table events: {result['table_events']:,}; JSON in {out}")


if __name__ == "__main__":
    main()
