"""``tiny_kernels``: many kernels too short to hide their launch; a fusion candidate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...operators import frequent_kernel_sequences, op_kernels
from ..advice import graphs_note
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, fmt_pct, on_rank, ranks_text, short
from ..thresholds import Thresholds


@dataclass(frozen=True)
class TinyKernelsThresholds(Thresholds):
    """The thresholds of ``tiny_kernels``."""

    #: A rank is named when at least this share (%) of its launches ...
    tiny_kernel_min_pct: float = 50.0
    #: ... and at least this many of them are tiny.
    tiny_kernel_min_count: int = 50


@rule(
    id="tiny_kernels",
    order=60,
    thresholds=TinyKernelsThresholds,
    text=">= {tiny_kernel_min_pct}% and >= {tiny_kernel_min_count} of a rank's launches run "
    "under {tiny_kernel_ns} ns on the GPU; time at stake: the device idle gaps (host or "
    "kernel waits) that end at a tiny launch.",
    analyses="tv.kernel_launch_stats, tv.frequent_kernel_sequences, tv.op_kernels",
)
def tiny_kernels(ctx: Context, r: TinyKernelsThresholds) -> list[Finding]:
    launch = ctx.launch_rank()
    if launch.empty:
        ctx.note("tiny_kernels", "not applicable: no kernel launches in scope")
        return []
    named = [
        int(k)
        for k, row in launch.iterrows()
        if row["short_kernel_pct"] >= r.tiny_kernel_min_pct and row["short_kernels"] >= r.tiny_kernel_min_count
    ]
    named = [k for k in named if k in ctx.facts]
    if not named:
        top = launch.reset_index(drop=True).sort_values(["short_kernel_pct", "rank"], ascending=[False, True]).iloc[0]
        ctx.note(
            "tiny_kernels",
            f"checked, fine: tiny launches {float(top['short_kernel_pct']):.1f}% ({int(top['short_kernels'])} of "
            f"{int(top['launches'])}, largest share, on rank {int(top['rank'])}), under the threshold of "
            f"{r.tiny_kernel_min_pct:g}% and {r.tiny_kernel_min_count} launches",
        )
        return []
    worst = max(named, key=lambda k: (ctx.facts[k]["tiny_gap_ns"], int(launch.loc[k, "short_kernels"]), -k))
    lw = launch.loc[worst]
    fw = ctx.facts[worst]
    per_rank = [
        {
            "rank": k,
            "launches": int(launch.loc[k, "launches"]),
            "tiny_launches": int(launch.loc[k, "short_kernels"]),
            "tiny_pct": float(launch.loc[k, "short_kernel_pct"]),
            "gaps_before_tiny": ctx.facts[k]["tiny_gaps"],
            "gap_before_tiny_ns": ctx.facts[k]["tiny_gap_ns"],
            "cpu_launch_total_ns": int(launch.loc[k, "cpu_dur_total_ns"]),
        }
        for k in named
    ]
    candidate = _fusion_candidate(ctx, worst)
    cand_text = ""
    if candidate is not None:
        seq = candidate["sequence"].split(" -> ")
        shown = " -> ".join(short(s, 40) for s in seq[:3]) + (" -> ..." if len(seq) > 3 else "")
        cand_text = (
            f" Fusion candidate: {short(candidate['operator'])} launches the same {candidate['length']}-kernel "
            f"sequence {candidate['count']} times ({shown}; {fmt_ns(candidate['gpu_ns'])} of GPU time)."
        )
    detail = (
        f"On {ranks_text(named)} most launches are tiny: {on_rank(named, worst)}{int(lw['short_kernels'])} of "
        f"{int(lw['launches'])} ({fmt_pct(float(lw['short_kernel_pct']))}) run under {fmt_ns(ctx.common.tiny_kernel_ns)} on the GPU, "
        f"about what their launch costs; the GPU idles {fmt_ns(fw['tiny_gap_ns'])} in {fw['tiny_gaps']} gaps just before "
        f"them.{cand_text} "
        + (
            "Fuse them (torch.compile, fused or foreach optimizers, fused layers) or replay them with CUDA graphs."
            if (graphs := graphs_note(ctx, named)) is None
            else f"Fuse them (torch.compile, fused or foreach optimizers, fused layers). {graphs}"
        )
    )
    title = (
        f"Many tiny kernels: {fmt_pct(float(lw['short_kernel_pct']))} of rank {worst}'s launches run under "
        f"{fmt_ns(ctx.common.tiny_kernel_ns)}"
    )
    evidence = {"worst_rank": worst, "per_rank": per_rank, "fusion_candidate": candidate}
    return [
        ctx.finding(
            "tiny_kernels",
            title=title,
            detail=detail,
            time_at_stake_ns=fw["tiny_gap_ns"],
            ranks=named,
            evidence=evidence,
        )
    ]


def _fusion_candidate(ctx: Context, rank: int) -> dict[str, Any] | None:
    """The outermost operator launching the most tiny activities, several per call, and the
    most frequent activity sequence of its calls (``frequent_kernel_sequences``)."""
    tiny = ctx.common.tiny_kernel_ns
    ok = ctx.get(
        f"op_kernels_outermost_{rank}",
        lambda: op_kernels(ctx.trace, level="outermost", by="kernel", ranks=rank, time_range=ctx.time_range),
    )
    if ok.empty:
        return None
    ok = ok.assign(tiny=np.where(ok["gpu_ns"] < tiny * ok["count"], ok["count"], 0))
    g = ok.groupby("operator", sort=True).agg(
        launches=("count", "sum"), tiny=("tiny", "sum"), instances=("instances", "max")
    )
    g = g.loc[(g["tiny"] > 0) & (g["launches"] >= 2 * g["instances"])]
    if g.empty:
        return None
    best, tiny_launches = sorted(((str(k), int(v)) for k, v in g["tiny"].items()), key=lambda kv: (-kv[1], kv[0]))[0]
    seqs = ctx.get(
        f"sequences_{rank}",
        lambda: frequent_kernel_sequences(
            ctx.trace, operator=str(best), ranks=rank, top_k=1, time_range=ctx.time_range
        ),
    )
    if seqs.empty:
        return None
    s = seqs.iloc[0]
    return {
        "operator": str(s["operator"]),
        "sequence": str(s["sequence"]),
        "length": int(s["length"]),
        "count": int(s["count"]),
        "gpu_ns": int(s["gpu_ns"]),
        "cpu_ns": int(s["cpu_ns"]),
        "operator_tiny_launches": tiny_launches,
    }
