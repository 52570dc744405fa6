"""``low_occupancy``: top compute kernels with low estimated occupancy (``info``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...concurrency import kernel_overlap_stats
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, fmt_pct, short
from ..thresholds import Thresholds


@dataclass(frozen=True)
class LowOccupancyThresholds(Thresholds):
    """The thresholds of ``low_occupancy``."""

    #: A top compute kernel with a time-weighted estimated achieved
    #: occupancy below this (%) is named.
    occupancy_max_pct: float = 25.0
    #: How many compute kernels (by total time) are looked at.
    occupancy_top_k: int = 10


@rule(
    id="low_occupancy",
    order=110,
    thresholds=LowOccupancyThresholds,
    text="One of the top {occupancy_top_k} compute kernels by time, averaging at least "
    "{tiny_kernel_ns} ns, with a time-weighted estimated achieved occupancy below "
    "{occupancy_max_pct}% (no time at stake is estimated: info).",
    analyses="tv.kernel_breakdown, trace.gpu_args()",
)
def low_occupancy(ctx: Context, r: LowOccupancyThresholds) -> list[Finding]:
    ks = ctx.call(kernel_overlap_stats, "overlap_rank", per="rank")
    comp = ks.loc[ks["gpu_class"] == "compute"]
    if comp.empty:
        return []
    job = comp.groupby("name", sort=False)[["count", "total_ns"]].sum()
    job = job.sort_values("total_ns", ascending=False, kind="stable").head(int(r.occupancy_top_k))
    occ_ns: dict[str, float] = {}
    occ_w: dict[str, float] = {}
    for f in ctx.facts.values():
        for name, (d, w) in f["occupancy"].items():
            occ_ns[name] = occ_ns.get(name, 0.0) + d
            occ_w[name] = occ_w.get(name, 0.0) + w
    flagged: list[dict[str, Any]] = []
    for name, row in job.iterrows():
        n = str(name)
        if occ_ns.get(n, 0.0) <= 0 or row["total_ns"] < ctx.common.tiny_kernel_ns * row["count"]:
            continue
        occ = occ_w[n] / occ_ns[n]
        if occ < r.occupancy_max_pct:
            flagged.append(
                {
                    "name": n,
                    "count": int(row["count"]),
                    "total_ns": int(row["total_ns"]),
                    "mean_ns": float(row["total_ns"]) / int(row["count"]),
                    "occupancy_pct": occ,
                }
            )
    if not flagged:
        return []
    ranks = sorted(set(int(x) for x in comp.loc[comp["name"].isin([f["name"] for f in flagged]), "rank"]))
    k0 = flagged[0]
    detail = (
        f"{len(flagged)} of the top {len(job)} compute kernels by time run at a low estimated achieved occupancy "
        f"(CUPTI's estimate, time-weighted): {short(k0['name'])} at {fmt_pct(k0['occupancy_pct'])} over "
        f"{k0['count']} runs ({fmt_ns(k0['total_ns'])})"
        + (f", and {len(flagged) - 1} more" if len(flagged) > 1 else "")
        + ". Too few blocks for the GPU's SMs, or too many registers or shared memory per block, leave the GPU "
        "underused; larger batches, other tile sizes (torch.backends.cuda.matmul settings, autotuning via "
        "torch.compile(mode='max-autotune')) may help. No time at stake is estimated: a low-occupancy kernel can "
        "still be bound by memory bandwidth."
    )
    title = f"Low occupancy: {short(k0['name'])} runs at {fmt_pct(k0['occupancy_pct'])} estimated occupancy"
    return [
        ctx.finding(
            "low_occupancy",
            title=title,
            detail=detail,
            time_at_stake_ns=0,
            ranks=ranks,
            evidence={"kernels": flagged, "top_k": len(job)},
            info=True,
        )
    ]
