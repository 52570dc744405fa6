"""Shared by the host-side rules: their partial findings (analysis/host_findings.py) made findings."""

from __future__ import annotations

from typing import Any

from ..context import Context, Finding


def findings_of(ctx: Context, partial: list[dict[str, Any]]) -> list[Finding]:
    return [
        ctx.finding(
            p["id"],
            title=p["title"],
            detail=p["detail"],
            time_at_stake_ns=int(p["time_at_stake_ns"]),
            ranks=p["ranks"],
            evidence=p["evidence"],
            info=bool(p.get("info", False)),
        )
        for p in partial
    ]
