"""``copy_bound``: memory copies (HtoD, DtoH, ...) that the GPU waits on, with no compute alongside."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ....model import intervals as iv
from ....model.classify import copy_kind_of
from ....model.text import as_text
from ....model.trace import Trace
from ..._gpu import COMM, COMPUTE, MEMORY, activities
from ..._memo import per_rank
from ...counters import memory_bandwidth
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_bytes, fmt_ns, fmt_pct, ranks_text
from ..thresholds import Thresholds


@dataclass(frozen=True)
class CopyBoundThresholds(Thresholds):
    """The thresholds of ``copy_bound``."""

    #: A rank is named when memory copies run with no compute or communication kernel
    #: alongside for at least this share (%) of its GPU span (the bar of the other
    #: causes of idle or exposed time: launch_bound, exposed_communication).
    copy_bound_min_pct: float = 10.0


@rule(
    id="copy_bound",
    order=75,
    thresholds=CopyBoundThresholds,
    text="Memory copies (HtoD, DtoH, DtoD, PtoP; pageable or pinned, not memsets) running with no compute or "
    "communication kernel alongside for >= {copy_bound_min_pct}% of a rank's GPU span; time at stake: that "
    "exposed copy time.",
    analyses="tv.memory_bandwidth(per='kind'), tv.kernel_breakdown(by='type'), tv.trace.gpu_args()",
)
def copy_bound(ctx: Context, r: CopyBoundThresholds) -> list[Finding]:
    if not ctx.gpu_ranks:
        ctx.note("copy_bound", "not applicable: no GPU work in scope")
        return []
    copies = ctx.get("copy_exposure", lambda: _exposure(ctx))
    share = {
        k: 100.0 * v["exposed_ns"] / ctx.facts[k]["gpu_span_ns"]
        for k, v in copies.items()
        if ctx.facts[k]["gpu_span_ns"] > 0
    }
    if not share:
        ctx.note("copy_bound", "checked, fine: no memory copies in scope")
        return []
    named = [k for k, s in share.items() if s >= r.copy_bound_min_pct and copies[k]["exposed_ns"] > 0]
    if not named:
        top = max(share, key=lambda k: (share[k], -k))
        ctx.below("copy_bound", "exposed memory copies", share[top], r.copy_bound_min_pct, top)
        return []
    worst = max(named, key=lambda k: (copies[k]["exposed_ns"], -k))
    w = copies[worst]
    bw = ctx.call(memory_bandwidth, "memory_bandwidth_kind", per="kind")
    bw = bw.loc[(bw["rank"] == worst) & (as_text(bw["kind"]) != "memset")]
    kinds: list[dict[str, Any]] = []
    pageable = ctx.facts[worst]["pageable"]["bytes_by_kind"]
    for _, row in bw.sort_values(["busy_ns", "kind"], ascending=[False, True], kind="stable").iterrows():
        kind = str(row["kind"])
        kinds.append(
            {
                "direction": kind,
                "copies": int(row["copies"]),
                "bytes": int(row["total_bytes"]),
                "pageable_bytes": int(pageable.get(kind, 0)),
                "busy_ns": int(row["busy_ns"]),
                "effective_gbps": float(row["effective_gbps"]),
            }
        )
    main = kinds[0] if kinds else None
    per_dir = "; ".join(
        f"{k['direction']} {k['copies']} copies, {fmt_bytes(k['bytes'])} in {fmt_ns(k['busy_ns'])}"
        + (f" at {k['effective_gbps']:.3g} GB/s" if k["effective_gbps"] == k["effective_gbps"] else "")
        + (f", {fmt_bytes(k['pageable_bytes'])} of it pageable" if k["pageable_bytes"] else ", pinned")
        for k in kinds
    )
    share_w = share[worst]
    detail = (
        f"On {ranks_text(named)} the GPU spends much of its span copying memory with no kernel running alongside: "
        f"on rank {worst}, {fmt_ns(w['exposed_ns'])} ({fmt_pct(share_w)} of its GPU span) of the "
        f"{fmt_ns(w['copy_ns'])} its copies run. By direction: {per_dir}. " + _advice(ctx, worst, main)
    )
    direction = main["direction"] if main else "memory"
    title = f"Copy-bound: {direction} copies expose {fmt_ns(w['exposed_ns'])} on rank {worst} ({fmt_pct(share_w)} of its GPU span)"
    evidence = {
        "worst_rank": worst,
        "exposed_copy_ns": w["exposed_ns"],
        "copy_ns": w["copy_ns"],
        "gpu_span_ns": ctx.facts[worst]["gpu_span_ns"],
        "exposed_copy_pct": share_w,
        "directions": kinds,
        "per_rank": [
            {"rank": k, "exposed_copy_ns": copies[k]["exposed_ns"], "exposed_copy_pct": share[k]} for k in named
        ],
    }
    return [
        ctx.finding(
            "copy_bound", title=title, detail=detail, time_at_stake_ns=w["exposed_ns"], ranks=named, evidence=evidence
        )
    ]


def _advice(ctx: Context, rank: int, main: dict[str, Any] | None) -> str:
    kind = main["direction"] if main else ""
    pageable = bool(main and main["pageable_bytes"])
    if kind == "DtoH":
        text = (
            "Device-to-host copies in the loop (.cpu(), .item(), .numpy(), printing or logging tensors) stall the "
            "GPU: keep results on the GPU and copy them once, or asynchronously (non_blocking=True into pinned "
            "buffers) on a side stream."
        )
    elif kind == "HtoD":
        if ctx.workload(rank).inference:
            text = (
                "Host-to-device copies dominate: keep the weights resident on the GPU (no CPU offload of layers "
                "or of the KV cache in the serving loop), and copy each request's inputs once, pinned and "
                "non_blocking=True, overlapped with the previous request's compute."
            )
        else:
            text = (
                "Host-to-device copies dominate: move data that does not change (the model, a dataset that fits) "
                "to the GPU once instead of every step, copy the batch from pinned memory (pin_memory=True) with "
                "non_blocking=True on a side stream so it overlaps compute, and copy less (lower precision, "
                "uint8 images decoded on the GPU)."
            )
    else:
        text = (
            "Copies between or within devices dominate: avoid .contiguous()/.clone()/.to() copies of large "
            "tensors in the loop, and overlap the transfers with compute on their own stream."
        )
    if pageable:
        text += (
            " Part of it comes from pageable host memory, staged through a pinned buffer at a fraction of the "
            "link's speed: allocate those tensors pinned."
        )
    return text


def _exposure(ctx: Context) -> dict[int, dict[str, int]]:
    windowed = ctx.trace if ctx.time_range is None else ctx.trace.select(time_range=ctx.time_range)
    facts = per_rank(windowed, _copy_exposure)
    return {k: v for k, v in facts.items() if v is not None and v["copy_ns"] > 0}


def _copy_exposure(trace: Trace) -> dict[str, int] | None:
    """One rank's copy time (union of its memory copies, sets excluded) and the part of it with
    no compute or communication kernel running (None without GPU work)."""
    (r,) = trace.ranks
    acts = activities(trace, r, work_only=True)
    if len(acts) == 0:
        return None
    mem = np.flatnonzero(acts.cls == MEMORY)
    codes = acts.name[mem]
    present = np.unique(codes[codes >= 0])
    is_set = {int(c) for c in present.tolist() if copy_kind_of(str(acts.names[c])) == "memset"}
    keep = mem[np.array([int(c) not in is_set for c in codes.tolist()], dtype=bool)] if len(mem) else mem
    cs, ce = iv.union(acts.ts[keep], acts.end[keep])
    exposed = iv.subtract((cs, ce), acts.union(COMPUTE, COMM))
    return {"copy_ns": iv.length(cs, ce), "exposed_ns": iv.length(*exposed)}
