"""``memory_leak``: allocated memory at step end grows from iteration to iteration (``info``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...memory import device_label, memory_allocator_stats
from ..advice import inference_ranks
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_bytes
from ..thresholds import Thresholds


@dataclass(frozen=True)
class MemoryLeakThresholds(Thresholds):
    """The thresholds of ``memory_leak``."""

    #: Needs at least this many ProfilerSteps with memory records on a device ...
    memory_leak_min_steps: int = 3
    #: ... allocated memory at every step end above the previous step's, growing by at
    #: least this many bytes from the first step end to the last.
    memory_leak_min_bytes: int = 2**20


@rule(
    id="memory_leak",
    order=220,
    thresholds=MemoryLeakThresholds,
    text="With >= {memory_leak_min_steps} ProfilerSteps, allocated memory at the end of every step is higher "
    "than at the end of the one before, by >= {memory_leak_min_bytes} bytes in all "
    "(tv.memory_allocator_stats end_allocated_bytes; no time at stake: info).",
    analyses="tv.memory_allocator_stats, tv.memory_allocations (unfreed), tv.memory_by_operator",
)
def memory_leak(ctx: Context, r: MemoryLeakThresholds) -> list[Finding]:
    st = ctx.call(memory_allocator_stats, "memory_allocator_step")
    st = st.loc[st["step"] >= 0]
    leaks: list[dict[str, Any]] = []
    for (rank, dtype, dev), g in st.groupby(["rank", "device_type", "device"], observed=True, sort=True):
        g = g.sort_values("step")
        end = g["end_allocated_bytes"].to_numpy()
        if len(end) < r.memory_leak_min_steps:
            continue
        growth = int(end[-1] - end[0])
        if (np.diff(end) > 0).all() and growth >= r.memory_leak_min_bytes:
            leaks.append(
                {
                    "rank": int(rank),
                    "device": device_label(str(dtype), int(dev)),
                    "steps": [int(s) for s in g["step"]],
                    "end_allocated_bytes": [int(x) for x in end],
                    "growth_bytes": growth,
                    "growth_per_step_bytes": growth // (len(end) - 1),
                }
            )
    if not leaks:
        return []
    worst = max(leaks, key=lambda x: (x["growth_bytes"], -x["rank"]))
    detail = (
        f"On rank {worst['rank']}, {worst['device']} allocated memory at the end of steps "
        f"{worst['steps'][0]}-{worst['steps'][-1]} grew at every step, by {fmt_bytes(worst['growth_bytes'])} in all "
        f"(about {fmt_bytes(worst['growth_per_step_bytes'])} per step)"
        + (f"; {len(leaks)} rank/device pairs grow so" if len(leaks) > 1 else "")
        + (
            ". Memory kept alive across steps (a list of losses or outputs that still hold the graph, "
            "a cache that never evicts) ends in an out-of-memory error; tv.memory_allocations lists the "
            "allocations never freed and the operators that made them (use loss.item() or .detach())."
            if not inference_ranks(ctx, [worst["rank"]])
            else ". Memory kept alive across requests (KV-cache blocks or request state never released, outputs "
            "kept with their tensors, a cache that never evicts) ends in an out-of-memory error; "
            "tv.memory_allocations lists the allocations never freed and the operators that made them."
        )
    )
    title = f"Memory leak: allocated memory grows {fmt_bytes(worst['growth_per_step_bytes'])} per step on rank {worst['rank']}, {worst['device']}"
    return [
        ctx.finding(
            "memory_leak",
            title=title,
            detail=detail,
            time_at_stake_ns=0,
            ranks=[x["rank"] for x in leaks],
            evidence={"devices": leaks},
            info=True,
        )
    ]
