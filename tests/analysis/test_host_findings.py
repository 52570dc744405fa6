"""The facts and texts of the host-side findings rules, on the recorded CPU traces and a tiny one."""

from __future__ import annotations

from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import host_findings as hf
from tests import kineto_builder as kb

US = 1000
TORCH_CPU = Path(__file__).resolve().parents[1] / "data" / "torch_cpu"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    """One step [0, 100) us: loader [0, 30), ops [30, 40) and [80, 90); the rest (50 us) outside ops."""
    events = [
        kb.step(1, 0, 100),
        kb.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 30),
        kb.cpu_op("aten::mm", 30, 10),
        kb.cpu_op("aten::add", 80, 10),
        kb.cpu_op("aten::relu", 0, 5, tid=5),  # another thread, fewer operators
    ]
    path = tmp_path_factory.mktemp("hostfind") / "r.json"
    return tv.load(kb.write(path, kb.doc(events)), cache=False)


def test_facts_by_construction(tiny: tv.Trace) -> None:
    f = hf.host_facts(tiny)[0]
    assert f["tid"] == kb.MAIN_TID
    assert (f["wall_ns"], f["op_ns"], f["dataloader_ns"], f["outside_ops_ns"]) == (100 * US, 20 * US, 30 * US, 50 * US)
    assert f["has_python"] is False and f["syncs"] == []
    (stall,) = hf.dataloader_stall({0: f}, 10.0)
    assert stall["time_at_stake_ns"] == 30 * US and "30%" in stall["title"]
    assert hf.dataloader_stall({0: f}, 31.0) == []
    (py,) = hf.python_overhead({0: f}, 30.0)
    assert py["time_at_stake_ns"] == 50 * US and "with_stack=True" in py["detail"]
    assert hf.python_overhead({0: f}, 51.0) == []
    (hot,) = hf.cpu_hotspots({0: f})
    assert hot["info"] and "aten::add first" in hot["title"]  # a tie at 10 us: by name


def test_recorded_stack_trace() -> None:
    f = hf.host_facts(tv.load(TORCH_CPU / "stack" / "stack.pt.trace.json.gz", cache=False))[0]
    # The dataset sleeps 2 ms per item: the loader holds most of the iterations.
    assert f["dataloader_ns"] > 0.8 * f["wall_ns"]
    assert f["has_python"] and f["python_ns"] > 0
    assert f["top_ops"][0][0] == "aten::mkldnn_convolution"
    assert f["syncs"][0][:3] == ["aten::item", f["syncs"][0][1], 3] and f["syncs"][0][1].startswith("record_cpu")
    (sync,) = hf.host_sync_lines({0: f}, 0)
    assert "aten::item x3" in sync["detail"] and "record_cpu_traces.py(" in sync["detail"]


def test_findings_on_a_cpu_only_run() -> None:
    """tv.findings on the recorded CPU runs: the stall (by construction of the dataset) and the hotspots."""
    import warnings

    trace = tv.load(TORCH_CPU / "stack" / "stack.pt.trace.json.gz", cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        f = tv.findings(trace).set_index("id")
    stall = f.loc["dataloader_stall"]
    facts = hf.host_facts(trace)[0]
    assert stall["severity"] == "high" and stall["time_at_stake_ns"] == facts["dataloader_ns"]
    assert stall["evidence"]["elapsed_ns"] == facts["wall_ns"]
    assert f.loc["cpu_hotspots", "severity"] == "info"
    assert "aten::mkldnn_convolution" in f.loc["cpu_hotspots", "title"]
    # A threshold is a FindingRules field like any other.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        assert "dataloader_stall" not in set(tv.findings(trace, rules=tv.FindingRules(dataloader_min_pct=99))["id"])


@pytest.mark.parametrize(
    "path", [TORCH_CPU / "stack" / "stack.pt.trace.json.gz", TORCH_CPU / "plain" / "plain.pt.trace.json.gz"]
)
def test_facts_without_operators_are_the_same_facts(path: Path) -> None:
    # findings on a GPU trace asks for operators=False: every key it leaves is unchanged.
    trace = tv.load(path, cache=False)
    for time_range in (None, (trace.t0_ns + 1_000_000, trace.t0_ns + 30_000_000)):
        full = hf.host_facts(trace, time_range=time_range)
        lean = hf.host_facts(trace, time_range=time_range, operators=False)
        assert full.keys() == lean.keys() and full
        for r, f in full.items():
            want = {k: v for k, v in f.items() if k not in ("top_ops", "op_self_ns", "top_frames")}
            if not f["has_python"]:  # syncs are looked up only where host_sync_lines can name them
                want["syncs"], want["sync_ns"] = [], 0
            assert lean[r] == want
    if "stack" in str(path):
        assert lean[0]["has_python"] and lean[0]["syncs"][0][0] == "aten::item"
