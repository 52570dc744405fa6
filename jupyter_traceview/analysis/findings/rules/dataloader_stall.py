"""``dataloader_stall``: the main thread waits on the DataLoader (CPU-only runs too)."""

from __future__ import annotations

from dataclasses import dataclass

from ... import host_findings as hf
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
    return findings_of(ctx, hf.dataloader_stall(ctx.host_facts(), float(t.dataloader_min_pct)))
