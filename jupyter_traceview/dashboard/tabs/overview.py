"""The Overview tab: headline figures, the findings, the utilisation heatmap, efficiency and the temporal breakdown."""

from __future__ import annotations

import math
from typing import cast

import pandas as pd

from ...model.trace import _fmt_ns, _ranges
from ..protocol import Finding
from .builder import TabBuilder, charts, clean, figure_, pct


def build(b: TabBuilder) -> None:
    data = b.data
    c = charts()

    def figures() -> None:
        s = b.frame("summary")
        eff = b.frame("efficiency")
        its = b.frame("iterations")
        meta = data.trace.metadata
        devices = sorted({str(d) for d in meta.get("device_name", pd.Series(dtype=str)) if d})
        n = len(data.trace.ranks)
        b.figures.append(
            figure_("ranks", f"{n}" + (f" × {devices[0]}" if len(devices) == 1 else ""), _ranges(data.trace.ranks))
        )
        if len(eff) and math.isfinite(float(eff["elapsed_ns"].iloc[0])) and int(eff["elapsed_ns"].iloc[0]) > 0:
            b.figures.append(
                figure_("GPU elapsed", _fmt_ns(int(eff["elapsed_ns"].iloc[0])), "first GPU work to last, all ranks")
            )
        if len(its):
            steps = sorted(set(its["step"].tolist()))
            per_step = its.groupby("step")["dur_ns"].max()
            b.figures.append(
                figure_(
                    "iterations",
                    f"{len(steps)} · median {_fmt_ns(float(per_step.median()))}",
                    f"steps {_ranges(steps)}; a step lasts as long as its slowest rank",
                )
            )
        busy = s["gpu_busy_pct"].dropna() if "gpu_busy_pct" in s else pd.Series(dtype=float)
        if len(busy):
            mean = float(busy.mean())
            b.figures.append(
                figure_(
                    "GPU busy",
                    pct(mean),
                    f"mean over ranks ({pct(float(busy.min()))} … {pct(float(busy.max()))})",
                    "good" if mean >= 80 else ("warn" if mean >= 50 else "bad"),
                )
            )
            comp = float(s["compute_pct"].mean())
            b.figures.append(figure_("compute", pct(comp), "share of the GPU span with a compute kernel running"))
            exposed = float(s["exposed_comm_pct"].mean())
            b.figures.append(
                figure_(
                    "exposed communication",
                    pct(exposed),
                    "communication with nothing else running (mean over ranks)",
                    "bad" if exposed >= 30 else ("warn" if exposed >= 10 else "good"),
                )
            )
        if len(eff) and math.isfinite(float(eff["parallel_efficiency_pct"].iloc[0])):
            pe = float(eff["parallel_efficiency_pct"].iloc[0])
            b.figures.append(
                figure_(
                    "parallel efficiency",
                    pct(pe),
                    "load balance × communication × orchestration",
                    "good" if pe >= 70 else ("warn" if pe >= 40 else "bad"),
                )
            )
        b.figures.append(figure_("events", f"{int(s['events'].sum()):,}", f"{int(s['kernels'].sum()):,} kernels"))

    def findings() -> None:
        f = b.frame("findings")
        out: list[Finding] = []
        for r in f.to_dict(orient="records"):
            item = {k: clean(v) for k, v in r.items()}
            item["stake"] = (
                f"{_fmt_ns(r['time_at_stake_ns'])} at stake ({r['time_at_stake_pct']:.1f}% of the elapsed time)"
                if r["severity"] != "info" and r["time_at_stake_ns"] > 0
                else ""
            )
            out.append(cast(Finding, item))
        b.findings = out

    b.step("headline figures", figures)
    b.step("findings", findings)
    b.step(
        "utilisation heatmap",
        lambda: b.chart(
            "heatmap_all",
            lambda: c.utilization_heatmap_chart(
                b.frame("utilization_heatmap", bins=data.heatmap_bins, kind="all"), kind="all", theme=b.theme
            ),
        ),
    )
    b.step(
        "efficiency",
        lambda: b.chart("efficiency", lambda: c.efficiency_chart(b.frame("efficiency"), theme=b.theme), wide=False),
    )
    b.step(
        "temporal breakdown",
        lambda: b.chart(
            "temporal", lambda: c.temporal_breakdown_chart(b.frame("temporal_breakdown"), theme=b.theme), wide=False
        ),
    )
