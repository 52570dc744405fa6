"""The Overview tab: headline figures, the findings, the utilisation heatmap, efficiency and the temporal breakdown."""

from __future__ import annotations

import math
from typing import Literal, cast

from ... import format as fmt
from ..protocol import Finding
from .builder import TabBuilder, charts, clean, figure_


def build(b: TabBuilder) -> None:
    data = b.data
    c = charts()

    def figures() -> None:
        h = data.headline
        tones = {
            "GPU busy": _tone(h["gpu_busy_pct"], 80, 50),
            "exposed communication": _tone(h["exposed_comm_pct"], 10, 30, low_is_good=True),
        }
        for label, value, hint in fmt.headline_items(h):
            tone = "warn" if label in fmt.WARNING_LABELS else tones.get(label, "")
            b.figures.append(figure_(label, value, hint, tone))
        eff = b.frame("efficiency")
        if len(eff) and math.isfinite(float(eff["parallel_efficiency_pct"].iloc[0])):
            pe = float(eff["parallel_efficiency_pct"].iloc[0])
            b.figures.append(
                figure_(
                    "parallel efficiency",
                    fmt.percent(pe),
                    "load balance × communication × orchestration",
                    _tone(pe, 70, 40),
                )
            )

    def findings() -> None:
        f = b.frame("findings")
        out: list[Finding] = []
        for r in f.to_dict(orient="records"):
            item = {k: clean(v) for k, v in r.items()}
            item["stake"] = (
                f"{fmt.duration(r['time_at_stake_ns'])} at stake ({fmt.percent(r['time_at_stake_pct'])} of the job span)"
                if r["severity"] != "info" and r["time_at_stake_ns"] > 0
                else ""
            )
            item["fix"] = fmt.saving(r["saving_ns"], r["saving_pct"], r["change"])
            out.append(cast(Finding, item))
        b.findings = out
        e = b.frame("findings", explain=True)
        b.checks = [
            f"{r}: {why}" for r, fired, why in zip(e["rule"], e["fired"], e["reason"], strict=True) if not fired
        ]

    b.step("headline figures", figures)
    b.step("findings", findings)
    b.step(
        "utilisation heatmap",
        lambda: b.chart(
            "heatmap_all",
            lambda: c.utilization_heatmap_chart(
                b.frame("utilization_heatmap", bins=data.heatmap_bins, kind="all"),
                kind="all",
                theme=b.theme,
                t0_ns=data.t0_ns,
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


def _tone(
    value: float | None, good: float, warn: float, *, low_is_good: bool = False
) -> Literal["", "good", "warn", "bad"]:
    """Colour of a share: good from ``good``, warning from ``warn`` (the other way round if ``low_is_good``)."""
    if value is None:
        return ""
    if low_is_good:
        return "good" if value < good else ("warn" if value < warn else "bad")
    return "good" if value >= good else ("warn" if value >= warn else "bad")
