"""``pageable_copies``: copies from or to pageable host memory."""

from __future__ import annotations

from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_bytes, fmt_ns, ranks_text
from ..thresholds import Thresholds


@rule(
    id="pageable_copies",
    order=70,
    text="Memory copies from or to pageable host memory (synchronous for the host); time at "
    "stake: device idle time from their launch call until the GPU's next work.",
    analyses="tv.memory_bandwidth(per='kind'), tv.trace.gpu_args()",
)
def pageable_copies(ctx: Context, _: Thresholds) -> list[Finding]:
    out = []
    pg = {k: f["pageable"] for k, f in ctx.facts.items() if f["pageable"]["copies"] > 0}
    if not pg:
        ctx.note("pageable_copies", "checked, fine: no copies from or to pageable memory in scope")
    if pg:
        worst = max(pg, key=lambda k: (pg[k]["idle_ns"], pg[k]["bytes"], -k))
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
            f"{worst} the GPU idled {fmt_ns(w['idle_ns'])} from their launch calls until its next work"
            + (f" (launched from {ops})" if ops else "")
            + ". Allocate the host tensors pinned (pin_memory=True in the DataLoader, tensor.pin_memory()) and copy "
            "with non_blocking=True."
        )
        title = f"Pageable memory copies: {total} copies, {fmt_bytes(total_bytes)}; {fmt_ns(w['idle_ns'])} GPU idle on rank {worst}"
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
                time_at_stake_ns=w["idle_ns"],
                ranks=pg,
                evidence=evidence,
            )
        )
    return out
