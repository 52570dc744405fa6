"""A saved notebook's timeline: the mime bundle carries a picture of the last view and a description."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

import jupyter_traceview as tv
from jupyter_traceview.views.colors import palette
from jupyter_traceview.views.timeline.static import MAX_SVG_RANKS, SVG_WIDTH, timeline_svg
from jupyter_traceview.widgets.timeline import Timeline

SVG = "{http://www.w3.org/2000/svg}"


def _bundle(tl: Timeline) -> dict[str, object]:
    b = tl._repr_mimebundle_()
    return b[0] if isinstance(b, tuple) else b


def test_bundle_has_the_widget_a_picture_and_a_description(dlrm: tv.Trace) -> None:
    tl = Timeline(dlrm)
    tl.show_range(tl.t0_ns + 1_000_000, tl.t0_ns + 3_000_000, ranks=[2, 5])
    data = _bundle(tl)
    assert "application/vnd.jupyter.widget-view+json" in data
    text = str(data["text/plain"])
    assert "object at 0x" not in text
    assert text.startswith("tv.Timeline: 2 ranks of 8, 2 ms from 1 ms")
    root = ET.fromstring(str(data["image/svg+xml"]))
    labels = [t.text for t in root.iter(f"{SVG}text")]
    # One row per rank shown, in order; the range's ends on the axis; a legend of the kinds drawn.
    assert [x for x in labels if x and x.startswith("rank ")] == ["rank 2", "rank 5"]
    assert "1 ms" in labels and "3 ms" in labels
    kind_labels = {k["label"] for k in palette()["kinds"]}
    legend = [x for x in labels if x in kind_labels]
    assert legend and "Compute" in legend


def test_picture_bars_follow_the_summary(dlrm: tv.Trace) -> None:
    # A column's bar is coloured by the kind covering most of it and is as tall as its busy fraction.
    tl = Timeline(dlrm)
    ix = tl.index
    svg = timeline_svg(ix, 0, float(ix.end_ns), [0])
    win = ix.window(0, ix.end_ns, SVG_WIDTH, summaries=[0])
    s = win.summaries[0]
    assert s.coverage_ns is not None and s.kind is not None
    frac = s.coverage_ns / np.diff(win.edges)
    colors = [k["light"] for k in palette()["kinds"]]
    bars = [
        (int(float(r.get("x", 0))), int(float(r.get("width", 0))), float(r.get("height", 0)), r.get("fill"))
        for r in ET.fromstring(svg).iter(f"{SVG}rect")
        if r.get("class") == "bar"
    ]
    covered = sum(w for _, w, _, _ in bars)
    assert covered == int(np.count_nonzero(frac > 0))
    for x, w, h, fill in bars:
        cols = range(x - 70, x - 70 + w)
        assert all(colors[int(s.kind[c])] == fill for c in cols)
        expected = max(1.5, round(min(frac[cols[0]], 1) * 13 * 2) / 2)
        assert h == expected


def test_picture_is_bounded(tmp_path: object) -> None:
    ix = tv.Timeline(tv.load(tv.sample_path(), cache=False)).index
    ranks = list(range(8)) * 20  # 160 rows asked for: at most MAX_SVG_RANKS drawn
    svg = timeline_svg(ix, 0, float(ix.end_ns), ranks)
    root = ET.fromstring(svg)
    rows = [t.text for t in root.iter(f"{SVG}text") if t.text and t.text.startswith("rank ")]
    assert len(rows) == MAX_SVG_RANKS
    assert any(t.text and re.match(r"\+ 96 more ranks", t.text) for t in root.iter(f"{SVG}text"))
    assert int(root.get("width", 0)) < SVG_WIDTH + 100
