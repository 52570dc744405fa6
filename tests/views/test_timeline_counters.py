"""The timeline's hardware counter lanes: PM sampling's "GPU N Counters" tracks, drawn as the
memory lanes are (views/timeline/memory.py), one lane per device and metric.

``tests/data/pm_sampling/rank0.pt.trace.json`` (written to Kineto's format, see
tests/data/SOURCES.md) samples two metrics of GPU 0 at 150, 250, 350 and 550 us after its
base: ``SM Active (%)`` 0, 80, 95.5, 2.5 and ``dram__bytes_read.sum`` 0, 2048, 4096, 0.
Its first event starts at 100 us, the trace's origin.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.views.timeline.memory import MemoryIndex, counter_unit, memory_levels

PM = Path(__file__).resolve().parents[1] / "data" / "pm_sampling" / "rank0.pt.trace.json"


def us(t: float) -> int:
    """A time of the file (us after its base) relative to the trace's origin (100 us), ns."""
    return int((t - 100) * 1000)


@pytest.fixture(scope="module")
def pm() -> tv.Trace:
    return tv.load(PM, cache=False)


def test_a_lane_per_device_and_metric_with_its_unit_and_peak(pm: tv.Trace) -> None:
    assert pm.t0_ns == pm.events(0)["ts_ns"].min()  # the origin the lanes count from
    lanes = MemoryIndex.of(pm).lanes
    assert [c["label"] for c in lanes] == ["GPU 0 · SM Active (%)", "GPU 0 · dram__bytes_read.sum"]
    sm, dram = lanes
    assert (sm["kind"], sm["unit"], sm["records"]) == ("counter", "%", 4)
    assert (sm["peak_allocated"], sm["peak_ts"]) == (95.5, us(350))
    assert (sm["start"], sm["end"]) == (us(150), us(550))
    assert (dram["unit"], dram["peak_allocated"], dram["peak_ts"], dram["peak_reserved"]) == ("", 4096.0, us(350), 0)
    # A memory lane is looked up among memory lanes only.
    assert MemoryIndex.of(pm).find(0, "GPU", 0) is None
    # The report's memory levels carry memory lanes only (a counter is not bytes).
    assert memory_levels(MemoryIndex.of(pm), us(1000), [10]) is None


def test_binned_columns_are_the_step_function_of_the_samples(pm: tv.Trace) -> None:
    ix = MemoryIndex.of(pm)
    # One column per sample interval, then one column over everything.
    edges = np.array([us(150), us(250), us(350), us(550), us(600)], dtype=np.int64)
    sm, dram = ix.window(edges, [0, 1])
    np.testing.assert_array_equal(sm.series["allocated"][0], [0.0, 80.0, 95.5, 2.5])
    np.testing.assert_array_equal(dram.series["allocated"][1], [0.0, 2048.0, 4096.0, 0.0])
    # Before the first sample: no value; a column spanning all keeps the peak, ends at the last value.
    (whole,) = ix.window(np.array([us(0), us(140), us(600)], dtype=np.int64), [0])[:1]
    top, end = whole.series["allocated"]
    assert np.isnan(top[0]) and np.isnan(end[0])
    assert (top[1], end[1]) == (95.5, 2.5)
    np.testing.assert_array_equal(whole.series["reserved"][0][1:], [0.0])
    got = ix.values_at(1, np.array([us(200), us(300), us(1000)]))
    assert got["allocated"].tolist() == [0.0, 2048.0, 0.0]


def test_no_counter_lane_without_samples(dlrm: tv.Trace) -> None:
    assert dlrm.counters().empty
    assert all(c["kind"] == "memory" for c in MemoryIndex.of(dlrm).lanes)


@pytest.mark.parametrize(
    ("name", "unit"), [("SM Active (%)", "%"), ("NVLink RX (%) ", "%"), ("dram__bytes_read.sum", ""), ("%", "")]
)
def test_the_unit_comes_from_the_label(name: str, unit: str) -> None:
    assert counter_unit(name) == unit
