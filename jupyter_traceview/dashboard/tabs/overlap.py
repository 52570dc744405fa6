"""The Overlap tab: communication and compute overlap."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import format as fmt
from .builder import Column, TabBuilder, charts, figure_, table


def build(b: TabBuilder) -> None:
    c = charts()
    bins = b.data.heatmap_bins

    def overlap_table() -> None:
        o = b.frame("comm_comp_overlap")
        if len(o):
            b.figures.append(
                figure_("communication overlapped", fmt.percent(float(o["overlap_pct"].mean())), "mean over ranks")
            )
            b.figures.append(
                figure_("exposed communication", fmt.duration(float(o["exposed_comm_ns"].mean())), "mean per rank")
            )
        b.tables.append(
            table(
                "kernel_overlap",
                "Kernels and what runs beside them (all ranks)",
                b.frame("kernel_overlap_stats"),
                [
                    Column("name", "kernel", "name"),
                    Column("gpu_class", "class"),
                    Column("count", "launches", "int"),
                    Column("total_ns", "total", "duration"),
                    Column("comm_overlap_pct", "with communication", "pct"),
                    Column("compute_overlap_pct", "with compute", "pct"),
                    Column("exposed_pct", "alone", "pct"),
                ],
                limit=30,
            )
        )

    b.step("overlap", overlap_table)
    b.step(
        "overlap chart",
        lambda: b.chart("overlap", lambda: c.comm_comp_overlap_chart(b.frame("comm_comp_overlap"), theme=b.theme)),
    )

    def heatmap(kind: str) -> Callable[[], None]:
        def build() -> Any:
            return c.utilization_heatmap_chart(
                b.frame("utilization_heatmap", bins=bins, kind=kind), kind=kind, theme=b.theme, t0_ns=b.data.t0_ns
            )

        return lambda: b.chart(f"heatmap_{kind}", build)

    for kind in ("communication", "overlap"):
        b.step(f"{kind} heatmap", heatmap(kind))
