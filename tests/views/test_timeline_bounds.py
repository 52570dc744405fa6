"""Bounds on what a timeline client sends: linear-time search patterns and clamped sizes.

A window request from the front end (or from anyone who can reach the Jupyter server) must not
tie up the kernel or the server's worker: a catastrophic regular expression is matched in
linear time (RE2), an over-long pattern is refused, a huge width is clamped, duplicated ids
are dropped and non-finite times are refused, each answered as ``{"error": ...}`` or at the
clamped size.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.errors import OptionError
from jupyter_traceview.views.timeline import protocol
from jupyter_traceview.views.timeline.index import MAX_PATTERN_CHARS, TimelineIndex, compile_pattern
from jupyter_traceview.widgets.timeline import Timeline
from tests import kineto_builder as kb

#: A pattern on which a backtracking engine takes exponential time in the length of the name.
BOMB = "(.*a){25}x"


@pytest.fixture(scope="module")
def index(dlrm: tv.Trace) -> TimelineIndex:
    return TimelineIndex.of(dlrm)


def test_patterns_are_compiled_by_a_linear_time_engine() -> None:
    rx = compile_pattern(BOMB)
    assert type(rx).__module__.startswith("re2")
    assert not rx.search("a" * 5000)
    assert rx.search("a" * 30 + "x")
    # Case-insensitive regular expressions, literal text where RE2 does not accept the pattern.
    assert compile_pattern("NCCL.*sum").search("ncclDevKernel_AllReduce_Sum_f32")
    assert compile_pattern("(").search("f(x)") and not compile_pattern("(").search("fx")
    assert compile_pattern(r"(a)\1").search("x(a)\\1y")  # a backreference: RE2 has none, so text


def test_a_regex_bomb_does_not_tie_up_the_kernel(tmp_path: Path) -> None:
    # With a backtracking engine this search would not end (25 nested .* over 3,000 characters);
    # run it in a child process so that a regression fails here instead of hanging the suite.
    events = [kb.cpu_op("a" * 3000, 0, 10), kb.cpu_op("aaax", 20, 10), kb.cpu_op("b" * 3000, 40, 10)]
    path = kb.write(tmp_path / "rank-0.json", kb.doc(events, rank=0))
    code = textwrap.dedent(
        f"""
        import jupyter_traceview as tv
        from jupyter_traceview.views.timeline import protocol
        from jupyter_traceview.views.timeline.index import TimelineIndex
        ix = TimelineIndex(tv.load({str(path)!r}, cache=False))
        print(ix.count_matches({BOMB!r}))
        meta, _ = protocol.answer(ix, "_window", {{"lo": 0, "hi": 60000, "width": 100,
            "rows": [r.id for r in ix.rows], "pattern": {BOMB!r}}})
        print("error" in meta)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["0", "False"]


def test_over_long_patterns_are_refused(index: TimelineIndex, dlrm: tv.Trace) -> None:
    long = "a" * (MAX_PATTERN_CHARS + 1)
    compile_pattern("a" * MAX_PATTERN_CHARS)  # the limit itself is accepted
    with pytest.raises(OptionError, match="1,001 characters"):
        compile_pattern(long)
    meta, buffers = protocol.answer(index, "_window", {"lo": 0, "hi": 1e6, "width": 100, "pattern": long})
    assert "characters" in meta["error"] and buffers == []
    assert "characters" in protocol.answer(index, "_find", {"pattern": long, "t": 0})[0]["error"]
    tl = Timeline(dlrm)
    with pytest.raises(OptionError):
        tl.highlight(long)
    assert tl.search == ""
    tl.search = long  # as the front end would: no exception, nothing matches
    assert tl._search_count == 0


@pytest.mark.parametrize("width", [1e7, 1e9, 2**63, 10**30])
def test_window_width_is_clamped(index: TimelineIndex, width: float) -> None:
    rows = [r.id for r in index.rows if r.type == "gpu"][:4]
    msg = {"lo": 0, "hi": float(index.end_ns), "width": width, "rows": rows, "summaries": [0]}
    meta, buffers = protocol.answer(index, "_window", msg)
    assert "error" not in meta
    assert meta["width"] <= protocol.MAX_WIDTH
    # A binned row or summary costs at most 14 bytes a column, a raw row at most 0.5 events of
    # 29 bytes a column: the answer is bounded by the clamped width.
    assert len(buffers[0]) < 16 * protocol.MAX_WIDTH * (len(rows) + 1) + 1024


def test_bad_sizes_and_times_are_answered_as_errors(index: TimelineIndex) -> None:
    base = {"lo": 0, "hi": 1e6, "width": 100}
    for bad in (
        {"width": float("inf")},
        {"width": float("nan")},
        {"width": 0},
        {"lo": float("nan")},
        {"hi": float("inf")},
        {"rows": "0,1"},
        {"rows": [0] * (4 * protocol.MAX_IDS + 1)},
    ):
        meta, buffers = protocol.answer(index, "_window", {**base, **bad})
        assert "error" in meta and buffers == [], bad
    assert "error" in protocol.answer(index, "_summary", {"lo": float("-inf"), "hi": 10})[0]
    assert "error" in protocol.answer(index, "_find", {"pattern": "nccl", "t": float("nan")})[0]
    # Times far outside the trace are clamped, not overflowed.
    meta, _ = protocol.answer(index, "_window", {**base, "lo": -1e300, "hi": 1e300, "summaries": [0]})
    assert "error" not in meta and meta["lo"] >= -protocol.MAX_TIME_NS


def test_duplicate_ids_are_dropped(index: TimelineIndex) -> None:
    row = next(r.id for r in index.rows if r.type == "gpu")
    msg = {"lo": 0, "hi": float(index.end_ns), "width": 200}
    many, _ = protocol.answer(index, "_window", {**msg, "rows": [row] * 100_000, "summaries": [0] * 1000})
    one, _ = protocol.answer(index, "_window", {**msg, "rows": [row], "summaries": [0]})
    assert len(many["rows"]) == len(one["rows"]) == 1 and len(many["summaries"]) == 1
    # A rank listed twice is one rank: the busy percentage does not change.
    s1, _ = protocol.answer(index, "_summary", {"lo": 0, "hi": float(index.end_ns), "ranks": [0]})
    s2, _ = protocol.answer(index, "_summary", {"lo": 0, "hi": float(index.end_ns), "ranks": [0, 0, 0]})
    assert s2["ranks"] == [0] and np.isclose(s1["all"]["pct"], s2["all"]["pct"])
