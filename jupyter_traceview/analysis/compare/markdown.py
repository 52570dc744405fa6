"""A :class:`Comparison` as a Markdown summary short enough for a pull-request comment."""

from __future__ import annotations

from typing import Protocol

import pandas as pd

from ... import format as fmt

__all__ = ["MAX_LINES", "markdown"]

#: The summary never exceeds this many lines.
MAX_LINES = 60
_CAUSES = 10
_RANKS = 16
_WARNINGS = 5


class Comparison(Protocol):
    """What the summary reads of a :class:`.core.Comparison` (named here, not imported: core
    imports this module to show a comparison in Jupyter)."""

    @property
    def causes(self) -> pd.DataFrame: ...
    @property
    def verdict(self) -> str: ...
    @property
    def steps(self) -> pd.DataFrame: ...
    @property
    def per_rank(self) -> pd.DataFrame: ...
    @property
    def warnings(self) -> tuple[str, ...]: ...
    @property
    def base_ns(self) -> float: ...
    @property
    def new_ns(self) -> float: ...
    @property
    def delta_ns(self) -> float: ...
    @property
    def delta_pct(self) -> float: ...
    @property
    def noise_test(self) -> str: ...


def _signed(ns: float) -> str:
    return ("+" if ns >= 0 else "-") + fmt.duration(abs(ns))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(c: Comparison, *, base: str = "base", new: str = "new") -> str:
    """The verdict, the top causes and the per-rank table, in at most ``MAX_LINES`` lines."""
    sign = "+" if c.delta_ns >= 0 else "-"
    lines = [
        f"### traceview compare: **{c.verdict}** ({sign}{fmt.percent(abs(c.delta_pct))})",
        "",
        f"Mean step `{_cell(base)}` {fmt.duration(c.base_ns)} -> `{_cell(new)}` {fmt.duration(c.new_ns)} "
        f"({_signed(c.delta_ns)}) over {fmt.plural(len(c.steps), 'matched step')}.",
        f"Noise: {_cell(c.noise_test)}.",
        "",
        "| cause | status | base | new | change | share | within noise |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    lines.extend(
        f"| {_cell(fmt.short_name(row.cause, 60))} | {row.status} | {fmt.duration(row.base_ns)} | "
        f"{fmt.duration(row.new_ns)} | {_signed(row.delta_ns)} | {fmt.percent(row.share_pct)} | "
        f"{'yes' if row.within_noise else 'no'} |"
        for row in c.causes.head(_CAUSES).itertuples(index=False)
    )
    if len(c.causes) > _CAUSES:
        rest = float(c.causes["delta_ns"].iloc[_CAUSES:].sum())
        lines.append(f"| {len(c.causes) - _CAUSES} more causes | | | | {_signed(rest)} | | |")
    if len(c.per_rank) > 1:
        lines += ["", "| rank | base | new | change | largest change |", "|---:|---:|---:|---:|---|"]
        ranks = c.per_rank.reindex(c.per_rank["delta_ns"].abs().sort_values(ascending=False).index).head(_RANKS)
        for row in ranks.sort_values("rank").itertuples(index=False):
            lines.append(
                f"| {row.rank} | {fmt.duration(row.base_ns)} | {fmt.duration(row.new_ns)} | "
                f"{_signed(row.delta_ns)} ({fmt.percent(row.delta_pct)}) | {_cell(fmt.short_name(row.top_cause, 48))} |"
            )
        if len(c.per_rank) > _RANKS:
            lines.append(f"\n{len(c.per_rank) - _RANKS} more ranks (the {_RANKS} that changed most are shown).")
    if c.warnings:
        lines += ["", *[f"- {_cell(w)}" for w in c.warnings[:_WARNINGS]]]
        if len(c.warnings) > _WARNINGS:
            lines.append(f"- and {len(c.warnings) - _WARNINGS} more notes")
    text = "\n".join(lines[:MAX_LINES])
    return text + "\n"
