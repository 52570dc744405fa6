"""``out_of_memory``: allocation requests the allocator could not satisfy (``info``)."""

from __future__ import annotations

from ...memory import device_label, memory_oom_events
from ..advice import gpu_memory, inference_ranks
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_bytes, ranks_text
from ..thresholds import Thresholds


@rule(
    id="out_of_memory",
    order=190,
    text="The trace holds [OutOfMemory] records: allocation requests the allocator could not satisfy "
    "(no time at stake: info).",
    analyses="tv.memory_oom_events, tv.memory_peak_holders, tv.memory_timeline",
)
def out_of_memory(ctx: Context, _: Thresholds) -> list[Finding]:
    ooms = ctx.call(memory_oom_events, "memory_ooms")
    if ooms.empty:
        return []
    first = ooms.sort_values("ts_ns", kind="stable").iloc[0]
    dev = device_label(str(first["device_type"]), int(first["device"]))
    detail = (
        f"{len(ooms)} allocation request{'s' if len(ooms) != 1 else ''} failed on {ranks_text(ooms['rank'].tolist())}. "
        f"The first: rank {int(first['rank'])}, {dev}, {first['operator']} asked for "
        f"{fmt_bytes(int(first['request_bytes']))} with {fmt_bytes(int(first['allocated_bytes']))} allocated and "
        f"{fmt_bytes(int(first['reserved_bytes']))} reserved"
        + (f" of {fmt_bytes(int(first['capacity_bytes']))}" if int(first["capacity_bytes"]) > 0 else "")
        + ". tv.memory_peak_holders shows what held memory then; "
        + (
            "reduce the batch, checkpoint activations"
            if not inference_ranks(ctx, [int(first["rank"])])
            else "reduce the batch (concurrent sequences), the maximum sequence length or the KV cache's share of "
            "memory"
        )
        + (
            ", or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True when fragmentation is the cause."
            if gpu_memory(str(first["device_type"]))
            else "."
        )
    )
    title = f"Out of memory: {len(ooms)} failed request{'s' if len(ooms) != 1 else ''}, first in {first['operator']} ({fmt_bytes(int(first['request_bytes']))})"
    return [
        ctx.finding(
            "out_of_memory",
            title=title,
            detail=detail,
            time_at_stake_ns=0,
            ranks=ooms["rank"].tolist(),
            evidence={
                "events": [
                    {
                        "rank": int(x["rank"]),
                        "device": device_label(str(x["device_type"]), int(x["device"])),
                        "operator": str(x["operator"]),
                        "request_bytes": int(x["request_bytes"]),
                        "allocated_bytes": int(x["allocated_bytes"]),
                        "reserved_bytes": int(x["reserved_bytes"]),
                        "ts_ns": int(x["ts_ns"]),
                    }
                    for _, x in ooms.head(20).iterrows()
                ],
                "count": len(ooms),
            },
            info=True,
        )
    ]
