"""``memory_fragmentation``: much reserved memory is cached, not allocated, at the reserved peak (``info``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...memory import device_label, memory_allocator_stats
from ..advice import gpu_memory, inference_ranks
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_bytes, fmt_pct
from ..thresholds import Thresholds


@dataclass(frozen=True)
class MemoryFragmentationThresholds(Thresholds):
    """The thresholds of ``memory_fragmentation``."""

    #: A device is named when, at its reserved peak, at least this share (%) of the
    #: reserved memory is cached (reserved but not allocated) ...
    memory_fragmentation_min_pct: float = 30.0
    #: ... and the cache (reserved minus allocated) reaches at least this many bytes.
    memory_fragmentation_min_bytes: int = 256 * 2**20


@rule(
    id="memory_fragmentation",
    order=210,
    thresholds=MemoryFragmentationThresholds,
    text="At a device's reserved-memory peak, >= {memory_fragmentation_min_pct}% of the reserved memory is "
    "cached, not allocated, and the cache reaches >= {memory_fragmentation_min_bytes} bytes "
    "(tv.memory_allocator_stats fragmentation_pct, max_cached_bytes; no time at stake: info).",
    analyses="tv.memory_allocator_stats, tv.memory_timeline (cached_bytes)",
)
def memory_fragmentation(ctx: Context, r: MemoryFragmentationThresholds) -> list[Finding]:
    st = ctx.call(memory_allocator_stats, "memory_allocator_rank", per="rank")
    hit = st.loc[
        (st["fragmentation_pct"] >= r.memory_fragmentation_min_pct)
        & (st["max_cached_bytes"] >= r.memory_fragmentation_min_bytes)
    ]
    if hit.empty:
        return []
    worst = hit.sort_values("max_cached_bytes", ascending=False, kind="stable").iloc[0]
    dev = device_label(str(worst["device_type"]), int(worst["device"]))
    detail = (
        f"On rank {int(worst['rank'])}, {dev}, {fmt_pct(float(worst['fragmentation_pct']))} of the reserved memory "
        f"was cached (reserved by the caching allocator, not allocated) when reserved memory peaked; the cache "
        f"reached {fmt_bytes(int(worst['max_cached_bytes']))}. Blocks freed in sizes the next requests cannot reuse "
        "keep the reserve high: "
        + ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, " if gpu_memory(str(worst["device_type"])) else "")
        + "allocating the largest buffers first, or fewer distinct tensor sizes (padding, bucketing) reduce it"
        + (
            "."
            if not inference_ranks(ctx, [int(worst["rank"])])
            else "; in inference the varying batch sizes and sequence lengths make the varying sizes: bucket or "
            "pad them, or keep the KV cache in fixed-size blocks (a paged KV cache)."
        )
    )
    title = f"Memory fragmentation: {fmt_pct(float(worst['fragmentation_pct']))} of reserved memory cached on rank {int(worst['rank'])}, {dev}"
    return [
        ctx.finding(
            "memory_fragmentation",
            title=title,
            detail=detail,
            time_at_stake_ns=0,
            ranks=hit["rank"].tolist(),
            evidence={
                "devices": [
                    {
                        "rank": int(x["rank"]),
                        "device": device_label(str(x["device_type"]), int(x["device"])),
                        "fragmentation_pct": float(x["fragmentation_pct"]),
                        "max_cached_bytes": int(x["max_cached_bytes"]),
                        "end_reserved_bytes": int(x["end_reserved_bytes"]),
                    }
                    for _, x in hit.iterrows()
                ]
            },
            info=True,
        )
    ]
