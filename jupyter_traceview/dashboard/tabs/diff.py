"""The Diff tab: the comparison with a baseline trace (``tv.compare``'s causes and verdict, then
``tv.trace_diff``'s operators and kernels by name)."""

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

    def tables() -> None:
        d = b.frame("trace_diff")
        changed = d.loc[d["status"] != "unchanged"]
        b.figures.append(figure_("changes", f"{len(changed):,}", f"of {len(d):,} operators and kernels"))
        b.tables.append(
            table(
                "diff",
                "Largest changes (b = this trace, a = the baseline)",
                changed,
                [
                    Column("kind", "kind"),
                    Column("name", "name"),
                    Column("count_a", "count a", "int"),
                    Column("count_b", "count b", "int"),
                    Column("total_ns_a", "total a", "duration"),
                    Column("total_ns_b", "total b", "duration"),
                    Column("total_delta_ns", "change", "duration"),
                    Column("total_delta_pct", "change %", "pct"),
                    Column("status", "status"),
                ],
                limit=50,
            )
        )

    b.step("compare", causes)
    b.step("trace diff", tables)
    b.step("diff chart", lambda: b.chart("diff", lambda: c.trace_diff_chart(b.frame("trace_diff"), theme=b.theme)))
