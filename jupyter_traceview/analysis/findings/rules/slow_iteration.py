"""``slow_iteration``: a ProfilerStep much slower than the median step."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....errors import OptionError
from ...efficiency import iteration_stats
from ..advice import capture_ranks
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, fmt_pct
from ..thresholds import Thresholds


@dataclass(frozen=True)
class SlowIterationThresholds(Thresholds):
    """The thresholds of ``slow_iteration``."""

    #: Needs at least this many ProfilerSteps.
    iteration_min_steps: int = 3
    #: A step is slow when it lasts at least this much (%) longer than
    #: the median step.
    slow_iteration_min_pct: float = 20.0

    def check(self) -> None:
        if self.iteration_min_steps < 2:
            raise OptionError(f"FindingRules.iteration_min_steps must be at least 2, got {self.iteration_min_steps}")


@rule(
    id="slow_iteration",
    order=100,
    thresholds=SlowIterationThresholds,
    text="With >= {iteration_min_steps} ProfilerSteps, a step (the slowest rank's duration) "
    ">= {slow_iteration_min_pct}% longer than the median step.",
    analyses="tv.iteration_stats(per='step'), tv.efficiency(per='iteration')",
)
def slow_iteration(ctx: Context, r: SlowIterationThresholds) -> list[Finding]:
    steps = ctx.call(iteration_stats, "iteration_step", per="step")
    if len(steps) < r.iteration_min_steps:
        ctx.note(
            "slow_iteration",
            f"not applicable: {len(steps)} ProfilerSteps in scope, the rule needs {r.iteration_min_steps}",
        )
        return []
    dur = steps["duration_ns"].to_numpy()
    median = float(np.median(dur))
    if median <= 0:
        return []
    over = 100.0 * (dur / median - 1.0)
    slow = steps.loc[over >= r.slow_iteration_min_pct]
    if slow.empty:
        ctx.note(
            "slow_iteration",
            f"checked, fine: the slowest step is {float(over.max()):.1f}% over the median step, under the threshold "
            f"of {r.slow_iteration_min_pct:g}%",
        )
        return []
    first_step = int(steps["step"].min())
    med = {c: float(steps[c].median()) for c in ("compute_max_ns", "exposed_comm_max_ns", "idle_max_ns")}
    labels = {
        "compute_max_ns": "compute",
        "exposed_comm_max_ns": "exposed communication",
        "idle_max_ns": "GPU idle time",
    }
    slow_list: list[dict[str, Any]] = []
    for _, s in slow.iterrows():
        growth = {c: float(s[c]) - med[c] for c in med}
        grew = max(growth, key=lambda c: (growth[c], c))
        slow_list.append(
            {
                "step": int(s["step"]),
                "duration_ns": int(s["duration_ns"]),
                "vs_median_pct": 100.0 * (float(s["duration_ns"]) / median - 1.0),
                "slowest_rank": int(s["slowest_rank"]),
                "grew_most": labels[grew],
                "grew_most_ns": growth[grew],
            }
        )
    slow_list.sort(key=lambda d: (-d["duration_ns"], d["step"]))
    excess = round(sum(d["duration_ns"] - median for d in slow_list))
    job = ctx.call(iteration_stats, "iteration_job", per="job")
    jitter = float(job["jitter_pct"].iloc[0]) if len(job) else math.nan
    s0 = slow_list[0]
    names = ", ".join(str(d["step"]) for d in slow_list)
    warm = ""
    if s0["step"] == first_step:
        warm = (
            f" Step {first_step} is the first profiled step: warm-up (cuDNN autotuning, allocator growth, "
            "compilation, lazy initialisation) often makes it slow; profile with a warm-up "
            "(torch.profiler.schedule(wait=1, warmup=1, active=3))."
        )
    cap = capture_ranks(ctx, {d["slowest_rank"] for d in slow_list})
    capture = ""
    if cap:
        capture = (
            f" {'Rank' if len(cap) == 1 else 'Ranks'} {', '.join(map(str, cap))} capture CUDA/HIP graphs in this "
            "trace: a slow step there is the capture (recording, instantiation, warm-up runs), a one-off cost, not "
            "a slow steady-state step; profile the replay to judge step times."
        )
    title = ("CUDA graph capture: " if cap else "") + (
        f"Slow iteration: step {s0['step']} takes {fmt_ns(s0['duration_ns'])}, {s0['vs_median_pct']:.0f}% over the "
        f"median step ({fmt_ns(median)})"
        if len(slow_list) == 1
        else f"Slow iterations: steps {names} take up to {s0['vs_median_pct']:.0f}% longer than the median step ({fmt_ns(median)})"
    )
    detail = (
        f"Of {len(steps)} steps, {len(slow_list)} last(s) at least {fmt_pct(r.slow_iteration_min_pct)} longer than the median "
        f"step ({fmt_ns(median)}; step time = the slowest rank's); step-time jitter {fmt_pct(jitter)}. In step {s0['step']} "
        f"(slowest on rank {s0['slowest_rank']}) {s0['grew_most']} grew the most, by {fmt_ns(s0['grew_most_ns'])} over "
        f"the median step.{warm}{capture} Compare it with a typical step (tv.iteration_stats; tv.compare(t.select(iterations=[typical]), "
        f"t.select(iterations=[{s0['step']}])) says which causes grew) "
        "to find what changed: data loading, a recompilation, a checkpoint or evaluation, garbage collection."
    )
    evidence = {"steps": len(steps), "median_step_ns": median, "jitter_pct": jitter, "slow_steps": slow_list}
    return [
        ctx.finding(
            "slow_iteration",
            title=title,
            detail=detail,
            time_at_stake_ns=excess,
            ranks=sorted({d["slowest_rank"] for d in slow_list}),
            evidence=evidence,
        )
    ]
