"""The Memory tab: allocated and reserved memory over time with the peaks marked (linked to the
timeline), what holds memory at each peak, allocations per operator, allocator health.

Every figure comes from the memory analyses (:mod:`jupyter_traceview.analysis.memory`),
through the dashboard's frame cache, so the report and the notebook show the same numbers.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd

from ...analysis.memory import device_label
from ...model.trace import _fmt_ns
from .builder import Column, TabBuilder, charts, figure_, table

__all__ = ["NO_RECORDS", "build"]

#: What the tab says about a trace without memory records.
NO_RECORDS = (
    "No memory records in this trace: record with profile_memory=True "
    "(torch.profiler.profile(profile_memory=True), or %%traceprofile --memory)."
)

#: Points per curve of the memory chart (the resampling keeps each bin's maximum).
CHART_POINTS = 1500


def _bytes(n: float) -> str:
    from ...charts._style import bytes_text

    return bytes_text([n])[0]


def _with_device(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    out.insert(
        1,
        "memory_device",
        [device_label(str(t), int(d)) for t, d in zip(out["device_type"], out["device"], strict=True)],
    )
    return out


def build(b: TabBuilder) -> None:
    """The Memory tab (shown for traces with memory records)."""
    c = charts()

    def figures() -> None:
        peaks = b.frame("memory_peaks", per="rank")
        if peaks.empty:
            b.notes.append(NO_RECORDS)
            return
        top = peaks.sort_values("peak_allocated_bytes", ascending=False).iloc[0]
        where = f"rank {int(top['rank'])} · {device_label(str(top['device_type']), int(top['device']))}"
        b.figures.append(
            figure_("peak allocated", _bytes(int(top["peak_allocated_bytes"])), f"{where}, in {top['operator_stack']}")
        )
        res = peaks.sort_values("peak_reserved_bytes", ascending=False).iloc[0]
        if int(res["peak_reserved_bytes"]) > 0:
            cap = float(res["capacity_pct"])
            hint = f"{cap:.1f}% of the device's memory" if cap == cap else "allocated + cached by the allocator"
            tone: Literal["", "good", "warn", "bad"] = "bad" if cap >= 90 else ("warn" if cap >= 75 else "")
            b.figures.append(figure_("peak reserved", _bytes(int(res["peak_reserved_bytes"])), hint, tone))
        stats = b.frame("memory_allocator_stats", per="rank")
        calls = int(stats["calls"].sum())
        b.figures.append(figure_("allocator calls", f"{calls:,}", f"{int(stats['allocs'].sum()):,} allocations"))
        ooms = int(stats["ooms"].sum())
        if ooms:
            b.figures.append(figure_("out of memory", f"{ooms:,}", "failed allocation requests", "bad"))

    def chart() -> None:
        b.chart(
            "memory_timeline",
            lambda: c.memory_timeline_chart(
                b.frame("memory_timeline", resample=CHART_POINTS),
                peaks=b.frame("memory_peaks", per="rank"),
                origin_ns=b.data.t0_ns,
                theme=b.theme,
            ),
        )

    dev = Column("memory_device", "device")

    def tables() -> None:
        peaks = b.frame("memory_peaks")
        if peaks.empty:
            return
        peaks = _with_device(peaks).assign(peak_at=lambda d: [_fmt_ns(int(t) - b.data.t0_ns) for t in d["peak_ts_ns"]])
        b.tables.append(
            table(
                "memory_peaks",
                "Peaks per rank, device and iteration",
                peaks,
                [
                    Column("rank", "rank", "int"),
                    dev,
                    Column("step", "step", "int"),
                    Column("peak_allocated_bytes", "peak allocated", "bytes"),
                    Column("peak_at", "at"),
                    Column("operator_stack", "operators running"),
                    Column("top_holder", "top holder"),
                    Column("top_holder_bytes", "held", "bytes"),
                    Column("peak_reserved_bytes", "peak reserved", "bytes"),
                    Column("capacity_pct", "of device", "pct"),
                ],
            )
        )
        holders = _with_device(b.frame("memory_peak_holders", per="rank"))
        b.tables.append(
            table(
                "memory_holders",
                "What holds memory at each rank's peak (live allocations by the operator that made them)",
                holders,
                [
                    Column("rank", "rank", "int"),
                    dev,
                    Column("operator", "allocated by"),
                    Column("bytes", "bytes", "bytes"),
                    Column("count", "allocations", "int"),
                    Column("share_pct", "of the peak", "pct"),
                ],
            )
        )
        ops = _with_device(b.frame("memory_by_operator"))
        b.tables.append(
            table(
                "memory_operators",
                "Allocations per operator (children included; self = made directly)",
                ops,
                [
                    Column("rank", "rank", "int"),
                    dev,
                    Column("operator", "operator"),
                    Column("allocs", "allocations", "int"),
                    Column("alloc_bytes", "allocated", "bytes"),
                    Column("freed_bytes", "freed", "bytes"),
                    Column("net_bytes", "net", "bytes"),
                    Column("max_alloc_bytes", "largest", "bytes"),
                    Column("self_alloc_bytes", "self allocated", "bytes"),
                    Column("temporary_bytes", "temporaries", "bytes"),
                    Column("retained_bytes", "outlived the call", "bytes"),
                    Column("median_lifetime_ns", "median lifetime", "duration"),
                ],
            )
        )
        stats = _with_device(b.frame("memory_allocator_stats"))
        b.tables.append(
            table(
                "memory_allocator",
                "Allocator per iteration",
                stats,
                [
                    Column("rank", "rank", "int"),
                    dev,
                    Column("step", "step", "int"),
                    Column("calls", "calls", "int"),
                    Column("alloc_bytes", "allocated", "bytes"),
                    Column("freed_bytes", "freed", "bytes"),
                    Column("end_allocated_bytes", "allocated at step end", "bytes"),
                    Column("end_reserved_bytes", "reserved at step end", "bytes"),
                    Column("max_cached_bytes", "largest cache", "bytes"),
                    Column("fragmentation_pct", "cached at reserved peak", "pct"),
                    Column("ooms", "OOMs", "int"),
                ],
            )
        )
        ooms = b.frame("memory_oom_events")
        if len(ooms):
            b.tables.append(
                table(
                    "memory_ooms",
                    "Out-of-memory events",
                    _with_device(ooms),
                    [
                        Column("rank", "rank", "int"),
                        dev,
                        Column("step", "step", "int"),
                        Column("operator", "operator"),
                        Column("request_bytes", "requested", "bytes"),
                        Column("allocated_bytes", "allocated", "bytes"),
                        Column("reserved_bytes", "reserved", "bytes"),
                    ],
                )
            )

    b.step("memory figures", figures)
    b.step("memory chart", chart)
    b.step("memory tables", tables)
