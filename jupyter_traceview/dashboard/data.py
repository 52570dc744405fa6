"""What the dashboard shows, as JSON: the one place its content is computed, for every host.

``tv.Dashboard`` (an anywidget in a notebook), the Jupyter server behind the Traces
sidebar (over HTTP) and ``traceview report`` (a static HTML file) all show the same
content, computed here from a trace:

* :meth:`DashboardData.payload`: what the dashboard needs to open (cheap: no analysis);
* :meth:`DashboardData.tab`: one tab's headline figures, findings, tables and charts
  (``bokeh.embed.json_item`` dicts), computed on demand and cached;
* :meth:`DashboardData.link`: where a click on a chart (a heatmap cell, a rank's bar, an
  iteration) takes the timeline;
* :func:`.commands.answer`: the answer to each command of the dashboard's front end (the
  four commands of the timeline included), the same function whatever carries the messages.

A tab's content is built by its module in :mod:`.tabs` (one module per tab, registered in
:data:`.tabs.TABS`).

The contract is documented in ``docs/frontend.md`` ("The dashboard's protocol"); the
TypeScript mirror is ``js/dashboard/protocol.ts``.
"""

from __future__ import annotations

import json
import math
import re
import time
import warnings
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from .. import format as fmt
from ..analysis._memo import Memo, save_facts, shared_rank_facts
from ..analysis.compare import Comparison
from ..errors import OptionError, TraceSelectionError, TraceviewError, TraceviewWarning
from ..model.display_hook import Headline
from ..model.trace import Trace
from ..progress import Progress
from ..views.colors import Theme
from ..views.timeline import protocol as timeline_protocol
from ..views.timeline.index import NO_KIND, LevelOfDetail, TimelineIndex
from ..views.timeline.memory import MemoryIndex
from ..views.timeline.messages import TimelineModel
from .protocol import DashboardPayload, LinkAnswer, TabContent
from .tabs import TABS, TabBuilder
from .tabs.builder import figure_

__all__ = [
    "PROTOCOL",
    "DashboardData",
    "bokehjs_source",
    "timeline_overview",
    "to_json",
]

#: Version of the payload and command contract (docs/frontend.md); bumped on breaking changes.
PROTOCOL = 3

#: The per-rank facts (analysis/_memo.py) a :class:`DashboardData` keeps between its
#: analyses: those the timeline analyses start from (each rank's GPU activities, their
#: unions, the eid -> row table). Whatever else a computation memoised there (the what-if
#: model's per-rank graphs, whose model the trace keeps) is dropped when it returns.
KEPT_FACTS = frozenset({"activities", "unions", "eid_rows"})


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


class DashboardData:
    """The dashboard's content for one trace, computed on demand and cached.

    Parameters
    ----------
    trace
        The trace shown.
    baseline
        Another trace to compare with: adds a "Diff" tab (``tv.compare(baseline, trace)``).
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
        #: The per-rank facts (GPU activities, unions, eid tables: analysis/_memo.py) that the
        #: analyses of the whole trace share, from the findings to the last tab: computed
        #: once per rank, as the frames are, and dropped with this object.
        self._rank_memo: Memo = {}
        self._flags: dict[str, bool] = {}
        self._comparison: Comparison | None = None

    # ------------------------------------------------------------------ basics
    @property
    def tabs(self) -> list[tuple[str, str]]:
        """The tabs shown, in order. A trace without GPU activity shows no GPU tab and opens
        on its main CPU view (the Operators tab); the Memory tab needs memory records."""
        gpu = self.has_gpu
        shown = [
            t
            for t in TABS
            if (self.baseline is not None or not t.needs_baseline)
            and (gpu or not t.needs_gpu)
            and (not t.needs_memory or self._has_memory)
        ]
        if not gpu:
            shown.sort(key=lambda t: not t.cpu_main)  # stable: the main CPU view first
        return [(t.id, t.label) for t in shown]

    @property
    def has_gpu(self) -> bool:
        """Whether the trace holds any GPU activity (kernels, copies, syncs)."""
        return int(self.headline["gpu_activities"]) > 0

    @property
    def _has_memory(self) -> bool:
        """Whether the trace has memory records (the Memory tab shows only then); checked once."""
        if "memory" not in self._flags:
            from ..analysis.memory import has_memory_records

            self._flags["memory"] = has_memory_records(self.trace)
        return self._flags["memory"]

    @property
    def headline(self) -> Headline:
        """``tv.headline(trace)``: the header's and the Overview's figures (computed once, kept with the trace)."""
        return _kept(self.trace._headline, self._rank_memo)

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
            elif name == "compare":
                df = self.comparison().causes
            elif name == "compare_per_rank":
                df = self.comparison().per_rank
            elif name == "findings":
                # findings keeps its per-rank results itself, with worker processes of its own
                # (an outer scope would keep the results but lose the workers). One run of the
                # rules gives the findings and why the others did not fire (explain=True).
                from ..analysis.findings import findings_and_explain

                explain = bool(kw.pop("explain", False))
                only = kw.get("only")
                whole = self._frames.get((name, time_range, ()))
                if only is not None and whole is not None and not explain:
                    # every rule has run already: its rows are those of the rules asked for
                    df = whole.loc[whole["id"].isin(list(only)).to_numpy()].reset_index(drop=True)
                    self._frames[key] = df
                    return df
                found, explained = findings_and_explain(
                    self.trace, time_range=time_range, rank_memo=self._memo_for(time_range), **kw
                )
                _prune(self._rank_memo)
                rest = tuple(sorted(kw.items()))
                self._frames[(name, time_range, rest)] = found
                self._frames[(name, time_range, tuple(sorted({**kw, "explain": True}.items())))] = explained
                df = explained if explain else found
            else:
                fn = getattr(analysis, name)
                df = _kept(
                    lambda: (
                        fn(self.trace, time_range=time_range, **kw) if time_range is not None else fn(self.trace, **kw)
                    ),
                    self._memo_for(time_range),
                )
        self._frames[key] = df
        return df

    def _memo_for(self, time_range: tuple[int, int] | None) -> Memo | None:
        """The shared per-rank facts for the whole trace; None (a store of that call only) for
        a time range: a narrowed trace has tables of its own, and the ranges a user selects
        are many (kept, their facts would only grow)."""
        return self._rank_memo if time_range is None else None

    def _baseline(self) -> Trace:
        if self.baseline is None:
            raise TraceviewError("no baseline to compare with: DashboardData(trace, baseline=other_trace)")
        return self.baseline

    def comparison(self) -> Comparison:
        """``tv.compare(baseline, trace)``, computed once (its causes are ``frame("compare")``)."""
        if self._comparison is None:
            from ..analysis.compare import compare

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TraceviewWarning)
                self._comparison = compare(self._baseline(), self.trace)
        return self._comparison

    # ------------------------------------------------------------------ payload
    def payload(self) -> DashboardPayload:
        """What the dashboard needs to open: no analysis runs (see docs/frontend.md)."""
        import bokeh

        figures = [
            figure_(label, value, hint, "warn" if label in fmt.WARNING_LABELS else "")
            for label, value, hint in fmt.headline_items(self.headline)
        ]
        return {
            "protocol": PROTOCOL,
            "source": self.trace.source or "(memory)",
            "title": Path(self.trace.source).name if self.trace.source else "trace",
            "ranks": list(self.trace.ranks),
            "t0_ns": str(self.t0_ns),
            "span_ns": int(self.trace._extent_ns()),
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
    ) -> TabContent:
        """One tab's content (JSON-able): ``figures``, ``findings``, ``tables``, ``charts``, ``notes``.

        ``time_range`` (absolute ns) narrows the Breakdown tab (the range selected on the
        timeline); other tabs show the whole trace. ``progress(done, total, label)`` is
        called before each analysis.
        """
        if name not in dict(self.tabs):
            raise TraceSelectionError.unknown("tab", name, [t for t, _ in self.tabs])
        if theme not in ("light", "dark"):
            raise OptionError.invalid("theme", theme, ("light", "dark"))
        t = time.perf_counter()
        b = TabBuilder(self, theme, time_range if name == "breakdown" else None, progress)
        next(x for x in TABS if x.id == name).build(b)
        b.run()
        out: TabContent = {
            "figures": b.figures,
            "tables": b.tables,
            "charts": b.charts,
            "notes": b.notes,
            "tab": name,
            "theme": theme,
            "range": (
                [float(time_range[0] - self.t0_ns), float(time_range[1] - self.t0_ns)]
                if time_range is not None and name == "breakdown"
                else None
            ),
            "elapsed_ms": round((time.perf_counter() - t) * 1e3, 1),
        }
        if b.findings is not None:
            out["findings"] = b.findings
        if b.checks is not None:
            out["checks"] = b.checks
        return out

    # ------------------------------------------------------------------ links
    def link(self, msg: Mapping[str, Any]) -> LinkAnswer:
        """Where a click on a chart takes the timeline: ``{x_range, ranks, focus, search}`` (relative ns).

        ``ranks`` are the ranks the link is about (the timeline adds them to those it shows);
        ``focus`` is the rank the timeline emphasises (scrolled to and highlighted).

        ``msg`` names what was clicked: ``{"target": "heatmap", "rank", "bin", "heatmap"}``,
        ``{"target": "rank", "rank"}`` (with an optional ``range``, the chart's relative
        time range), ``{"target": "iteration", "rank", "step"}``, ``{"target": "kernel",
        "rank", "name"}`` or ``{"target": "event", "rank", "eid"}`` (an event: the operator
        at a memory peak). The window gets a margin of 4% on each side.
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
        elif target == "event":
            ev = self.trace.rank_data(rank).events
            eid = int(msg.get("eid", -1))
            hit = ev.loc[ev["eid"] == eid]
            if hit.empty:
                raise TraceSelectionError(f"link: rank {rank} has no event {eid}")
            lo = int(hit["ts_ns"].iloc[0])
            hi = lo + max(int(hit["dur_ns"].iloc[0]), 1)
        else:
            raise ValueError(f"link: unknown target {target!r}; targets are heatmap, rank, iteration, kernel, event")
        pad = max((hi - lo) * 0.04, 500.0)
        out: LinkAnswer = {
            "x_range": [float(lo - self.t0_ns) - pad, float(hi - self.t0_ns) + pad],
            "ranks": [rank],
            "focus": rank,
        }
        if search is not None:
            out["search"] = search
        if target == "event" and "device_type" in msg:
            # A memory peak: reveal the device's memory lane (views/timeline/memory.py).
            lane = MemoryIndex.of(self.trace).find(rank, str(msg["device_type"]), int(msg.get("device", -1)))
            if lane is not None:
                out["memory"] = lane["id"]
        return out

    def _rank_span(self, rank: int) -> tuple[int, int]:
        ev = self.trace.rank_data(rank).events
        if not len(ev):
            return self.t0_ns, self.t0_ns + 1
        ts = ev["ts_ns"].to_numpy()
        return int(ts.min()), int((ts + ev["dur_ns"].to_numpy()).max())

    # ------------------------------------------------------------------ timeline
    def timeline_state(self) -> TimelineModel:
        """The timeline's initial state (builds the index): the traits of ``tv.Timeline``."""
        return timeline_protocol.timeline_state(self.trace, self.index)


T = TypeVar("T")


def _kept(compute: Callable[[], T], memo: Memo | None = None) -> T:
    """``compute()`` (an analysis of the trace) inside a scope of shared per-rank facts
    (:func:`..analysis._memo.shared_rank_facts`): the analyses' per-rank results are read from
    the ranks' cache entries where they were kept (by ``findings``, by another dashboard, or
    prepared by the load: ``tv.load(..., prepare=)``), and those computed here are kept there
    for the next. The values are what ``compute()`` gives outside (the memo only returns what
    the computation it stands for would). ``memo``: the store of per-rank facts (the
    dashboard's, kept between analyses); None: one dropped when the scope ends."""
    with shared_rank_facts(memo):
        out = compute()
    save_facts()
    if memo is not None:
        _prune(memo)
    return out


def _prune(memo: Memo) -> None:
    """Drop from ``memo`` every entry but the :data:`KEPT_FACTS`."""
    for k in [k for k in memo if (k[1][0] if isinstance(k[1], tuple) else k[1]) not in KEPT_FACTS]:
        del memo[k]


def timeline_overview(trace: Trace, *, bins: int = 1000) -> pd.DataFrame:
    """Every GPU stream's busy share and main kind in ``bins`` columns over the trace: a static timeline.

    Returns
    -------
    pandas.DataFrame
        One row per (GPU row of the timeline, bin): ``row`` (int, top to bottom),
        ``label`` ("rank r · GPU d · stream s"), ``rank``, ``bin``, ``start_ns`` and
        ``end_ns`` (int, ns relative to the trace's origin, trace.t0_ns), ``busy_frac`` (0-1: time covered
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
