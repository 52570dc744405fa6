"""One truth on every surface: every place that shows a trace's headline shows tv.headline's values.

For several real traces (the bundled 8-rank DLRM sample, a single-rank H100 trace, a ROCm
trace and a CPU-only run) the trace's repr, the dashboard's header, the Traces sidebar's
``/runs`` figures, ``traceview summary --json``, the HTML report and the ``%%traceprofile``
summary line are checked against ``tv.headline(trace)`` (and its texts,
``format.headline_items``).
"""

from __future__ import annotations

import functools
import html
import json
import math
import warnings
from pathlib import Path
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview import format as fmt
from jupyter_traceview.analysis.headline import HEADLINE_KEYS
from tests.conftest import KINETO_FOLDERS

TRACES = {
    "dlrm_8rank_v100": KINETO_FOLDERS["dlrm_8rank_v100"],
    "h100_bert_small": KINETO_FOLDERS["h100_bert_small"],  # one rank
    "hta_mi250_rocm": KINETO_FOLDERS["hta_mi250_rocm"],
    "hta_cpu_only": KINETO_FOLDERS["hta_cpu_only"],
}


@functools.cache
def _trace(name: str) -> tv.Trace:
    return tv.load(TRACES[name], cache=False, progress=False)


@functools.cache
def _headline(name: str) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tv.headline(_trace(name))


def _items(name: str) -> list[tuple[str, str]]:
    return [(label, value) for label, value, _ in fmt.headline_items(_headline(name))]


@pytest.mark.parametrize("name", sorted(TRACES))
def test_headline_is_json_ready_and_consistent(name: str) -> None:
    h = _headline(name)
    assert json.loads(json.dumps(h, allow_nan=False)) == h  # no NaN, only JSON types
    assert set(h) == set(HEADLINE_KEYS)
    per_rank = tv.headline(_trace(name), per_rank=True)
    assert h["ranks"] == len(per_rank) and h["kernels"] == int(per_rank["kernels"].sum())
    assert h["events"] == int(per_rank["events"].sum())
    assert h["kernels"] <= h["gpu_activities"]
    assert h["iterations"] == len(h["steps"])
    assert h["span_ns"] <= h["job_span_ns"]
    gpu = per_rank.loc[per_rank["span_ns"] > 0]
    assert h["gpu"] == (len(gpu) > 0)
    if h["gpu"]:
        assert h["job_span_ns"] == int(gpu["end_ns"].max() - gpu["start_ns"].min())
        assert h["gpu_busy_pct"] == pytest.approx(float(gpu["gpu_busy_pct"].mean()))
        assert h["gpu_busy_pct"] + h["idle_pct"] == pytest.approx(100)
    else:
        assert h["job_span_ns"] == 0 and h["gpu_busy_pct"] is None and h["trace_span_ns"] > 0


def test_dlrm_numbers_known() -> None:
    """The figures the issue saw disagree, now one each (the findings' elapsed time is the job span)."""
    h = _headline("dlrm_8rank_v100")
    assert (h["ranks"], h["kernels"], h["gpu_activities"], h["iterations"], h["steps"]) == (8, 2104, 2244, 1, [10])
    assert h["job_span_ns"] == 19_685_000  # = findings' elapsed_ns (tests/golden/ours/.../findings.csv)
    f = tv.findings(_trace("dlrm_8rank_v100"))
    assert {
        int(json.loads(e)["elapsed_ns"]) if isinstance(e, str) else int(e["elapsed_ns"]) for e in f["evidence"]
    } == {h["job_span_ns"]}


@pytest.mark.parametrize("name", sorted(TRACES))
def test_repr_shows_the_headline(name: str) -> None:
    trace = _trace(name)
    page = trace._repr_html_()
    text = repr(trace)
    for label, value in _items(name):
        assert f"<th style='text-align:left;padding-right:1em'>{html.escape(label)}</th>" in page
        assert f"<td style='text-align:left'>{html.escape(value)}</td>" in page
        assert f"  {label}: {value}" in text


@pytest.mark.parametrize("name", sorted(TRACES))
def test_sidebar_figures_are_the_headline(name: str) -> None:
    from jupyter_traceview.server.tasks import headline_figures

    figures = headline_figures(_trace(name))
    expected = {k: v for k, v in _headline(name).items() if k != "source"}
    # Absolute ns travel as strings (exact in JavaScript), as in every protocol.
    expected["t0_ns"] = str(expected["t0_ns"])
    expected["window"] = None if expected["window"] is None else [str(t) for t in expected["window"]]
    assert figures == expected
    assert json.loads(json.dumps(figures)) == expected  # as the /runs answer carries it


@pytest.mark.parametrize("name", sorted(TRACES))
def test_cli_json_is_the_headline(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_traceview.cli import main

    assert main(["summary", str(TRACES[name]), "--json", "--no-cache"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["headline"] == _headline(name)
    per_rank = tv.headline(_trace(name), per_rank=True)
    assert [r["rank"] for r in out["ranks"]] == per_rank["rank"].tolist()
    for row, (_, expected) in zip(out["ranks"], per_rank.iterrows(), strict=True):
        for key, value in row.items():
            want = expected[key]
            if isinstance(want, float) and math.isnan(want):
                assert value is None
            else:
                assert value == want, key


@pytest.mark.parametrize("name", sorted(TRACES))
def test_cli_text_shows_the_headline(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_traceview.cli import main

    assert main(["summary", str(TRACES[name]), "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for label, value in _items(name):
        assert any(line.startswith(label) and line[len(label) :].strip().startswith(value) for line in lines), label


@pytest.mark.parametrize("name", sorted(TRACES))
def test_magic_summary_line_shows_the_headline(name: str) -> None:
    from jupyter_traceview.widgets.display import SUMMARY_LINE_ITEMS, summary_line

    line = summary_line(_trace(name))
    parts = line.split(" · ")
    shown = [(label, value) for label, value in _items(name) if label in SUMMARY_LINE_ITEMS]
    assert len(parts) == len(shown)
    for part, (label, value) in zip(parts, shown, strict=True):
        assert part == f"{label} {value}" or part.startswith(f"{label} {value} ("), (part, label, value)


@pytest.mark.parametrize("name", sorted(TRACES))
def test_dashboard_header_is_the_headline(name: str) -> None:
    from jupyter_traceview.dashboard.data import DashboardData

    payload = DashboardData(_trace(name)).payload()
    assert [(f["label"], f["value"]) for f in payload["headline"]] == _items(name)


@pytest.mark.parametrize("name", ["dlrm_8rank_v100", "hta_cpu_only"])
def test_report_shows_the_headline(name: str, tmp_path: Path) -> None:
    from jupyter_traceview.report.html import render_report

    page = render_report(_trace(name))
    for label, value in _items(name):
        assert f"<span>{html.escape(label)}</span> {html.escape(value)}</span>" in page, (label, value)
