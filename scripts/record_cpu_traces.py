"""Record the small CPU-only PyTorch traces of ``tests/data/torch_cpu/`` and their references.

Run in an environment with the CPU build of PyTorch (``pip install torch==2.13.0``)::

    python scripts/record_cpu_traces.py            # writes tests/data/torch_cpu/

Three traces of the same small training loop (a conv net on random images, read through a
``DataLoader`` whose dataset sleeps, a ``.item()`` per step), one per profiler setting:

* ``plain``: neither ``record_shapes`` nor ``with_stack``;
* ``shapes``: ``record_shapes=True``;
* ``stack``: ``record_shapes=True, with_stack=True`` (Python frames as ``python_function``).

Each trace is ``<variant>/<variant>.pt.trace.json.gz``, written by ``on_trace_ready`` for
the profiler's active steps; beside it ``<variant>.key_averages.json.gz`` holds what
``prof.key_averages()`` says for those same steps, per operator name: ``count``,
``self_cpu_time_total_us`` and ``cpu_time_total_us`` (and, when shapes were recorded, the
same per name and input shapes under ``by_shape``). The tests compare
``tv.cpu_op_breakdown`` with these numbers.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "torch_cpu"
VARIANTS = {
    "plain": {"record_shapes": False, "with_stack": False},
    "shapes": {"record_shapes": True, "with_stack": False},
    "stack": {"record_shapes": True, "with_stack": True},
}


def _averages(prof, *, by_shape: bool) -> list[dict]:
    rows = []
    for e in prof.key_averages(group_by_input_shape=by_shape):
        row = {
            "name": e.key,
            "count": int(e.count),
            "self_cpu_time_total_us": float(e.self_cpu_time_total),
            "cpu_time_total_us": float(e.cpu_time_total),
        }
        if by_shape:
            row["input_shapes"] = str(e.input_shapes)
        rows.append(row)
    return rows


def record(variant: str, out: Path, *, steps: int = 3) -> None:
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    torch.manual_seed(0)
    torch.set_num_threads(1)

    class SlowImages(Dataset):
        """Random 3x16x16 images and labels; each item takes 2 ms to "read" (a data-loading stall)."""

        def __len__(self) -> int:
            return 64

        def __getitem__(self, i: int):
            time.sleep(0.002)
            g = torch.Generator().manual_seed(i)
            return torch.randn(3, 16, 16, generator=g), i % 10

    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 8 * 8, 32),
        nn.ReLU(),
        nn.Linear(32, 10),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowImages(), batch_size=4, num_workers=0)
    target = out / variant
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    result: dict = {}

    def ready(prof) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(raw))
            with gzip.open(target / f"{variant}.pt.trace.json.gz", "wb", compresslevel=9) as f:
                f.write(raw.read_bytes())
        result["by_name"] = _averages(prof, by_shape=False)
        if VARIANTS[variant]["record_shapes"]:
            result["by_shape"] = _averages(prof, by_shape=True)

    schedule = torch.profiler.schedule(wait=1, warmup=1, active=steps, repeat=1)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=schedule,
        on_trace_ready=ready,
        **VARIANTS[variant],
    ) as prof:
        for i, (x, y) in enumerate(loader):
            if i >= steps + 2:
                break
            with torch.profiler.record_function("forward"):
                loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss.item()  # a host sync on a GPU run: aten::item -> aten::_local_scalar_dense
            prof.step()
    meta = {
        "torch": torch.__version__,
        "variant": variant,
        "profiler": VARIANTS[variant],
        "active_steps": steps,
        "time_unit": "us",
        **result,
    }
    with gzip.open(target / f"{variant}.key_averages.json.gz", "wt", compresslevel=9) as f:
        f.write(json.dumps(meta, indent=1) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    args = p.parse_args()
    for v in args.variants:
        record(v, args.out)
        print(f"wrote {args.out / v}")


if __name__ == "__main__":
    main()
