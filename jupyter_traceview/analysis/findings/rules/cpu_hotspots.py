"""``cpu_hotspots``: on a trace without GPU work, the operators with the most self CPU time (``info``)."""

from __future__ import annotations

from ... import host_findings as hf
from ..context import Context, Finding
from ..registry import rule
from ..thresholds import Thresholds
from ._host import findings_of


@rule(
    id="cpu_hotspots",
    order=230,
    text=hf.HOST_RULES["cpu_hotspots"],
    analyses=hf.HOST_ANALYSES["cpu_hotspots"],
)
def cpu_hotspots(ctx: Context, _: Thresholds) -> list[Finding]:
    if ctx.gpu_ranks:
        ctx.note("cpu_hotspots", "not applicable: the trace has GPU work (the rule is for CPU-only traces)")
        return []
    return findings_of(ctx, hf.cpu_hotspots(ctx.host_facts()))
