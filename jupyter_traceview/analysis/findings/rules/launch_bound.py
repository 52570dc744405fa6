"""``launch_bound``: the GPU idles waiting for the host to launch work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .... import format as fmt
from ..advice import capture_ranks, graphs_note
from ..context import Context, Finding
from ..registry import rule
from ..text import amount, fmt_ns, fmt_pct, ranks_text, short
from ..thresholds import Thresholds


@dataclass(frozen=True)
class LaunchBoundThresholds(Thresholds):
    """The thresholds of ``launch_bound``."""

    #: A rank is named when the GPU idles waiting for the host for at
    #: least this share (%) of its GPU span.
    host_wait_min_pct: float = 10.0
    #: Above this share (%) of launches running shorter on the GPU than
    #: their launch call on the CPU, the wording says "launch-bound" (else "host-bound").
    launch_bound_min_pct: float = 50.0
    #: ... and the rank has at least this many launches (the first few
    #: launches of a process pay CUDA's lazy initialisation and say little).
    launch_bound_min_launches: int = 20


@rule(
    id="launch_bound",
    order=10,
    thresholds=LaunchBoundThresholds,
    text="The GPU (all streams) sits idle and the activity that ends the idle gap was launched "
    "by the host only after the gap began; named when that time is >= {host_wait_min_pct}% "
    "of a rank's GPU span. 'Launch-bound' when >= {launch_bound_min_pct}% of launches run "
    "shorter on the GPU than their launch call.",
    analyses="tv.idle_time_breakdown, tv.kernel_launch_stats, tv.queue_length",
)
def launch_bound(ctx: Context, r: LaunchBoundThresholds) -> list[Finding]:
    facts = {k: f for k, f in ctx.facts.items() if f["launches_known"] > 0 and f["gpu_span_ns"] > 0}
    if not facts:
        ctx.note("launch_bound", "not applicable: no GPU work with known launches in scope")
        return []
    share = {k: 100.0 * f["host_wait_ns"] / f["gpu_span_ns"] for k, f in facts.items()}
    named = [k for k in facts if share[k] >= r.host_wait_min_pct and facts[k]["host_wait_ns"] > 0]
    if not named:
        top = max(share, key=lambda k: (share[k], -k))
        ctx.below("launch_bound", "GPU idle waiting on the host", share[top], r.host_wait_min_pct, top)
        return []
    worst = max(named, key=lambda k: (facts[k]["host_wait_ns"], -k))
    f = facts[worst]
    launch = ctx.launch_rank()
    per_rank = []
    for k in named:
        row = {
            "rank": k,
            "host_wait_ns": facts[k]["host_wait_ns"],
            "host_wait_gaps": facts[k]["host_wait_gaps"],
            "gpu_span_ns": facts[k]["gpu_span_ns"],
            "host_wait_pct": share[k],
            "gpu_busy_pct": 100.0 * facts[k]["gpu_busy_ns"] / facts[k]["gpu_span_ns"],
        }
        if k in launch.index:
            lr = launch.loc[k]
            row.update(
                launches=int(lr["launches"]),
                launch_bound_pct=float(lr["launch_bound_pct"]),
                short_kernel_pct=float(lr["short_kernel_pct"]),
                cpu_launch_p50_ns=int(lr["cpu_dur_p50_ns"]),
                gpu_dur_p50_ns=int(lr["gpu_dur_p50_ns"]),
            )
        per_rank.append(row)
    wrow = next(p for p in per_rank if p["rank"] == worst)
    gap = f.get("largest_host_gap")
    where = ""
    if gap is not None:
        where = (
            f"; the longest gap is {fmt_ns(gap['gap_ns'])} at {fmt.time(gap['start_ns'] - ctx.t0)} (from the trace's "
            f"origin), before {short(gap['next_activity'])} on stream {gap['stream']}"
        )
    bound = (
        wrow.get("launch_bound_pct", 0.0) >= r.launch_bound_min_pct
        and wrow.get("launches", 0) >= r.launch_bound_min_launches
    )
    graphs = graphs_note(ctx, named)
    if bound:
        why = (
            f"{fmt_pct(wrow['launch_bound_pct'])} of its {wrow['launches']} launches run shorter on the GPU than "
            f"their launch call takes on the CPU (median kernel {fmt_ns(wrow['gpu_dur_p50_ns'])}, median launch "
            f"call {fmt_ns(wrow['cpu_launch_p50_ns'])}): the GPU runs work faster than the host can launch it. "
            + (
                "Try CUDA graphs (torch.compile(mode='reduce-overhead') or torch.cuda.graphs), fewer and larger "
                "kernels (torch.compile, fused optimizers), or a larger batch."
                if graphs is None
                else f"{graphs} Fewer and larger kernels (torch.compile, fused optimizers) or a larger batch help too."
            )
        )
        title = "Launch-bound: the GPU waits for the host to launch work"
    else:
        why = (
            "Its kernels are long enough to hide their own launches, so the host is slow for another reason "
            "(Python or CPU operators, data loading, synchronisation): look at the CPU timeline in these gaps. "
            + (
                "Try DataLoader workers with pin_memory=True, fewer host syncs (.item(), .cpu()), or CUDA graphs."
                if graphs is None
                else f"{graphs} Fewer host syncs (.item(), .cpu()) help too."
            )
        )
        title = "GPU idle waiting on the host"
    if worst in capture_ranks(ctx, [worst]):
        title = "GPU idle during CUDA graph capture"
    detail = (
        f"On {ranks_text(named)} the GPU sat idle on every stream, waiting for the host to launch the next "
        f"work, for {amount(named, worst, fmt_ns(f['host_wait_ns']))} ({fmt_pct(share[worst])} of its GPU span, "
        f"{f['host_wait_gaps']} gaps){where}. {why}"
    )
    title = f"{title}: {fmt_ns(f['host_wait_ns'])} idle on rank {worst} ({fmt_pct(share[worst])} of its GPU span)"
    evidence = {"worst_rank": worst, "per_rank": per_rank, "largest_gap": _rel(gap, ctx.t0)}
    return [
        ctx.finding(
            "launch_bound",
            title=title,
            detail=detail,
            time_at_stake_ns=f["host_wait_ns"],
            ranks=named,
            evidence=evidence,
        )
    ]


def _rel(gap: dict[str, Any] | None, t0: int) -> dict[str, Any] | None:
    if gap is None:
        return None
    return {
        "gap_ns": gap["gap_ns"],
        "start_rel_ns": gap["start_ns"] - t0,
        "next_activity": gap["next_activity"],
        "stream": gap["stream"],
    }
