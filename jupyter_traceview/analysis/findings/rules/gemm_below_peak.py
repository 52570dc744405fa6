"""``gemm_below_peak``: matrix products far below the device's peak for their shape.

This rule, ``tiny_gemms`` and ``fp32_matmul`` read :func:`~jupyter_traceview.op_performance`
(``by="shape"``): the FLOP/byte model of each GEMM, convolution and attention call, its GPU
time and the device's roofline. A trace without recorded shapes gives none; a device without
peak figures gives no ``gemm_below_peak`` and no ``fp32_matmul``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pandas as pd

from ....errors import TraceviewWarning
from ...perfmodel.matrix import matrix_shapes
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, fmt_pct, on_rank, ranks_text, short
from ..thresholds import Thresholds


def matrix_products(ctx: Context) -> pd.DataFrame:
    """``op_performance(by="shape")``'s modelled matrix products with GPU time
    (:func:`~jupyter_traceview.analysis.perfmodel.matrix.matrix_shapes`: the same rows,
    without modelling the other operators' GPU time)."""

    def compute() -> pd.DataFrame:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TraceviewWarning)
            return matrix_shapes(ctx.trace, time_range=ctx.time_range)

    perf: pd.DataFrame = ctx.get("matrix_shapes", compute)
    return perf


def label(row: pd.Series) -> str:
    return f"{short(str(row['name']), 40)} ({row['detail']}, {row['dtype']})"


@dataclass(frozen=True)
class GemmBelowPeakThresholds(Thresholds):
    """The thresholds of ``gemm_below_peak``."""

    #: A matrix product (name and shapes) is named when it runs below this share (%) of
    #: its roofline (the device's peak for its dtype, or its bandwidth when memory-bound) ...
    gemm_low_pct_of_peak: float = 30.0
    #: ... and takes at least this share (%) of its rank's GPU time in modelled operators.
    gemm_min_share_pct: float = 2.0


@rule(
    id="gemm_below_peak",
    order=70,
    thresholds=GemmBelowPeakThresholds,
    text="matrix products (gemm, conv, attention; by name and shapes) running below "
    "{gemm_low_pct_of_peak}% of their roofline and taking >= {gemm_min_share_pct}% of the "
    "modelled GPU time of a rank; time at stake: their GPU time above the roofline time.",
    analyses="tv.op_performance, tv.charts.roofline_chart",
)
def gemm_below_peak(ctx: Context, r: GemmBelowPeakThresholds) -> list[Finding]:
    perf = matrix_products(ctx)
    if perf.empty or perf["pct_of_peak"].isna().all():
        return []
    tiny = ctx.common.tiny_kernel_ns
    per_call = perf["gpu_ns"] / perf["count"].clip(lower=1)
    total = perf.groupby("rank")["gpu_ns"].transform("sum")
    low = perf[
        (perf["pct_of_peak"] < r.gemm_low_pct_of_peak)
        & (100 * perf["gpu_ns"] / total >= r.gemm_min_share_pct)
        & (per_call >= tiny)  # tiny calls are tiny_gemms' business
    ]
    if low.empty:
        return []
    lost = low.groupby("rank")["lost_ns"].sum()
    worst = int(lost.idxmax())
    mine = low[low["rank"] == worst].sort_values("lost_ns", ascending=False)
    top = mine.iloc[0]
    named = sorted(int(k) for k in lost.index)
    shown = "; ".join(
        f"{label(row)}: {fmt_pct(float(row['pct_of_peak']))} of peak, {row['bound']}-bound, "
        f"{fmt_ns(float(row['gpu_ns']))} over {int(row['count'])} calls"
        for _, row in mine.head(3).iterrows()
    )
    detail = (
        f"On {ranks_text(named)} matrix products run far below the device's peak for their shape: "
        f"{on_rank(named, worst)}{shown}. At the roofline they would take {fmt_ns(float(mine['ideal_ns'].sum()))} "
        f"instead of {fmt_ns(float(mine['gpu_ns'].sum()))}. Memory-bound products want larger or batched "
        "shapes (higher arithmetic intensity); compute-bound ones, sizes that are multiples of 8/16 and a "
        "tensor-core dtype (bf16/fp16)."
    )
    title = (
        f"Matrix products below peak: {short(str(top['name']), 40)} {top['detail']} runs at "
        f"{fmt_pct(float(top['pct_of_peak']))} of its roofline"
    )
    evidence = {
        "worst_rank": worst,
        "shapes": [
            {
                "name": str(row["name"]),
                "detail": str(row["detail"]),
                "dtype": str(row["dtype"]),
                "count": int(row["count"]),
                "gpu_ns": int(row["gpu_ns"]),
                "ideal_ns": float(row["ideal_ns"]),
                "pct_of_peak": float(row["pct_of_peak"]),
                "bound": str(row["bound"]),
                "tflops": float(row["tflops"]),
            }
            for _, row in mine.head(10).iterrows()
        ],
    }
    return [
        ctx.finding(
            "gemm_below_peak",
            title=title,
            detail=detail,
            time_at_stake_ns=int(lost.max()),
            ranks=named,
            evidence=evidence,
        )
    ]
