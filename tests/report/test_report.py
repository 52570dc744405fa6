"""``traceview report`` / ``tv.write_report``: one self-contained HTML file whose charts draw offline."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview import format as fmt
from jupyter_traceview.dashboard.data import bokehjs_source
from jupyter_traceview.dashboard.tabs.operators import HOST_FINDINGS
from jupyter_traceview.report.html import render_report, unpacked
from jupyter_traceview.views.colors import Theme
from jupyter_traceview.views.timeline.levels import DEFAULT_MAX_BYTES
from tests import kineto_builder as kb

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
SECTIONS = [
    "overview",
    "timeline",
    "breakdown",
    "overlap",
    "kernels",
    "operators",
    "communication",
    "iterations",
    "counters",
    "performance",
]


@pytest.fixture(scope="module")
def report(dlrm: tv.Trace, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tv.write_report(dlrm, tmp_path_factory.mktemp("report") / "report.html")


def dom_after_load(path: Path, tmp_path: Path, *, window: str = "800,600") -> str:
    """The page's DOM once its scripts ran, in headless Chromium with every network request refused."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (scripts/test.sh installs it)")
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            # No network: every request goes to a proxy that does not exist (file:// is not proxied).
            "--proxy-server=127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
            f"--window-size={window}",
            "--virtual-time-budget=60000",
            "--dump-dom",
            path.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def body_attrs(dom: str) -> dict[str, str]:
    m = re.search(r'<body (class="tvr-[^"]*"[^>]*)>', dom)
    assert m is not None
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))


def test_report_is_self_contained(report: Path, dlrm: tv.Trace) -> None:
    text = report.read_text(encoding="utf-8")
    version, js = bokehjs_source()
    assert unpacked(text, "tvr-bokehjs") == js and f"BokehJS {version}" in text, "BokehJS is inlined, whole"
    assert len(json.loads(unpacked(text, "tvr-items"))) == 24, "the charts' JSON items"
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)="(https?:)?//', text), "nothing from the network"
    assert "cdn.bokeh.org" not in text
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in text
    found = tv.findings(dlrm)
    for title in found["title"]:
        assert html.escape(title) in text
    # What fixing each buys (format.saving of its what-if columns), under its stake.
    fixes = [fmt.saving(r["saving_ns"], r["saving_pct"], r["change"]) for r in found.to_dict(orient="records")]
    assert any(fixes) and all(html.escape(f) in text for f in fixes if f)
    on_operators = sum(bool(f) for f, i in zip(fixes, found["id"], strict=True) if i in HOST_FINDINGS)
    assert text.count('class="tvr-finding-fix"') == sum(bool(f) for f in fixes) + on_operators
    # The workload in the figures, and the rules that did not fire with why, under the findings.
    assert "97 backward operators" in text
    why = tv.findings(dlrm, explain=True)
    assert f"Checked, no finding ({int((~why['fired']).sum())} rules)" in text
    for rule, reason in zip(why.loc[~why["fired"], "rule"], why.loc[~why["fired"], "reason"], strict=True):
        assert html.escape(f"{rule}: {reason}") in text
    assert len(re.findall(r'class="tvr-chart[ "]', text)) == 24, "23 dashboard charts and the timeline overview"
    assert 'data-chart="timeline_overview"' in text and 'data-chart="heatmap_all"' in text
    assert "<table>" in text and "Temporal breakdown per rank" in text


def test_report_charts_draw_in_chromium_offline(report: Path, tmp_path: Path) -> None:
    dom = dom_after_load(report, tmp_path)
    attrs = body_attrs(dom)
    assert "data-bokeh-missing" not in attrs
    assert attrs.get("data-charts-failed") == "0", re.findall(r'data-error="([^"]*)"', dom)[:3]
    assert attrs.get("data-charts-total") == attrs.get("data-charts-drawn") == "24"
    assert dom.count('data-drawn="1"') == 24


def test_report_embeds_a_bounded_timeline(report: Path) -> None:
    text = report.read_text(encoding="utf-8")
    m = re.search(
        r'<div class="tvr-timeline" data-source="tvr-timeline-data" data-levels="(\d+)" data-bytes="(\d+)" '
        r'data-details="(\d)" data-memory="(\d+)">',
        text,
    )
    assert m is not None, "the interactive timeline is in the Timeline section"
    assert int(m.group(1)) >= 2 and 0 < int(m.group(2)) <= DEFAULT_MAX_BYTES
    # Search, hover names and range summaries are embedded; the sample has no memory records.
    assert m.group(3) == "1" and m.group(4) == "0"
    assert '<script type="application/json" id="tvr-timeline-data">' in text
    assert "levels embedded" in text


def test_report_timeline_mounts_in_chromium_offline(report: Path, tmp_path: Path) -> None:
    dom = dom_after_load(report, tmp_path)
    host = re.search(r'<div class="tvr-timeline"[^>]*>', dom)
    assert host is not None and 'data-ready="1"' in host.group(0), host and host.group(0)
    view = re.search(r'<div class="tv-timeline[^"]*"[^>]*>', dom)
    assert view is not None and "data-first-paint=" in view.group(0), "the view drew its first window"
    rects = re.search(r'data-draw-rects="(\d+)"', view.group(0))
    assert rects is not None and int(rects.group(1)) > 0


def test_the_chromium_check_fails_without_bokehjs(dlrm: tv.Trace, tmp_path: Path) -> None:
    """The check above can fail: the same report without its BokehJS draws nothing."""
    _, js = bokehjs_source()
    text = render_report(dlrm)
    assert unpacked(text, "tvr-bokehjs") == js
    text = re.sub(r'<script type="application/octet-stream" id="tvr-bokehjs"[^>]*>[^<]*</script>', "", text)
    broken = tmp_path / "broken.html"
    broken.write_text(text, encoding="utf-8")
    attrs = body_attrs(dom_after_load(broken, tmp_path))
    assert attrs.get("data-bokeh-missing") == "1" and attrs.get("data-charts-drawn") == "0"


def test_dark_report_and_diff_section(dlrm: tv.Trace) -> None:
    text = render_report(dlrm, baseline=dlrm, theme="dark")
    assert '<body class="tvr-dark">' in text
    assert '<section id="diff">' in text and 'href="#diff"' in text
    with pytest.raises(ValueError, match="theme"):
        render_report(dlrm, theme="blue")  # type: ignore[arg-type]


def test_cpu_only_trace_reports_its_operators(tmp_path: Path) -> None:
    """No GPU sections; the Operators section first, with its call tree and threads drawn."""
    events = [*kb.metadata(kb.CPU_PID), kb.step(1, 0, 100), kb.cpu_op("aten::mm", 10, 50)]
    trace = tv.load(kb.write(tmp_path / "cpu.json", kb.doc(events)), cache=False)
    text = render_report(trace)
    assert 'id="operators"' in text and 'id="kernels"' not in text and 'id="overview"' not in text
    assert 'data-chart="call_tree" data-empty="0"' in text and 'data-chart="threads" data-empty="0"' in text
    assert text.index('href="#operators"') < text.index('href="#timeline"')


def test_progress_is_reported(dlrm: tv.Trace) -> None:
    seen: list[tuple[int, int, str]] = []
    render_report(dlrm, progress=lambda d, t, label: seen.append((d, t, label)))
    assert [label for _, _, label in seen] == [
        "Overview",
        "Timeline",
        "Breakdown",
        "Overlap",
        "Kernels",
        "Operators",
        "Communication",
        "Iterations",
        "Counters",
        "Performance",
        "done",
    ]
    assert [d for d, _, _ in seen] == list(range(11)) and {t for _, t, _ in seen} == {10}


def test_write_report_refuses_bad_destinations(dlrm: tv.Trace, tmp_path: Path) -> None:
    with pytest.raises(tv.TraceviewError, match="does not exist"):
        tv.write_report(dlrm, tmp_path / "missing" / "r.html")
    with pytest.raises(tv.TraceviewError, match="is a folder"):
        tv.write_report(dlrm, tmp_path)


# ---------------------------------------------------------------------- the command
def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jupyter_traceview", *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def test_report_command_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    proc = run("report", "--sample", "-o", str(out), "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert out.exists() and str(out) in proc.stdout
    assert "traceview: report: Kernels (5/10)" in proc.stderr, "progress while the analyses run"
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and len(re.findall(r'class="tvr-chart[ "]', text)) == 24


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["{tmp}/missing", "-o", "{tmp}/r.html"], "no such file or folder"),
        (["--sample", "-o", "{tmp}/nope/r.html"], "does not exist"),
        (["--sample", "-o", "{tmp}"], "is a folder"),
        (["--sample", "--baseline", "{tmp}/missing", "-o", "{tmp}/r.html"], "no such file or folder"),
    ],
)
def test_report_command_errors_are_one_line_exit_2(tmp_path: Path, args: list[str], words: str) -> None:
    proc = run("report", *[a.format(tmp=tmp_path) for a in args], "--no-cache", "-q")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("traceview: error:") and words in err[0], err
    assert not (tmp_path / "r.html").exists()


def test_report_size_is_what_the_readme_says(report: Path) -> None:
    """README and docs/frontend.md: "about 2 MB for the sample" (BokehJS, the charts' JSON and
    the timeline's script are deflated in the file: 4.1 MB before)."""
    assert report.stat().st_size <= 2_200_000, report.stat().st_size
    assert len(unpacked(report.read_text(encoding="utf-8"), "tvr-timeline-js")) > 0


def test_report_tables_fit_their_column() -> None:
    """Long names show format.short_name, the whole name on hover; headings stay clear of the sticky bar."""
    from jupyter_traceview import format as fmt
    from jupyter_traceview.report.html import _CSS, _table

    name = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::sqrt_kernel_cuda(at::TensorIteratorBase&)"
        "::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
        "at::detail::Array<char*, 2>)"
    )
    table = {
        "id": "k",
        "title": "Kernels",
        "columns": [{"key": "name", "label": "name", "format": "text"}, {"key": "n", "label": "n", "format": "int"}],
        "rows": [[name, 3], ["short", 4]],
        "total_rows": 2,
    }
    out = _table(table)  # type: ignore[arg-type]
    assert f'title="{html.escape(name)}">{html.escape(fmt.short_name(name, 64))}</td>' in out
    assert '<td class="tvr-text">short</td>' in out
    assert "scroll-margin-top" in _CSS and "max-width: 32em" in _CSS


#: Appended to a report by the test below: once the charts are drawn and the timeline mounted,
#: measures what a reader sees and writes the problems to ``<body data-check>``.
_PAGE_CHECK = """<script>
(function () {
  var problems = [];
  function rgb(c) { return (c.match(/[\\d.]+/g) || []).map(Number); }
  function lum(c) {
    var v = c.slice(0, 3).map(function (x) { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
  }
  function background(el) {
    for (var e = el; e; e = e.parentElement) {
      var c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c;
    }
    return [255, 255, 255];
  }
  function contrast(sel) {
    document.querySelectorAll(sel).forEach(function (el, i) {
      if (i >= 20 || !(el.textContent || "").trim()) return;
      var fg = lum(rgb(getComputedStyle(el).color)), bg = lum(background(el));
      var ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
      if (ratio < 4.5) problems.push(sel + ' "' + el.textContent.trim().slice(0, 24) + '" contrast ' + ratio.toFixed(1));
    });
  }
  function check() {
    var dark = document.body.classList.contains("tvr-dark");
    if (dark !== lum(background(document.body)) < 0.2) problems.push("page background does not follow the theme");
    ["h1", "nav a", ".tvr-chip", ".tvr-chip span", ".tvr-figure-label", ".tvr-figure-value", ".tvr-figure-hint",
     ".tvr-finding-meta", ".tvr-finding p", "th", "td", ".tvr-hint", "footer",
     ".tv-toolbar button", ".tv-toolbar select", ".tv-toolbar label", ".tv-status"].forEach(contrast);
    if (!document.querySelector(".tv-toolbar button")) problems.push("no timeline toolbar");
    document.querySelectorAll(".tvr-figure").forEach(function (f) {
      if (f.scrollWidth > f.clientWidth + 1) problems.push("figure card overflows: " + f.textContent.slice(0, 30));
    });
    document.querySelectorAll(".tvr-table-wrap").forEach(function (w) {
      var t = w.querySelector("table");
      if (t.getBoundingClientRect().width > w.clientWidth + 1)
        problems.push("table " + w.dataset.table + " " + Math.round(t.getBoundingClientRect().width) + " px in " + w.clientWidth);
    });
    var nav = document.querySelector("nav");
    document.querySelectorAll("nav a").forEach(function (a) {
      var section = document.getElementById(a.getAttribute("href").slice(1));
      section.scrollIntoView();
      var h = section.querySelector("h2").getBoundingClientRect(), n = nav.getBoundingClientRect();
      if (h.top < n.bottom) problems.push("heading " + section.id + " under the sticky bar");
    });
    document.body.setAttribute("data-check", JSON.stringify(problems));
  }
  (function wait() {
    var tl = document.querySelector(".tvr-timeline");
    var ready = document.body.hasAttribute("data-charts-total") && (!tl || tl.dataset.ready || tl.dataset.error);
    if (ready) setTimeout(check, 200); else setTimeout(wait, 100);
  })();
})();
</script>"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_report_reads_well_in_chromium(dlrm: tv.Trace, report: Path, tmp_path: Path, theme: Theme) -> None:
    """Issue 38: in a 1280 px window, in either theme, the report's text (figures, findings,
    tables, the timeline's toolbar) has a WCAG contrast of 4.5 or more on its background,
    figure cards hold their text, tables fit the column and a followed anchor leaves its
    heading clear of the sticky bar."""
    page = tmp_path / "report.html"
    text = report.read_text(encoding="utf-8") if theme == "light" else render_report(dlrm, theme=theme)
    page.write_text(text.replace("</body>", _PAGE_CHECK + "</body>"), encoding="utf-8")
    dom = dom_after_load(page, tmp_path, window="1280,900")
    m = re.search(r'data-check="([^"]*)"', dom)
    assert m is not None, "the page check ran"
    assert json.loads(html.unescape(m.group(1))) == []
