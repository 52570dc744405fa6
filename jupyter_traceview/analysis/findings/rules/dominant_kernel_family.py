"""``dominant_kernel_family``: one memory-bound kernel family (softmax, elementwise, ...) holds a
large share of a rank's compute time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..._memo import per_rank
from ...kernel_families import MATH_FAMILIES, family_of
from ...kernels import KERNEL_TYPES, rank_kernel_totals
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, fmt_pct, ranks_text, short
from ..thresholds import Thresholds


@dataclass(frozen=True)
class DominantKernelFamilyThresholds(Thresholds):
    """The thresholds of ``dominant_kernel_family``."""

    #: A rank is named when one family other than gemm, convolution and attention (the
    #: arithmetic) holds at least this share (%) of its compute kernels' time. Those families
    #: do a few operations per byte and carry a small part of a model's FLOPs (the matmuls
    #: and convolutions carry nearly all); at a third of the compute time, a fused version
    #: that reads the data once typically saves most of it.
    dominant_family_min_pct: float = 30.0


#: What to try, per family.
_ADVICE = {
    "softmax": "Run the softmax inside a fused attention kernel (torch.nn.functional.scaled_dot_product_attention, "
    "FlashAttention) or let torch.compile fuse it with its neighbours; check that it does not run in fp32 on a "
    "large tensor it could skip (masking, a materialised attention matrix).",
    "normalization": "Use fused normalization (torch.compile, Apex or Transformer Engine LayerNorm/RMSNorm) and fuse "
    "it with the residual add and the cast next to it.",
    "elementwise": "Fuse chains of pointwise operations (torch.compile), remove casts and copies (.float(), "
    ".contiguous(), .to()) of large tensors in the loop, and use fused or foreach optimizers.",
    "reduction": "Fuse reductions with the operations producing their input (torch.compile), and avoid reducing the "
    "same large tensor several times (statistics, norms, losses computed separately).",
    "indexing": "Avoid torch.cat/index/gather/scatter over large tensors in the loop (preallocate and write in "
    "place, batch the lookups, use fused embedding bags).",
    "sort": "Sorting or top-k over large tensors: select on a smaller tensor, or use a partial selection.",
    "optimizer": "Use a fused optimizer (torch.optim.AdamW(fused=True)) or a foreach one, and keep its state in the "
    "precision it needs.",
}


@rule(
    id="dominant_kernel_family",
    order=115,
    thresholds=DominantKernelFamilyThresholds,
    text="One kernel family other than gemm, convolution and attention (softmax, normalization, elementwise, "
    "reduction, indexing, sort, optimizer: read from the kernels' names, docs/semantics.md) holds "
    ">= {dominant_family_min_pct}% of a rank's compute kernel time; time at stake: that family's kernel time "
    "(an upper bound of what fusing it recovers).",
    analyses="tv.kernel_breakdown(top_k=None), tv.op_kernels",
)
def dominant_kernel_family(ctx: Context, r: DominantKernelFamilyThresholds) -> list[Finding]:
    if not ctx.gpu_ranks:
        ctx.note("dominant_kernel_family", "not applicable: no GPU work in scope")
        return []
    totals = ctx.get("kernel_totals_compute", lambda: _compute_totals(ctx))
    if not totals:
        ctx.note("dominant_kernel_family", "not applicable: no compute kernels in scope")
        return []
    per: dict[int, dict[str, Any]] = {}
    best: tuple[float, int, str] | None = None
    for rank, kernels in sorted(totals.items()):
        total = sum(t for _, t, _ in kernels)
        by_fam: dict[str, list[tuple[str, int, int]]] = {}
        for name, t, c in kernels:
            fam = family_of(name)
            if fam is not None and fam not in MATH_FAMILIES:
                by_fam.setdefault(fam, []).append((name, t, c))
        if total <= 0 or not by_fam:
            continue
        top_family, mine = min(by_fam.items(), key=lambda kv: (-sum(t for _, t, _ in kv[1]), kv[0]))
        ns = sum(t for _, t, _ in mine)
        pct = 100.0 * ns / total
        mine.sort(key=lambda k: (-k[1], k[0]))
        per[rank] = {
            "rank": rank,
            "family": top_family,
            "family_ns": ns,
            "compute_ns": total,
            "triton_ns": sum(t for n, t, _ in mine if n.startswith("triton_")),
            "family_pct": pct,
            "top_kernels": [[n, t, c] for n, t, c in mine[:3]],
        }
        if best is None or (pct, -rank) > (best[0], -best[1]):
            best = (pct, rank, top_family)
    named = [k for k, v in per.items() if v["family_pct"] >= r.dominant_family_min_pct]
    if not named:
        if best is None:
            ctx.note(
                "dominant_kernel_family",
                "checked, fine: every compute kernel is a gemm, convolution or attention kernel, or has no family",
            )
        else:
            ctx.note(
                "dominant_kernel_family",
                f"checked, fine: the largest non-matmul family, {best[2]}, holds {best[0]:.1f}% of rank {best[1]}'s "
                f"compute kernel time, under the threshold of {r.dominant_family_min_pct:g}%",
            )
        return []
    worst = max(named, key=lambda k: (per[k]["family_ns"], -k))
    w = per[worst]
    kernels = ", ".join(f"{short(n, 90)} ({fmt_ns(t)}, {c} runs)" for n, t, c in w["top_kernels"])
    if 2 * w["triton_ns"] >= w["family_ns"]:
        advice = (
            "Most of them are Triton kernels that torch.compile generated, fused already: their time is memory "
            "traffic, so check that their tensors are not larger than needed (dtype, layout, padding) and that "
            "fewer graph breaks let larger regions fuse."
        )
    else:
        advice = _ADVICE.get(w["family"], "Fuse them (torch.compile).")
    detail = (
        f"On {ranks_text(named)} one kind of kernel takes a large share of the compute time: on rank {worst}, "
        f"{w['family']} kernels run {fmt_ns(w['family_ns'])}, {fmt_pct(w['family_pct'])} of its "
        f"{fmt_ns(w['compute_ns'])} of compute kernel time (largest: {kernels}). These kernels do little arithmetic "
        f"per byte; in a model whose matrix products carry the math they should take a small share. " + advice
    )
    title = f"{w['family'].capitalize()} kernels dominate: {fmt_pct(w['family_pct'])} of rank {worst}'s compute time"
    evidence = {"worst_rank": worst, "per_rank": [per[k] for k in sorted(named)]}
    return [
        ctx.finding(
            "dominant_kernel_family",
            title=title,
            detail=detail,
            time_at_stake_ns=w["family_ns"],
            ranks=named,
            evidence=evidence,
        )
    ]


def _compute_totals(ctx: Context) -> dict[int, list[tuple[str, int, int]]]:
    """Per rank, its compute kernels as (name, GPU time in ns, runs): ``kernel_breakdown(top_k=None)``'s
    ``sum_ns`` and ``count``, from its first phase per rank (kept with the ranks' cache entries)."""
    windowed = ctx.trace if ctx.time_range is None else ctx.trace.select(time_range=ctx.time_range)
    compute = KERNEL_TYPES.index("compute")
    out: dict[int, list[tuple[str, int, int]]] = {}
    for rank, t in per_rank(windowed, rank_kernel_totals).items():
        if t is None:
            continue
        keep = t["tcode"].to_numpy() == compute
        rows = zip(
            t["name"].to_numpy()[keep].tolist(),
            t["total"].to_numpy()[keep].tolist(),
            t["count"].to_numpy()[keep].tolist(),
            strict=True,
        )
        kernels = [(str(n), int(s), int(c)) for n, s, c in rows]
        if kernels:
            out[int(rank)] = kernels
    return out
