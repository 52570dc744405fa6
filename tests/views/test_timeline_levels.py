"""The offline timeline's embedded levels: consistent with the index, and within their size bound."""

from __future__ import annotations

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.model import intervals as iv
from jupyter_traceview.views.timeline.coordinator import TimelineIndex
from jupyter_traceview.views.timeline.levels import (
    BASE_CELLS,
    FRAC_SCALE,
    LEVEL_FACTOR,
    NO_KIND,
    TimelineLevels,
    decode_level,
    encode_levels,
    timeline_levels,
)


@pytest.fixture(scope="module")
def index(dlrm: tv.Trace) -> TimelineIndex:
    return TimelineIndex.of(dlrm)


@pytest.fixture(scope="module")
def levels(index: TimelineIndex) -> TimelineLevels:
    # Small levels keep the test quick; the arithmetic is the same at any size.
    got = timeline_levels(index, base_cells=256, max_levels=3)
    assert got is not None
    return got


def _row_busy(index: TimelineIndex, row: int, end: int) -> tuple[int, int]:
    """Busy time of a row's events (their union) within ``[0, end)``, and how many start there (brute force)."""
    cols = index.event_columns(index.row_events(row))
    s, e = iv.union(np.clip(cols["start"], 0, end), np.clip(cols["end"], 0, end))
    starts = cols["start"]
    return int((e - s).sum()), int(((starts >= 0) & (starts < end)).sum())


def test_levels_hold_every_row_and_rank(levels: TimelineLevels, index: TimelineIndex, dlrm: tv.Trace) -> None:
    assert levels.rows == [r.id for r in index.rows]
    assert levels.ranks == list(dlrm.ranks)
    assert [lv.cells for lv in levels.levels] == [256, 256 * LEVEL_FACTOR, 256 * LEVEL_FACTOR**2]
    tracks = len(levels.rows) + len(levels.ranks)
    for lv in levels.levels:
        assert lv.busy_ns.shape == lv.kind.shape == lv.count.shape == (tracks, lv.cells)
        assert lv.edges[0] == 0 and lv.edges[-1] == levels.end_ns


def test_busy_time_per_bin_adds_up_to_each_rows_busy_time(levels: TimelineLevels, index: TimelineIndex) -> None:
    end = levels.end_ns
    for t, row in enumerate(levels.rows):
        busy, starts = _row_busy(index, row, end)
        for lv in levels.levels:
            assert int(lv.busy_ns[t].sum()) == busy, (row, lv.cells)
            assert int(lv.count[t].sum()) == starts, (row, lv.cells)
            width = np.diff(lv.edges)
            assert np.all(lv.busy_ns[t] <= width)
            # A kind exactly where something is.
            assert np.array_equal(lv.kind[t] != NO_KIND, lv.busy_ns[t] > 0)


def test_ranks_summaries_add_up_to_the_index_summary(levels: TimelineLevels, index: TimelineIndex) -> None:
    n = len(levels.rows)
    for j, rank in enumerate(levels.ranks):
        whole = index.window(0, levels.end_ns, 1, summaries=[rank]).summaries[0]
        assert whole.coverage_ns is not None
        for lv in levels.levels:
            assert int(lv.busy_ns[n + j].sum()) == int(whole.coverage_ns[0])


def test_each_bin_is_the_sum_of_the_bins_under_it(levels: TimelineLevels) -> None:
    for coarse, fine in zip(levels.levels, levels.levels[1:], strict=False):
        assert np.array_equal(coarse.edges, fine.edges[::LEVEL_FACTOR])
        tracks = coarse.busy_ns.shape[0]
        summed = fine.busy_ns.reshape(tracks, coarse.cells, LEVEL_FACTOR).sum(axis=2)
        assert np.array_equal(summed, coarse.busy_ns)
        counts = fine.count.reshape(tracks, coarse.cells, LEVEL_FACTOR).sum(axis=2)
        assert np.array_equal(counts, coarse.count)


def test_encoded_levels_decode_to_the_levels(levels: TimelineLevels) -> None:
    payload = encode_levels(levels)
    tracks = len(payload["rows"]) + len(payload["ranks"])
    assert payload["end"] == levels.end_ns and payload["frac_scale"] == FRAC_SCALE
    for lv, enc in zip(levels.levels, payload["levels"], strict=True):
        frac, kind, count = decode_level(enc["data"], tracks, enc["cells"])
        exact = lv.busy_ns / np.diff(lv.edges)
        # Rounded to the nearest 1/FRAC_SCALE, except a sliver of work, raised to the smallest step.
        rounded = np.abs(frac - exact) <= 0.5 / FRAC_SCALE + 1e-12
        raised = (lv.busy_ns > 0) & (exact < 0.5 / FRAC_SCALE) & (frac == 1 / FRAC_SCALE)
        assert np.all(rounded | raised)
        assert np.all((frac > 0) == (lv.busy_ns > 0)), "a busy bin never reads as idle"
        assert np.array_equal(kind, lv.kind) and np.array_equal(count, lv.count)
    with pytest.raises(ValueError, match="expected"):
        decode_level(payload["levels"][0]["data"], tracks + 1, payload["levels"][0]["cells"])


def test_size_bound_is_respected(index: TimelineIndex, levels: TimelineLevels) -> None:
    sizes = [len(e) for e in levels.encoded]
    # A bound between two levels' totals keeps the levels that fit, whole.
    bound = sizes[0] + sizes[1] + sizes[2] // 2
    got = timeline_levels(index, base_cells=256, max_levels=3, max_bytes=bound)
    assert got is not None and got.size <= bound
    assert len(got.levels) == 2 and got.encoded == levels.encoded[:2]
    # Below level 0 of all rows: the ranks' summaries only.
    only_ranks = timeline_levels(index, base_cells=256, max_levels=3, max_bytes=sizes[0] - 1)
    assert only_ranks is not None and only_ranks.rows == [] and only_ranks.size <= sizes[0] - 1
    assert only_ranks.levels[0].busy_ns.shape[0] == len(levels.ranks)
    # Not even those: nothing.
    assert timeline_levels(index, base_cells=256, max_levels=3, max_bytes=10) is None
    with pytest.raises(ValueError, match="positive"):
        timeline_levels(index, max_bytes=0)


def test_default_levels_fit_the_default_bound(index: TimelineIndex) -> None:
    got = timeline_levels(index, max_levels=2)
    assert got is not None and got.levels[0].cells == BASE_CELLS
    assert got.size <= 3_000_000
