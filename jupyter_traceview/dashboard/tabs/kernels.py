"""The Kernels tab: the kernels by time."""

from __future__ import annotations

import numpy as np

from ... import format as fmt
from ...model.text import as_text
from .builder import Column, TabBuilder, charts, figure_, table


def build(b: TabBuilder) -> None:
    c = charts()

    def kernel_table() -> None:
        k = b.frame("kernel_breakdown", top_k=None)
        g = (
            k.assign(name=as_text(k["name"]), kernel_type=as_text(k["kernel_type"]))
            .groupby(["name", "kernel_type"], sort=False)
            .agg(
                count=("count", "sum"),
                sum_ns=("sum_ns", "sum"),
                min_ns=("min_ns", "min"),
                max_ns=("max_ns", "max"),
                ranks=("rank", "nunique"),
            )
            .reset_index()
            .sort_values("sum_ns", ascending=False)
        )
        g["mean_ns"] = g["sum_ns"] / g["count"].clip(lower=1)
        total = float(g["sum_ns"].sum())
        g["share_pct"] = 100 * g["sum_ns"] / total if total > 0 else np.nan
        b.figures.append(figure_("kernels", f"{int(g['count'].sum()):,}", f"{len(g):,} distinct names"))
        b.figures.append(figure_("kernel time", fmt.duration(total), "summed over ranks and streams"))
        b.tables.append(
            table(
                "kernels",
                "Kernels by total time (all ranks)",
                g,
                [
                    Column("name", "kernel"),
                    Column("kernel_type", "type"),
                    Column("count", "launches", "int"),
                    Column("sum_ns", "total", "duration"),
                    Column("share_pct", "share", "pct"),
                    Column("mean_ns", "mean", "duration"),
                    Column("min_ns", "min", "duration"),
                    Column("max_ns", "max", "duration"),
                    Column("ranks", "ranks", "int"),
                ],
                limit=50,
            )
        )

    b.step("kernel table", kernel_table)
    b.step(
        "kernel types",
        lambda: b.chart(
            "kernel_types",
            lambda: c.kernel_type_chart(b.frame("kernel_breakdown", by="type"), theme=b.theme),
            wide=False,
        ),
    )
    b.step(
        "top kernels",
        lambda: b.chart(
            "top_kernels",
            lambda: c.top_kernels_chart(b.frame("kernel_breakdown", top_k=None), theme=b.theme),
            wide=False,
        ),
    )
    b.step(
        "duration distribution",
        lambda: b.chart(
            "kernel_durations", lambda: c.kernel_duration_chart(b.frame("kernel_duration_distribution"), theme=b.theme)
        ),
    )
