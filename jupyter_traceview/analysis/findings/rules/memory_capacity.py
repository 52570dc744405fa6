"""``memory_near_capacity``: a device's reserved memory peaks near its capacity (``info``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...memory import device_label, memory_peaks
from ..advice import inference_ranks
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_bytes, fmt_pct, ranks_text
from ..thresholds import Thresholds


@dataclass(frozen=True)
class MemoryCapacityThresholds(Thresholds):
    """The thresholds of ``memory_near_capacity``."""

    #: A device is named when the caching allocator's reserved memory peaks at or above
    #: this share (%) of its memory (``deviceProperties`` ``totalGlobalMem``).
    memory_capacity_min_pct: float = 90.0


@rule(
    id="memory_near_capacity",
    order=200,
    thresholds=MemoryCapacityThresholds,
    text="The allocator's reserved memory on a GPU peaks at >= {memory_capacity_min_pct}% of the device's "
    "memory (deviceProperties totalGlobalMem); a larger batch or a longer sequence would run out of memory "
    "(no time at stake: info).",
    analyses="tv.memory_peaks, tv.memory_peak_holders, tv.memory_timeline",
)
def memory_near_capacity(ctx: Context, r: MemoryCapacityThresholds) -> list[Finding]:
    peaks = ctx.call(memory_peaks, "memory_peaks_rank", per="rank")
    near = peaks.loc[peaks["capacity_pct"] >= r.memory_capacity_min_pct]
    if near.empty:
        return []
    worst = near.sort_values("capacity_pct", ascending=False, kind="stable").iloc[0]
    dev = device_label(str(worst["device_type"]), int(worst["device"]))
    detail = (
        f"On rank {int(worst['rank'])}, {dev} the caching allocator reserved up to "
        f"{fmt_bytes(int(worst['peak_reserved_bytes']))}, {fmt_pct(float(worst['capacity_pct']))} of the device's "
        f"{fmt_bytes(int(worst['capacity_bytes']))}; allocated memory peaked at "
        f"{fmt_bytes(int(worst['peak_allocated_bytes']))} in {worst['operator']} (held most by {worst['top_holder']})"
        + (f"; {len(near)} rank/device pairs are this close" if len(near) > 1 else "")
        + (
            ". Little headroom is left: activation checkpointing, a smaller micro-batch, mixed precision or "
            "sharding the optimizer state (ZeRO/FSDP) would free memory."
            if not inference_ranks(ctx, [int(worst["rank"])])
            else ". Little headroom is left. In inference this is often the KV cache, pre-allocated on purpose to a "
            "share of the memory (vLLM gpu_memory_utilization, SGLang mem_fraction_static): check that the cache "
            "is what holds it; to free memory lower that share, the maximum batch (concurrent sequences) or the "
            "maximum sequence length, or quantise the weights or the KV cache."
        )
    )
    title = (
        f"Memory near capacity: {fmt_pct(float(worst['capacity_pct']))} of {dev} reserved on rank {int(worst['rank'])}"
    )
    return [
        ctx.finding(
            "memory_near_capacity",
            title=title,
            detail=detail,
            time_at_stake_ns=0,
            ranks=near["rank"].tolist(),
            evidence={
                "devices": [
                    {
                        "rank": int(x["rank"]),
                        "device": device_label(str(x["device_type"]), int(x["device"])),
                        "peak_reserved_bytes": int(x["peak_reserved_bytes"]),
                        "peak_allocated_bytes": int(x["peak_allocated_bytes"]),
                        "capacity_bytes": int(x["capacity_bytes"]),
                        "capacity_pct": float(x["capacity_pct"]),
                    }
                    for _, x in near.iterrows()
                ],
                "ranks_text": ranks_text(near["rank"].tolist()),
            },
            info=True,
        )
    ]
