"""PM sampling's "GPU N Counters" tracks load as the ``counters`` table (readers/counters.py).

``tests/data/pm_sampling/rank0.pt.trace.json`` is written by hand to the format of
``torch/profiler/_cupti/monitor_trace.py`` (see tests/data/SOURCES.md): two metrics of
GPU 0 sampled at 150, 250, 350 and 550 us after ``baseTimeNanoseconds``, and one counter
event of another kind (HTA's "Queue Length", on pid 0) that is not read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading.readers import counters
from jupyter_traceview.model.schema import COUNTER_COLUMNS
from tests import kineto_builder as kb

PM = Path(__file__).resolve().parents[2] / "data" / "pm_sampling" / "rank0.pt.trace.json"
BASE = 1_764_000_000_000_000_000


def test_the_counter_tracks_load_as_samples_sorted_by_time() -> None:
    t = tv.load(PM, cache=False)
    c = t.counters(0)
    assert list(c.columns) == [col.name for col in COUNTER_COLUMNS]
    assert [str(c[col.name].dtype) for col in COUNTER_COLUMNS] == ["int64", "int16", "category", "float64"]
    # 4 samples x 2 metrics; at equal times the metrics in name order ("SM..." < "dram...").
    us = [150, 150, 250, 250, 350, 350, 550, 550]
    assert c["ts_ns"].tolist() == [BASE + u * 1000 for u in us]
    assert c["device"].tolist() == [0] * 8
    assert c["name"].tolist() == ["SM Active (%)", "dram__bytes_read.sum"] * 4
    assert c["value"].tolist() == [0.0, 0.0, 80.0, 2048.0, 95.5, 4096.0, 2.5, 0.0]
    # The other counter event (HTA's Queue Length on pid 0) stays counted, not read.
    assert t.rank_data(0).meta.skipped == {"other phases": 1}
    # The events are the trace's (the counter tracks add none).
    assert len(t.events(0)) == 5
    whole = t.counters()
    assert whole["rank"].tolist() == [0] * 8


def _doc(events: list[dict[str, Any]]) -> dict[str, Any]:
    return kb.doc(events, rank=0)


def _kernel(ts: float, device: int) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "kernel",
        "name": "k",
        "pid": device,
        "tid": 7,
        "ts": ts,
        "dur": 10.0,
        "args": {"device": device, "stream": 7, "correlation": 1},
    }


def _sample(device: int | str, name: str, ts: float, value: float | None) -> dict[str, Any]:
    pid = device if isinstance(device, str) else f"GPU {device} Counters"
    return {"ph": "C", "name": name, "pid": pid, "ts": ts, "args": {} if value is None else {"": value}}


def test_samples_without_a_value_are_counted_and_other_counters_left(tmp_path: Path) -> None:
    events = [
        _kernel(100.0, 1),
        _sample(1, "SM Active (%)", 100.0, 50),
        _sample(1, "SM Active (%)", 110.0, None),  # no value: counted, not kept
        _sample("GPU X Counters", "SM Active (%)", 120.0, 1.0),  # not a device's track
        {"ph": "C", "name": "Queue Length", "pid": 1, "ts": 120.0, "args": {"Queue Length": 3}},
    ]
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps(_doc(events)))
    t = tv.load(path, cache=False)
    c = t.counters(0)
    assert c["value"].tolist() == [50.0]
    assert c["device"].tolist() == [1]
    skipped = t.rank_data(0).meta.skipped
    assert skipped[counters.UNREADABLE] == 1
    assert skipped["other phases"] == 2


def test_a_multi_rank_file_gives_each_rank_its_devices_counters(tmp_path: Path) -> None:
    # One file, two processes named "rank 0" / "rank 1", on devices 0 and 1: each rank gets
    # the counter track of the device its GPU activities ran on.
    events = [
        {"ph": "M", "name": "process_name", "pid": 10, "tid": 0, "args": {"name": "rank 0"}},
        {"ph": "M", "name": "process_name", "pid": 11, "tid": 0, "args": {"name": "rank 1"}},
        {**_kernel(100.0, 0), "pid": 10},
        {**_kernel(100.0, 1), "pid": 11},
        _sample(0, "SM Active (%)", 100.0, 10.0),
        _sample(1, "SM Active (%)", 100.0, 20.0),
        _sample(1, "SM Active (%)", 105.0, 30.0),
    ]
    path = tmp_path / "merged.json"
    path.write_text(json.dumps({"traceEvents": events}))
    t = tv.load(path, cache=False)
    assert t.ranks == (0, 1)
    assert t.counters(0)["value"].tolist() == [10.0]
    assert t.counters(1)["value"].tolist() == [20.0, 30.0]


def test_the_counters_survive_the_cache_and_a_dataset(tmp_path: Path) -> None:
    first = tv.load(PM, cache=tmp_path / "cache")
    again = tv.load(PM, cache=tmp_path / "cache")
    expected = tv.load(PM, cache=False).counters(0)
    for t in (first, again):
        got = t.counters(0)
        assert got["ts_ns"].tolist() == expected["ts_ns"].tolist()
        assert got["name"].tolist() == expected["name"].tolist()
        np.testing.assert_array_equal(got["value"].to_numpy(), expected["value"].to_numpy())
    back = tv.load(tv.export(first, str(tmp_path / "run")))
    assert back.counters(0)["value"].tolist() == expected["value"].tolist()


@pytest.mark.parametrize(
    ("window", "values"),
    [
        ((250_000, 350_001), [80.0, 2048.0, 95.5, 4096.0]),
        ((0, 10**9), [0.0, 0.0, 80.0, 2048.0, 95.5, 4096.0, 2.5, 0.0]),
    ],
)
def test_a_time_selection_keeps_the_samples_inside(window: tuple[int, int], values: list[float]) -> None:
    t = tv.load(PM, cache=False)
    lo, hi = window
    narrowed = t.select(time_range=(BASE + lo, BASE + hi))
    assert narrowed.counters(0)["value"].tolist() == values


def test_pieces_read_apart_give_the_whole_files_counters(tmp_path: Path) -> None:
    """The pool's way (each piece parsed alone, pickled as a worker returns it, then merged)
    gives the samples the whole-file read gives, in the same order."""
    import pickle

    from jupyter_traceview.loading.readers import kineto
    from jupyter_traceview.loading.readers.kineto import pieces

    events: list[dict[str, Any]] = []
    for i in range(60):
        events.append(_kernel(100.0 + 20 * i, 0))
        events.append(_sample(0, "SM Active (%)", 105.0 + 20 * i, float(i)))
        events.append(_sample(0, "dram__bytes_read.sum", 105.0 + 20 * i, 1000 * i))
    path = tmp_path / "rank0.pt.trace.json"
    data = json.dumps(_doc(events)).encode()
    path.write_bytes(data)
    whole = kineto.parse_kineto(path, data)
    read_at = kineto.bytes_source(data)
    the_plan = kineto.plan(read_at, len(data), len(data) // 5)
    assert len(the_plan.ranges) > 1
    base = kineto.read_header(path, the_plan.doc, None, "raise").base_time_ns
    parts = [pickle.loads(pickle.dumps(pieces.parse_piece(path, read_at, lo, hi, base))) for lo, hi in the_plan.ranges]
    (apart,) = pieces.finish(path, the_plan, parts)
    (one,) = whole
    assert len(one.counters) == 120
    assert one.counters["value"].tolist()[:4] == [0.0, 0.0, 1.0, 1000.0]
    for col in ("ts_ns", "device", "name", "value"):
        assert apart.counters[col].tolist() == one.counters[col].tolist()
