"""The Operators tab: the host side (operators by self time, the call tree, the CPU threads, host syncs).

The main view of a CPU-only trace (the dashboard opens on it when the trace has no GPU work).
"""

from __future__ import annotations

from typing import cast

from ... import format as fmt
from ..protocol import Finding
from .builder import Column, TabBuilder, charts, clean, figure_, pct, table

#: The findings shown here (the rules about the host).
HOST_FINDINGS = ("dataloader_stall", "python_overhead", "host_sync_lines", "cpu_hotspots", "blocking_sync")


def build(b: TabBuilder) -> None:
    c = charts()
    ranks = b.data.trace.ranks
    rank = ranks[0]

    def figures_and_table() -> None:
        ops = b.frame("cpu_op_breakdown")
        th = b.frame("thread_activity", bins=1)
        mine = th.loc[th["rank"] == rank]
        if len(mine):
            main = mine.loc[mine["op_ns"].idxmax()]
            width = int(main["end_ns"] - main["start_ns"])
            b.figures.append(figure_("host span", fmt.duration(width), f"rank {rank}, {main['thread']}"))
            for key, label, hint in (
                ("op_ns", "in operators", "share of the main thread's time in operators and runtime calls"),
                ("dataloader_ns", "data loading", "in the DataLoader's next(), outside operators"),
                ("python_ns", "Python", "in Python frames outside operators (with_stack traces)"),
            ):
                if key == "op_ns" or int(main[key]) > 0:
                    b.figures.append(figure_(label, pct(100.0 * int(main[key]) / max(width, 1)), hint))
        if len(ops):
            b.figures.append(figure_("operators", f"{ops['name'].nunique():,}", f"{int(ops['calls'].sum()):,} calls"))
        cols = [
            Column("name", "operator"),
            Column("kind", "kind"),
            Column("calls", "calls", "int"),
            Column("self_ns", "self CPU", "duration"),
            Column("self_pct", "self %", "pct"),
            Column("total_ns", "total CPU", "duration"),
            Column("total_pct", "total %", "pct"),
            Column("mean_ns", "mean", "duration"),
            Column("max_ns", "max", "duration"),
        ]
        if len(ranks) > 1:
            cols.insert(0, Column("rank", "rank", "int"))
        if len(ops) and int(ops["gpu_ns"].sum()) > 0:
            cols += [
                Column("gpu_ns", "GPU launched", "duration"),
                Column("self_gpu_ns", "GPU, own launches", "duration"),
            ]
        b.tables.append(table("operators", "Operators by self CPU time (as prof.key_averages())", ops, cols))

    def findings() -> None:
        # only the host rules run (when the Overview has run them all, its rows are filtered)
        f = b.frame("findings", only=HOST_FINDINGS)
        out: list[Finding] = []
        for r in f.to_dict(orient="records"):
            item = {k: clean(v) for k, v in r.items()}
            item["stake"] = (
                f"{fmt.duration(r['time_at_stake_ns'])} at stake ({r['time_at_stake_pct']:.1f}% of the elapsed time)"
                if r["severity"] != "info" and r["time_at_stake_ns"] > 0
                else ""
            )
            item["fix"] = fmt.saving(r["saving_ns"], r["saving_pct"], r["change"])
            out.append(cast(Finding, item))
        b.findings = out

    def syncs() -> None:
        s = b.frame("host_syncs")
        if len(s):
            b.tables.append(
                table(
                    "host_syncs",
                    "Host syncs and the Python frame that issued them",
                    s,
                    [
                        Column("rank", "rank", "int"),
                        Column("name", "call"),
                        Column("python_line", "Python frame"),
                        Column("calls", "calls", "int"),
                        Column("total_ns", "total", "duration"),
                        Column("max_ns", "max", "duration"),
                    ],
                )
            )

    b.step("operators", figures_and_table)
    b.step("host findings", findings)
    b.step(
        "call tree",
        lambda: b.chart("call_tree", lambda: c.call_tree_chart(b.frame("call_tree", ranks=rank), theme=b.theme)),
    )
    b.step(
        "threads",
        lambda: b.chart(
            "threads",
            lambda: c.thread_activity_chart(b.frame("thread_activity", ranks=rank), theme=b.theme, t0_ns=b.data.t0_ns),
        ),
    )
    b.step("host syncs", syncs)
