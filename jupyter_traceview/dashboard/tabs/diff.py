"""The Diff tab: the comparison with a baseline trace, ``tv.compare``'s verdict, the causes that
add up to the change of the mean step, each rank's change, and the warnings (world sizes,
warm-up, steps matched)."""

from __future__ import annotations

from ... import format as fmt
from .builder import Column, TabBuilder, charts, figure_, table


def build(b: TabBuilder) -> None:
    c = charts()
    b.figures.append(
        figure_(
            "baseline",
            b.data.baseline.source or "(memory)" if b.data.baseline is not None else "-",
            "compared with this trace",
        )
    )

    def causes() -> None:
        cmp = b.data.comparison()
        sign = "+" if cmp.delta_pct >= 0 else "-"
        b.figures.append(figure_("verdict", f"{cmp.verdict} ({sign}{fmt.percent(abs(cmp.delta_pct))})", cmp.headline()))
        b.notes.extend(f"compare: {w}" for w in cmp.warnings)
        b.tables.append(
            table(
                "causes",
                "Why the mean step changed (tv.compare; the rows add up to the change)",
                b.frame("compare"),
                [
                    Column("cause", "cause"),
                    Column("status", "status"),
                    Column("base_ns", "baseline", "duration"),
                    Column("new_ns", "this trace", "duration"),
                    Column("delta_ns", "change", "duration"),
                    Column("share_pct", "share", "pct"),
                    Column("evidence", "evidence"),
                ],
                limit=20,
            )
        )

    def per_rank() -> None:
        b.tables.append(
            table(
                "per_rank",
                "Each rank's mean step (the ranks both runs have) and its largest change",
                b.frame("compare_per_rank"),
                [
                    Column("rank", "rank", "int"),
                    Column("base_ns", "baseline", "duration"),
                    Column("new_ns", "this trace", "duration"),
                    Column("delta_ns", "change", "duration"),
                    Column("delta_pct", "change %", "pct"),
                    Column("top_cause", "largest change"),
                    Column("top_cause_delta_ns", "by", "duration"),
                ],
                limit=64,
            )
        )

    b.step("compare", causes)
    b.step("per rank", per_rank)
    b.step("compare chart", lambda: b.chart("compare", lambda: c.compare_chart(b.frame("compare"), theme=b.theme)))
