"""The Communication tab: the collectives."""

from __future__ import annotations

from ...model.trace import _fmt_ns
from .builder import Column, TabBuilder, charts, figure_, table


def build(b: TabBuilder) -> None:
    c = charts()

    def nccl_table() -> None:
        n = b.frame("nccl_summary")
        calls = b.frame("collective_calls")
        if len(calls):
            b.figures.append(
                figure_(
                    "collective calls",
                    f"{len(calls):,}",
                    f"{calls['collective'].nunique()} kinds over {calls['rank'].nunique()} ranks",
                )
            )
            b.figures.append(figure_("time in collectives", _fmt_ns(float(calls["dur_ns"].sum())), "summed over ranks"))
        b.tables.append(
            table(
                "nccl",
                "Collectives by message size",
                n,
                [
                    Column("collective", "collective"),
                    Column("group_size", "ranks", "int"),
                    Column("size_bucket", "message size"),
                    Column("count", "calls", "int"),
                    Column("total_ns", "total", "duration"),
                    Column("mean_ns", "mean", "duration"),
                    Column("algbw_gbps", "algorithm bw", "gbps"),
                    Column("busbw_gbps", "bus bw", "gbps"),
                ],
            )
        )

    b.step("collectives", nccl_table)
    b.step(
        "bus bandwidth",
        lambda: b.chart("nccl_bw", lambda: c.nccl_bandwidth_chart(b.frame("nccl_summary"), theme=b.theme), wide=False),
    )
    b.step(
        "stragglers",
        lambda: b.chart("stragglers", lambda: c.stragglers_chart(b.frame("stragglers"), theme=b.theme), wide=False),
    )
    b.step(
        "communication heatmap",
        lambda: b.chart(
            "heatmap_communication",
            lambda: c.utilization_heatmap_chart(
                b.frame("utilization_heatmap", bins=b.data.heatmap_bins, kind="communication"),
                kind="communication",
                theme=b.theme,
            ),
        ),
    )
