"""Record the before/after pairs of ``tests/data/whatif/``: one training step, one known fix each.

Run with the CPU build of PyTorch (``pip install torch==2.13.0``)::

    chrt -f 10 python scripts/record_whatif/record.py                # every pair, into tests/data/whatif/
    chrt -f 10 python scripts/record_whatif/record.py --only sleep   # one pair
    chrt -f 10 python scripts/record_whatif/record.py --out /tmp/wi  # elsewhere (the benchmark reads --data)

Each pair is two runs of the same loop (:func:`_loop`, configured by a dict) that differ by
one fix an engineer would make: ``before`` has the problem, ``after`` has it fixed. The
loop: a small MLP (``Linear(W, W) -> ReLU`` x 2 ``-> Linear(W, 10)``) trained with SGD,
one process, one intra-op thread, seeds fixed (``torch.manual_seed(0)``, per-batch
generators), profiled with ``activities=[CPU]`` and ``schedule(wait=1, warmup=1,
active=STEPS)``. One unsaved run goes first (the first profiled loop of a process is slower).

``PAIRS`` says, per pair, what differs and which :mod:`tv.changes <jupyter_traceview.analysis.whatif>`
an expert would apply to ``before`` to predict ``after``. That was written here before any
what-if ran, and is saved with the pair as ``labels.json`` together with the measured saving:
the median ProfilerStep of ``before`` minus that of ``after`` (``tv.load(...).iterations``).

On a shared machine, record at a real-time priority (``chrt -f 10 python
scripts/record_whatif/record.py``, as root): under the default scheduler a busy machine takes
the core away mid-step for milliseconds at a time, and that time lands inside whatever
operator was running (an ``aten::mm`` of 0.2 ms recorded at 20 ms), noise no what-if can
predict; ``labels.json`` says which policy recorded the pair (``scheduler``).

Against the run-to-run noise left, each side is recorded ``--repeats`` times
(default 5), ``before`` and ``after`` alternating, and the run kept for each side is the one
whose median step is the median of its runs (a representative run, not the fastest; the
lower middle one for an even count). ``labels.json`` keeps every run's median step, in
recording order (``runs_before_ns``, ``runs_after_ns``): ``before``'s run ``k`` and
``after``'s run ``k`` were recorded one after the other, and their difference is one
repeat's saving; the benchmark prints the smallest and largest as the measured spread.

Traces: ``<pair>/before.json.gz`` and ``<pair>/after.json.gz`` (gzipped, a few tens of kB).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "whatif"
STEPS = 20

#: name -> (what the fix is, before's config, after's config, the changes an expert would apply
#: to ``before``: ``{"name": <tv.changes class>, "args": {...}}``). Configs are keyword
#: arguments of :func:`_loop`; written before any what-if was run (see the docstring).
PAIRS: dict[str, dict[str, Any]] = {
    "sleep": {
        "fix": "a time.sleep(0.010) removed from the step (outside any operator)",
        "before": {"step_sleep_s": 0.010},
        "after": {},
        "changes": [{"name": "RemovePython", "args": {}}],
    },
    "python_loop": {
        "fix": "a pure-Python loop (about 8 ms of bytecode, no operator) removed from the step",
        "before": {"python_loop_n": 150_000},
        "after": {},
        "changes": [{"name": "RemovePython", "args": {}}],
    },
    "python_between_ops": {
        "fix": "Python bookkeeping between the layers of the forward pass removed (a list comprehension after each layer)",
        "before": {"between_ops_n": 25_000},
        "after": {},
        "changes": [{"name": "RemovePython", "args": {}}],
    },
    "item_per_step": {
        "fix": "per-step logging of 400 scalars with .item() removed (aten::item each, and the Python around it)",
        "before": {"items": 400},
        "after": {},
        "changes": [{"name": "RemoveSyncs", "args": {}}, {"name": "RemovePython", "args": {}}],
    },
    "numpy_roundtrip": {
        "fix": "a per-step host round trip removed: the output copied to NumPy, sorted there, and back",
        "before": {"numpy_n": 400_000},
        "after": {},
        "changes": [{"name": "RemovePython", "args": {}}],
    },
    "dataloader_workers": {
        "fix": "a DataLoader stall fixed with workers: the dataset takes 8 ms a batch; num_workers 0 -> 4",
        "before": {"loader": {"sleep_s": 0.008, "workers": 0}, "step_sleep_s": 0.004},
        "after": {"loader": {"sleep_s": 0.008, "workers": 4}, "step_sleep_s": 0.004},
        "changes": [{"name": "RemoveDataLoading", "args": {}}],
    },
    "slow_collate": {
        "fix": "a slow collate_fn (per-value Python conversion of each batch) replaced by the default collate",
        "before": {"loader": {"sleep_s": 0.0, "workers": 0, "collate": "slow"}},
        "after": {"loader": {"sleep_s": 0.0, "workers": 0}},
        "changes": [{"name": "RemoveDataLoading", "args": {}}],
    },
    "loader_hidden": {
        "fix": "data loading that workers already hide (3 ms a batch, 2 workers, 8 ms steps) replaced by in-memory batches: nothing to gain",
        "before": {"loader": {"sleep_s": 0.003, "workers": 2}, "step_sleep_s": 0.008},
        "after": {"step_sleep_s": 0.008},
        "changes": [{"name": "RemoveDataLoading", "args": {}}],
    },
    "loader_and_sleep": {
        "fix": "two fixes at once: a 6 ms-a-batch dataset moved to 4 workers and a 5 ms time.sleep removed",
        "before": {"loader": {"sleep_s": 0.006, "workers": 0}, "step_sleep_s": 0.005},
        "after": {"loader": {"sleep_s": 0.006, "workers": 4}},
        "changes": [{"name": "RemoveDataLoading", "args": {}}, {"name": "RemovePython", "args": {}}],
    },
    "matmul_size": {
        "fix": "four extra products of 512x512 matrices shrunk to 256x256 (8x fewer flops)",
        "before": {"mm_size": 512, "mm_count": 4},
        "after": {"mm_size": 256, "mm_count": 4},
        "changes": [{"name": "ScaleKernels", "args": {"pattern": "aten::mm", "factor": 0.125}}],
    },
    "batch_size": {
        "fix": "a wider MLP (1024) trained on batches of 256 instead of 64: every matrix product does 4x the work",
        "before": {"width": 1024, "batch": 256},
        "after": {"width": 1024, "batch": 64},
        "changes": [{"name": "ScaleKernels", "args": {"pattern": "aten::(addmm|mm)$", "factor": 0.25}}],
    },
    "redundant_op": {
        "fix": "a redundant operator removed: torch.cdist of two 2048x64 matrices whose result is never used",
        "before": {"cdist": 2048},
        "after": {},
        "changes": [{"name": "ScaleKernels", "args": {"pattern": "aten::cdist", "factor": 0.0}}],
    },
}


def _loop(
    *,
    width: int = 256,
    batch: int = 32,
    loader: dict[str, Any] | None = None,
    step_sleep_s: float = 0.0,
    python_loop_n: int = 0,
    between_ops_n: int = 0,
    items: int = 0,
    numpy_n: int = 0,
    mm_size: int = 0,
    mm_count: int = 0,
    cdist: int = 0,
):  # type: ignore[no-untyped-def]
    """The training loop as a function of the profiler (every variant runs this code)."""
    import numpy as np
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    torch.manual_seed(0)
    torch.set_num_threads(1)
    n_batches = STEPS + 3

    def make_batch(i: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(i)
        return torch.randn(batch, width, generator=g), torch.arange(batch) % 10

    class Batches(Dataset):  # type: ignore[type-arg]
        def __init__(self, sleep_s: float, as_lists: bool) -> None:
            self.sleep_s, self.as_lists = sleep_s, as_lists

        def __len__(self) -> int:
            return n_batches

        def __getitem__(self, i: int):  # type: ignore[no-untyped-def]
            if self.sleep_s:
                time.sleep(self.sleep_s)  # reading and decoding, say
            x, y = make_batch(i)
            return (x.tolist(), y.tolist()) if self.as_lists else (x, y)

    def slow_collate(item):  # type: ignore[no-untyped-def]
        rows, labels = item
        # Per-value conversion in Python, as hand-written collates do.
        x = torch.tensor([[float(v) for v in row] for row in rows])
        return x, torch.tensor([int(v) for v in labels])

    if loader is None:
        source: Any = [make_batch(i) for i in range(n_batches)]
    else:
        slow = loader.get("collate") == "slow"
        source = DataLoader(
            Batches(loader["sleep_s"], as_lists=slow),
            batch_size=None,
            num_workers=loader["workers"],
            collate_fn=slow_collate if slow else None,
            prefetch_factor=4 if loader["workers"] else None,
            persistent_workers=False,
        )
    layers = nn.ModuleList([nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, 10)])
    opt = torch.optim.SGD(layers.parameters(), lr=0.01)
    a = torch.randn(mm_size, mm_size) if mm_size else None
    c = torch.randn(cdist, 64) if cdist else None
    logged: list[float] = []

    def forward(x: torch.Tensor) -> torch.Tensor:
        for k, layer in enumerate(layers):
            x = layer(x)
            if k < len(layers) - 1:
                x = torch.relu(x)
            if between_ops_n:
                _ = [v * 2 for v in range(between_ops_n)]  # bookkeeping in Python
        return x

    def run(prof) -> None:  # type: ignore[no-untyped-def]
        for i, (x, y) in enumerate(source):
            if i >= STEPS + 2:
                break
            with torch.profiler.record_function("forward"):
                out = forward(x)
                loss = nn.functional.cross_entropy(out, y, reduction="none")
            opt.zero_grad()
            loss.mean().backward()
            opt.step()
            if a is not None:
                for _ in range(mm_count):
                    torch.mm(a, a)
            if c is not None:
                torch.cdist(c, c)
            if items:
                logged.extend(loss[j % batch].item() for j in range(items))
            if numpy_n:
                host = np.tile(out.detach().numpy().ravel(), numpy_n // out.numel() + 1)[:numpy_n]
                _ = torch.from_numpy(np.sort(host))
            if python_loop_n:
                _ = sum(j * j for j in range(python_loop_n))
            if step_sleep_s:
                time.sleep(step_sleep_s)
            prof.step()

    return run


def record(path: Path, config: dict[str, Any]) -> None:
    """Record one run of :func:`_loop` with ``config`` into ``path`` (gzipped Chrome trace)."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)

    def ready(prof) -> None:  # type: ignore[no-untyped-def]
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(raw))
            with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as f:
                f.write(raw.read_bytes())

    schedule = torch.profiler.schedule(wait=1, warmup=1, active=STEPS, repeat=1)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule, on_trace_ready=ready
    ) as prof:
        _loop(**config)(prof)


def median_step_ns(path: Path) -> int:
    """The median ProfilerStep duration of a trace (``tv.load(path).iterations``), ns."""
    sys.path.insert(0, str(ROOT))
    import jupyter_traceview as tv

    it = tv.load(path, cache=False).iterations
    return int(it["dur_ns"].median())


def _record_pair(target: Path, pair: dict[str, Any], repeats: int) -> tuple[int, int, dict[str, list[int]]]:
    """Record ``before`` and ``after`` ``repeats`` times each, alternating; keep for each side
    (``target/<side>.json.gz``) the run whose median step is the median of its runs (the lower
    middle one for an even count). Returns their median steps (ns), before and after, and
    every run's median step per side in recording order."""
    runs: dict[str, list[tuple[int, Path]]] = {"before": [], "after": []}
    out: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(repeats):
            for side in runs:
                run = Path(tmp) / f"{side}{k}.json.gz"
                record(run, pair[side])
                runs[side].append((median_step_ns(run), run))
        order = {side: [ns for ns, _ in got] for side, got in runs.items()}
        target.mkdir(parents=True, exist_ok=True)
        for side, got in runs.items():
            got.sort(key=lambda r: r[0])
            ns, keep = got[(len(got) - 1) // 2]
            shutil.copyfile(keep, target / f"{side}.json.gz")
            out.append(ns)
    return out[0], out[1], order


def _scheduler() -> str:
    """The recording process's scheduling policy (``SCHED_FIFO`` when run under ``chrt -f``)."""
    policy = os.sched_getscheduler(0)
    names = {
        getattr(os, n): n
        for n in ("SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE", "SCHED_FIFO", "SCHED_RR")
        if hasattr(os, n)
    }
    return names.get(policy, str(policy))


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--only", nargs="*", default=None, help="these pairs only (default: all)")
    p.add_argument("--repeats", type=int, default=5, help="runs per side; the median one is kept (default: 5)")
    args = p.parse_args()
    if args.repeats < 1:
        raise SystemExit(f"--repeats must be at least 1, got {args.repeats}")
    import torch

    names = args.only or list(PAIRS)
    unknown = sorted(set(names) - set(PAIRS))
    if unknown:
        raise SystemExit(f"unknown pair(s) {unknown}; known: {sorted(PAIRS)}")
    with tempfile.TemporaryDirectory() as tmp:  # unsaved: the first profiled loop is slower
        record(Path(tmp) / "warmup.json.gz", {})
    for name in names:
        pair = PAIRS[name]
        target = args.out / name
        if target.exists():
            shutil.rmtree(target)
        load = round(os.getloadavg()[0], 2)
        before_ns, after_ns, runs = _record_pair(target, pair, args.repeats)
        labels = {
            "fix": pair["fix"],
            "before": pair["before"],
            "after": pair["after"],
            "changes": pair["changes"],
            "median_step_before_ns": before_ns,
            "median_step_after_ns": after_ns,
            "measured_saving_ns": before_ns - after_ns,
            "steps": STEPS,
            "repeats": args.repeats,
            "torch": torch.__version__,
            "load_average": load,
            "scheduler": _scheduler(),
            "runs_before_ns": runs["before"],
            "runs_after_ns": runs["after"],
        }
        (target / "labels.json").write_text(json.dumps(labels, indent=1) + "\n")
        paired = [(b - a) / 1e6 for b, a in zip(runs["before"], runs["after"], strict=True)]
        print(
            f"{name:20s} before {before_ns / 1e6:8.2f} ms  after {after_ns / 1e6:8.2f} ms  "
            f"saving {(before_ns - after_ns) / 1e6:8.2f} ms  (repeats {min(paired):.2f} .. {max(paired):.2f} ms)",
            flush=True,
        )


if __name__ == "__main__":
    main()
