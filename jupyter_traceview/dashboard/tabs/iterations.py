"""The Iterations tab: the ProfilerSteps."""

from __future__ import annotations

from ... import format as fmt
from .builder import Column, TabBuilder, charts, figure_, table


def build(b: TabBuilder) -> None:
    c = charts()

    def tables() -> None:
        st = b.frame("iteration_stats")
        if len(st):
            h = b.data.headline
            items = {label: (value, hint) for label, value, hint in fmt.headline_items(h)}
            for label in ("iterations", "median step"):
                if label in items:
                    b.figures.append(figure_(label, *items[label]))
            spread = st.groupby("step")["duration_ns"].agg(lambda s: s.max() - s.min())
            b.figures.append(
                figure_(
                    "rank spread", fmt.duration(float(spread.median())), "median over steps of slowest − fastest rank"
                )
            )
        else:
            b.notes.append(
                "No ProfilerStep iterations in this trace: profile with torch.profiler's schedule and step()."
            )
        b.tables.append(
            table(
                "iterations",
                "Iterations per rank",
                st,
                [
                    Column("step", "step", "int"),
                    Column("rank", "rank", "int"),
                    Column("duration_ns", "duration", "duration"),
                    Column("gpu_busy_pct", "GPU busy", "pct"),
                    Column("compute_ns", "compute", "duration"),
                    Column("exposed_comm_ns", "exposed comm", "duration"),
                    Column("exposed_comm_pct", "exposed comm %", "pct"),
                    Column("idle_ns", "idle", "duration"),
                ],
            )
        )
        e = b.frame("efficiency", per="iteration")
        b.tables.append(
            table(
                "efficiency",
                "Parallel efficiency per iteration",
                e,
                [
                    Column("step", "step", "int"),
                    Column("elapsed_ns", "elapsed", "duration"),
                    Column("load_balance_pct", "load balance", "pct"),
                    Column("communication_efficiency_pct", "communication", "pct"),
                    Column("orchestration_efficiency_pct", "orchestration", "pct"),
                    Column("parallel_efficiency_pct", "parallel efficiency", "pct"),
                ],
            )
        )

    b.step("iteration statistics", tables)
    b.step(
        "iteration chart",
        lambda: b.chart("iterations", lambda: c.iteration_chart(b.frame("iteration_stats"), theme=b.theme)),
    )
