"""The dashboard's Memory tab, driven from Python: shown for traces with memory records, its
figures are the memory analyses' numbers, its peaks link to the timeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview.charts._style import bytes_text
from jupyter_traceview.dashboard.data import DashboardData, to_json
from tests.conftest import DATA


@pytest.fixture(scope="module")
def bert() -> tv.Trace:
    return tv.load(DATA / "h100_bert_small", cache=False)


def test_memory_tab_only_for_traces_with_memory_records(bert: tv.Trace, dlrm: tv.Trace) -> None:
    assert "memory" in [t["id"] for t in DashboardData(bert).payload()["tabs"]]
    assert "memory" not in [t["id"] for t in DashboardData(dlrm).payload()["tabs"]]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_memory_tab_shows_the_analyses(bert: tv.Trace, theme: str) -> None:
    out = DashboardData(bert).tab("memory", theme=theme)  # type: ignore[arg-type]
    assert out["notes"] == []
    (chart,) = out["charts"]
    assert chart["id"] == "memory_timeline" and not chart["empty"]
    peaks = tv.memory_peaks(bert, per="rank")
    top = int(peaks["peak_allocated_bytes"].max())
    fig = {f["label"]: f for f in out["figures"]}
    assert fig["peak allocated"]["value"] == bytes_text([top])[0]
    assert "CUDA:0" in fig["peak allocated"]["hint"]
    assert fig["allocator calls"]["value"] == f"{len(bert.memory(0)):,}"
    tables = {t["id"]: t for t in out["tables"]}
    assert set(tables) == {"memory_peaks", "memory_holders", "memory_operators", "memory_allocator"}
    ops = tables["memory_operators"]
    keys = [c["key"] for c in ops["columns"]]
    first = dict(zip(keys, ops["rows"][0], strict=True))
    by_op = tv.memory_by_operator(bert)
    assert first["operator"] == by_op["operator"].iloc[0]
    assert first["alloc_bytes"] == int(by_op["alloc_bytes"].iloc[0])
    assert {c["format"] for c in ops["columns"] if c["key"].endswith("_bytes")} == {"bytes"}
    json.loads(to_json(out))


def test_peak_links_to_its_operator_on_the_timeline(bert: tv.Trace) -> None:
    data = DashboardData(bert)
    peaks = tv.memory_peaks(bert, per="rank")
    row = peaks.loc[peaks["device_type"] == "CUDA"].iloc[0]
    out = data.link({"target": "event", "rank": 0, "eid": int(row["operator_eid"])})
    ev = bert.events(0).set_index("eid").loc[int(row["operator_eid"])]
    lo, hi = out["x_range"]
    start, end = ev["ts_ns"] - bert.t0_ns, ev["ts_ns"] + ev["dur_ns"] - bert.t0_ns
    assert lo < start and end < hi
    assert out["ranks"] == [0]
    with pytest.raises(tv.TraceSelectionError):
        data.link({"target": "event", "rank": 0, "eid": 10**9})


def test_peak_link_reveals_the_devices_memory_lane_with_the_peak_in_view(bert: tv.Trace) -> None:
    data = DashboardData(bert)
    lanes = data.timeline_state()["_memory"]
    for _, row in tv.memory_peaks(bert, per="rank").iterrows():
        eid = int(row["operator_eid"]) if int(row["operator_eid"]) >= 0 else int(row["peak_eid"])
        msg = {"target": "event", "rank": 0, "eid": eid, "device_type": str(row["device_type"])}
        out = data.link({**msg, "device": int(row["device"])})
        lane = lanes[out["memory"]]
        assert (lane["rank"], lane["device_type"], lane["device"]) == (0, row["device_type"], row["device"])
        assert lane["peak_allocated"] == int(row["peak_allocated_bytes"])
        lo, hi = out["x_range"]
        assert lo <= lane["peak_ts"] < hi
    # Without a device (other event links), no lane is named.
    assert "memory" not in data.link({"target": "event", "rank": 0, "eid": eid})


def test_cpu_only_memory_run_shows_a_real_memory_view(tmp_path: Path) -> None:
    trace = tv.load(DATA / "cpu_memory" / "mlp_train", cache=False)
    out = DashboardData(trace).tab("memory")
    assert not out["charts"][0]["empty"]
    assert out["notes"] == []
    ops = {t["id"]: t for t in out["tables"]}["memory_operators"]
    devices = {r[1] for r in ops["rows"]}
    assert devices == {"CPU"}
