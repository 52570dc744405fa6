"""``load_imbalance``: compute spread unevenly over ranks (POP Load Balance)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...concurrency import kernel_overlap_stats
from ...efficiency import efficiency, iteration_stats
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, fmt_pct, short
from ..thresholds import Thresholds


@dataclass(frozen=True)
class LoadImbalanceThresholds(Thresholds):
    """The thresholds of ``load_imbalance``."""

    #: Reported when the job's Load Balance (``tv.efficiency``) is
    #: below this (%).
    load_balance_max_pct: float = 90.0


@rule(
    id="load_imbalance",
    order=40,
    thresholds=LoadImbalanceThresholds,
    text="Job Load Balance = mean(U) / max(U) over ranks (U = compute time) below "
    "{load_balance_max_pct}%; time at stake max(U) - mean(U).",
    analyses="tv.efficiency(per='rank'), tv.iteration_stats(per='step'), tv.kernel_breakdown",
)
def load_imbalance(ctx: Context, r: LoadImbalanceThresholds) -> list[Finding]:
    if len(ctx.gpu_ranks) < 2:
        return []
    job = ctx.call(efficiency, "efficiency_job")
    if job.empty or int(job["ranks"].iloc[0]) < 2 or int(job["useful_max_ns"].iloc[0]) <= 0:
        return []
    lb = float(job["load_balance_pct"].iloc[0])
    if not lb < r.load_balance_max_pct:
        return []
    per = ctx.call(efficiency, "efficiency_rank", per="rank")
    heavy = int(job["useful_max_rank"].iloc[0])
    umax = int(job["useful_max_ns"].iloc[0])
    umean = float(job["useful_mean_ns"].iloc[0])
    useful = {int(k): int(v) for k, v in zip(per["rank"], per["useful_ns"], strict=True)}
    median = float(np.median(list(useful.values())))
    light = min(useful, key=lambda k: (useful[k], k))
    evidence: dict[str, Any] = {
        "load_balance_pct": lb,
        "useful_max_rank": heavy,
        "useful_max_ns": umax,
        "useful_mean_ns": umean,
        "useful_median_ns": median,
        "useful_min_rank": light,
        "useful_ns_by_rank": [{"rank": k, "useful_ns": v} for k, v in sorted(useful.items())],
    }
    # Which step: where the heavy rank led, and the widest compute spread.
    steps = ctx.call(iteration_stats, "iteration_step", per="step")
    step_text = ""
    if len(steps):
        led = int((steps["most_compute_rank"] == heavy).sum())
        wide = steps.sort_values(["compute_spread_ns", "step"], ascending=[False, True], kind="stable").iloc[0]
        evidence["steps"] = len(steps)
        evidence["steps_led_by_heavy_rank"] = led
        evidence["widest_step"] = {
            "step": int(wide["step"]),
            "most_compute_rank": int(wide["most_compute_rank"]),
            "compute_spread_ns": int(wide["compute_spread_ns"]),
        }
        step_text = (
            f" Rank {heavy} had the most compute in {led} of {len(steps)} step(s); the widest spread is step "
            f"{int(wide['step'])} ({fmt_ns(int(wide['compute_spread_ns']))}, most on rank {int(wide['most_compute_rank'])})."
        )
    # Which kernels: the heavy rank's excess over the median rank, per compute kernel name.
    ks = ctx.call(kernel_overlap_stats, "overlap_rank", per="rank")
    kernel_text = ""
    comp = ks.loc[ks["gpu_class"] == "compute"]
    if len(comp):
        table = comp.pivot_table(index="name", columns="rank", values="total_ns", aggfunc="sum", fill_value=0)
        if heavy in table.columns:
            excess = (table[heavy] - table.median(axis=1)).sort_values(ascending=False, kind="stable")
            excess = excess.loc[excess > 0]
            if len(excess):
                excess_top = [(str(n), int(v)) for n, v in excess.head(3).items()]
                evidence["kernel_excess_vs_median"] = [{"name": n, "excess_ns": v} for n, v in excess_top]
                kernel_text = f" Most of the excess is in {short(excess_top[0][0])} (+{fmt_ns(excess_top[0][1])} over the median rank)."
    more = 100.0 * (umax / median - 1) if median > 0 else math.nan
    title = (
        f"Load imbalance: rank {heavy} computes {more:.0f}% more than the median rank (Load Balance {fmt_pct(lb)})"
        if more == more
        else f"Load imbalance: rank {heavy} does most of the compute (Load Balance {fmt_pct(lb)})"
    )
    detail = (
        f"Compute time (some compute kernel running) ranges from {fmt_ns(useful[light])} on rank {light} to "
        f"{fmt_ns(umax)} on rank {heavy} (mean {fmt_ns(umean)}); in a synchronous job the other ranks wait for rank {heavy} "
        f"at the next collective, so up to {fmt_ns(umax - umean)} per rank is lost.{step_text}{kernel_text} Balance the "
        "work (shard embedding tables or batches by cost, pack variable-length inputs), and check the rank's GPU "
        "(clocks, thermals) if its kernels are simply slower."
    )
    return [
        ctx.finding(
            "load_imbalance",
            title=title,
            detail=detail,
            time_at_stake_ns=round(umax - umean),
            ranks=[heavy],
            evidence=evidence,
        )
    ]
