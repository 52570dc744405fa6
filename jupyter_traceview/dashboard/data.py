"""What the dashboard shows, as JSON: the one place its content is computed, for every host.

``tv.Dashboard`` (an anywidget in a notebook), the Jupyter server behind the Traces
sidebar (over HTTP) and ``traceview report`` (a static HTML file) all show the same
content, computed here from a trace:

* :meth:`DashboardData.payload`: what the dashboard needs to open (cheap: no analysis);
* :meth:`DashboardData.tab`: one tab's headline figures, findings, tables and charts
  (``bokeh.embed.json_item`` dicts), computed on demand and cached;
* :meth:`DashboardData.link`: where a click on a chart (a heatmap cell, a rank's bar, an
  iteration) takes the timeline;
* :func:`answer`: the answer to each command of the dashboard's front end (the four
  commands of the timeline included), the same function whatever carries the messages.

The contract is documented in ``docs/frontend.md`` ("The dashboard's protocol"); the
TypeScript mirror is ``js/dashboard/protocol.ts``.
"""

from __future__ import annotations

import json
import math
import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..errors import TraceSelectionError, TraceviewError, TraceviewWarning
from ..model.trace import Trace, _fmt_ns, _ranges
from ..views.colors import Theme
from ..views.timeline import protocol as timeline_protocol
from ..views.timeline.index import NO_KIND, LevelOfDetail, TimelineIndex

__all__ = [
    "COMMANDS",
    "PROTOCOL",
    "TABS",
    "DashboardData",
    "Progress",
    "answer",
    "bokehjs_source",
    "timeline_overview",
]

#: Version of the payload and command contract (docs/frontend.md); bumped on breaking changes.
PROTOCOL = 1

#: The dashboard's tabs, in order: (id, label).
TABS: tuple[tuple[str, str], ...] = (
    ("overview", "Overview"),
    ("timeline", "Timeline"),
    ("breakdown", "Breakdown"),
    ("overlap", "Overlap"),
    ("kernels", "Kernels"),
    ("communication", "Communication"),
    ("iterations", "Iterations"),
    ("counters", "Counters"),
)
_DIFF_TAB = ("diff", "Diff")

#: Commands of the dashboard's front end (besides the timeline's, see timeline_protocol.COMMANDS).
COMMANDS = ("_payload", "_tab", "_link", "_timeline", "_bokehjs")

#: Rows kept per table (tables show the top rows; the analyses give everything).
MAX_TABLE_ROWS = 200

#: ``progress(done, total, label)``: called while a tab is computed.
Progress = Callable[[int, int, str], None]


@cache
def bokehjs_source() -> tuple[str, bytes]:
    """``(version, BokehJS)``: the minified BokehJS of the installed bokeh package.

    Charts are bokeh JSON items; the browser renders them with this exact BokehJS, which
    the widget sends once (and a server serves), so that versions always match and
    nothing comes from a CDN.
    """
    import bokeh
    from bokeh.util.paths import bokehjs_path

    path = Path(bokehjs_path()) / "js" / "bokeh.min.js"
    return bokeh.__version__, path.read_bytes()


def _clean(value: Any) -> Any:
    """JSON-able Python values: numpy scalars unwrapped, NaN and infinities as None."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_clean(v) for v in value.tolist()]
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
    format: str = "text"


def table(table_id: str, title: str, df: pd.DataFrame, columns: list[Column], *, limit: int = MAX_TABLE_ROWS) -> dict:
    """A frame as a JSON table for the front end: the ``columns`` that exist, the first ``limit`` rows."""
    cols = [c for c in columns if c.key in df.columns]
    head = df.head(limit)
    rows = (
        [[_clean(v) for v in r] for r in zip(*(head[c.key].astype(object).tolist() for c in cols), strict=True)]
        if cols
        else []
    )
    return {
        "id": table_id,
        "title": title,
        "columns": [{"key": c.key, "label": c.label, "format": c.format} for c in cols],
        "rows": rows,
        "total_rows": len(df),
    }


def figure_(label: str, value: str, hint: str = "", tone: Literal["", "good", "warn", "bad"] = "") -> dict:
    """A headline figure: a label, its value as text, what it means, and a tone for colouring."""
    return {"label": label, "value": value, "hint": hint, "tone": tone}


def _pct(x: float) -> str:
    return f"{x:.1f}%" if math.isfinite(x) else "-"


class DashboardData:
    """The dashboard's content for one trace, computed on demand and cached.

    Parameters
    ----------
    trace
        The trace shown.
    baseline
        Another trace to compare with: adds a "Diff" tab (``tv.trace_diff(baseline, trace)``).
    heatmap_bins
        Time bins of the utilisation heatmaps.
    lod
        The timeline's level of detail (see :class:`~jupyter_traceview.views.timeline.index.LevelOfDetail`).

    Every result is a pure function of the trace (and the request); this object only keeps
    the analyses' frames so that tabs, theme switches and clicks do not compute them again.
    """

    def __init__(
        self,
        trace: Trace,
        *,
        baseline: Trace | None = None,
        heatmap_bins: int = 200,
        lod: LevelOfDetail | None = None,
    ) -> None:
        if not isinstance(trace, Trace):
            raise TypeError(f"DashboardData needs a Trace (from tv.load), got {type(trace).__name__}")
        if baseline is not None and not isinstance(baseline, Trace):
            raise TypeError(f"baseline must be a Trace (from tv.load), got {type(baseline).__name__}")
        self.trace = trace
        self.baseline = baseline
        self.heatmap_bins = int(heatmap_bins)
        self.lod = lod or LevelOfDetail()
        self._frames: dict[tuple[Any, ...], pd.DataFrame] = {}

    # ------------------------------------------------------------------ basics
    @property
    def tabs(self) -> list[tuple[str, str]]:
        return [*TABS, _DIFF_TAB] if self.baseline is not None else list(TABS)

    @property
    def t0_ns(self) -> int:
        """Origin of the relative times the front end speaks (the trace's first event)."""
        return int(self.trace.t0_ns)

    @property
    def index(self) -> TimelineIndex:
        """The timeline's level-of-detail index (built on first use, kept with the trace)."""
        return TimelineIndex.of(self.trace)

    def absolute(self, rel: Any) -> tuple[int, int] | None:
        """A relative ``[lo, hi]`` (float ns since :attr:`t0_ns`, as the timeline speaks) as absolute ns."""
        if rel is None or len(rel) != 2:
            return None
        lo, hi = sorted(float(x) for x in rel)
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo < 1:
            return None
        return self.t0_ns + math.floor(lo), self.t0_ns + math.ceil(hi)

    def frame(self, name: str, *, time_range: tuple[int, int] | None = None, **kw: Any) -> pd.DataFrame:
        """An analysis' frame (``tv.<name>(trace, time_range=..., **kw)``), computed once.

        Warnings (a CPU-only trace, no iterations) are not shown here: the tabs say what
        is missing in their own words.
        """
        key = (name, time_range, tuple(sorted(kw.items())))
        hit = self._frames.get(key)
        if hit is not None:
            return hit
        from .. import analysis

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TraceviewWarning)
            if name == "iterations":
                df = self.trace.iterations
            elif name == "trace_diff":
                if self.baseline is None:
                    raise TraceviewError("no baseline to compare with: DashboardData(trace, baseline=other_trace)")
                df = analysis.trace_diff(self.baseline, self.trace, **kw)
            else:
                fn = getattr(analysis, name)
                df = fn(self.trace, time_range=time_range, **kw) if time_range is not None else fn(self.trace, **kw)
        self._frames[key] = df
        return df

    # ------------------------------------------------------------------ payload
    def payload(self) -> dict[str, Any]:
        """What the dashboard needs to open: no analysis runs (see docs/frontend.md)."""
        import bokeh

        h = self.trace._headline()
        its = h["iterations"]
        figures = [
            figure_("ranks", f"{h['ranks']} ({_ranges(self.trace.ranks)})" if h["ranks"] > 1 else str(h["ranks"])),
            figure_("span", _fmt_ns(h["span_ns"])),
            figure_("events", f"{h['events']:,}"),
            figure_("kernels", f"{h['kernels']:,}"),
            figure_("iterations", _ranges(its) if its else "none"),
        ]
        if h["devices"]:
            figures.append(figure_("devices", ", ".join(h["devices"])))
        return {
            "protocol": PROTOCOL,
            "source": self.trace.source or "(memory)",
            "title": Path(self.trace.source).name if self.trace.source else "trace",
            "ranks": list(self.trace.ranks),
            "t0_ns": str(self.t0_ns),
            "span_ns": int(h["span_ns"]),
            "tabs": [{"id": i, "label": label} for i, label in self.tabs],
            "headline": figures,
            "bokeh_version": bokeh.__version__,
        }

    # ------------------------------------------------------------------ tabs
    def tab(
        self,
        name: str,
        *,
        theme: Theme = "light",
        time_range: tuple[int, int] | None = None,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        """One tab's content (JSON-able): ``figures``, ``findings``, ``tables``, ``charts``, ``notes``.

        ``time_range`` (absolute ns) narrows the Breakdown tab (the range selected on the
        timeline); other tabs show the whole trace. ``progress(done, total, label)`` is
        called before each analysis.
        """
        builders: dict[str, Callable[[_TabBuilder], None]] = {
            "overview": _overview,
            "timeline": _timeline_tab,
            "breakdown": _breakdown,
            "overlap": _overlap,
            "kernels": _kernels,
            "communication": _communication,
            "iterations": _iterations,
            "counters": _counters,
            "diff": _diff,
        }
        if name not in dict(self.tabs):
            raise TraceSelectionError.unknown("tab", name, [t for t, _ in self.tabs])
        if theme not in ("light", "dark"):
            raise ValueError(f"theme must be 'light' or 'dark', got {theme!r}")
        t = time.perf_counter()
        b = _TabBuilder(self, theme, time_range if name == "breakdown" else None, progress)
        builders[name](b)
        out = b.result()
        out["tab"] = name
        out["theme"] = theme
        out["range"] = (
            [float(time_range[0] - self.t0_ns), float(time_range[1] - self.t0_ns)]
            if time_range is not None and name == "breakdown"
            else None
        )
        out["elapsed_ms"] = round((time.perf_counter() - t) * 1e3, 1)
        return out

    # ------------------------------------------------------------------ links
    def link(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Where a click on a chart takes the timeline: ``{x_range, ranks, search}`` (relative ns).

        ``msg`` names what was clicked: ``{"target": "heatmap", "rank", "bin", "heatmap"}``,
        ``{"target": "rank", "rank"}`` (with an optional ``range``, the chart's relative
        time range), ``{"target": "iteration", "rank", "step"}`` or ``{"target": "kernel",
        "rank", "name"}``. The window gets a margin of 4% on each side.
        """
        target = str(msg.get("target", ""))
        if "rank" not in msg:
            raise ValueError(f"link: the message names no rank: {msg!r}")
        rank = int(msg["rank"])
        if rank not in self.trace.ranks:
            raise TraceSelectionError.unknown("rank", rank, self.trace.ranks)
        search = None
        if target == "heatmap":
            kind = str(msg.get("heatmap", "all"))
            hm = self.frame("utilization_heatmap", bins=self.heatmap_bins, kind=kind)
            row = hm.loc[(hm["rank"] == rank) & (hm["bin"] == int(msg["bin"]))]
            if row.empty:
                raise ValueError(f"link: no heatmap bin {msg.get('bin')} for rank {rank}")
            # Column by column: a row as a Series would be float64 and round the absolute ns.
            origin = int(row["origin_ns"].iloc[0])
            lo = origin + int(row["bin_start_ns"].iloc[0])
            hi = origin + int(row["bin_end_ns"].iloc[0])
        elif target == "iteration":
            its = self.frame("iterations")
            row = its.loc[(its["rank"] == rank) & (its["step"] == int(msg["step"]))]
            if row.empty:
                raise TraceSelectionError.unknown(
                    "iteration", int(msg["step"]), sorted(set(its.loc[its["rank"] == rank, "step"].tolist()))
                )
            start, end = int(row["start_ns"].iloc[0]), int(row["end_ns"].iloc[0])
            gpu_start, gpu_end = int(row["gpu_start_ns"].iloc[0]), int(row["gpu_end_ns"].iloc[0])
            lo = min(start, gpu_start) if gpu_start >= 0 else start
            hi = max(end, gpu_end)
        elif target in ("rank", "kernel"):
            rng = self.absolute(msg.get("range"))
            lo, hi = rng if rng is not None else self._rank_span(rank)
            if target == "kernel" and msg.get("name"):
                search = re.escape(str(msg["name"]))
        else:
            raise ValueError(f"link: unknown target {target!r}; targets are heatmap, rank, iteration, kernel")
        pad = max((hi - lo) * 0.04, 500.0)
        out: dict[str, Any] = {
            "x_range": [float(lo - self.t0_ns) - pad, float(hi - self.t0_ns) + pad],
            "ranks": [rank],
        }
        if search is not None:
            out["search"] = search
        return out

    def _rank_span(self, rank: int) -> tuple[int, int]:
        ev = self.trace.rank_data(rank).events
        if not len(ev):
            return self.t0_ns, self.t0_ns + 1
        ts = ev["ts_ns"].to_numpy()
        return int(ts.min()), int((ts + ev["dur_ns"].to_numpy()).max())

    # ------------------------------------------------------------------ timeline
    def timeline_state(self) -> dict[str, Any]:
        """The timeline's initial state (builds the index): the traits of ``tv.Timeline``."""
        return timeline_protocol.timeline_state(self.trace, self.index)


# ---------------------------------------------------------------------- commands
def answer(
    data: DashboardData, command: str, msg: dict[str, Any] | None, *, progress: Progress | None = None
) -> tuple[dict[str, Any], list[bytes]]:
    """The answer to one command of the dashboard's front end: ``(JSON message, binary buffers)``.

    Commands (docs/frontend.md): ``_payload``, ``_tab`` ``{tab, theme, range}``, ``_link``
    (see :meth:`DashboardData.link`), ``_timeline`` (the timeline's initial state),
    ``_bokehjs`` (``{version}`` and BokehJS as one buffer) and the timeline's ``_window``,
    ``_details``, ``_find``, ``_summary``. Errors are answered as ``{"error": message}``.
    """
    msg = msg or {}
    if command in timeline_protocol.COMMANDS:
        return timeline_protocol.answer(data.index, command, msg, lod=data.lod)
    try:
        if command == "_payload":
            return data.payload(), []
        if command == "_tab":
            theme = msg.get("theme", "light")
            out = data.tab(
                str(msg.get("tab", "overview")),
                theme="dark" if theme == "dark" else "light",
                time_range=data.absolute(msg.get("range")),
                progress=progress,
            )
            out["seq"] = msg.get("seq")
            return out, []
        if command == "_link":
            return data.link(msg), []
        if command == "_timeline":
            return {"state": data.timeline_state()}, []
        if command == "_bokehjs":
            version, js = bokehjs_source()
            return {"version": version, "bytes": len(js)}, [js]
    except (TraceviewError, ValueError, KeyError, TypeError) as exc:
        return {"error": str(exc), "seq": msg.get("seq")}, []
    return {
        "error": f"unknown command {command!r}; commands are {', '.join(COMMANDS + timeline_protocol.COMMANDS)}"
    }, []


# ---------------------------------------------------------------------- the tabs
class _TabBuilder:
    """Collects a tab's parts; each step is guarded so that one failing analysis leaves a note, not a blank tab."""

    def __init__(
        self, data: DashboardData, theme: Theme, time_range: tuple[int, int] | None, progress: Progress | None
    ):
        self.data = data
        self.theme = theme
        self.time_range = time_range
        self.progress = progress
        self.figures: list[dict[str, Any]] = []
        self.findings: list[dict[str, Any]] | None = None
        self.tables: list[dict[str, Any]] = []
        self.charts: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self._steps: list[tuple[str, Callable[[], None]]] = []

    def step(self, label: str, fn: Callable[[], None]) -> None:
        self._steps.append((label, fn))

    def chart(self, chart_id: str, build: Callable[[], Any], *, wide: bool = True) -> None:
        from bokeh.embed import json_item

        from ..charts import bokeh_theme

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

    def result(self) -> dict[str, Any]:
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
        out: dict[str, Any] = {
            "figures": self.figures,
            "tables": self.tables,
            "charts": self.charts,
            "notes": self.notes,
        }
        if self.findings is not None:
            out["findings"] = self.findings
        return out


_HEATMAP_HINT = "click a cell to zoom the timeline there"


def _overview(b: _TabBuilder) -> None:
    data = b.data
    c = _charts()

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
                    _pct(mean),
                    f"mean over ranks ({_pct(float(busy.min()))} … {_pct(float(busy.max()))})",
                    "good" if mean >= 80 else ("warn" if mean >= 50 else "bad"),
                )
            )
            comp = float(s["compute_pct"].mean())
            b.figures.append(figure_("compute", _pct(comp), "share of the GPU span with a compute kernel running"))
            exposed = float(s["exposed_comm_pct"].mean())
            b.figures.append(
                figure_(
                    "exposed communication",
                    _pct(exposed),
                    "communication with nothing else running (mean over ranks)",
                    "bad" if exposed >= 30 else ("warn" if exposed >= 10 else "good"),
                )
            )
        if len(eff) and math.isfinite(float(eff["parallel_efficiency_pct"].iloc[0])):
            pe = float(eff["parallel_efficiency_pct"].iloc[0])
            b.figures.append(
                figure_(
                    "parallel efficiency",
                    _pct(pe),
                    "load balance × communication × orchestration",
                    "good" if pe >= 70 else ("warn" if pe >= 40 else "bad"),
                )
            )
        b.figures.append(figure_("events", f"{int(s['events'].sum()):,}", f"{int(s['kernels'].sum()):,} kernels"))

    def findings() -> None:
        f = b.frame("findings")
        out = []
        for r in f.to_dict(orient="records"):
            item = {k: _clean(v) for k, v in r.items()}
            item["stake"] = (
                f"{_fmt_ns(r['time_at_stake_ns'])} at stake ({r['time_at_stake_pct']:.1f}% of the elapsed time)"
                if r["severity"] != "info" and r["time_at_stake_ns"] > 0
                else ""
            )
            out.append(item)
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


def _timeline_tab(b: _TabBuilder) -> None:
    """The Timeline tab draws the timeline itself (``_timeline`` and the timeline's commands): nothing here."""


def _breakdown(b: _TabBuilder) -> None:
    c = _charts()
    data = b.data

    def figures() -> None:
        t = b.frame("temporal_breakdown")
        if b.time_range is not None:
            lo, hi = b.time_range
            b.figures.append(
                figure_(
                    "range",
                    _fmt_ns(hi - lo),
                    f"{_fmt_ns(lo - data.t0_ns)} → {_fmt_ns(hi - data.t0_ns)} from the trace start",
                )
            )
        if len(t):
            b.figures.append(figure_("compute", _pct(float(t["compute_pct"].mean())), "mean over ranks"))
            b.figures.append(
                figure_("non-compute", _pct(float(t["non_compute_pct"].mean())), "communication and memory")
            )
            b.figures.append(
                figure_("idle", _pct(float(t["idle_pct"].mean())), "GPU idle between its first and last activity")
            )
        b.tables.append(
            table(
                "temporal",
                "Temporal breakdown per rank",
                t,
                [
                    Column("rank", "rank", "int"),
                    Column("span_ns", "GPU span", "duration"),
                    Column("compute_ns", "compute", "duration"),
                    Column("compute_pct", "compute %", "pct"),
                    Column("non_compute_ns", "non-compute", "duration"),
                    Column("non_compute_pct", "non-compute %", "pct"),
                    Column("idle_ns", "idle", "duration"),
                    Column("idle_pct", "idle %", "pct"),
                ],
            )
        )

    b.step("temporal breakdown", figures)
    b.step(
        "temporal chart",
        lambda: b.chart(
            "temporal", lambda: c.temporal_breakdown_chart(b.frame("temporal_breakdown"), theme=b.theme), wide=False
        ),
    )
    b.step(
        "kernel types",
        lambda: b.chart(
            "kernel_types",
            lambda: c.kernel_type_chart(b.frame("kernel_breakdown", by="type"), theme=b.theme),
            wide=False,
        ),
    )
    b.step(
        "idle time",
        lambda: b.chart("idle", lambda: c.idle_breakdown_chart(b.frame("idle_time_breakdown"), theme=b.theme)),
    )
    b.step(
        "concurrency",
        lambda: b.chart("concurrency", lambda: c.concurrency_chart(b.frame("concurrency"), theme=b.theme)),
    )


def _overlap(b: _TabBuilder) -> None:
    c = _charts()
    bins = b.data.heatmap_bins

    def overlap_table() -> None:
        o = b.frame("comm_comp_overlap")
        if len(o):
            b.figures.append(
                figure_("communication overlapped", _pct(float(o["overlap_pct"].mean())), "mean over ranks")
            )
            b.figures.append(
                figure_("exposed communication", _fmt_ns(float(o["exposed_comm_ns"].mean())), "mean per rank")
            )
        b.tables.append(
            table(
                "kernel_overlap",
                "Kernels and what runs beside them (all ranks)",
                b.frame("kernel_overlap_stats"),
                [
                    Column("name", "kernel"),
                    Column("gpu_class", "class"),
                    Column("count", "launches", "int"),
                    Column("total_ns", "total", "duration"),
                    Column("comm_overlap_pct", "with communication", "pct"),
                    Column("compute_overlap_pct", "with compute", "pct"),
                    Column("exposed_pct", "alone", "pct"),
                ],
                limit=30,
            )
        )

    b.step("overlap", overlap_table)
    b.step(
        "overlap chart",
        lambda: b.chart("overlap", lambda: c.comm_comp_overlap_chart(b.frame("comm_comp_overlap"), theme=b.theme)),
    )

    def heatmap(kind: str) -> Callable[[], None]:
        def build() -> Any:
            return c.utilization_heatmap_chart(
                b.frame("utilization_heatmap", bins=bins, kind=kind), kind=kind, theme=b.theme
            )

        return lambda: b.chart(f"heatmap_{kind}", build)

    for kind in ("communication", "overlap"):
        b.step(f"{kind} heatmap", heatmap(kind))


def _kernels(b: _TabBuilder) -> None:
    c = _charts()

    def kernel_table() -> None:
        k = b.frame("kernel_breakdown", top_k=None)
        g = (
            k.assign(name=k["name"].astype(str), kernel_type=k["kernel_type"].astype(str))
            .groupby(["name", "kernel_type"], sort=False)
            .agg(
                count=("count", "sum"),
                sum_ns=("sum_ns", "sum"),
                min_ns=("min_ns", "min"),
                max_ns=("max_ns", "max"),
                ranks=("rank", "nunique"),
            )
            .reset_index()
            .sort_values("sum_ns", ascending=False)
        )
        g["mean_ns"] = g["sum_ns"] / g["count"].clip(lower=1)
        total = float(g["sum_ns"].sum())
        g["share_pct"] = 100 * g["sum_ns"] / total if total > 0 else np.nan
        b.figures.append(figure_("kernels", f"{int(g['count'].sum()):,}", f"{len(g):,} distinct names"))
        b.figures.append(figure_("kernel time", _fmt_ns(total), "summed over ranks and streams"))
        b.tables.append(
            table(
                "kernels",
                "Kernels by total time (all ranks)",
                g,
                [
                    Column("name", "kernel"),
                    Column("kernel_type", "type"),
                    Column("count", "launches", "int"),
                    Column("sum_ns", "total", "duration"),
                    Column("share_pct", "share", "pct"),
                    Column("mean_ns", "mean", "duration"),
                    Column("min_ns", "min", "duration"),
                    Column("max_ns", "max", "duration"),
                    Column("ranks", "ranks", "int"),
                ],
                limit=50,
            )
        )

    b.step("kernel table", kernel_table)
    b.step(
        "kernel types",
        lambda: b.chart(
            "kernel_types",
            lambda: c.kernel_type_chart(b.frame("kernel_breakdown", by="type"), theme=b.theme),
            wide=False,
        ),
    )
    b.step(
        "top kernels",
        lambda: b.chart(
            "top_kernels",
            lambda: c.top_kernels_chart(b.frame("kernel_breakdown", top_k=None), theme=b.theme),
            wide=False,
        ),
    )
    b.step(
        "duration distribution",
        lambda: b.chart(
            "kernel_durations", lambda: c.kernel_duration_chart(b.frame("kernel_duration_distribution"), theme=b.theme)
        ),
    )


def _communication(b: _TabBuilder) -> None:
    c = _charts()

    def nccl_table() -> None:
        n = b.frame("nccl_summary")
        calls = b.frame("collective_calls")
        if len(calls):
            b.figures.append(
                figure_(
                    "collective calls",
                    f"{len(calls):,}",
                    f"{calls['collective'].nunique()} kinds over {calls['rank'].nunique()} ranks",
                )
            )
            b.figures.append(figure_("time in collectives", _fmt_ns(float(calls["dur_ns"].sum())), "summed over ranks"))
        b.tables.append(
            table(
                "nccl",
                "Collectives by message size",
                n,
                [
                    Column("collective", "collective"),
                    Column("group_size", "ranks", "int"),
                    Column("size_bucket", "message size"),
                    Column("count", "calls", "int"),
                    Column("total_ns", "total", "duration"),
                    Column("mean_ns", "mean", "duration"),
                    Column("algbw_gbps", "algorithm bw", "gbps"),
                    Column("busbw_gbps", "bus bw", "gbps"),
                ],
            )
        )

    b.step("collectives", nccl_table)
    b.step(
        "bus bandwidth",
        lambda: b.chart("nccl_bw", lambda: c.nccl_bandwidth_chart(b.frame("nccl_summary"), theme=b.theme), wide=False),
    )
    b.step(
        "stragglers",
        lambda: b.chart("stragglers", lambda: c.stragglers_chart(b.frame("stragglers"), theme=b.theme), wide=False),
    )
    b.step(
        "communication heatmap",
        lambda: b.chart(
            "heatmap_communication",
            lambda: c.utilization_heatmap_chart(
                b.frame("utilization_heatmap", bins=b.data.heatmap_bins, kind="communication"),
                kind="communication",
                theme=b.theme,
            ),
        ),
    )


def _iterations(b: _TabBuilder) -> None:
    c = _charts()

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


def _counters(b: _TabBuilder) -> None:
    c = _charts()

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


def _diff(b: _TabBuilder) -> None:
    c = _charts()

    def tables() -> None:
        d = b.frame("trace_diff")
        b.figures.append(
            figure_(
                "baseline",
                b.data.baseline.source or "(memory)" if b.data.baseline is not None else "-",
                "compared with this trace",
            )
        )
        changed = d.loc[d["status"] != "unchanged"]
        b.figures.append(figure_("changes", f"{len(changed):,}", f"of {len(d):,} operators and kernels"))
        b.tables.append(
            table(
                "diff",
                "Largest changes (b = this trace, a = the baseline)",
                changed,
                [
                    Column("kind", "kind"),
                    Column("name", "name"),
                    Column("count_a", "count a", "int"),
                    Column("count_b", "count b", "int"),
                    Column("total_ns_a", "total a", "duration"),
                    Column("total_ns_b", "total b", "duration"),
                    Column("total_delta_ns", "change", "duration"),
                    Column("total_delta_pct", "change %", "pct"),
                    Column("status", "status"),
                ],
                limit=50,
            )
        )

    b.step("trace diff", tables)
    b.step("diff chart", lambda: b.chart("diff", lambda: c.trace_diff_chart(b.frame("trace_diff"), theme=b.theme)))


def _charts() -> Any:
    """The charts package (imports bokeh: only when a tab is computed)."""
    from .. import charts

    return charts


# ---------------------------------------------------------------------- timeline overview
def timeline_overview(trace: Trace, *, bins: int = 1000) -> pd.DataFrame:
    """Every GPU stream's busy share and main kind in ``bins`` columns over the trace: a static timeline.

    Returns
    -------
    pandas.DataFrame
        One row per (GPU row of the timeline, bin): ``row`` (int, top to bottom),
        ``label`` ("rank r · GPU d · stream s"), ``rank``, ``bin``, ``start_ns`` and
        ``end_ns`` (int, ns relative to the trace start), ``busy_frac`` (0-1: time covered
        by the row's events) and ``kind`` (the colour kind covering most of the bin, "" if
        none). What :func:`jupyter_traceview.charts.timeline_overview_chart` draws.
    """
    from ..views.colors import KINDS

    ix = TimelineIndex.of(trace)
    rows = [r for r in ix.rows if r.type == "gpu"]
    cols = ["row", "label", "rank", "bin", "start_ns", "end_ns", "busy_frac", "kind"]
    if not rows or ix.end_ns <= 0:
        return pd.DataFrame({c: [] for c in cols})
    # Every row binned (an event per pixel at most would draw some rows raw).
    win = ix.window(0, max(ix.end_ns, 1), bins, rows=[r.id for r in rows], lod=LevelOfDetail(raw_events_per_px=1e-9))
    edges = win.edges
    widths = np.diff(edges).astype(np.float64)
    lane_label = {ln.id: ln.label for ln in ix.lanes}
    parts = []
    for pos, rw in enumerate(win.rows):
        info = ix.rows[rw.row]
        if rw.mode == "bins" and rw.coverage_ns is not None and rw.kind is not None:
            cov = rw.coverage_ns.astype(np.float64)
            kind = rw.kind
        else:  # a row of a single event: cover it by hand
            cov = np.zeros(bins)
            kind = np.full(bins, NO_KIND, dtype=np.uint8)
            for p in rw.events if rw.events is not None else []:
                a, b = int(ix.start[p]), int(ix.end[p])
                over = np.clip(np.minimum(edges[1:], b) - np.maximum(edges[:-1], a), 0, None)
                cov += over
                kind[over > 0] = ix.kind[p]
        parts.append(
            pd.DataFrame(
                {
                    "row": pos,
                    "label": f"rank {info.rank} · {lane_label.get(info.lane, '')}",
                    "rank": info.rank,
                    "bin": np.arange(bins),
                    "start_ns": edges[:-1],
                    "end_ns": edges[1:],
                    "busy_frac": np.divide(cov, widths, out=np.zeros(bins), where=widths > 0),
                    "kind": [KINDS[k] if k < len(KINDS) else "" for k in kind.tolist()],
                }
            )
        )
    return pd.concat(parts, ignore_index=True)[cols]


def to_json(obj: Any) -> str:
    """Compact JSON of a payload or tab (what the HTTP server sends)."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)
