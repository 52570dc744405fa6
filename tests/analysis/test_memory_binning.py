"""The one binning of counters (``analysis.memory.binning``): against brute force, and both of its users.

``bin_step`` is checked column by column in ``tests/views/test_timeline_memory.py`` (the
timeline lanes); here: the edges, the function's NaN semantics before the first record, and
``memory_timeline(resample=)`` against a brute-force resampling of the raw series.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis.memory.binning import bin_step, even_edges

DATA = Path(__file__).resolve().parents[1] / "data"


@settings(max_examples=200, deadline=None)
@given(lo=st.integers(-(2**61), 2**61), span=st.integers(0, 2**61), n=st.integers(1, 5000))
def test_even_edges_are_exact_floors(lo: int, span: int, n: int) -> None:
    e = even_edges(lo, lo + span, n)
    assert len(e) == n + 1
    for i in {0, 1, n // 2, n - 1, n}:
        assert int(e[i]) == lo + (i * span) // n  # Python ints: exact
    assert (np.diff(e) >= 0).all()


def test_even_edges_refuse_nonsense() -> None:
    with pytest.raises(tv.OptionError, match="n >= 1"):
        even_edges(0, 10, 0)
    with pytest.raises(tv.OptionError, match="hi >= lo"):
        even_edges(10, 0, 3)


def test_no_value_before_the_first_record() -> None:
    ts = np.array([10, 20], dtype=np.int64)
    v = np.array([5, 3], dtype=np.int64)
    top, end = bin_step(ts, v, np.array([0, 5, 10, 15, 25, 30]))
    # [0,5) and [5,10): nothing known yet; [10,15): the record at 10; [15,25): 5 in force, then 3; [25,30): 3.
    np.testing.assert_array_equal(top, [np.nan, np.nan, 5, 5, 3])
    np.testing.assert_array_equal(end, [np.nan, np.nan, 5, 3, 3])
    empty_top, empty_end = bin_step(ts[:0], v[:0], np.array([0, 1, 2]))
    assert np.isnan(empty_top).all() and np.isnan(empty_end).all()


def brute_resample(raw: pd.DataFrame, lo: int, hi: int, n: int, col: str) -> list[tuple[int, int]]:
    """(bin start, max) per bin from the raw step function: the value in force at the start and every record inside."""
    out = []
    ts, v = raw["ts_ns"].tolist(), raw[col].tolist()
    for i in range(n):
        a, b = lo + (i * (hi - lo)) // n, lo + ((i + 1) * (hi - lo)) // n
        vals = [v[j] for j in range(len(ts)) if a <= ts[j] < b]
        at_a = [v[j] for j in range(len(ts)) if ts[j] <= a]
        if at_a:
            vals.append(at_a[-1])
        if vals:
            out.append((a, max(vals)))
    return out


@pytest.mark.parametrize("folder", ["cpu_memory/mlp_train", "h100_bert_small"])
@pytest.mark.parametrize("n", [2, 7, 50, 333])
def test_resample_is_the_brute_force_binning(folder: str, n: int) -> None:
    trace = tv.load(DATA / folder, cache=False)
    raw = tv.memory_timeline(trace)
    lo, hi = int(raw["ts_ns"].min()), int(raw["ts_ns"].max()) + 1
    got = tv.memory_timeline(trace, resample=n)
    for key, g in raw.groupby(["rank", "device_type", "device"], observed=True):
        mine = got.loc[(got["rank"] == key[0]) & (got["device_type"] == key[1]) & (got["device"] == key[2])]
        for col in ("allocated_bytes", "reserved_bytes", "cached_bytes"):
            assert list(zip(mine["ts_ns"].tolist(), mine[col].tolist(), strict=True)) == brute_resample(
                g, lo, hi, n, col
            ), (key, col)
