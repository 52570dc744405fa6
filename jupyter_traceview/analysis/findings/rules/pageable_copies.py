"""``pageable_copies``: copies from or to pageable host memory."""

from __future__ import annotations

from typing import Any

from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_bytes, fmt_ns, ranks_text
from ..thresholds import Thresholds


@rule(
    id="pageable_copies",
    order=70,
    text="Memory copies from or to pageable host memory (staged through a pinned buffer, synchronous for "
    "the host); time at stake: their time beyond the same copies at the pinned rate of the link, plus "
    "device idle time from their launch call until the GPU's next work.",
    analyses="tv.memory_bandwidth(per='kind'), tv.trace.gpu_args()",
)
def pageable_copies(ctx: Context, _: Thresholds) -> list[Finding]:
    out = []
    pg = {k: f["pageable"] for k, f in ctx.facts.items() if f["pageable"]["copies"] > 0}
    if not pg:
        ctx.note("pageable_copies", "checked, fine: no copies from or to pageable memory in scope")
    if pg:

        def stake(k: int) -> int:
            return int(pg[k]["slow_ns"]) + int(pg[k]["idle_ns"])

        worst = max(pg, key=lambda k: (stake(k), pg[k]["bytes"], -k))
        w = pg[worst]
        total_bytes = sum(v["bytes"] for v in pg.values())
        total = sum(v["copies"] for v in pg.values())
        kinds: dict[str, int] = {}
        for v in pg.values():
            for kk, b in v["bytes_by_kind"].items():
                kinds[kk] = kinds.get(kk, 0) + b
        ops = ", ".join(f"{n} ({c})" for n, c in w["operators"])
        detail = (
            f"{total} memory copies on {ranks_text(pg)} involve pageable host memory ({fmt_bytes(total_bytes)}: "
            + ", ".join(f"{k} {fmt_bytes(b)}" for k, b in sorted(kinds.items()))
            + f"). A copy from or to pageable memory is staged through a pinned buffer and blocks the host; on rank "
            f"{worst} "
            + (f"{_slow_text(w)}, and " if w["slow_ns"] > 0 else "")
            + f"the GPU idled {fmt_ns(w['idle_ns'])} from their launch calls until its next work"
            + (f" (launched from {ops})" if ops else "")
            + ". Allocate the host tensors pinned (pin_memory=True in the DataLoader, tensor.pin_memory()) and copy "
            "with non_blocking=True."
        )
        title = (
            f"Pageable memory copies: {total} copies, {fmt_bytes(total_bytes)}; "
            + (f"{fmt_ns(w['slow_ns'])} slower than pinned and " if w["slow_ns"] > 0 else "")
            + f"{fmt_ns(w['idle_ns'])} GPU idle on rank {worst}"
        )
        evidence = {
            "worst_rank": worst,
            "copies": total,
            "bytes": total_bytes,
            "bytes_by_kind": kinds,
            "per_rank": [{"rank": k, **v} for k, v in sorted(pg.items())],
        }
        out.append(
            ctx.finding(
                "pageable_copies",
                title=title,
                detail=detail,
                time_at_stake_ns=stake(worst),
                ranks=pg,
                evidence=evidence,
            )
        )
    return out


def _slow_text(w: dict[str, Any]) -> str:
    """How much longer the pageable copies took than at the pinned rate, by direction."""
    parts = []
    for kind, (gbps, source) in sorted(w["pinned_gbps_by_kind"].items()):
        slow = int(w["slow_by_kind"].get(kind, 0))
        if slow > 0:
            parts.append(f"{kind} {fmt_ns(slow)} (pinned rate {gbps:.1f} GB/s: {source})")
    return "the copies took " + fmt_ns(w["slow_ns"]) + " longer than pinned copies would: " + "; ".join(parts)
