"""``tiny_gemms``: many matrix products too small to pay for their launch."""

from __future__ import annotations

from dataclasses import dataclass

from ..advice import graphs_note
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, on_rank, ranks_text
from ..thresholds import Thresholds
from .gemm_below_peak import label, matrix_products


@dataclass(frozen=True)
class TinyGemmsThresholds(Thresholds):
    """The thresholds of ``tiny_gemms``."""

    #: A rank is named when it makes at least this many matrix-product calls whose GPU
    #: time per call is under the common ``tiny_kernel_ns`` (their launch costs about as much).
    tiny_gemm_min_count: int = 50


@rule(
    id="tiny_gemms",
    order=71,
    thresholds=TinyGemmsThresholds,
    text=">= {tiny_gemm_min_count} matrix-product calls of a rank take under {tiny_kernel_ns} ns "
    "of GPU time each (about what a launch costs); time at stake: their GPU time.",
    analyses="tv.op_performance, tv.kernel_launch_stats",
)
def tiny_gemms(ctx: Context, r: TinyGemmsThresholds) -> list[Finding]:
    perf = matrix_products(ctx)
    if perf.empty:
        return []
    tiny = ctx.common.tiny_kernel_ns
    small = perf[perf["gpu_ns"] / perf["count"].clip(lower=1) < tiny]
    if small.empty:
        return []
    calls = small.groupby("rank")["count"].sum()
    named = sorted(int(k) for k, v in calls.items() if v >= r.tiny_gemm_min_count)
    if not named:
        return []
    gpu = small[small["rank"].isin(named)].groupby("rank")["gpu_ns"].sum()
    worst = int(gpu.idxmax())
    mine = small[small["rank"] == worst].sort_values("count", ascending=False)
    shown = ", ".join(f"{label(row)} x{int(row['count'])}" for _, row in mine.head(3).iterrows())
    detail = (
        f"On {ranks_text(named)} many matrix products are too small to pay for their launch: "
        f"{on_rank(named, worst)}{int(calls[worst])} calls under {fmt_ns(tiny)} of GPU time each "
        f"({fmt_ns(float(gpu[worst]))} in all), e.g. {shown}. Batch them (bmm, grouped GEMMs, one larger "
        + (
            "matrix), fuse them (torch.compile) or replay them with CUDA graphs."
            if (graphs := graphs_note(ctx, named)) is None
            else f"matrix) or fuse them (torch.compile). {graphs}"
        )
    )
    title = f"Tiny matrix products: {int(calls[worst])} calls on rank {worst} under {fmt_ns(tiny)} each"
    evidence = {
        "worst_rank": worst,
        "calls": {int(k): int(calls[k]) for k in named},
        "shapes": [
            {
                "name": str(row["name"]),
                "detail": str(row["detail"]),
                "count": int(row["count"]),
                "gpu_ns": int(row["gpu_ns"]),
            }
            for _, row in mine.head(10).iterrows()
        ],
    }
    return [
        ctx.finding(
            "tiny_gemms", title=title, detail=detail, time_at_stake_ns=int(gpu.max()), ranks=named, evidence=evidence
        )
    ]
