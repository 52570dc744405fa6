"""Multi-rank Kineto traces built in code, with answers known by construction.

A job is, per rank, a list of GPU activities (:class:`Gpu`) and ProfilerStep spans. The
builder adds what the profiler would record around them: a ``cudaLaunchKernel`` (or
``cudaMemcpyAsync``) call per activity at the start of the step that launches it, and
for collectives their metadata, on the kernel itself (recent PyTorch), on an enclosing
``record_param_comms`` operator, or on an enclosing ``nccl:<collective>`` annotation
(older PyTorch). Times are in microseconds, as Kineto writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jupyter_traceview as tv
from tests import kineto_builder as kb

COMPUTE_STREAM = 7
COMM_STREAM = 20
COPY_STREAM = 24


@dataclass(frozen=True)
class Gpu:
    """One GPU activity of a rank."""

    name: str
    ts: float
    dur: float
    stream: int = COMPUTE_STREAM
    kind: str = "kernel"  # kernel, memcpy, memset
    collective: str | None = None  # e.g. "allreduce": makes it a collective with metadata
    in_nelems: int = -1
    out_nelems: int = -1
    dtype: str = "Float"
    group_size: int | None = None  # default: the job's world size
    meta_on: str = "kernel"  # kernel, record_param_comms, annotation, none


def compute(ts: float, dur: float, name: str = "volta_sgemm_128x64_nn", **kw: Any) -> Gpu:
    return Gpu(name, ts, dur, **kw)


def allreduce(ts: float, dur: float, nelems: int = 1 << 20, **kw: Any) -> Gpu:
    kw.setdefault("stream", COMM_STREAM)
    return Gpu(
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
        ts,
        dur,
        collective="allreduce",
        in_nelems=nelems,
        out_nelems=nelems,
        **kw,
    )


_ANNOTATION_NAMES = {
    "allreduce": "nccl:all_reduce",
    "allgather": "nccl:_all_gather_base",
    "reduce_scatter": "nccl:_reduce_scatter_base",
    "all_to_all": "nccl:all_to_all",
    "broadcast": "nccl:broadcast",
    "send": "nccl:send",
    "recv": "nccl:recv",
}


def rank_events(
    rank: int, world: int, gpu: Sequence[Gpu], steps: Sequence[tuple[int, float, float]]
) -> list[dict[str, Any]]:
    """The trace events of one rank: steps, launches, metadata ops and GPU activities."""
    events: list[dict[str, Any]] = [kb.step(n, ts, dur) for n, ts, dur in steps]
    per_step: dict[int, int] = {}
    outside = 0
    for i, g in enumerate(sorted(gpu, key=lambda g: g.ts)):
        corr = 1000 + i
        home = [s for s in steps if s[1] <= g.ts < s[1] + s[2]]
        if home:
            n, s_ts, _ = home[-1]
            j = per_step.get(n, 0)
            per_step[n] = j + 1
            launch_ts = s_ts + 0.5 + 0.01 * j  # every launch at the start of its step, in order
        else:
            outside += 1
            launch_ts = g.ts - 1.0 + 0.001 * outside
        rt = (
            "cudaMemcpyAsync" if g.kind == "memcpy" else "cudaMemsetAsync" if g.kind == "memset" else "cudaLaunchKernel"
        )
        events.append(kb.runtime(rt, launch_ts, 0.002, corr=corr))
        meta: dict[str, Any] = {}
        if g.collective is not None and g.meta_on != "none":
            meta = {
                "Collective name": g.collective,
                "dtype": g.dtype,
                "In msg nelems": g.in_nelems,
                "Out msg nelems": g.out_nelems,
                "Group size": g.group_size if g.group_size is not None else world,
            }
            if g.meta_on == "record_param_comms":
                events.append(kb.cpu_op("record_param_comms", launch_ts - 0.001, 0.004, **meta))
            elif g.meta_on == "annotation":
                dims = [[g.in_nelems]] if g.in_nelems >= 0 else [[]]
                events.append(
                    kb.annotation(
                        _ANNOTATION_NAMES[g.collective],
                        launch_ts - 0.001,
                        0.004,
                        **{"Input Dims": dims, "Input type": [g.dtype]},
                    )
                )
        if g.kind == "memcpy":
            events.append(kb.memcpy(g.ts, g.dur, corr=corr, stream=g.stream, device=rank))
        elif g.kind == "memset":
            events.append(kb.memset(g.ts, g.dur, corr=corr, stream=g.stream, device=rank))
        else:
            kernel_args = meta if g.meta_on == "kernel" else {}
            events.append(kb.kernel(g.name, g.ts, g.dur, corr=corr, stream=g.stream, device=rank, **kernel_args))
    return events


def write_job(
    folder: Path,
    ranks: Mapping[int, Sequence[Gpu]],
    steps: Mapping[int, Sequence[tuple[int, float, float]]] | Sequence[tuple[int, float, float]] = (),
    *,
    world_size: int | None = None,
) -> Path:
    """Write one trace file per rank into ``folder`` (steps: one list for all, or per rank)."""
    world = world_size if world_size is not None else len(ranks)
    for r, gpu in ranks.items():
        st = steps.get(r, ()) if isinstance(steps, Mapping) else steps
        doc = kb.doc(rank_events(r, world, gpu, st), rank=r, world_size=world)
        doc["deviceProperties"] = [{"id": r, "name": "Test GPU", "numSms": 80}]
        kb.write(folder / f"rank{r}.json", doc)
    return folder


def load_job(folder: Path, ranks: Mapping[int, Sequence[Gpu]], steps: Any = (), **kw: Any) -> tv.Trace:
    return tv.load(write_job(folder, ranks, steps, **kw), cache=False)


def straggler_job(
    *,
    ranks: int = 8,
    slow_rank: int = 5,
    slowdown: float = 1.2,
    steps: int = 3,
    kernels: int = 4,
    kernel_us: float = 100,
) -> tuple[dict[int, list[Gpu]], list[tuple[int, float, float]]]:
    """Data-parallel steps: compute, then an all-reduce that ends together on every rank.

    Rank ``slow_rank`` computes ``slowdown`` times slower; the others wait for it in the
    all-reduce (which starts on each rank when its compute is done and ends 50 us after
    the slowest rank's compute). Per step: compute ``kernels * kernel_us`` (times
    ``slowdown`` on the slow rank), and nothing else.
    """
    step_us = 1000.0
    out: dict[int, list[Gpu]] = {r: [] for r in range(ranks)}
    spans = [(s, s * step_us, step_us) for s in range(steps)]
    for s in range(steps):
        t0 = s * step_us + 10
        slowest_end = t0 + kernels * kernel_us * slowdown
        for r in range(ranks):
            k = kernel_us * (slowdown if r == slow_rank else 1.0)
            for i in range(kernels):
                out[r].append(compute(t0 + i * k, k))
            comp_end = t0 + kernels * k
            out[r].append(allreduce(comp_end, slowest_end + 50 - comp_end))
    return out, spans
