"""``python_overhead``: on a CPU-only run, the main thread spends its iterations outside operators."""

from __future__ import annotations

from dataclasses import dataclass

from ... import host_findings as hf
from ..advice import cpu_only_ranks
from ..context import Context, Finding
from ..registry import rule
from ..thresholds import Thresholds
from ._host import findings_of


@dataclass(frozen=True)
class PythonOverhead(Thresholds):
    #: A rank is named when its main thread spends at least this share (%) of its
    #: iterations outside operators and data loading.
    python_overhead_min_pct: float = 30.0


@rule(
    id="python_overhead",
    order=210,
    text=hf.HOST_RULES["python_overhead"],
    analyses=hf.HOST_ANALYSES["python_overhead"],
    thresholds=PythonOverhead,
)
def python_overhead(ctx: Context, t: PythonOverhead) -> list[Finding]:
    if ctx.gpu_ranks:  # with a GPU, host time matters where the GPU waits for it: launch_bound
        ctx.note(
            "python_overhead",
            "not applicable: the trace has GPU work; host time that delays the GPU is launch_bound's",
        )
        return []
    facts = ctx.host_facts()
    found = findings_of(
        ctx, hf.python_overhead(facts, float(t.python_overhead_min_pct), cpu_only=cpu_only_ranks(ctx, facts))
    )
    if not found:
        share = {k: 100.0 * f["outside_ops_ns"] / f["wall_ns"] for k, f in facts.items() if f["wall_ns"] > 0}
        if share:
            top = max(share, key=lambda k: (share[k], -k))
            ctx.note(
                "python_overhead",
                f"checked, fine: the main thread runs no operator for {share[top]:.1f}% of its iterations "
                f"(largest, on rank {top}), under the threshold of {float(t.python_overhead_min_pct):g}%",
            )
    return found
