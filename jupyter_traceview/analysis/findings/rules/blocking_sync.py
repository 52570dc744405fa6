"""``blocking_sync``: host calls that block until the GPU is done."""

from __future__ import annotations

from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, on_rank, ranks_text
from ..thresholds import Thresholds


@rule(
    id="blocking_sync",
    order=80,
    text="Host calls that block until the GPU is done (cudaMemcpy, cudaMemset, cuda*Synchronize, "
    "hip*); time at stake: device idle time from the call until the GPU's next work.",
    analyses="tv.idle_time_breakdown, tv.kernel_launch_stats",
)
def blocking_sync(ctx: Context, _: Thresholds) -> list[Finding]:
    out = []
    bl = {k: f["blocking"] for k, f in ctx.facts.items() if f["blocking"]["calls"] > 0}
    if not bl:
        ctx.note("blocking_sync", "checked, fine: no blocking host calls (cudaMemcpy, cuda*Synchronize, ...) in scope")
    if bl:
        worst = max(bl, key=lambda k: (bl[k]["idle_ns"], bl[k]["call_ns"], -k))
        w = bl[worst]
        by_name = ", ".join(
            f"{n} x{v['calls']}" for n, v in sorted(w["by_name"].items(), key=lambda kv: (-kv[1]["calls"], kv[0]))
        )
        ops = ", ".join(f"{n} ({c})" for n, c in w["operators"])
        detail = (
            f"On {ranks_text(bl)} the host blocks until the GPU is done: {on_rank(bl, worst)}{by_name}, "
            f"{fmt_ns(w['call_ns'])} of host time"
            + (f", called from {ops}" if ops else "")
            + f". The GPU's queue drains while the host waits, and it idled {fmt_ns(w['idle_ns'])} from these calls until "
            "its next work. Avoid synchronising in the loop: keep values on the GPU instead of .item()/.cpu()/print, "
            "copy with non_blocking=True to pinned memory, and synchronise once per step at most."
        )
        title = f"Blocking host calls: the GPU idles {fmt_ns(w['idle_ns'])} after synchronisations on rank {worst}"
        evidence = {"worst_rank": worst, "per_rank": [{"rank": k, **v} for k, v in sorted(bl.items())]}
        out.append(
            ctx.finding(
                "blocking_sync",
                title=title,
                detail=detail,
                time_at_stake_ns=w["idle_ns"],
                ranks=bl,
                evidence=evidence,
            )
        )
    return out
