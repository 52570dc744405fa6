"""``traceview report`` / ``tv.write_report``: the dashboard as one self-contained HTML file.

The file holds what ``tv.Dashboard`` shows (every tab's headline figures, findings with
their evidence, tables and charts, from :mod:`jupyter_traceview.dashboard.data`), the
timeline (zooming and panning offline over a multi-level summary embedded in the file, see
:mod:`jupyter_traceview.report.timeline`) and a static timeline overview (every GPU stream's
busy share over time), with the installed package's BokehJS and the timeline's front end inlined: it opens offline, in any browser, years later. Attach it to a
bug report or a pull request.

Each chart's ``<div class="tvr-chart">`` gets ``data-drawn="1"`` once BokehJS has drawn it
(``data-error`` if it could not), and ``<body>`` ``data-charts-drawn`` the count: what the
tests read from a headless browser.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import re
import zlib
from pathlib import Path
from typing import Any

from .. import format as fmt
from .._version import __version__
from ..dashboard.data import DashboardData, bokehjs_source, timeline_overview
from ..dashboard.protocol import Figure, Finding, Table, TableColumn
from ..errors import OptionError, TraceviewError
from ..model.trace import Trace
from ..progress import Progress
from ..views.colors import Theme
from .timeline import timeline_block

__all__ = ["render_report", "write_report"]


def write_report(
    trace: Trace,
    path: str | Path,
    *,
    baseline: Trace | None = None,
    theme: Theme = "light",
    heatmap_bins: int = 200,
    progress: Progress | None = None,
) -> Path:
    """Write ``trace``'s dashboard as one self-contained HTML file (no network needed to open it).

    Parameters
    ----------
    trace
        The trace to report on (``tv.load(...)``).
    path
        The HTML file to write (its folder must exist).
    baseline
        Another trace to compare with: adds the Diff section (``tv.compare(baseline, trace)``).
    theme
        ``"light"`` or ``"dark"``.
    heatmap_bins
        Time bins of the utilisation heatmaps.
    progress
        ``progress(done, total, label)``, called before each section is computed.

    Returns
    -------
    pathlib.Path
        The file written.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> tv.write_report(tv.load(tv.sample_path()), "report.html")  # doctest: +SKIP
    """
    out = Path(path)
    if out.is_dir():
        raise TraceviewError(f"cannot write the report to {out}: it is a folder; give a file name such as report.html")
    if not out.parent.exists():
        raise TraceviewError(f"cannot write the report to {out}: the folder {out.parent} does not exist")
    text = render_report(trace, baseline=baseline, theme=theme, heatmap_bins=heatmap_bins, progress=progress)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise TraceviewError(f"cannot write the report to {out}: {exc.strerror or exc}") from exc
    return out


def render_report(
    trace: Trace,
    *,
    baseline: Trace | None = None,
    theme: Theme = "light",
    heatmap_bins: int = 200,
    progress: Progress | None = None,
) -> str:
    """The report's HTML text (see :func:`write_report`)."""
    if theme not in ("light", "dark"):
        raise OptionError.invalid("theme", theme, ("light", "dark"))
    from bokeh.embed import json_item

    from .. import charts

    data = DashboardData(trace, baseline=baseline, heatmap_bins=heatmap_bins)
    payload = data.payload()
    tabs = [t for t in payload["tabs"] if t["id"] != "timeline"]
    total = len(tabs) + 1
    sections: list[str] = []
    items: dict[str, Any] = {}

    def chart_div(chart_id: str, item: Any, *, wide: bool, empty: bool) -> str:
        key = f"tvr-chart-{len(items)}"
        items[key] = item
        cls = "tvr-chart tvr-wide" if wide else "tvr-chart"
        return f'<div class="{cls}" id="{key}" data-chart="{html.escape(chart_id)}" data-empty="{int(empty)}"></div>'

    step = 0
    assets = ""

    def report(label: str) -> None:
        nonlocal step
        if progress is not None:
            progress(step, total, label)
        step += 1

    for tab in tabs:
        report(tab["label"])
        content = data.tab(tab["id"], theme=theme)
        parts = [_figures(content["figures"])]
        if content.get("findings") is not None:
            parts.append(_findings(content["findings"]))
        if content.get("checks"):
            parts.append(_checks(content["checks"]))
        parts.extend(f'<p class="tvr-note">{html.escape(n)}</p>' for n in content["notes"])
        parts.append(
            '<div class="tvr-charts">'
            + "".join(chart_div(c["id"], c["item"], wide=c["wide"], empty=c["empty"]) for c in content["charts"])
            + "</div>"
        )
        parts.extend(_table(t) for t in content["tables"])
        sections.append(_section(tab["id"], tab["label"], "".join(parts)))
        if tab["id"] == tabs[0]["id"]:
            # The timeline comes second, as in the dashboard: the timeline itself, zooming and
            # panning over the summary embedded in the file, above a static overview.
            report("Timeline")
            tl = timeline_block(trace)
            if tl is not None:
                assets = tl.assets + packed("tvr-timeline-js", tl.script.encode("utf-8"))
            fig = charts.timeline_overview_chart(timeline_overview(trace), theme=theme)
            live = (
                '<p class="tvr-hint">Wheel or W/S to zoom, drag or A/D to pan, double-click to fit, '
                "type in the search box to dim what does not match, Shift+drag to summarise a range: "
                f"the timeline of every rank, merged per pixel column ({tl.note}). Open the trace in "
                "<code>tv.Timeline</code> for single events, their details and a search of their "
                "arguments.</p>" + tl.html
                if tl is not None
                else ""
            )
            body = live + (
                '<p class="tvr-hint">Every GPU stream of every rank: colour is the kind of work '
                "(compute, communication, memory), brightness how busy each column is. "
                "Open the trace in <code>tv.Dashboard</code> or <code>tv.Timeline</code> to zoom into events.</p>"
                '<div class="tvr-charts">'
                + chart_div(
                    "timeline_overview",
                    json_item(fig, theme=charts.bokeh_theme(theme)),
                    wide=True,
                    empty="traceview-empty" in (fig.tags or []),
                )
                + "</div>"
            )
            sections.append(_section("timeline", "Timeline", body))
    if progress is not None:
        progress(total, total, "done")

    version, js = bokehjs_source()
    labels = [(tabs[0]["id"], tabs[0]["label"]), ("timeline", "Timeline")] + [(t["id"], t["label"]) for t in tabs[1:]]
    nav = "".join(f'<a href="#{i}">{html.escape(label)}</a>' for i, label in labels)
    headline = "".join(
        f'<span class="tvr-chip" title="{html.escape(f["hint"])}"><span>{html.escape(f["label"])}</span> '
        f"{html.escape(f['value'])}</span>"
        for f in payload["headline"]
    )
    created = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    title = f"Trace report: {payload['title']}"
    # "</" inside inline scripts would end them early.
    items_json = json.dumps(items, separators=(",", ":"), allow_nan=False)
    return _PAGE.format(
        title=html.escape(title),
        theme=theme,
        css=_CSS,
        source=html.escape(payload["source"]),
        headline=headline,
        nav=nav,
        sections="".join(sections),
        created=created,
        version=html.escape(__version__),
        bokeh_version=html.escape(version),
        bokehjs=packed("tvr-bokehjs", js),
        items=packed("tvr-items", items_json.encode("utf-8")),
        draw=_DRAW.replace("__VERSION__", json.dumps(version)),
        assets=assets,
    )


def packed(element_id: str, data: bytes) -> str:
    """``data`` in an inert script element, zlib-deflated and base64-encoded (BokehJS and the
    charts' JSON take a third of their size this way); the page inflates them with the
    browser's ``DecompressionStream`` (:data:`_DRAW`). Base64 holds no ``</``."""
    text = base64.b64encode(zlib.compress(data, 9)).decode("ascii")
    return f'<script type="application/octet-stream" id="{element_id}" data-bytes="{len(data)}">{text}</script>'


def unpacked(page: str, element_id: str) -> bytes:
    """The data :func:`packed` put in ``page`` under ``element_id`` (for tests and tools)."""
    m = re.search(rf'<script type="application/octet-stream" id="{re.escape(element_id)}"[^>]*>([^<]*)</script>', page)
    if m is None:
        raise ValueError(f"no packed element {element_id!r} in the page")
    return zlib.decompress(base64.b64decode(m.group(1)))


# ---------------------------------------------------------------------- pieces
def _section(sid: str, label: str, body: str) -> str:
    return f'<section id="{sid}"><h2>{html.escape(label)}</h2>{body}</section>'


def _figures(figures: list[Figure]) -> str:
    if not figures:
        return ""
    cards = "".join(
        f'<div class="tvr-figure tvr-{html.escape(f["tone"] or "plain")}">'
        f'<div class="tvr-figure-label">{html.escape(f["label"])}</div>'
        f'<div class="tvr-figure-value">{html.escape(f["value"])}</div>'
        f'<div class="tvr-figure-hint">{html.escape(f["hint"])}</div></div>'
        for f in figures
    )
    return f'<div class="tvr-figures">{cards}</div>'


def _findings(findings: list[Finding]) -> str:
    if not findings:
        return '<h3>Findings</h3><p class="tvr-note">Nothing to report: no rule fired on this trace.</p>'
    out = ['<h3>Findings</h3><ol class="tvr-findings">']
    for f in findings:
        ranks = f.get("ranks") or []
        where = f"rank {ranks[0]}" if len(ranks) == 1 else (f"ranks {fmt.ranges(ranks)}" if ranks else "")
        evidence = f.get("evidence") or {}
        ev = "".join(
            f"<dt>{html.escape(fmt.evidence_label(str(k)))}</dt><dd>{html.escape(_evidence_value(k, v))}</dd>"
            for k, v in evidence.items()
        )
        out.append(
            f'<li class="tvr-finding tvr-{html.escape(str(f.get("severity", "info")))}">'
            f'<div class="tvr-finding-head"><span class="tvr-severity">{html.escape(str(f.get("severity", "")))}</span> '
            f"<b>{html.escape(str(f.get('title', '')))}</b></div>"
            f'<div class="tvr-finding-meta">{html.escape(" · ".join(x for x in (f.get("stake", ""), where) if x))}</div>'
            + (f'<div class="tvr-finding-fix">{html.escape(str(f["fix"]))}</div>' if f.get("fix") else "")
            + f"<p>{html.escape(str(f.get('detail', '')))}</p>"
            + (f'<details><summary>Evidence</summary><dl class="tvr-evidence">{ev}</dl></details>' if ev else "")
            + f'<div class="tvr-finding-meta">Rule: {html.escape(str(f.get("rule", "")))}'
            f" · more: <code>{html.escape(str(f.get('analysis', '')))}</code></div></li>"
        )
    out.append("</ol>")
    return "".join(out)


def _checks(checks: list[str]) -> str:
    """The rules that did not fire and why (``tv.findings(explain=True)``), under the findings."""
    items = "".join(f'<li class="tvr-check">{html.escape(line)}</li>' for line in checks)
    return (
        f'<details class="tvr-checks" open><summary>Checked, no finding ({len(checks)} rules)</summary>'
        f"<ul>{items}</ul></details>"
    )


def _evidence_value(key: str, value: Any) -> str:
    return fmt.evidence(key, value)


def _cell(value: Any, kind: str) -> str:
    return fmt.cell(value, kind)


#: Text cells longer than this show ``format.short_name`` (the whole text on hover), so that a
#: table of demangled kernel names fits the report's column.
_TEXT_CHARS = 64
#: Text cells longer than this wrap inside a column at least 10em wide (``tvr-long``); shorter
#: ones ("–", "fp32") keep their column as narrow as its widest text.
_WRAP_CHARS = 16


def _text_class(text: str) -> str:
    return "tvr-text tvr-long" if len(text) > _WRAP_CHARS else "tvr-text"


def _text_cell(v: Any) -> str:
    text = _cell(v, "text")
    if len(text) <= _TEXT_CHARS:
        return f'<td class="{_text_class(text)}">{html.escape(text)}</td>'
    short = fmt.short_name(text, _TEXT_CHARS)
    return f'<td class="{_text_class(short)}" title="{html.escape(text)}">{html.escape(short)}</td>'


def _table(t: Table) -> str:
    cols = t["columns"]
    text = ("text", "name")
    head = "".join(
        f'<th class="{"tvr-num" if c["format"] not in text else ""}">{html.escape(c["label"])}</th>' for c in cols
    )
    full = t.get("full", {})

    def td(v: Any, c: TableColumn, i: int) -> str:
        # A name column's cell holds the short name; the full one shows on hover.
        if c["key"] in full:
            title = html.escape(full[c["key"]][i])
            shown = _cell(v, c["format"])
            return f'<td class="{_text_class(shown)}" title="{title}">{html.escape(shown)}</td>'
        if c["format"] == "text":  # a long text cut in the middle, the whole of it on hover
            return _text_cell(v)
        cls = "tvr-num" if c["format"] not in text else "tvr-text"
        return f'<td class="{cls}">{html.escape(_cell(v, c["format"]))}</td>'

    rows = "".join(
        "<tr>" + "".join(td(v, c, i) for v, c in zip(r, cols, strict=True)) + "</tr>" for i, r in enumerate(t["rows"])
    )
    more = (
        f'<div class="tvr-note">The first {len(t["rows"]):,} of {t["total_rows"]:,} rows.</div>'
        if t["total_rows"] > len(t["rows"])
        else ""
    )
    if not t["rows"]:
        return f'<h3>{html.escape(t["title"])}</h3><p class="tvr-note">Nothing to show.</p>'
    return (
        f'<h3>{html.escape(t["title"])}</h3><div class="tvr-table-wrap" data-table="{html.escape(t["id"])}">'
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>{more}"
    )


_CSS = """
:root { color-scheme: light; --bg: #ffffff; --fg: #1f1f1f; --muted: #5f5f5f; --line: #e0e0e0;
  --card: #f6f6f6; --good: #2e7d32; --warn: #b26a00; --bad: #c62828; --accent: #4c78a8; --accent-bg: #bbdefb; }
body.tvr-dark { color-scheme: dark; --bg: #1b1b1b; --fg: #e3e3e3; --muted: #a9a9a9; --line: #3a3a3a;
  --card: #262626; --good: #7cc372; --warn: #f2b45c; --bad: #f28483; --accent: #6fa0d8; --accent-bg: #1e3a5f; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header { padding: 16px 24px 8px; border-bottom: 1px solid var(--line); }
header h1 { font-size: 20px; margin: 0 0 4px; }
nav { position: sticky; top: 0; z-index: 10; background: var(--bg); border-bottom: 1px solid var(--line);
  padding: 6px 24px; display: flex; gap: 16px; flex-wrap: wrap; }
nav a { color: var(--accent); text-decoration: none; font-weight: 600; }
main { padding: 0 24px 48px; max-width: 1400px; }
section { padding-top: 12px; border-bottom: 1px solid var(--line); padding-bottom: 16px; }
h2 { font-size: 18px; margin: 12px 0 8px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
code { font-size: 12px; }
.tvr-muted, .tvr-note, .tvr-hint, .tvr-finding-meta { color: var(--muted); }
.tvr-chips { display: flex; gap: 8px; flex-wrap: wrap; margin-top: 6px; }
.tvr-chip { background: var(--card); border-radius: 10px; padding: 2px 8px; font-size: 12px; }
.tvr-chip span { color: var(--muted); }
.tvr-figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 8px; }
.tvr-figure { background: var(--card); border-radius: 6px; padding: 8px 10px; border-left: 3px solid var(--line);
  min-width: 0; overflow-wrap: anywhere; }
.tvr-figure.tvr-good { border-left-color: var(--good); }
.tvr-figure.tvr-warn { border-left-color: var(--warn); }
.tvr-figure.tvr-bad { border-left-color: var(--bad); }
.tvr-figure-label { color: var(--muted); font-size: 12px; }
.tvr-figure-value { font-size: 18px; font-weight: 600; }
.tvr-figure-hint { color: var(--muted); font-size: 11px; }
.tvr-findings { padding-left: 20px; }
.tvr-finding { margin-bottom: 10px; }
.tvr-finding-fix { font-weight: 600; }
.tvr-finding p { margin: 2px 0; }
.tvr-severity { text-transform: uppercase; font-size: 11px; font-weight: 700; padding: 1px 5px;
  border-radius: 4px; background: var(--card); }
.tvr-high .tvr-severity { color: var(--bad); }
.tvr-medium .tvr-severity { color: var(--warn); }
.tvr-low .tvr-severity, .tvr-info .tvr-severity { color: var(--muted); }
.tvr-evidence { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; font-size: 12px; }
.tvr-evidence dt { color: var(--muted); }
.tvr-evidence dd { margin: 0; overflow-wrap: anywhere; }
.tvr-charts { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 12px; margin: 12px 0; }
.tvr-chart { min-height: 120px; }
.tvr-chart.tvr-wide { grid-column: 1 / -1; }
.tvr-chart[data-error] { color: var(--bad); }
.tvr-table-wrap { overflow-x: auto; max-width: 100%; max-height: 420px; overflow-y: auto; }
table { border-collapse: collapse; font-size: 12px; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
td.tvr-text { white-space: normal; overflow-wrap: anywhere; max-width: 32em; }
td.tvr-long { min-width: 10em; }
th { position: sticky; top: 0; background: var(--bg); white-space: normal; vertical-align: bottom; }
section, h2, h3 { scroll-margin-top: 48px; }
.tvr-num { text-align: right; font-variant-numeric: tabular-nums; }
footer { padding: 12px 24px; color: var(--muted); font-size: 12px; }
.tvr-timeline { margin: 8px 0 4px; --jp-layout-color0: var(--bg); --jp-layout-color1: var(--card);
  --jp-layout-color2: var(--line); --jp-ui-font-color0: var(--fg); --jp-ui-font-color1: var(--fg);
  --jp-ui-font-color2: var(--muted); --jp-border-color1: var(--line); --jp-border-color2: var(--line);
  --jp-brand-color1: var(--accent); --jp-brand-color3: var(--accent-bg); --jp-warn-color1: var(--warn);
  --jp-error-color1: var(--bad); }
@media (max-width: 900px) { .tvr-charts { grid-template-columns: 1fr; } }
"""

#: Draws every chart with the inlined BokehJS and marks it drawn (or failed).
_DRAW = """
(function () {
  var body = document.body;
  var drawn = 0, failed = 0;
  function done() { body.setAttribute("data-charts-drawn", String(drawn));
    body.setAttribute("data-charts-failed", String(failed)); }
  function unpack(id) {
    var el = document.getElementById(id);
    if (!el || !window.DecompressionStream) return Promise.resolve(null);
    var bin = atob(el.textContent.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text();
  }
  unpack("tvr-timeline-js").then(function (text) {
    if (text) { var m = document.createElement("script"); m.type = "module"; m.textContent = text; document.body.appendChild(m); }
  });
  Promise.all([unpack("tvr-bokehjs"), unpack("tvr-items")]).then(function (texts) {
    if (texts[0]) { var s = document.createElement("script"); s.textContent = texts[0]; document.head.appendChild(s); }
    draw(texts[1] ? JSON.parse(texts[1]) : {});
  }).catch(function (err) { body.setAttribute("data-bokeh-missing", String(err)); done(); });
  function draw(items) {
  var Bokeh = window.Bokeh && window.Bokeh[__VERSION__];
  if (!Bokeh) { body.setAttribute("data-bokeh-missing", "1"); done(); return; }
  var ids = Object.keys(items);
  var pending = ids.map(function (id) {
    var target = document.getElementById(id);
    return Bokeh.embed.embed_item(items[id], target).then(function (views) {
      if (!views || !views.roots || views.roots.length === 0) throw new Error("no view");
      target.setAttribute("data-drawn", "1"); drawn += 1;
    }).catch(function (err) {
      target.setAttribute("data-error", String(err)); target.textContent = "This chart could not be drawn: " + err;
      failed += 1;
    });
  });
  Promise.all(pending).then(function () { body.setAttribute("data-charts-total", String(ids.length)); done(); });
  }
})();
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="jupyter_traceview {version}">
<title>{title}</title>
<style>{css}</style>
</head>
<body class="tvr-{theme}">
<header>
<h1>{title}</h1>
<div class="tvr-muted"><code>{source}</code></div>
<div class="tvr-chips">{headline}</div>
</header>
<nav>{nav}</nav>
<main>{sections}</main>
<footer>Written by jupyter_traceview {version} on {created}; charts drawn by BokehJS {bokeh_version},
inlined in this file (it needs no network).</footer>
{bokehjs}
{items}
{assets}
<script>{draw}</script>
</body>
</html>
"""
