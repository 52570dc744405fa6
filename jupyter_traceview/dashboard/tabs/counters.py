"""The Counters tab: queue lengths and memory bandwidth."""

from __future__ import annotations

from .builder import Column, TabBuilder, charts, table


def build(b: TabBuilder) -> None:
    c = charts()

    def tables() -> None:
        q = b.frame("queue_length", per="stream")
        b.tables.append(
            table(
                "queues",
                "Queue length per stream",
                q,
                [
                    Column("rank", "rank", "int"),
                    Column("stream", "stream", "int"),
                    Column("queue_length_mean", "mean", "float"),
                    Column("queue_length_max", "max", "int"),
                    Column("blocked_ns", "blocked (queue full)", "duration"),
                ],
            )
        )
        m = b.frame("memory_bandwidth", per="kind")
        b.tables.append(
            table(
                "copies",
                "Memory copies per rank and kind",
                m,
                [
                    Column("rank", "rank", "int"),
                    Column("kind", "kind"),
                    Column("copies", "copies", "int"),
                    Column("bytes", "bytes", "bytes"),
                    Column("peak_gbps", "peak", "gbps"),
                    Column("mean_gbps", "mean", "gbps"),
                    Column("effective_gbps", "effective", "gbps"),
                ],
            )
        )

    b.step("counters", tables)
    b.step(
        "queue length",
        lambda: b.chart("queue_length", lambda: c.queue_length_chart(b.frame("queue_length"), theme=b.theme)),
    )
    b.step(
        "memory bandwidth",
        lambda: b.chart(
            "memory_bandwidth", lambda: c.memory_bandwidth_chart(b.frame("memory_bandwidth"), theme=b.theme)
        ),
    )
