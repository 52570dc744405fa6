"""Record the small CUDA traces in ``tests/data/h200_cuda/`` on a machine with an NVIDIA GPU.

Each trace is written by the product's own :class:`ProfileSession` (what ``%%traceprofile``
runs), gzipped as ``<name>/<name>.pt.trace.json.gz`` (one folder per job, so that each
loads as its own one-rank run). Beside the traces, ``facts.json`` holds what
was measured independently of the profiler on the same machine: the device, and the time
of each matrix product from CUDA events (mean of 20 after 3 warm-ups); and
``<name>.key_averages.json.gz`` (beside the folder: a trace folder holds traces only) what ``prof.key_averages()`` said for the same steps, per
operator name, with device times (microseconds, as torch reports them).

    python scripts/record_cuda_traces.py OUT_DIR
    python scripts/record_cuda_traces.py OUT_DIR --big 40   # only the training step, 40 steps

The second writes ``train_big/train_big.pt.trace.json.gz`` alone (and the matrix products): a real trace of tens of MB for the
load benchmarks (``benchmarks/README.md``), too big for ``tests/data``.
Needs ``torch`` with CUDA and ``isal`` (the gzip writer the recorder uses).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from jupyter_traceview.notebook.recording import ProfileOptions, ProfileSession


def cuda_ms(fn: Any, n: int = 20) -> float:
    """Mean time of ``fn`` on the GPU in milliseconds, from CUDA events."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end) / n)


def averages(prof: Any) -> list[dict[str, Any]]:
    return [
        {
            "name": e.key,
            "count": int(e.count),
            "self_cpu_time_total_us": float(e.self_cpu_time_total),
            "cpu_time_total_us": float(e.cpu_time_total),
            "self_device_time_total_us": float(e.self_device_time_total),
            "device_time_total_us": float(e.device_time_total),
        }
        for e in prof.key_averages()
    ]


def record(name: str, fn: Any, out: Path, work: Path, **opts: Any) -> None:
    session = ProfileSession(ProfileOptions(out=work, name=name, **opts))
    session.start()
    prof = session._prof
    try:
        for k in range(session.total_runs):
            fn()
            torch.cuda.synchronize()
            session.run_completed(k)
    except BaseException as exc:
        session.finish(exc)
        raise
    outcome = session.finish(None)
    assert outcome.trace_file is not None
    (out / name).mkdir(parents=True, exist_ok=True)
    shutil.copy(outcome.trace_file, out / name / f"{name}.pt.trace.json.gz")
    with gzip.open(out / f"{name}.key_averages.json.gz", "wt") as fh:
        json.dump(averages(prof), fh, indent=0)
    print(name, outcome.status, outcome.trace_file.stat().st_size, flush=True)


def main(out: Path, big: int = 0) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    props = torch.cuda.get_device_properties(0)
    facts: dict[str, Any] = {"torch": torch.__version__, "name": props.name, "sms": props.multi_processor_count}

    # 1) matrix products of known FLOPs (TF32 off: fp32 runs on the fp32 units)
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.randn(4096, 4096, device="cuda", dtype=torch.float32)
    d = torch.randn(4096, 4096, device="cuda", dtype=torch.float32)
    x = torch.randn(64, 1024, 512, device="cuda", dtype=torch.float16)
    y = torch.randn(64, 512, 256, device="cuda", dtype=torch.float16)
    facts["mm_bf16_8192_ms"] = cuda_ms(lambda: torch.mm(a, b))
    facts["mm_fp32_4096_ms"] = cuda_ms(lambda: torch.mm(c, d))
    facts["bmm_fp16_64x1024x512x256_ms"] = cuda_ms(lambda: torch.bmm(x, y))

    def mats() -> None:
        for _ in range(3):
            torch.mm(a, b)
        torch.mm(c, d)
        torch.bmm(x, y)

    record("matmul", mats, out, work, repeat=3, warmup=1, record_shapes=True, memory=True)

    # 2) a small transformer's training step in bf16 autocast, with AdamW
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, dropout=0.0)
    model = torch.nn.Sequential(
        torch.nn.Embedding(32000, 512), torch.nn.TransformerEncoder(layer, 4), torch.nn.Linear(512, 32000)
    ).cuda()
    facts["train_params"] = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tok = torch.randint(0, 32000, (16, 256), device="cuda")

    def train() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tok)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, 32000).float(), tok.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()

    if big:
        record("train_big", train, out, work, repeat=big, warmup=1, record_shapes=True, memory=True, with_stack=True)
        return
    facts["train_step_ms"] = cuda_ms(train, n=5)
    torch.cuda.reset_peak_memory_stats()
    train()
    torch.cuda.synchronize()
    facts["train_max_allocated"] = torch.cuda.max_memory_allocated()
    facts["train_allocated_after_step"] = torch.cuda.memory_allocated()
    record("train", train, out, work, repeat=3, warmup=1, record_shapes=True, memory=True, with_stack=True)

    # 3) torch.compile: Triton kernels next to an extern matrix product
    mlp = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
    compiled = torch.compile(mlp)
    inp = torch.randn(4096, 1024, device="cuda")
    t = time.time()
    compiled(inp).sum().backward()
    facts["compile_s"] = round(time.time() - t, 1)
    record("compiled", lambda: compiled(inp).sum().backward(), out, work, repeat=2, warmup=1, record_shapes=True)

    (out / "facts.json").write_text(json.dumps(facts, indent=1) + "\n")
    print(json.dumps(facts, indent=1))


if __name__ == "__main__":
    args = sys.argv[1:]
    n_big = int(args[args.index("--big") + 1]) if "--big" in args else 0
    main(Path(args[0] if args and args[0] != "--big" else "tests/data/h200_cuda"), n_big)
