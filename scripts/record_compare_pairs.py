"""Record the trace pairs of ``tests/data/compare/``: one training loop, with known changes injected.

Run with the CPU build of PyTorch (``pip install torch==2.13.0``)::

    python scripts/record_compare_pairs.py                      # writes tests/data/compare/
    python scripts/record_compare_pairs.py --reruns 10 --out /tmp/cmp   # benchmarks/compare/

The loop: a small MLP (``Linear(64, 64) -> ReLU -> Linear(64, 10)``) trained with SGD on
random vectors in batches of 8, read through a ``DataLoader`` (``num_workers=0``,
``batch_size=None``) whose dataset makes a whole batch and sleeps ``batch_sleep_s`` for it
(one sleep a batch), one process, one CPU thread. The work between sleeps is small, so
that a busy machine (which stretches CPU work by its load) changes the steps little; run it
at a higher priority on a shared machine (``nice -n -10``: the process sleeps most of the
time, the priority only makes it wake up on time), and with ``--max-load``.
The profiler (``activities=[CPU]``, ``schedule(wait=1, warmup=1, active=STEPS)``) records
STEPS steps. One unsaved run goes first: the first profiled loop of a process is slower
(lazy initialisation), which would make ``base`` differ from everything after it.

Each variant differs from ``base`` by one change. What ``tv.compare(base, variant)`` should
say was written down here (and is saved, as ``labels.json``) before any pair was compared:

``sleep``
    ``time.sleep(0.010)`` added to each step, outside any operator. Expected: the cause
    ``host: Python / other`` (host time with no operator and no data loading) grows by
    10 ms a step (within 5 %); verdict ``slower``.
``matmul``
    ``EXTRA_MM`` extra ``torch.mm`` of two 256x256 matrices per step, at top level.
    Expected: the cause ``operator aten::mm`` is ``new`` and grows by about what those
    products take alone (``expected_ns`` is measured here, timing them outside the
    profiler); verdict ``slower``.
``dataloader``
    The dataset sleeps 10 ms per batch instead of 2 ms: +8 ms a step. Expected: the cause
    ``data loading`` grows by about 8 ms a step (sleep granularity adds a little); verdict
    ``slower``.
``rerun_<i>``
    The base loop again, unchanged. Expected: verdict ``same`` (no false alarm).
``allreduce_base`` and ``allreduce``
    Two processes (a gloo group on 127.0.0.1), each step a 2 ms sleep and one
    ``dist.all_reduce`` of 256k floats; ``allreduce`` makes a second one per step. Expected
    (``allreduce`` against ``allreduce_base``): the cause ``exposed communication`` grows by
    what the extra all_reduce took on rank 0's wall clock (within 25 %); verdict ``slower``.

``labels.json`` keeps these expectations and, as ``measured_ns``, what the injected change
took on the wall clock while it was recorded (``perf_counter_ns`` around it, the mean over
the recorded steps; for ``dataloader`` the mean wait per batch minus ``base``'s): on a
loaded machine a 10 ms wait lasts longer than 10 ms, and the trace shows what it lasted.

Each trace is ``<variant>/<variant>.pt.trace.json.gz`` (gzipped; a few tens of kB).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "compare"
STEPS = 40
BATCH = 8
EXTRA_MM = 8
SLEEP_S = 0.010

#: What each variant should show against ``base`` (written before comparing; see the docstring).
LABELS: dict[str, dict[str, object]] = {
    "sleep": {
        "cause": "host: Python / other",
        "expected_ns": int(SLEEP_S * 1e9),
        "tolerance_pct": 5,
        "verdict": "slower",
    },
    "matmul": {"cause": "operator aten::mm", "status": "new", "tolerance_pct": 50, "verdict": "slower"},
    "dataloader": {"cause": "data loading", "expected_ns": 8_000_000, "tolerance_pct": 25, "verdict": "slower"},
}


def _loop(*, batch_sleep_s: float = 0.002, sleep_s: float = 0.0, extra_mm: int = 0, measured: list[int] | None = None):  # type: ignore[no-untyped-def]
    """The training loop as a function of the profiler (so every variant runs the same code).

    ``measured`` gets, per recorded step, the wall time (ns, ``perf_counter_ns``) of what the
    variant injects: the added wait, the extra products, or the data loader's waits.
    """
    measured = [] if measured is None else measured
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    torch.manual_seed(0)
    torch.set_num_threads(1)

    class Batches(Dataset):
        def __len__(self) -> int:
            return STEPS + 4

        def __getitem__(self, i: int):  # type: ignore[no-untyped-def]
            t = time.perf_counter_ns()
            time.sleep(batch_sleep_s)
            loader_ns.append(time.perf_counter_ns() - t)
            g = torch.Generator().manual_seed(i)
            return torch.randn(BATCH, 64, generator=g), torch.arange(BATCH) % 10

    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Batches(), batch_size=None, num_workers=0)
    loader_ns: list[int] = []
    a, b = torch.randn(256, 256), torch.randn(256, 256)

    def run(prof) -> None:  # type: ignore[no-untyped-def]
        for i, (x, y) in enumerate(loader):
            if i >= STEPS + 2:
                break
            t0 = time.perf_counter_ns()
            with torch.profiler.record_function("forward"):
                loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            t1 = time.perf_counter_ns()
            for _ in range(extra_mm):
                torch.mm(a, b)
            t2 = time.perf_counter_ns()
            if sleep_s:
                time.sleep(sleep_s)
            t3 = time.perf_counter_ns()
            if i >= 2:  # the recorded steps (schedule: wait=1, warmup=1)
                measured.append((t3 - t2) if sleep_s else (t2 - t1) if extra_mm else loader_ns[-1])
            del t0
            prof.step()

    return run


def _allreduce_worker(rank: int, out: str, extra: int, port: int, measured: Any) -> None:
    import os

    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.set_num_threads(1)
    t = torch.ones(1 << 18)
    target = Path(out)

    def ready(prof) -> None:  # type: ignore[no-untyped-def]
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(raw))
            with gzip.open(target / f"rank{rank}.pt.trace.json.gz", "wb", compresslevel=9) as f:
                f.write(raw.read_bytes())

    extra_ns = []
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=STEPS, repeat=1)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule, on_trace_ready=ready
    ) as prof:
        for i in range(STEPS + 2):
            time.sleep(0.002)
            dist.all_reduce(t)
            t0 = time.perf_counter_ns()
            if extra:
                dist.all_reduce(t)
            if i >= 2:
                extra_ns.append(time.perf_counter_ns() - t0)
            prof.step()
    dist.destroy_process_group()
    if rank == 0:
        measured.value = int(sum(extra_ns) / len(extra_ns))


def record_allreduce(variant: str, out: Path, *, extra: bool) -> int:
    """Record the two-process gloo loop; returns the mean wall time of the extra all_reduce (ns)."""
    import socket

    import torch.multiprocessing as mp

    target = out / variant
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    measured = mp.get_context("spawn").Value("q", 0)
    mp.spawn(_allreduce_worker, args=(str(target), int(extra), port, measured), nprocs=2)
    return int(measured.value)


def _allreduce_pair(out: Path) -> dict[str, object]:
    """Record ``allreduce_base`` and ``allreduce``; their label (written before comparing)."""
    record_allreduce("allreduce_base", out, extra=False)
    return {
        "base": "allreduce_base",
        "cause": "exposed communication",
        "tolerance_pct": 25,
        "verdict": "slower",
        "measured_ns": record_allreduce("allreduce", out, extra=True),
    }


def _mm_cost_ns() -> int:
    """What EXTRA_MM products of 256x256 matrices take alone (median of 20 timings), ns."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    times = []
    for _ in range(20):
        t = time.perf_counter_ns()
        for _ in range(EXTRA_MM):
            torch.mm(a, b)
        times.append(time.perf_counter_ns() - t)
    return int(sorted(times)[len(times) // 2])


def record(variant: str, out: Path, **change: float) -> int:
    """Record one variant; returns the mean measured wall time of what it injects (ns)."""
    import torch

    target = out / variant
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)

    def ready(prof) -> None:  # type: ignore[no-untyped-def]
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(raw))
            with gzip.open(target / f"{variant}.pt.trace.json.gz", "wb", compresslevel=9) as f:
                f.write(raw.read_bytes())

    measured: list[int] = []
    run = _loop(measured=measured, **change)  # type: ignore[arg-type]
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=STEPS, repeat=1)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule, on_trace_ready=ready
    ) as prof:
        run(prof)
    return int(sum(measured) / max(len(measured), 1))


def _wait_for_quiet(max_load: float, minutes: float) -> None:
    """Wait until the 1-minute load average is below ``max_load`` (a busy machine stretches the
    CPU work of one run and not the other's: pairs recorded then differ by more than their
    injected change)."""
    import os

    deadline = time.monotonic() + 60 * minutes
    while os.getloadavg()[0] >= max_load:
        if time.monotonic() > deadline:
            raise SystemExit(f"the load average stayed at or above {max_load} for {minutes:g} min; not recorded")
        time.sleep(10)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--max-load", type=float, default=None, help="first wait until the load average is below this")
    p.add_argument("--wait-minutes", type=float, default=30, help="how long to wait for that (default 30)")
    p.add_argument("--reruns", type=int, default=3, help="reruns of the base loop (rerun_0...)")
    p.add_argument("--only-reruns", action="store_true", help="record base and the reruns only")
    p.add_argument(
        "--only-allreduce", action="store_true", help="record the gloo pair only, adding its label to labels.json"
    )
    args = p.parse_args()
    if args.only_allreduce:
        args.out.mkdir(parents=True, exist_ok=True)
        meta_path = args.out / "labels.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {"steps": STEPS, "labels": {}}
        meta["labels"]["allreduce"] = _allreduce_pair(args.out)
        meta_path.write_text(json.dumps(meta, indent=1) + "\n")
        print(f"wrote {args.out}: allreduce_base, allreduce")
        return
    if args.max_load is not None:
        _wait_for_quiet(args.max_load, args.wait_minutes)
    args.out.mkdir(parents=True, exist_ok=True)
    record("warmup", args.out)  # unsaved: the first profiled loop of a process is slower
    shutil.rmtree(args.out / "warmup")
    loads: dict[str, float] = {}

    def record_noting_load(variant: str, **change: float) -> int:
        import os

        loads[variant] = round(os.getloadavg()[0], 2)  # the machine's 1-minute load, as it starts
        return record(variant, args.out, **change)

    base_loader_ns = record_noting_load("base")
    labels = {k: dict(v) for k, v in LABELS.items()}
    if not args.only_reruns:
        labels["matmul"]["expected_ns"] = _mm_cost_ns()
        labels["sleep"]["measured_ns"] = record_noting_load("sleep", sleep_s=SLEEP_S)
        labels["matmul"]["measured_ns"] = record_noting_load("matmul", extra_mm=EXTRA_MM)
        labels["dataloader"]["measured_ns"] = record_noting_load("dataloader", batch_sleep_s=0.010) - base_loader_ns
    if not args.only_reruns:
        labels["allreduce"] = _allreduce_pair(args.out)
    for i in range(args.reruns):
        record_noting_load(f"rerun_{i}")
        labels[f"rerun_{i}"] = {"verdict": "same"}
    import torch

    meta = {"torch": torch.__version__, "steps": STEPS, "labels": labels, "load_average": loads}
    (args.out / "labels.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {args.out}: {', '.join(sorted(labels))} and base")


if __name__ == "__main__":
    main()
