"""``exposed_communication``: communication not hidden under compute (the exposed peer wait excluded)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...nccl import nccl_summary
from ..advice import overlap_remedy
from ..context import Context, Finding
from ..registry import rule
from ..text import amount, fmt_ns, fmt_pct, ranks_text
from ..thresholds import Thresholds


@dataclass(frozen=True)
class ExposedCommunicationThresholds(Thresholds):
    """The thresholds of ``exposed_communication``."""

    #: A rank is named when communication runs with no compute
    #: alongside, not counting its exposed peer wait (waiting for late ranks), for at least this
    #: share (%) of its GPU span.
    exposed_comm_min_pct: float = 10.0
    #: A collective's bus bandwidth below this fraction of the
    #: best bus bandwidth achieved in the trace is called low.
    low_busbw_ratio: float = 0.25


@rule(
    id="exposed_communication",
    order=20,
    thresholds=ExposedCommunicationThresholds,
    text="Communication running with no compute kernel alongside (comm_comp_overlap), less the "
    "exposed peer wait (the arrival wait for late ranks it holds: collective_wait's), >= {exposed_comm_min_pct}% of "
    "a rank's GPU span.",
    analyses="tv.comm_comp_overlap, tv.nccl_summary, tv.utilization_heatmap(kind='overlap')",
)
def exposed_communication(ctx: Context, r: ExposedCommunicationThresholds) -> list[Finding]:
    split = ctx.comm_split()
    named = [
        k for k, v in split.items() if 100.0 * v["exposed_transfer_ns"] / v["gpu_span_ns"] >= r.exposed_comm_min_pct
    ]
    named = [k for k in named if split[k]["exposed_transfer_ns"] > 0]
    if not named:
        _why_not(ctx, split, r.exposed_comm_min_pct)
        return []
    worst = max(named, key=lambda k: (split[k]["exposed_transfer_ns"], -k))
    w = split[worst]
    share = 100.0 * w["exposed_transfer_ns"] / w["gpu_span_ns"]
    nccl = ctx.call(nccl_summary, "nccl_job")
    top: list[dict[str, Any]] = []
    best = float(nccl["busbw_gbps"].max()) if len(nccl) and nccl["busbw_gbps"].notna().any() else math.nan
    for _, row in nccl.head(3).iterrows():
        top.append(
            {
                "collective": str(row["collective"]),
                "size_bucket": str(row["size_bucket"]),
                "group_size": int(row["group_size"]),
                "count": int(row["count"]),
                "total_ns": int(row["total_ns"]),
                "busbw_gbps": float(row["busbw_gbps"]),
            }
        )
    named_coll = "; ".join(
        f"{t['collective']} {t['size_bucket']} ({t['count']} calls, {fmt_ns(t['total_ns'])}"
        + (f", bus bandwidth {t['busbw_gbps']:.3g} GB/s" if t["busbw_gbps"] == t["busbw_gbps"] else "")
        + ")"
        for t in top
    )
    low = [
        t
        for t in top
        if t["busbw_gbps"] == t["busbw_gbps"]
        and best == best
        and best > 0
        and t["busbw_gbps"] < r.low_busbw_ratio * best
    ]
    bw_text = ""
    if low:
        bw_text = (
            f" {low[0]['collective']} {low[0]['size_bucket']} reaches {low[0]['busbw_gbps']:.3g} GB/s of bus bandwidth, "
            f"under {r.low_busbw_ratio:.0%} of the best achieved in this trace ({best:.3g} GB/s): small messages are "
            "latency-bound; fuse them into larger buckets."
        )
    waiting_text = ""
    if w["waiting_ns"]:
        waiting_text = f" (not counting {fmt_ns(w['waiting_ns'])} of exposed peer wait: waiting for late ranks)"
    detail = (
        f"On {ranks_text(named)} communication runs with no compute kernel alongside: "
        f"{amount(named, worst, fmt_ns(w['exposed_transfer_ns']))}{waiting_text}, {fmt_pct(share)} of its GPU span; "
        f"{fmt_pct(w['overlap_pct'])} of its communication time is hidden under compute. "
        + (f"Largest collectives: {named_coll}.{bw_text} " if top else "")
        + "Overlap it with compute: "
        + overlap_remedy(ctx, named)
    )
    title = (
        f"Exposed communication: {fmt_ns(w['exposed_transfer_ns'])} on rank {worst} ({fmt_pct(share)} of its GPU span)"
    )
    evidence = {
        "worst_rank": worst,
        "per_rank": [{"rank": k, **split[k]} for k in named],
        "top_collectives": top,
        "best_busbw_gbps": best,
    }
    return [
        ctx.finding(
            "exposed_communication",
            title=title,
            detail=detail,
            time_at_stake_ns=w["exposed_transfer_ns"],
            ranks=named,
            evidence=evidence,
        )
    ]


def _why_not(ctx: Context, split: dict[int, dict[str, Any]], min_pct: float) -> None:
    """Note why ``exposed_communication`` is silent (``findings(explain=True)``)."""
    if not split:
        ctx.note("exposed_communication", "not applicable: no communication kernels in scope")
        return
    share = {k: 100.0 * v["exposed_transfer_ns"] / v["gpu_span_ns"] for k, v in split.items()}
    top = max(share, key=lambda k: (share[k], -k))
    ctx.below("exposed_communication", "exposed communication (waiting excluded)", share[top], min_pct, top)
