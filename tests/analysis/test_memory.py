"""Memory analyses: a hand-made trace with every answer worked out, and the real traces
checked against their raw records."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.memory import NO_OPERATOR, UNTRACKED, device_label, memory_devices
from jupyter_traceview.analysis.memory.binning import even_edges
from tests import kineto_builder as kb

R1, R2 = 2048, 4096  # reserved bytes before / after the step-2 allocation


def handmade_events() -> list[dict]:
    """Two steps on CUDA:0 (times in us; allocated total after each record in comments).

    step 1 [0, 100)
      aten::linear [10, 40)
        aten::addmm [12, 30)
          14  alloc A 1000 @0xA    -> 1000
          16  alloc B  200 @0xB    -> 1200
          25  free  B              -> 1000   (B: a temporary of aten::linear)
      aten::relu [50, 60)
          52  alloc C  500 @0xC    -> 1500   (the step-1 peak: A + C live)
          55  CPU alloc 64 @0x9   (another device)
      70  free A (under ProfilerStep#1 only) -> 500
    step 2 [100, 200)
      aten::mul [110, 130)
          115 alloc D  300 @0xA (A's address, reused) -> 800, reserved grows to 4096
      150 free C                   -> 300
      aten::big [155, 170)
          160 [OutOfMemory] request 10**12
    """

    def cuda(ts: float, nbytes: int, addr: int, total: int, reserved: int = R1) -> dict:
        return kb.mem(ts, nbytes, addr, total_allocated=total, total_reserved=reserved)

    return [
        kb.step(1, 0, 100),
        kb.cpu_op("aten::linear", 10, 30),
        kb.cpu_op("aten::addmm", 12, 18),
        cuda(14, 1000, 0xA, 1000),
        cuda(16, 200, 0xB, 1200),
        cuda(25, -200, 0xB, 1000),
        kb.cpu_op("aten::relu", 50, 10),
        cuda(52, 500, 0xC, 1500),
        kb.mem(55, 64, 0x9, total_allocated=64, total_reserved=0, device=-1, device_type=0),
        cuda(70, -1000, 0xA, 500),
        kb.step(2, 100, 100),
        kb.cpu_op("aten::mul", 110, 20),
        cuda(115, 300, 0xA, 800, R2),
        cuda(150, -500, 0xC, 300, R2),
        kb.cpu_op("aten::big", 155, 15),
        kb.oom(160, 10**12, total_allocated=300, total_reserved=R2),
    ]


@pytest.fixture
def handmade(tmp_path: Path) -> tv.Trace:
    doc = kb.doc(handmade_events(), rank=0)
    doc["deviceProperties"] = [{"id": 0, "name": "Test GPU", "totalGlobalMem": 8192}]
    return tv.load(kb.write(tmp_path / "rank-0.json", doc), cache=False)


US = 1000  # ns per us


def test_timeline_is_the_recorded_step_function(handmade: tv.Trace) -> None:
    tl = tv.memory_timeline(handmade, device="cuda")
    assert tl["ts_ns"].tolist() == [t * US for t in (14, 16, 25, 52, 70, 115, 150)]
    assert tl["allocated_bytes"].tolist() == [1000, 1200, 1000, 1500, 500, 800, 300]
    assert tl["reserved_bytes"].tolist() == [R1] * 5 + [R2] * 2
    assert tl["cached_bytes"].tolist() == [R1 - 1000, R1 - 1200, R1 - 1000, R1 - 1500, R1 - 500, R2 - 800, R2 - 300]
    cpu = tv.memory_timeline(handmade, device="cpu")
    assert cpu["allocated_bytes"].tolist() == [64]
    assert cpu["cached_bytes"].tolist() == [0]
    both = tv.memory_timeline(handmade)
    assert both[["device_type", "device"]].drop_duplicates().astype({"device_type": str}).values.tolist() == [
        ["CPU", -1],
        ["CUDA", 0],
    ]


def test_resampling_keeps_the_peak(handmade: tv.Trace) -> None:
    # Bins of 50 us over the ProfilerStep window [0, 200): the max of each bin, or the value in force.
    tl = tv.memory_timeline(handmade, device="cuda:0", time_range=(0, 200 * US), resample=4)
    assert tl["ts_ns"].tolist() == [0, 50 * US, 100 * US, 150 * US]
    # [0, 50): max of 1000, 1200, 1000; [50, 100): 1500 (52 us); [100, 150): 800 (115 us);
    # [150, 200): the record at 150 us sets 300, nothing after it.
    assert tl["allocated_bytes"].tolist() == [1200, 1500, 800, 300]
    assert tl["allocated_bytes"].max() == tv.memory_timeline(handmade, device="cuda")["allocated_bytes"].max()


def test_peaks_per_iteration(handmade: tv.Trace) -> None:
    peaks = tv.memory_peaks(handmade, device="cuda")
    assert peaks["step"].tolist() == [1, 2]
    assert peaks["peak_allocated_bytes"].tolist() == [1500, 800]
    assert peaks["peak_ts_ns"].tolist() == [52 * US, 115 * US]
    assert peaks["operator"].tolist() == ["aten::relu", "aten::mul"]
    assert peaks["operator_stack"].tolist() == ["ProfilerStep#1 > aten::relu", "ProfilerStep#2 > aten::mul"]
    ev = handmade.events(0).set_index("eid")
    assert ev.loc[peaks["operator_eid"], "name"].tolist() == ["aten::relu", "aten::mul"]
    assert ev.loc[peaks["peak_eid"], "ts_ns"].tolist() == peaks["peak_ts_ns"].tolist()
    assert peaks["peak_reserved_bytes"].tolist() == [R1, R2]
    assert peaks["peak_reserved_ts_ns"].tolist() == [14 * US, 115 * US]
    assert peaks["capacity_bytes"].tolist() == [8192, 8192]
    assert peaks["capacity_pct"].tolist() == [25.0, 50.0]
    assert peaks["live_allocations"].tolist() == [2, 2]
    assert peaks["top_holder"].tolist() == ["aten::addmm", "aten::relu"]
    assert peaks["top_holder_bytes"].tolist() == [1000, 500]
    whole = tv.memory_peaks(handmade, device="cuda", per="rank")
    assert whole[["step", "peak_allocated_bytes", "operator"]].values.tolist() == [[-1, 1500, "aten::relu"]]


def test_peak_holders_add_up_to_the_peak(handmade: tv.Trace) -> None:
    h = tv.memory_peak_holders(handmade, device="cuda")
    rows = h[["step", "operator", "bytes", "count"]].values.tolist()
    assert rows == [
        [1, "aten::addmm", 1000, 1],
        [1, "aten::relu", 500, 1],
        [2, "aten::relu", 500, 1],
        [2, "aten::mul", 300, 1],
    ]
    assert h.groupby("step")["share_pct"].sum().round(9).tolist() == [100.0, 100.0]
    # Narrowed to step 2, A's free and C's allocation are out of scope: C's bytes were
    # allocated before the scope's first record.
    h2 = tv.memory_peak_holders(handmade, device="cuda", iterations=2)
    assert h2[["operator", "bytes", "count"]].values.tolist() == [[UNTRACKED, 500, -1], ["aten::mul", 300, 1]]


def test_by_operator_self_and_children(handmade: tv.Trace) -> None:
    ops = tv.memory_by_operator(handmade, device="cuda").set_index("operator")
    cols = ["allocs", "alloc_bytes", "frees", "freed_bytes", "net_bytes", "max_alloc_bytes"]
    self_cols = ["self_allocs", "self_alloc_bytes", "self_frees", "self_freed_bytes", "self_net_bytes"]
    assert ops.loc["aten::addmm", cols].tolist() == [2, 1200, 1, 200, 1000, 1000]
    assert ops.loc["aten::addmm", self_cols].tolist() == [2, 1200, 1, 200, 1000]
    assert ops.loc["aten::linear", cols].tolist() == [2, 1200, 1, 200, 1000, 1000]
    assert ops.loc["aten::linear", self_cols].tolist() == [0, 0, 0, 0, 0]
    assert ops.loc["ProfilerStep#1", cols].tolist() == [3, 1700, 2, 1200, 500, 1000]
    assert ops.loc["ProfilerStep#1", self_cols].tolist() == [0, 0, 1, 1000, -1000]
    assert ops.loc["ProfilerStep#2", cols].tolist() == [1, 300, 1, 500, -200, 300]
    assert ops.loc["aten::mul", ["unfreed_bytes", "temporary_bytes", "retained_bytes"]].tolist() == [300, 0, 300]
    # B (200) is freed inside aten::linear, the outermost operator around it: a temporary.
    assert ops.loc["aten::addmm", ["temporary_allocs", "temporary_bytes", "retained_bytes"]].tolist() == [1, 200, 1000]
    # Lifetimes of A (14 -> 70 us) and B (16 -> 25 us): median 32.5 us.
    assert ops.loc["aten::addmm", "median_lifetime_ns"] == 32_500.0
    assert np.isnan(ops.loc["aten::mul", "median_lifetime_ns"])
    assert "aten::big" not in ops.index  # an OOM is not an allocation
    assert ops["self_alloc_bytes"].sum() == 2000
    assert ops["self_freed_bytes"].sum() == 1700
    assert NO_OPERATOR not in ops.index


def test_allocations_match_frees_by_address(handmade: tv.Trace) -> None:
    a = tv.memory_allocations(handmade, device="cuda")
    assert a["bytes"].tolist() == [1000, 200, 500, 300]
    assert a["lifetime_ns"].tolist() == [56 * US, 9 * US, 98 * US, -1]
    assert a["temporary"].tolist() == [False, True, False, False]
    ev = handmade.events(0).set_index("eid")
    assert ev.loc[a["free_eid"][a["free_eid"] >= 0], "ts_ns"].tolist() == [70 * US, 25 * US, 150 * US]
    assert a["operator"].tolist() == ["aten::addmm", "aten::addmm", "aten::relu", "aten::mul"]


def test_allocator_stats_and_oom(handmade: tv.Trace) -> None:
    st = tv.memory_allocator_stats(handmade, device="cuda").set_index("step")
    assert st.loc[1, ["calls", "allocs", "frees", "alloc_bytes", "freed_bytes", "net_bytes"]].tolist() == [
        5,
        3,
        2,
        1700,
        1200,
        500,
    ]
    assert st.loc[
        1, ["start_allocated_bytes", "end_allocated_bytes", "end_reserved_bytes", "max_cached_bytes"]
    ].tolist() == [
        0,
        500,
        R1,
        R1 - 500,
    ]
    assert st.loc[1, "fragmentation_pct"] == 100.0 * (R1 - 1000) / R1
    assert st.loc[2, ["calls", "net_bytes", "start_allocated_bytes", "end_allocated_bytes", "ooms"]].tolist() == [
        2,
        -200,
        500,
        300,
        1,
    ]
    assert st.loc[2, "fragmentation_pct"] == 100.0 * (R2 - 800) / R2
    oom = tv.memory_oom_events(handmade)
    assert oom[
        ["operator", "request_bytes", "allocated_bytes", "reserved_bytes", "capacity_bytes", "step"]
    ].values.tolist() == [["aten::big", 10**12, 300, R2, 8192, 2]]
    assert oom["ts_ns"].tolist() == [160 * US]


def test_scoping_and_options(handmade: tv.Trace) -> None:
    tl = tv.memory_timeline(handmade, device="cuda", time_range=(50 * US, 120 * US))
    assert tl["allocated_bytes"].tolist() == [1500, 500, 800]
    assert tv.memory_timeline(handmade, device=0).equals(tv.memory_timeline(handmade, device="CUDA:0"))
    with pytest.raises(tv.OptionError, match="CUDA:0"):
        tv.memory_timeline(handmade, device="cuda:3")
    with pytest.raises(tv.OptionError, match="resample"):
        tv.memory_timeline(handmade, resample=1)
    with pytest.raises(tv.OptionError, match="per"):
        tv.memory_peaks(handmade, per="step")  # type: ignore[arg-type]
    devs = memory_devices(handmade)
    assert devs["label"].tolist() == ["CPU", "CUDA:0"]
    assert device_label("CUDA", 1) == "CUDA:1"


def test_trace_without_memory_records_gives_empty_frames() -> None:
    trace = tv.load(tv.sample_path(), ranks=[0], cache=False)
    for fn in (
        tv.memory_timeline,
        tv.memory_peaks,
        tv.memory_peak_holders,
        tv.memory_by_operator,
        tv.memory_allocations,
        tv.memory_allocator_stats,
        tv.memory_oom_events,
    ):
        out = fn(trace)
        assert out.empty and "rank" in out.columns, fn.__name__
    with pytest.raises(tv.OptionError, match="no device"):
        tv.memory_timeline(trace, device="cuda")


# ---------------------------------------------------------------------- real traces
REAL = ["h100_bert_small", "cpu_memory/mlp_train", "cpu_memory/leak"]


def _raw(data_dir: Path, folder: str) -> pd.DataFrame:
    (path,) = sorted((data_dir / folder).glob("*.json.gz"))
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    rows = [
        {
            "ts": e["ts"],
            "idx": e["args"]["Ev Idx"],
            "type": e["args"]["Device Type"],
            "device": e["args"]["Device Id"],
            "bytes": e["args"]["Bytes"],
            "total": e["args"]["Total Allocated"],
        }
        for e in events
        if e.get("name") == "[memory]"
    ]
    return pd.DataFrame(rows).sort_values(["ts", "idx"]).reset_index(drop=True)


@pytest.fixture(scope="module", params=REAL)
def real(request: pytest.FixtureRequest, data_dir: Path) -> tuple[tv.Trace, pd.DataFrame]:
    return tv.load(data_dir / request.param, cache=False), _raw(data_dir, request.param)


def test_real_peak_is_the_largest_recorded_total(real: tuple[tv.Trace, pd.DataFrame]) -> None:
    trace, raw = real
    peaks = tv.memory_peaks(trace, per="rank")
    expected = raw.groupby(["type", "device"])["total"].max()
    got = {
        (0 if t == "CPU" else 1, d): p for t, d, p in peaks[["device_type", "device", "peak_allocated_bytes"]].values
    }
    assert got == expected.to_dict()
    # Per iteration, the largest step peak is the trace's peak.
    per_step = tv.memory_peaks(trace).groupby(["device_type", "device"], observed=True)["peak_allocated_bytes"].max()
    assert sorted(per_step.tolist()) == sorted(expected.tolist())


def test_real_allocated_rebuilt_from_allocations_and_frees(real: tuple[tv.Trace, pd.DataFrame]) -> None:
    """Allocated memory rebuilt from the calls (what was live before + the bytes of every
    allocation and free so far) equals the recorded Total Allocated at every record."""
    trace, raw = real
    tl = tv.memory_timeline(trace)
    allocs = tv.memory_allocations(trace)
    for (t, d), series in tl.groupby(["device_type", "device"], observed=True):
        mine = raw.loc[(raw["type"] == (0 if t == "CPU" else 1)) & (raw["device"] == d)]
        before = int(mine["total"].iloc[0] - mine["bytes"].iloc[0])
        rebuilt = before + np.cumsum(mine["bytes"].to_numpy())
        assert np.array_equal(series["allocated_bytes"].to_numpy(), rebuilt)
        assert np.array_equal(series["allocated_bytes"].to_numpy(), mine["total"].to_numpy())
        # Matching by address: the allocations freed in the trace free exactly the bytes freed.
        a = allocs.loc[(allocs["device_type"] == t) & (allocs["device"] == d)]
        freed_matched = int(a.loc[a["free_eid"] >= 0, "bytes"].sum())
        freed_all = int(-mine.loc[mine["bytes"] < 0, "bytes"].sum())
        unmatched_frees = freed_all - freed_matched
        assert 0 <= unmatched_frees <= before


def test_real_holders_add_up_to_each_peak(real: tuple[tv.Trace, pd.DataFrame]) -> None:
    trace, _ = real
    peaks = tv.memory_peaks(trace)
    holders = tv.memory_peak_holders(trace)
    keys = ["rank", "device_type", "device", "step"]
    sums = holders.groupby(keys, observed=True)["bytes"].sum()
    want = peaks.set_index(keys)["peak_allocated_bytes"]
    assert sums.sort_index().tolist() == want.sort_index().tolist()


def test_real_operator_totals_add_up_to_the_trace_totals(real: tuple[tv.Trace, pd.DataFrame]) -> None:
    trace, raw = real
    ops = tv.memory_by_operator(trace)
    for (t, d), g in ops.groupby(["device_type", "device"], observed=True):
        mine = raw.loc[(raw["type"] == (0 if t == "CPU" else 1)) & (raw["device"] == d), "bytes"]
        assert g["self_alloc_bytes"].sum() == mine[mine >= 0].sum()
        assert g["self_freed_bytes"].sum() == -mine[mine < 0].sum()
        assert g["self_allocs"].sum() == (mine >= 0).sum()
        # A call of an operator includes its own allocations.
        assert (g["alloc_bytes"] >= g["self_alloc_bytes"]).all()


def test_real_resampled_curve_keeps_the_peak(real: tuple[tv.Trace, pd.DataFrame]) -> None:
    trace, _ = real
    tl = tv.memory_timeline(trace)
    rs = tv.memory_timeline(trace, resample=50)
    edges = even_edges(int(tl["ts_ns"].min()), int(tl["ts_ns"].max()) + 1, 50)
    for key, g in rs.groupby(["device_type", "device"], observed=True):
        full = tl.loc[(tl["device_type"] == key[0]) & (tl["device"] == key[1])]
        # 50 bins over the scope; a series has a row from the bin holding its first record on.
        assert g["ts_ns"].tolist() == edges[:-1][edges[1:] > full["ts_ns"].iloc[0]].tolist()
        assert g["allocated_bytes"].max() == full["allocated_bytes"].max()


def test_leak_recording_grows_one_mib_per_step(data_dir: Path) -> None:
    trace = tv.load(data_dir / "cpu_memory" / "leak", cache=False)
    st = tv.memory_allocator_stats(trace)
    assert st["step"].tolist() == [1, 2, 3, 4]
    assert np.diff(st["end_allocated_bytes"]).tolist() == [2**20] * 3
    steady = tv.memory_allocator_stats(tv.load(data_dir / "cpu_memory" / "mlp_train", cache=False))
    assert np.diff(steady["end_allocated_bytes"]).tolist() == [0, 0, 0]


def test_has_memory_records(handmade: tv.Trace, dlrm: tv.Trace) -> None:
    from jupyter_traceview.analysis.memory import has_memory_records

    assert has_memory_records(handmade)
    assert not has_memory_records(dlrm)
