"""``host_sync_lines``: host syncs with the Python frame that issued them (GPU traces with stacks)."""

from __future__ import annotations

from dataclasses import dataclass

from ... import host_findings as hf
from ..context import Context, Finding
from ..registry import rule
from ..thresholds import Thresholds
from ._host import findings_of


@dataclass(frozen=True)
class HostSyncLines(Thresholds):
    #: A rank is named when its host syncs take at least this share (%) of the elapsed time.
    host_sync_min_pct: float = 1.0


@rule(
    id="host_sync_lines",
    order=220,
    text=hf.HOST_RULES["host_sync_lines"],
    analyses=hf.HOST_ANALYSES["host_sync_lines"],
    thresholds=HostSyncLines,
)
def host_sync_lines(ctx: Context, t: HostSyncLines) -> list[Finding]:
    if not ctx.gpu_ranks:  # without a GPU, .item() waits for nothing
        ctx.note("host_sync_lines", "not applicable: no GPU work in scope")
        return []
    return findings_of(ctx, hf.host_sync_lines(ctx.host_facts(), float(t.host_sync_min_pct) / 100 * ctx.elapsed_ns))
