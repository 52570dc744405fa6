"""``fp32_matmul``: fp32 matrix products on a device with much faster TF32/BF16 units."""

from __future__ import annotations

from dataclasses import dataclass

from ...perfmodel import device_peaks
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, on_rank, ranks_text
from ..thresholds import Thresholds
from .gemm_below_peak import label, matrix_products


@dataclass(frozen=True)
class Fp32MatmulThresholds(Thresholds):
    """The thresholds of ``fp32_matmul``."""

    #: Named when the device's TF32 or BF16 peak is at least this many times its FP32 peak ...
    fp32_fast_ratio: float = 2.0
    #: ... and fp32 matrix products take at least this share (%) of a rank's matrix-product GPU time.
    fp32_min_share_pct: float = 10.0


@rule(
    id="fp32_matmul",
    order=72,
    thresholds=Fp32MatmulThresholds,
    text="fp32 matrix products taking >= {fp32_min_share_pct}% of a rank's matrix-product GPU time "
    "on a device whose TF32 or BF16 peak is >= {fp32_fast_ratio}x its FP32 peak; time at stake: "
    "their GPU time times (1 - FP32 peak / fast peak).",
    analyses="tv.op_performance",
)
def fp32_matmul(ctx: Context, r: Fp32MatmulThresholds) -> list[Finding]:
    perf = matrix_products(ctx)
    if perf.empty:
        return []
    meta = ctx.trace.metadata.set_index("rank")["device_name"]
    named: list[int] = []
    stake: dict[int, float] = {}
    fast_of: dict[int, tuple[str, float, float]] = {}
    for rank, part in perf.groupby("rank"):
        k = int(str(rank))
        peaks = device_peaks(str(meta.get(k, "")))
        if peaks is None or not peaks.fp32:
            continue
        fast = max(((d, peaks.tflops(d) or 0.0) for d in ("tf32", "bf16")), key=lambda kv: kv[1])
        if fast[1] < r.fp32_fast_ratio * peaks.fp32:
            continue
        fp32 = part[part["dtype"] == "fp32"]
        share = 100 * fp32["gpu_ns"].sum() / max(part["gpu_ns"].sum(), 1)
        if fp32.empty or share < r.fp32_min_share_pct:
            continue
        named.append(k)
        stake[k] = float(fp32["gpu_ns"].sum()) * (1 - peaks.fp32 / fast[1])
        fast_of[k] = (fast[0], fast[1], float(peaks.fp32))
    if not named:
        return []
    worst = max(named, key=lambda k: (stake[k], -k))
    mine = perf[(perf["rank"] == worst) & (perf["dtype"] == "fp32")].sort_values("gpu_ns", ascending=False)
    fast_name, fast_peak, fp32_peak = fast_of[worst]
    detail = (
        f"On {ranks_text(named)} matrix products run in fp32 on a device with fast {fast_name} units: "
        f"{on_rank(named, worst)}{fmt_ns(float(mine['gpu_ns'].sum()))} of fp32 GEMM/conv/attention time "
        f"(e.g. {label(mine.iloc[0])}); the device peaks at {fp32_peak:g} TFLOP/s in fp32 and "
        f"{fast_peak:g} in {fast_name}. Allow TF32 (torch.backends.cuda.matmul.allow_tf32 = True, "
        "torch.set_float32_matmul_precision('high')) or train in bf16 (torch.autocast)."
    )
    title = f"fp32 matrix products on rank {worst}, where {fast_name} is {fast_peak / fp32_peak:.0f}x faster"
    evidence = {
        "worst_rank": worst,
        "fp32_gpu_ns": {k: int(perf[(perf["rank"] == k) & (perf["dtype"] == "fp32")]["gpu_ns"].sum()) for k in named},
        "peaks_tflops": {"fp32": fp32_peak, fast_name: fast_peak},
    }
    return [
        ctx.finding(
            "fp32_matmul",
            title=title,
            detail=detail,
            time_at_stake_ns=int(stake[worst]),
            ranks=named,
            evidence=evidence,
        )
    ]
