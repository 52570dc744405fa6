"""Record the CPU-only scenarios of the diagnosis benchmark (``benchmarks/diagnosis/scenarios/``).

Run with a CPU build of PyTorch (recorded with ``torch 2.13.0+cpu``)::

    python scripts/record_diagnosis/record_cpu.py              # every CPU scenario
    python scripts/record_diagnosis/record_cpu.py --only cpu_sleep_in_step

Each scenario is a small loop with ONE cause injected (a slow ``__getitem__``, a sleep, a
pure-Python loop, many tiny operators, ...), profiled for a few ``ProfilerStep`` iterations
(``schedule(wait=1, warmup=1, active=3)``) with the CPU activity only. It writes
``<scenario>/<scenario>.pt.trace.json.gz`` and, beside it, ``facts.json``: what the recording
script measured with ``time.perf_counter`` around the injected cause during the active steps
(the ground truth the labels in ``expected.toml`` are written from, never the product's
output). ``torch.set_num_threads(1)`` keeps operators on the main thread.

A CPU trace cannot show GPU copies, GPU idle time or host-GPU syncs: ``.item()`` on a CPU
tensor does not wait for anything, and ``pin_memory`` needs a GPU. The scenarios that mimic
those GPU patterns on CPU check that the product does not invent the GPU cause.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "diagnosis" / "scenarios"
WAIT, WARMUP, ACTIVE = 1, 1, 3


class Clock:
    """Sums the wall time of the injected cause over the profiler's active steps."""

    def __init__(self) -> None:
        self.active = False
        self.totals: dict[str, float] = {}

    def add(self, key: str, seconds: float) -> None:
        if self.active:
            self.totals[key] = self.totals.get(key, 0.0) + seconds


def _record(
    name: str,
    out: Path,
    step: Callable[[int, Clock], None],
    *,
    with_stack: bool = False,
    extra: dict[str, Any] | None = None,
) -> None:
    import torch

    target = out / name
    target.mkdir(parents=True, exist_ok=True)  # its expected.toml (the labels) stays
    for old in target.glob("*.json.gz"):
        old.unlink()
    clock = Clock()

    def ready(prof: Any) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(raw))
            with gzip.open(target / f"{name}.pt.trace.json.gz", "wb", compresslevel=9) as f:
                f.write(raw.read_bytes())

    schedule = torch.profiler.schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1)
    walls = []
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=schedule,
        on_trace_ready=ready,
        record_shapes=True,
        with_stack=with_stack,
    ) as prof:
        for i in range(WAIT + WARMUP + ACTIVE):
            clock.active = i >= WAIT + WARMUP
            t0 = time.perf_counter()
            step(i, clock)
            if clock.active:
                walls.append(time.perf_counter() - t0)
            prof.step()
    facts = {
        "torch": torch.__version__,
        "active_steps": ACTIVE,
        "step_wall_ms": [round(w * 1e3, 3) for w in walls],
        "injected_ms": {k: round(v * 1e3, 3) for k, v in clock.totals.items()},
        **(extra or {}),
    }
    (target / "facts.json").write_text(json.dumps(facts, indent=1) + "\n")
    print(f"wrote {target}: {facts['injected_ms']} steps {facts['step_wall_ms']}")


def _mlp(width: int = 256) -> Any:
    from torch import nn

    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))


def _train_step(model: Any, opt: Any, x: Any, y: Any) -> Any:
    from torch import nn

    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def dataloader_stall(out: Path) -> None:
    """num_workers=0 and a __getitem__ that sleeps 10 ms: 80 ms of loading per batch of 8."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Slow(Dataset):
        def __len__(self) -> int:
            return 1000

        def __getitem__(self, i: int) -> Any:
            time.sleep(0.010)
            return torch.randn(256, generator=torch.Generator().manual_seed(i)), i % 10

    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    it = iter(DataLoader(Slow(), batch_size=8, num_workers=0))

    def step(i: int, clock: Clock) -> None:
        t0 = time.perf_counter()
        x, y = next(it)
        clock.add("dataloader_next", time.perf_counter() - t0)
        _train_step(model, opt, x, y)

    # The loop calls next() itself so that the profiler's step covers it, as
    # ``for x, y in loader`` does (the DataLoader records enumerate(DataLoader)#... ranges).
    _record("cpu_dataloader_stall", out, step)


def item_in_loop(out: Path) -> None:
    """A compute-bound training loop with loss.item() every step (no sync on a CPU)."""
    import torch

    model = _mlp(1024)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(256, 1024), torch.randint(0, 10, (256,))

    def step(i: int, clock: Clock) -> None:
        loss = _train_step(model, opt, x, y)
        t0 = time.perf_counter()
        loss.item()
        clock.add("item", time.perf_counter() - t0)

    _record("cpu_item_in_loop", out, step)


def python_overhead(out: Path) -> None:
    """A pure-Python loop (~40 ms: a metric computed in Python) between the operators of each step."""
    import torch

    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def step(i: int, clock: Clock) -> None:
        _train_step(model, opt, x, y)
        t0 = time.perf_counter()
        acc = 0.0
        while time.perf_counter() - t0 < 0.040:  # busy Python, no operator, no function call
            for j in range(20000):
                acc += j * 0.5
        clock.add("python_loop", time.perf_counter() - t0)

    _record("cpu_python_overhead", out, step, with_stack=True)


def tiny_ops(out: Path) -> None:
    """2,000 elementwise operators on 16-element tensors per step (dispatch cost dominates)."""
    import torch

    xs = [torch.randn(16) for _ in range(8)]

    def step(i: int, clock: Clock) -> None:
        t0 = time.perf_counter()
        acc = torch.zeros(16)
        for j in range(2000):
            acc = acc + xs[j % 8] * 0.5
        clock.add("tiny_ops_loop", time.perf_counter() - t0)

    _record("cpu_tiny_ops", out, step, extra={"ops_per_step": 4000})


def host_copies(out: Path) -> None:
    """Large host-to-host tensor copies (copy_/clone of 64 MiB) between small matmuls."""
    import torch

    src = torch.randn(16 * 1024 * 1024)  # 64 MiB
    dst = torch.empty_like(src)
    a = torch.randn(128, 128)

    def step(i: int, clock: Clock) -> None:
        t0 = time.perf_counter()
        for _ in range(4):
            dst.copy_(src)
            src.clone()
        clock.add("copies", time.perf_counter() - t0)
        a @ a

    _record("cpu_host_copies", out, step, extra={"bytes_per_step": 8 * 64 * 2**20})


def background_thread(out: Path) -> None:
    """A compute-bound training loop beside a tqdm-like monitor thread that waits in Event.wait."""
    import torch

    model = _mlp(1024)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(256, 1024), torch.randint(0, 10, (256,))
    stop = threading.Event()

    def monitor() -> None:  # what tqdm's TMonitor does: wake up now and then, mostly wait
        while not stop.wait(0.05):
            pass

    t = threading.Thread(target=monitor, name="monitor", daemon=True)
    t.start()

    def step(i: int, clock: Clock) -> None:
        _train_step(model, opt, x, y)

    try:
        _record("cpu_background_thread", out, step, with_stack=True)
    finally:
        stop.set()
        t.join()


def inference_serving(out: Path) -> None:
    """A torch.inference_mode serving loop: each step answers a batch of requests, no backward."""
    import torch

    model = _mlp(1024).eval()
    requests = [torch.randn(32, 1024) for _ in range(8)]

    def step(i: int, clock: Clock) -> None:
        with torch.inference_mode():
            for r in requests:
                model(r).argmax(dim=1)

    _record("cpu_inference_serving", out, step)


def sleep_in_step(out: Path) -> None:
    """time.sleep(50 ms) inside every training step (a rate limiter, a polling wait)."""
    import torch

    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def step(i: int, clock: Clock) -> None:
        _train_step(model, opt, x, y)
        t0 = time.perf_counter()
        time.sleep(0.050)
        clock.add("sleep", time.perf_counter() - t0)

    _record("cpu_sleep_in_step", out, step)


def train_vs_infer(out: Path) -> None:
    """The same MLP, once trained (forward, backward, Adam) and once run for inference."""
    import torch

    torch.manual_seed(0)
    model = _mlp(1024)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(256, 1024), torch.randint(0, 10, (256,))

    _record("cpu_mlp_train", out, lambda i, c: _train_step(model, opt, x, y))

    def infer(i: int, clock: Clock) -> None:
        with torch.no_grad():
            model(x)

    _record("cpu_mlp_infer", out, infer)


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "cpu_dataloader_stall": dataloader_stall,
    "cpu_item_in_loop": item_in_loop,
    "cpu_python_overhead": python_overhead,
    "cpu_tiny_ops": tiny_ops,
    "cpu_host_copies": host_copies,
    "cpu_background_thread": background_thread,
    "cpu_inference_serving": inference_serving,
    "cpu_sleep_in_step": sleep_in_step,
    "cpu_mlp_train_infer": train_vs_infer,
}


def main() -> None:
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--only", nargs="*", choices=list(SCENARIOS), default=list(SCENARIOS))
    args = p.parse_args()
    torch.set_num_threads(1)
    for name in args.only:
        torch.manual_seed(0)
        SCENARIOS[name](args.out)


if __name__ == "__main__":
    main()
