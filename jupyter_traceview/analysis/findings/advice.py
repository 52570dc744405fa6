"""Advice conditioned on the workload (:meth:`.context.Context.workloads`), one wording per case,
so that every rule says it the same way (``docs/semantics.md (workload)``)."""

from __future__ import annotations

from collections.abc import Iterable

from .context import Context
from .text import ranks_text

__all__ = ["capture_ranks", "graphs_note", "inference_ranks", "replay_ranks"]


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
