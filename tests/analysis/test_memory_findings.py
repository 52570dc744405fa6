"""The memory findings rules on hand-made traces: each fires on its pattern, none on a healthy trace."""

from __future__ import annotations

from pathlib import Path

import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb

MIB, GIB = 2**20, 2**30
MEMORY_RULES = {"memory_near_capacity", "out_of_memory", "memory_fragmentation", "memory_leak"}


def _trace(tmp_path: Path, *, leak: bool, oom: bool, reserved: int, capacity: int) -> tv.Trace:
    events: list[dict] = []
    total = 0
    for i in range(1, 5):
        t = i * 100
        events += [kb.step(i, t, 90), kb.cpu_op("aten::mm", t + 5, 40)]
        events += kb.launch("gemm", t + 10, t + 20, 30, corr=i)
        total += MIB
        events.append(kb.mem(t + 12, MIB, 0x1000 + i, total_allocated=total, total_reserved=reserved))
        if not leak:
            total -= MIB
            events.append(kb.mem(t + 30, -MIB, 0x1000 + i, total_allocated=total, total_reserved=reserved))
        if oom and i == 4:
            events.append(kb.oom(t + 40, 2 * GIB, total_allocated=total, total_reserved=reserved))
    doc = kb.doc(events, rank=0)
    doc["deviceProperties"] = [{"id": 0, "name": "Test GPU", "totalGlobalMem": capacity}]
    return tv.load(kb.write(tmp_path / "rank-0.json", doc), cache=False)


def test_every_memory_rule_fires_on_its_pattern(tmp_path: Path) -> None:
    trace = _trace(tmp_path, leak=True, oom=True, reserved=GIB, capacity=GIB + 50 * MIB)
    f = tv.findings(trace).set_index("id")
    assert set(f.index) >= MEMORY_RULES
    assert (f.loc[list(MEMORY_RULES), "severity"] == "info").all()
    leak = f.loc["memory_leak", "evidence"]["devices"][0]
    assert leak["end_allocated_bytes"] == [MIB, 2 * MIB, 3 * MIB, 4 * MIB]
    assert leak["growth_per_step_bytes"] == MIB
    oom = f.loc["out_of_memory", "evidence"]["events"][0]
    assert (oom["operator"], oom["request_bytes"]) == ("aten::mm", 2 * GIB)
    cap = f.loc["memory_near_capacity", "evidence"]["devices"][0]
    assert cap["capacity_pct"] == pytest.approx(100 * GIB / (GIB + 50 * MIB))
    frag = f.loc["memory_fragmentation", "evidence"]["devices"][0]
    assert frag["fragmentation_pct"] == pytest.approx(100 * (GIB - MIB) / GIB)
    assert "memory" in f.loc["memory_leak", "title"].lower()


def test_no_memory_finding_on_a_healthy_trace(tmp_path: Path) -> None:
    trace = _trace(tmp_path, leak=False, oom=False, reserved=2 * MIB, capacity=80 * GIB)
    f = tv.findings(trace)
    assert not MEMORY_RULES & set(f["id"])


def test_thresholds_are_fields_of_the_rules(tmp_path: Path) -> None:
    trace = _trace(tmp_path, leak=True, oom=False, reserved=GIB, capacity=GIB + 50 * MIB)
    rules = tv.FindingRules(
        memory_capacity_min_pct=99.0, memory_leak_min_bytes=10 * MIB, memory_fragmentation_min_pct=99.95
    )
    f = tv.findings(trace, rules=rules)
    assert not MEMORY_RULES & set(f["id"])


def test_a_cpu_only_recording_gets_its_memory_findings() -> None:
    # Recorded here with CPU torch and profile_memory=True (scripts/record_memory_traces.py):
    # a list keeps 1 MiB per step alive. A CPU-only trace gets the host and memory rules.
    data = Path(__file__).resolve().parents[1] / "data" / "cpu_memory" / "leak"
    with pytest.warns(tv.TraceviewWarning, match="about the host"):
        f = tv.findings(tv.load(data, cache=False)).set_index("id")
    leak = f.loc["memory_leak", "evidence"]["devices"][0]
    assert leak["device"].startswith("CPU") and leak["growth_per_step_bytes"] == MIB
