"""``low_overlap_collective``: a collective kind whose kernels are mostly exposed."""

from __future__ import annotations

from dataclasses import dataclass

from ...concurrency import kernel_overlap_stats
from ...stragglers import kind_from_name
from ..advice import inference_ranks
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, fmt_pct, short
from ..thresholds import Thresholds


@dataclass(frozen=True)
class LowOverlapCollectiveThresholds(Thresholds):
    """The thresholds of ``low_overlap_collective``."""

    #: A collective kind is named when at least this share (%)
    #: of its kernels' time (over all ranks) runs with no compute alongside.
    collective_exposed_min_pct: float = 80.0


@rule(
    id="low_overlap_collective",
    order=90,
    thresholds=LowOverlapCollectiveThresholds,
    text="A collective kind whose kernels run >= {collective_exposed_min_pct}% of their time "
    "with no compute alongside (kernel_overlap_stats), over all ranks.",
    analyses="tv.kernel_overlap_stats, tv.nccl_summary",
)
def low_overlap_collective(ctx: Context, r: LowOverlapCollectiveThresholds) -> list[Finding]:
    ks = ctx.call(kernel_overlap_stats, "overlap_rank", per="rank")
    comm = ks.loc[ks["gpu_class"] == "communication"]
    if comm.empty:
        return []
    comm = comm.assign(kind=[kind_from_name(str(n)) for n in comm["name"]])
    split = ctx.comm_split()
    job = comm.groupby("kind", sort=True)[["count", "total_ns", "exposed_ns"]].sum()
    out = []
    for kind, row in job.iterrows():
        total = int(row["total_ns"])
        if total <= 0:
            continue
        exposed_pct = 100.0 * int(row["exposed_ns"]) / total
        if exposed_pct < r.collective_exposed_min_pct:
            continue
        mine = comm.loc[comm["kind"] == kind]
        per_rank_kind = mine.groupby("rank")[["count", "total_ns", "exposed_ns"]].sum()
        # Per rank: this kind's exposed time, at most the rank's exposed transfer time.
        # Per rank: this kind's exposed time less the time its kernels waited for late
        # ranks, at most the rank's exposed communication (a union: per-activity sums of
        # overlapping kernels could exceed it).
        waits = ctx.kind_wait_ns()
        waiting = {
            int(k): min(waits.get((int(k), str(kind)), 0), int(v["exposed_ns"])) for k, v in per_rank_kind.iterrows()
        }
        stake = {
            int(k): min(int(v["exposed_ns"]) - waiting[int(k)], split.get(int(k), {}).get("exposed_comm_ns", 0))
            for k, v in per_rank_kind.iterrows()
        }
        named = [k for k, v in stake.items() if v > 0]
        if not named:
            continue
        worst = max(named, key=lambda k: (stake[k], -k))
        ranks_all_inference = len(inference_ranks(ctx, named)) == len(named)
        kernels = sorted(set(str(n) for n in mine["name"]))
        evidence = {
            "collective": str(kind),
            "kernels": kernels,
            "count": int(row["count"]),
            "total_ns": total,
            "exposed_ns": int(row["exposed_ns"]),
            "exposed_pct": exposed_pct,
            "per_rank": [
                {
                    "rank": int(k),
                    "total_ns": int(v["total_ns"]),
                    "exposed_ns": int(v["exposed_ns"]),
                    "waiting_ns": waiting[int(k)],
                    "time_at_stake_ns": stake[int(k)],
                }
                for k, v in per_rank_kind.iterrows()
            ],
        }
        title = (
            f"{kind} is barely overlapped: {fmt_pct(exposed_pct)} of its {fmt_ns(total)} runs with no compute alongside"
        )
        detail = (
            f"The {int(row['count'])} {kind} kernels ({short(kernels[0])}"
            + (f" and {len(kernels) - 1} more" if len(kernels) > 1 else "")
            + f") run {fmt_pct(exposed_pct)} of their time with no compute kernel on any stream; on rank {worst} that costs "
            f"up to {fmt_ns(stake[worst])} once the exposed peer wait (waiting for late ranks) is set aside. Launch them where independent compute "
            "can run alongside (on their own stream, async_op=True, and wait just before the result is needed), or "
            + (
                "overlap them with the neighbouring layer's or micro-batch's compute (inference: no gradients to bucket)."
                if ranks_all_inference
                else "overlap them with the next layer's compute (DDP/FSDP bucketing and prefetching)."
            )
        )
        out.append(
            ctx.finding(
                "low_overlap_collective",
                title=title,
                detail=detail,
                time_at_stake_ns=stake[worst],
                ranks=named,
                evidence=evidence,
            )
        )
    return out
