"""The Iterations tab: the ProfilerSteps."""

from __future__ import annotations

from ...model.trace import _fmt_ns, _ranges
from .builder import Column, TabBuilder, charts, figure_, table


def build(b: TabBuilder) -> None:
    c = charts()

    def tables() -> None:
        st = b.frame("iteration_stats")
        if len(st):
            per_step = st.groupby("step")["duration_ns"].max()
            b.figures.append(figure_("iterations", f"{len(per_step)}", f"steps {_ranges(per_step.index.tolist())}"))
            b.figures.append(figure_("median step", _fmt_ns(float(per_step.median())), "slowest rank of each step"))
            spread = st.groupby("step")["duration_ns"].agg(lambda s: s.max() - s.min())
            b.figures.append(
                figure_("rank spread", _fmt_ns(float(spread.median())), "median over steps of slowest − fastest rank")
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
