"""The Kernels tab: the kernels by time."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import format as fmt
from ...model.text import as_text
from ..protocol import Figure
from .builder import Column, TabBuilder, charts, figure_, table


def kernel_figures(by_name: pd.DataFrame, by_type: pd.DataFrame) -> list[Figure]:
    """The tab's cards: GPU activities (the header's kernels plus copies and sets) and their time.

    ``by_name`` has a row per (name, kernel_type) with ``count`` and ``sum_ns``;
    ``by_type`` is ``tv.kernel_breakdown(by="type")``. The card's time is the activities'
    durations summed over ranks and streams (the "Top kernels" bars add up to it); the
    kernel-type donut shows GPU busy time, where streams running at once count once: the
    card names that figure too, so that the two totals never read as a disagreement.
    """
    memory = by_name["kernel_type"] == "memory"
    n_all = int(by_name["count"].sum())
    n_copies = int(by_name.loc[memory, "count"].sum())
    total = float(by_name["sum_ns"].sum())
    busy = float(by_type["time_ns"].sum()) if len(by_type) else 0.0
    count_hint = f"{n_all - n_copies:,} kernels + {n_copies:,} copies and sets; {len(by_name):,} distinct names"
    time_hint = "durations summed over ranks and streams"
    if round(busy) != round(total):
        time_hint += f"; {fmt.duration(busy)} GPU busy (the donut: streams running at once count once)"
    return [
        figure_("GPU activities", f"{n_all:,}", count_hint),
        figure_("GPU activity time", fmt.duration(total), time_hint),
    ]


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
        b.figures += kernel_figures(g, b.frame("kernel_breakdown", by="type"))
        b.tables.append(
            table(
                "kernels",
                "Kernels by total time (all ranks)",
                g,
                [
                    Column("name", "kernel", "name"),
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
            wide=True,
        ),
    )
    b.step(
        "duration distribution",
        lambda: b.chart(
            "kernel_durations", lambda: c.kernel_duration_chart(b.frame("kernel_duration_distribution"), theme=b.theme)
        ),
    )
