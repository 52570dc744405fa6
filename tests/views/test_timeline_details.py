"""The HTML report timeline's embedded details and memory levels: the kernel's numbers, added up.

A range summary read from the details grid equals ``TimelineIndex.range_summary`` for ranges
whose ends are grid edges; the per-row name counts are the rows' events; the memory levels are
``MemoryIndex.window``'s (``bin_step``); the report keeps all of it within its 3 MB.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.report.timeline import timeline_block
from jupyter_traceview.views.timeline.coordinator import TimelineIndex
from jupyter_traceview.views.timeline.details import payload_size, timeline_details
from jupyter_traceview.views.timeline.levels import DEFAULT_MAX_BYTES
from jupyter_traceview.views.timeline.memory import MemoryIndex, memory_levels

DATA = Path(__file__).resolve().parents[1] / "data"


def arr(text: str, dtype: str) -> np.ndarray:
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=dtype)


@pytest.fixture(scope="module")
def index(dlrm: tv.Trace) -> TimelineIndex:
    return TimelineIndex.of(dlrm)


@pytest.fixture(scope="module")
def details(index: TimelineIndex) -> dict[str, Any]:
    got = timeline_details(index, cells=512)
    assert got is not None and got["cells"] == 512
    return got


def offline_summary(p: dict[str, Any], a: int, b: int, ranks: list[int]) -> dict[str, Any]:
    """What js/report/details.ts computes for the cells [a, b) (a range with grid edges for ends)."""
    cells = p["cells"]
    busy: dict[str, int] = {}
    events: dict[str, int] = {}
    names: dict[str, int] = {}
    total = 0
    for r in p["ranks"]:
        if r["rank"] not in ranks:
            continue
        k = len(r["kinds"])
        b_ = arr(r["busy"], "<f8").reshape(k, cells)
        st = arr(r["starts"], "<u4").reshape(k, cells)
        ac = arr(r["across"], "<u4").reshape(k, cells)
        total += int(arr(r["all"], "<f8")[a:b].sum())
        for i, code in enumerate(r["kinds"]):
            key = p["kinds"][code]
            busy[key] = busy.get(key, 0) + int(b_[i, a:b].sum())
            events[key] = events.get(key, 0) + int(st[i, a:b].sum() + ac[i, a])
        nm = arr(r["names"], "<u4").reshape(2, -1)
        ns = arr(r["name_ns"], "<f8")
        for c, n, t in zip(nm[0].tolist(), nm[1].tolist(), ns.tolist(), strict=True):
            if a <= c < b:
                names[p["names"][n]] = names.get(p["names"][n], 0) + int(t)
    return {"all": total, "busy": busy, "events": events, "names": names}


@pytest.mark.parametrize(("a", "b"), [(0, 512), (0, 1), (37, 38), (100, 357), (256, 512), (500, 512)])
@pytest.mark.parametrize("ranks", [[0], [3, 5], list(range(8))])
def test_range_summaries_at_grid_edges_are_the_kernels(
    index: TimelineIndex, details: dict[str, Any], a: int, b: int, ranks: list[int]
) -> None:
    edges = index.edges(0, details["end"], details["cells"])
    want = index.range_summary(int(edges[a]), int(edges[b]), ranks=ranks, top=1000)
    got = offline_summary(details, a, b, ranks)
    assert got["all"] == want["all"]["busy_ns"]
    assert {k["kind"]: k["busy_ns"] for k in want["kinds"]} == {k: v for k, v in got["busy"].items()}
    assert {k["kind"]: k["events"] for k in want["kinds"]} == got["events"]
    assert {t["name"]: t["time_ns"] for t in want["top"]} == {n: t for n, t in got["names"].items() if t > 0}


def test_rows_name_every_event_once_where_it_starts(index: TimelineIndex, details: dict[str, Any]) -> None:
    cells, end = details["cells"], details["end"]
    t = arr(details["rows"], "<u4").reshape(4, -1)
    assert t.shape[1] == details["row_entries"]
    edges = index.edges(0, end, cells)
    for row in (0, 5, len(index.rows) // 2, len(index.rows) - 1):
        cols = index.event_columns(index.row_events(row))
        inside = (cols["start"] >= 0) & (cols["start"] < end)
        want: dict[tuple[int, str], int] = {}
        for s, n in zip(cols["start"][inside].tolist(), cols["name"][inside].tolist(), strict=True):
            c = int(np.searchsorted(edges, s, side="right") - 1)
            key = (c, index.names[n])
            want[key] = want.get(key, 0) + 1
        sel = t[0] == row
        got = {
            (int(c), details["names"][n]): int(k)
            for c, n, k in zip(t[1][sel].tolist(), t[2][sel].tolist(), t[3][sel].tolist(), strict=True)
        }
        assert got == want, row


def test_a_name_search_counts_what_the_kernel_counts(index: TimelineIndex, details: dict[str, Any]) -> None:
    t = arr(details["rows"], "<u4").reshape(4, -1)
    names = details["names"]
    for pattern in ("nccl", "gemm", "^aten::", "Memcpy"):
        rx = re.compile(pattern, re.IGNORECASE)
        hit = np.array([bool(rx.search(n)) for n in names])
        offline = int(t[3][hit[t[2]]].sum())
        # The kernel's count matches names and arguments: these patterns match no argument text.
        assert offline == index.count_matches(pattern), pattern
        assert offline > 0


def test_the_grid_shrinks_to_fit_its_bound(index: TimelineIndex) -> None:
    big = timeline_details(index, cells=4096)
    assert big is not None
    small = timeline_details(index, cells=4096, max_bytes=payload_size(big) - 1)
    assert small is not None and small["cells"] < 4096 and payload_size(small) < payload_size(big)
    assert timeline_details(index, max_bytes=100) is None


@pytest.fixture(scope="module")
def memory_trace() -> tv.Trace:
    return tv.load(DATA / "h100_bert_small", cache=False)


def test_memory_levels_are_the_lanes_binned_by_bin_step(memory_trace: tv.Trace) -> None:
    ci = MemoryIndex.of(memory_trace)
    end = TimelineIndex.of(memory_trace).end_ns
    got = memory_levels(ci, end, [64, 256])
    assert got is not None and got["lanes"] == [c["id"] for c in ci.lanes]
    for lv in got["levels"]:
        n = lv["cells"]
        values = arr(lv["data"], "<f8").reshape(len(ci.lanes), 4, n)
        edges = (np.arange(n + 1, dtype=np.int64) * end) // n
        for lane, w in zip(ci.lanes, ci.window(edges, got["lanes"]), strict=True):
            i = got["lanes"].index(lane["id"])
            np.testing.assert_array_equal(values[i, 0], w.series["allocated"][0])
            np.testing.assert_array_equal(values[i, 3], w.series["reserved"][1])
            assert np.nanmax(values[i, 0]) == lane["peak_allocated"]  # the peak survives every level
    assert memory_levels(ci, end, [64], max_bytes=10) is None
    assert memory_levels(MemoryIndex.of(tv.load(tv.sample_path())), end, [64]) is None  # no memory records


def test_the_report_embeds_details_and_memory_lanes_within_3_mb(memory_trace: tv.Trace) -> None:
    block = timeline_block(memory_trace)
    assert block is not None
    host = re.search(r'<div class="tvr-timeline"[^>]*>', block.html)
    assert host is not None
    attrs = dict(re.findall(r'(data-[a-z]+)="([^"]*)"', host.group(0)))
    assert attrs["data-details"] == "1" and int(attrs["data-memory"]) == len(MemoryIndex.of(memory_trace).lanes)
    payload = json.loads(re.search(r'id="tvr-timeline-data">(.*)</script>', block.html, re.S).group(1))  # type: ignore[union-attr]
    assert payload["state"]["_memory"], "the lanes are in the state the page opens"
    assert len(json.dumps(payload)) <= DEFAULT_MAX_BYTES + 200_000  # levels + details + lanes, plus the small state
    assert int(attrs["data-bytes"]) <= DEFAULT_MAX_BYTES
    assert "Search (names), hover and range summaries work to" in block.note


def test_a_tight_bound_keeps_the_levels_and_drops_what_does_not_fit(dlrm: tv.Trace) -> None:
    block = timeline_block(dlrm, max_bytes=300_000)
    assert block is not None
    host = re.search(r'<div class="tvr-timeline"[^>]*>', block.html)
    assert host is not None
    assert int(re.search(r'data-bytes="(\d+)"', host.group(0)).group(1)) <= 300_000  # type: ignore[union-attr]
