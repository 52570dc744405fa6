"""``dataloader_stall``: the main thread waits on the DataLoader (CPU-only runs too)."""

from __future__ import annotations

from dataclasses import dataclass

from ... import host_findings as hf
from ..advice import cpu_only_ranks
from ..context import Context, Finding
from ..registry import rule
from ..thresholds import Thresholds
from ._host import findings_of


@dataclass(frozen=True)
class DataloaderStall(Thresholds):
    #: A rank is named when its main thread spends at least this share (%) of its
    #: iterations inside DataLoader annotations, outside operators.
    dataloader_min_pct: float = 10.0


@rule(
    id="dataloader_stall",
    order=200,
    text=hf.HOST_RULES["dataloader_stall"],
    analyses=hf.HOST_ANALYSES["dataloader_stall"],
    thresholds=DataloaderStall,
)
def dataloader_stall(ctx: Context, t: DataloaderStall) -> list[Finding]:
    facts = ctx.host_facts()
    found = findings_of(
        ctx, hf.dataloader_stall(facts, float(t.dataloader_min_pct), cpu_only=cpu_only_ranks(ctx, facts))
    )
    if not found:
        share = {k: 100.0 * f["dataloader_ns"] / f["wall_ns"] for k, f in facts.items() if f["wall_ns"] > 0}
        if not share:
            ctx.note("dataloader_stall", "not applicable: no host thread with iterations in scope")
        else:
            top = max(share, key=lambda k: (share[k], -k))
            ctx.note(
                "dataloader_stall",
                f"checked, fine: the main thread waits on the DataLoader for {share[top]:.1f}% of its iterations "
                f"(largest, on rank {top}), under the threshold of {float(t.dataloader_min_pct):g}%",
            )
    return found
