"""The Breakdown tab: where the GPU time goes (narrowed to the range selected on the timeline)."""

from __future__ import annotations

from ...model.trace import _fmt_ns
from .builder import Column, TabBuilder, charts, figure_, pct, table


def build(b: TabBuilder) -> None:
    c = charts()
    data = b.data

    def figures() -> None:
        t = b.frame("temporal_breakdown")
        if b.time_range is not None:
            lo, hi = b.time_range
            b.figures.append(
                figure_(
                    "range",
                    _fmt_ns(hi - lo),
                    f"{_fmt_ns(lo - data.t0_ns)} → {_fmt_ns(hi - data.t0_ns)} from the trace start",
                )
            )
        if len(t):
            b.figures.append(figure_("compute", pct(float(t["compute_pct"].mean())), "mean over ranks"))
            b.figures.append(
                figure_("non-compute", pct(float(t["non_compute_pct"].mean())), "communication and memory")
            )
            b.figures.append(
                figure_("idle", pct(float(t["idle_pct"].mean())), "GPU idle between its first and last activity")
            )
        b.tables.append(
            table(
                "temporal",
                "Temporal breakdown per rank",
                t,
                [
                    Column("rank", "rank", "int"),
                    Column("span_ns", "GPU span", "duration"),
                    Column("compute_ns", "compute", "duration"),
                    Column("compute_pct", "compute %", "pct"),
                    Column("non_compute_ns", "non-compute", "duration"),
                    Column("non_compute_pct", "non-compute %", "pct"),
                    Column("idle_ns", "idle", "duration"),
                    Column("idle_pct", "idle %", "pct"),
                ],
            )
        )

    b.step("temporal breakdown", figures)
    b.step(
        "temporal chart",
        lambda: b.chart(
            "temporal", lambda: c.temporal_breakdown_chart(b.frame("temporal_breakdown"), theme=b.theme), wide=False
        ),
    )
    b.step(
        "kernel types",
        lambda: b.chart(
            "kernel_types",
            lambda: c.kernel_type_chart(b.frame("kernel_breakdown", by="type"), theme=b.theme),
            wide=False,
        ),
    )
    b.step(
        "idle time",
        lambda: b.chart("idle", lambda: c.idle_breakdown_chart(b.frame("idle_time_breakdown"), theme=b.theme)),
    )
    b.step(
        "concurrency",
        lambda: b.chart("concurrency", lambda: c.concurrency_chart(b.frame("concurrency"), theme=b.theme)),
    )
