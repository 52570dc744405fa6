"""Record the small CPU memory-profiling traces of ``tests/data/cpu_memory/`` with CPU PyTorch.

    pip install torch==2.13.0
    python scripts/record_memory_traces.py            # writes tests/data/cpu_memory/<scenario>/rank-0.pt.trace.json.gz

Two scenarios, each a few ProfilerStep iterations recorded with ``profile_memory=True``
and ``record_shapes=True`` (CPU only, so ``[memory]`` records have device type CPU):

``mlp_train``
    A small MLP trained with Adam: forward, backward, optimizer step. Allocated memory
    rises within a step and returns to the same level at every step end.
``leak``
    The same loop, but every step keeps a 1 MiB tensor in a Python list: allocated memory
    at step end grows by 1 MiB per step (the leak rule's real example).

The traces are inputs of the memory analyses' tests, which check them against the raw
records (the analyses' answers are not stored). Re-running gives traces of the same shape,
not byte-identical ones (times and addresses differ).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "cpu_memory"


def record(name: str, *, leak: bool, steps: int, out: Path) -> Path:
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64)
    y = torch.randint(0, 10, (32,))
    kept: list[torch.Tensor] = []

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if leak:
            kept.append(torch.ones(256 * 1024))  # 1 MiB of float32, never released

    step()  # Adam's state is created in the first step: record the steady state after it
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.json"
        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=0, warmup=1, active=steps),
            profile_memory=True,
            record_shapes=True,
            on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
        ) as prof:
            for _ in range(steps + 1):
                step()
                prof.step()
        target = out / name / "rank-0.pt.trace.json.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        with path.open("rb") as src, gzip.open(target, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write the traces to")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, leak in (("mlp_train", False), ("leak", True)):
        path = record(name, leak=leak, steps=4, out=args.out)
        print(f"{path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
