"""``python_overhead``: on a CPU-only run, the main thread spends its iterations outside operators."""

from __future__ import annotations

from dataclasses import dataclass

from ... import host_findings as hf
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
        return []
    return findings_of(ctx, hf.python_overhead(ctx.host_facts(), float(t.python_overhead_min_pct)))
