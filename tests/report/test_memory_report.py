"""The HTML report of a trace with memory records has a Memory section with the memory chart."""

from __future__ import annotations

import jupyter_traceview as tv
from jupyter_traceview.charts._style import bytes_text
from jupyter_traceview.report.html import render_report
from tests.conftest import DATA


def test_report_has_the_memory_section_and_chart() -> None:
    trace = tv.load(DATA / "h100_bert_small", cache=False)
    text = render_report(trace)
    assert '<section id="memory">' in text and 'href="#memory"' in text
    section = text[text.index('<section id="memory">') :]
    section = section[: section.index("</section>")]
    assert 'data-chart="memory_timeline" data-empty="0"' in section
    peak = int(tv.memory_peaks(trace, per="rank")["peak_allocated_bytes"].max())
    assert bytes_text([peak])[0] in section


def test_report_without_memory_records_has_no_memory_section(dlrm: tv.Trace) -> None:
    assert '<section id="memory">' not in render_report(dlrm.select(ranks=[0]))
