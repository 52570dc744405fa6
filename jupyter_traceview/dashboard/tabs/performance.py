"""The Performance tab: operators against the device's peaks (roofline, time lost, MFU)."""

from __future__ import annotations

import numpy as np

from ... import format as fmt
from .builder import Column, TabBuilder, charts, figure_, pct, table


def outside_operators(under_ns: float, activity_ns: float) -> str:
    """How the GPU time under operators relates to the Kernels tab's GPU activity time ("" when equal)."""
    if round(under_ns) >= round(activity_ns):
        return ""
    return (
        f" (the Kernels tab's {fmt.duration(activity_ns)} GPU activity time less "
        f"{fmt.duration(activity_ns - under_ns)} run outside any operator)"
    )


def build(b: TabBuilder) -> None:
    c = charts()

    def figures_and_table() -> None:
        perf = b.frame("op_performance", by="shape")
        modelled = perf[perf["status"] == "modelled"]
        gpu_all = float(perf["gpu_ns"].sum())
        if perf.empty or modelled.empty:
            b.notes.append(
                "No operator could be modelled: record the trace with torch.profiler.profile(record_shapes=True) "
                "to see FLOPs, bytes and the share of the device's peak of every operator."
            )
        gpu_mod = float(modelled["gpu_ns"].sum())
        activity = float(b.frame("kernel_breakdown", top_k=None)["sum_ns"].sum())
        b.figures.append(
            figure_(
                "modelled GPU time",
                pct(100 * gpu_mod / gpu_all) if gpu_all > 0 else "n/a",
                f"{fmt.duration(gpu_mod)} of {fmt.duration(gpu_all)} under operators"
                + outside_operators(gpu_all, activity),
            )
        )
        ideal = float(modelled["ideal_ns"].sum(min_count=1)) if len(modelled) else np.nan
        if gpu_mod > 0 and np.isfinite(ideal):
            b.figures.append(
                figure_(
                    "of the roofline",
                    pct(100 * ideal / gpu_mod),
                    f"{fmt.duration(ideal)} at peak for {fmt.duration(gpu_mod)}",
                )
            )
        elif len(modelled):
            b.notes.append("No peak figures for this device: pass peaks= to tv.op_performance for percentages.")
        m = b.data.frame("mfu")
        if len(m) and m["mfu_pct"].notna().any():
            b.figures.append(
                figure_(
                    "MFU",
                    pct(float(m["mfu_pct"].median())),
                    f"median over {len(m)} rank-iterations; {pct(float(m['uncovered_gpu_pct'].median()))} of GPU time not modelled",
                )
            )
        b.tables.append(
            table(
                "op_performance",
                "Operators by GPU time, per name and shapes (all ranks)",
                perf.assign(lost_pct=100 * perf["lost_ns"] / perf["gpu_ns"].where(perf["gpu_ns"] > 0)),
                [
                    Column("name", "operator"),
                    Column("detail", "shapes"),
                    Column("family", "family"),
                    Column("dtype", "dtype"),
                    Column("rank", "rank", "int"),
                    Column("count", "calls", "int"),
                    Column("gpu_ns", "GPU time", "duration"),
                    Column("tflops", "TFLOP/s", "float"),
                    Column("gbps", "GB/s", "gbps"),
                    Column("intensity", "FLOP/byte", "float"),
                    Column("bound", "bound"),
                    Column("pct_of_peak", "% of peak", "pct"),
                    Column("lost_ns", "time lost", "duration"),
                    Column("reason", "not modelled because"),
                ],
            )
        )

    b.step("operator performance", figures_and_table)
    b.step(
        "roofline",
        lambda: b.chart(
            "roofline", lambda: c.roofline_chart(b.frame("op_performance", by="shape"), theme=b.theme), wide=False
        ),
    )
    b.step(
        "time lost",
        lambda: b.chart(
            "time_lost", lambda: c.time_lost_chart(b.frame("op_performance", by="shape"), theme=b.theme), wide=True
        ),
    )
