"""What every tab is made of: the builder a tab's ``build(b)`` fills, tables, figures."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ...analysis.compare import Comparison
from ...errors import TraceviewError
from ...model.display_hook import Headline
from ...model.trace import Trace
from ...progress import Progress
from ...views.colors import Theme
from ..protocol import Chart, ColumnFormat, Figure, Finding, Table, Tone

__all__ = [
    "HEATMAP_HINT",
    "MAX_TABLE_ROWS",
    "Column",
    "Source",
    "TabBuilder",
    "charts",
    "clean",
    "figure_",
    "pct",
    "table",
]


class Source(Protocol):
    """What a tab reads: the trace, the baseline, the analyses' frames (a :class:`~..data.DashboardData`)."""

    trace: Trace
    baseline: Trace | None
    heatmap_bins: int

    @property
    def t0_ns(self) -> int: ...

    @property
    def headline(self) -> Headline: ...

    def frame(self, name: str, *, time_range: tuple[int, int] | None = None, **kw: Any) -> pd.DataFrame: ...

    def comparison(self) -> Comparison: ...


#: Rows kept per table (tables show the top rows; the analyses give everything).
MAX_TABLE_ROWS = 200

#: Characters of a short name in a table's ``name`` column (the full name shows on hover).
NAME_CHARS = 48

#: The hint under a heatmap.
HEATMAP_HINT = "click a cell to zoom the timeline there"


def clean(value: Any) -> Any:
    """JSON-able Python values: numpy scalars unwrapped, NaN and infinities as None."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return [clean(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True)
class Column:
    """A table column: ``key`` in the frame, header ``label``, display ``format``.

    Formats: ``"text"``, ``"int"``, ``"duration"`` (ns), ``"pct"`` (0-100), ``"bytes"``,
    ``"gbps"``, ``"float"``.
    """

    key: str
    label: str
    format: ColumnFormat = "text"


def table(table_id: str, title: str, df: pd.DataFrame, columns: list[Column], *, limit: int = MAX_TABLE_ROWS) -> Table:
    """A frame as a JSON table for the front end: the ``columns`` that exist, the first ``limit`` rows."""
    from ... import format as fmt

    cols = [c for c in columns if c.key in df.columns]
    head = df.head(limit)
    full = {c.key: [str(v) for v in head[c.key].tolist()] for c in cols if c.format == "name"}
    values = [
        fmt.label_names(full[c.key], NAME_CHARS) if c.format == "name" else head[c.key].astype(object).tolist()
        for c in cols
    ]
    rows = [[clean(v) for v in r] for r in zip(*values, strict=True)] if cols else []
    return {
        "id": table_id,
        "title": title,
        "columns": [{"key": c.key, "label": c.label, "format": c.format} for c in cols],
        "rows": rows,
        "total_rows": len(df),
        "full": full,
    }


def figure_(label: str, value: str, hint: str = "", tone: Tone = "") -> Figure:
    """A headline figure: a label, its value as text, what it means, and a tone for colouring."""
    return {"label": label, "value": value, "hint": hint, "tone": tone}


def pct(x: float) -> str:
    """A share in % (:func:`jupyter_traceview.format.percent`)."""
    from ... import format as fmt

    return fmt.percent(x)


def charts() -> Any:
    """The charts package (imports bokeh: only when a tab is computed)."""
    from ... import charts as package

    return package


class TabBuilder:
    """Collects a tab's parts; each step is guarded so that one failing analysis leaves a note, not a blank tab."""

    def __init__(self, data: Source, theme: Theme, time_range: tuple[int, int] | None, progress: Progress | None):
        self.data = data
        self.theme = theme
        self.time_range = time_range
        self.progress = progress
        self.figures: list[Figure] = []
        self.findings: list[Finding] | None = None
        #: The rules that did not fire and why ("rule: reason"), under the findings.
        self.checks: list[str] | None = None
        self.tables: list[Table] = []
        self.charts: list[Chart] = []
        self.notes: list[str] = []
        self._steps: list[tuple[str, Callable[[], None]]] = []

    def step(self, label: str, fn: Callable[[], None]) -> None:
        self._steps.append((label, fn))

    def chart(self, chart_id: str, build: Callable[[], Any], *, wide: bool = True) -> None:
        from bokeh.embed import json_item

        from ...charts import bokeh_theme

        fig = build()
        self.charts.append(
            {
                "id": chart_id,
                "wide": wide,
                "empty": "traceview-empty" in (fig.tags or []),
                "item": json_item(fig, theme=bokeh_theme(self.theme)),
            }
        )

    def frame(self, name: str, **kw: Any) -> pd.DataFrame:
        return self.data.frame(name, time_range=self.time_range, **kw)

    def run(self) -> None:
        """Run the steps (each guarded), reporting progress."""
        total = len(self._steps)
        for i, (label, fn) in enumerate(self._steps):
            if self.progress is not None:
                self.progress(i, total, label)
            try:
                fn()
            except TraceviewError as exc:
                self.notes.append(f"{label}: {exc}")
        if self.progress is not None:
            self.progress(total, total, "done")
