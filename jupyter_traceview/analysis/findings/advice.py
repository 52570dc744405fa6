"""Advice conditioned on the workload (:meth:`.context.Context.workloads`), one wording per case,
so that every rule says it the same way (``docs/semantics.md (workload)``)."""

from __future__ import annotations

from collections.abc import Iterable

from .context import Context
from .text import ranks_text

__all__ = [
    "capture_ranks",
    "cpu_only_ranks",
    "gpu_memory",
    "graphs_note",
    "inference_ranks",
    "overlap_remedy",
    "replay_ranks",
]


def capture_ranks(ctx: Context, ranks: Iterable[int]) -> list[int]:
    """The ranks among ``ranks`` that capture CUDA/HIP graphs in this trace."""
    return sorted(int(k) for k in ranks if int(k) in ctx.workloads() and ctx.workload(k).graph_capture)


def replay_ranks(ctx: Context, ranks: Iterable[int]) -> list[int]:
    """The ranks among ``ranks`` that replay graphs and capture none in this trace."""
    return sorted(
        int(k)
        for k in ranks
        if int(k) in ctx.workloads() and ctx.workload(k).graph_replay and not ctx.workload(k).graph_capture
    )


def inference_ranks(ctx: Context, ranks: Iterable[int]) -> list[int]:
    """The ranks among ``ranks`` that run GPU work without backward or optimizer."""
    return sorted(int(k) for k in ranks if int(k) in ctx.workloads() and ctx.workload(k).inference)


def cpu_only_ranks(ctx: Context, ranks: Iterable[int]) -> list[int]:
    """The ranks among ``ranks`` that run no GPU work: GPU remedies (CUDA graphs, pinned memory,
    ``non_blocking`` copies, the CUDA allocator's settings) do not apply there.

    That is the workload ``cpu_only``, and also ``data_loading_bound`` on a rank without GPU
    work (the verdicts' precedence names the data loading first; such a rank is still CPU-only).
    """
    return sorted(
        int(k)
        for k in ranks
        if int(k) in ctx.workloads()
        and (
            ctx.workload(k).workload == "cpu_only"
            or (ctx.workload(k).workload == "data_loading_bound" and int(k) not in ctx.gpu_ranks)
        )
    )


def gpu_memory(device_type: str) -> bool:
    """Whether a memory device (``tv.memory_*``'s ``device_type``) is a GPU's: the CUDA/HIP caching
    allocator's settings (``PYTORCH_CUDA_ALLOC_CONF``) apply to it, not to host memory (``CPU``)."""
    return str(device_type).lower() not in ("cpu", "")


def graphs_note(ctx: Context, ranks: Iterable[int]) -> str | None:
    """What to say instead of "try CUDA graphs" where graphs are captured or replayed already
    (None where no named rank uses them)."""
    ranks = list(ranks)
    cap, rep = capture_ranks(ctx, ranks), replay_ranks(ctx, ranks)
    parts = []
    if cap:
        parts.append(
            f"{ranks_text(cap).capitalize()} capture{'s' if len(cap) == 1 else ''} CUDA/HIP graphs in this trace "
            "(stream capture and graph instantiation calls): this time belongs to the capture (recording, "
            "instantiation, warm-up runs), a one-off cost at start-up, not to steady-state steps; profile the "
            "replay to judge the steady state."
        )
    if rep:
        parts.append(
            f"{ranks_text(rep).capitalize()} already replay{'s' if len(rep) == 1 else ''} CUDA/HIP graphs "
            "(cudaGraphLaunch): the remaining gaps are host work between graph launches (input preparation, "
            "sampling, scheduling) or the parts of the step left out of the graphs (graph breaks); move that work "
            "off the loop or bring it into the graphs."
        )
    return " ".join(parts) if parts else None


def overlap_remedy(ctx: Context, ranks: Iterable[int]) -> str:
    """How to hide communication under compute, for the named ranks' workload.

    Training overlaps the gradients' collectives with backward (DDP buckets, FSDP prefetch).
    Where every named rank runs inference there are no gradients: the collectives are a
    tensor-parallel layer's all-reduce/all-gather or an expert-parallel dispatch/combine,
    overlapped with the neighbouring layer's compute instead.
    """
    ranks = list(ranks)
    if ranks and len(inference_ranks(ctx, ranks)) == len(ranks):
        return (
            "In inference there are no gradients to bucket: overlap each layer's collective with "
            "independent compute (the next micro-batch or the shared expert while an expert-parallel "
            "dispatch/combine runs; GEMM and collective split into chunks or fused kernels for tensor "
            "parallelism), issue it asynchronously on its own stream, and wait just before the result is needed."
        )
    return (
        "DDP gradient bucketing (bucket_cap_mb) so all-reduces start during backward, FSDP prefetching, "
        "async collectives (async_op=True) waited on just before their result is needed, and communication "
        "on its own stream."
    )
