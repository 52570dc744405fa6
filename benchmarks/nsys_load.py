"""Time loading Nsight Systems SQLite exports, and write synthetic ones of any size.

    python benchmarks/nsys_load.py tests/data/nsys_sqlite/mfu_2gpu_nccl.sqlite [--repeat 5]
    python benchmarks/nsys_load.py --synth 1000000 /tmp/big.sqlite     # then time it as above

Reports the median of ``--repeat`` runs of: ``tv.load`` without the cache, ``tv.load``
from a warm cache, and ``tv.nvtx_gpu_projection`` on the loaded trace, and the process's
peak resident memory. A synthetic export has two worker processes with one GPU each; per
launch: an NVTX range, a ``cudaLaunchKernel`` call inside it and the kernel (every tenth
launch is a device-to-device copy instead), with the column names of Nsight 2026.x.
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jupyter_traceview as tv


def synth(path: Path, launches: int, *, seed: int = 0) -> Path:
    """An export with ``launches`` launches split over two processes and GPUs."""
    rng = np.random.default_rng(seed)
    if path.exists():
        path.unlink()
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
            streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
            registersPerThread INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER,
            blockZ INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
            streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER,
            srcKind INTEGER, dstKind INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
            correlationId INTEGER, nameId INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER,
            textId INTEGER, domainId INTEGER);
        CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT);
        INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '2023-11-14T22:13:20');
        """
    )
    kernels = ["void gemm_bf16_128x256(Params)", "void elementwise_add(float*)", "ncclDevKernel_AllReduce_Sum_bf16"]
    ops = ["aten::mm", "aten::add", "nccl:all_reduce"]
    strings = [*kernels, *ops, "cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020"]
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(strings, start=1)))
    for worker in range(2):
        n = launches // 2
        gpid = (1 << 48) | ((1000 + worker) << 24)
        gtid = gpid | (1000 + worker)
        cpu = np.cumsum(rng.integers(2_000, 6_000, n)).astype(np.int64)
        gpu_dur = rng.integers(1_000, 20_000, n)
        gpu = np.maximum(cpu + 10_000, 0)
        gpu = np.maximum.accumulate(gpu)
        which = rng.integers(0, 3, n)
        copy = np.arange(n) % 10 == 9
        corr = np.arange(1, n + 1)
        nvtx = [(int(c) - 500, int(c) + 1_500, 59, None, gtid, 4 + int(w), 0) for c, w in zip(cpu, which, strict=True)]
        con.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?)", nvtx)
        calls = [
            (int(c), int(c) + 1_000, 0, gtid, int(k), 8 if m else 7) for c, k, m in zip(cpu, corr, copy, strict=True)
        ]
        con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?)", calls)
        ks = [
            (
                int(s),
                int(s + d),
                worker,
                worker + 1,
                7,
                int(k),
                gpid,
                int(w) + 1,
                int(w) + 1,
                64,
                256,
                1,
                1,
                128,
                1,
                1,
                0,
                0,
            )
            for s, d, k, w, m in zip(gpu, gpu_dur, corr, which, copy, strict=True)
            if not m
        ]
        con.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({', '.join('?' * 18)})", ks)
        cps = [
            (int(s), int(s + d), worker, worker + 1, 7, int(k), gpid, 1 << 20, 8, 2, 2)
            for s, d, k, m in zip(gpu, gpu_dur, corr, copy, strict=True)
            if m
        ]
        con.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES ({', '.join('?' * 11)})", cps)
    con.commit()
    con.close()
    return path


def _median(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--synth", type=int, metavar="LAUNCHES", help="write a synthetic export to PATH and exit")
    args = ap.parse_args()
    if args.synth:
        t = time.perf_counter()
        synth(args.path, args.synth)
        size = args.path.stat().st_size / 2**20
        print(f"wrote {args.path} ({size:.1f} MiB, {args.synth:,} launches) in {time.perf_counter() - t:.1f} s")
        return
    size = args.path.stat().st_size / 2**20
    trace = tv.load(args.path, cache=False)
    print(f"{args.path} ({size:.1f} MiB): {trace!r}".replace("\n", "\n    "))
    print(f"tv.load, no cache     {_median(lambda: tv.load(args.path, cache=False), args.repeat):8.3f} s")
    with tempfile.TemporaryDirectory() as cache:
        tv.load(args.path, cache=cache)
        print(f"tv.load, warm cache   {_median(lambda: tv.load(args.path, cache=cache), args.repeat):8.3f} s")
    print(f"nvtx_gpu_projection   {_median(lambda: tv.nvtx_gpu_projection(trace), args.repeat):8.3f} s")
    print(f"peak RSS              {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:8.0f} MiB")


if __name__ == "__main__":
    main()
