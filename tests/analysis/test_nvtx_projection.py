"""nvtx_gpu_projection: known answers in both formats, a brute-force reference, real traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.nvtx import NVTX_GPU_PROJECTION_COLUMNS
from jupyter_traceview.model import intervals as iv
from tests import kineto_builder as kb
from tests import nsys_builder as nb
from tests.conftest import DATA, KINETO_FOLDERS
from tests.nsys_to_kineto import convert

MFU = DATA / "nsys_sqlite" / "mfu_2gpu_nccl.sqlite"
US = 1000  # ns per us: the Kineto trace is written in us, the Nsight one in ns


def kineto_trace(tmp_path: Path) -> tv.Trace:
    """The scenario below as a PyTorch trace (times in us)."""
    other = 200
    events = [
        kb.annotation("outer", 0, 100),
        kb.annotation("inner", 10, 40),
        *kb.launch("A", 20, 100, 50, corr=1, stream=7),  # in inner (and outer)
        *kb.launch("B", 60, 120, 50, corr=2, stream=8),  # in outer
        kb.runtime("cudaMemcpyAsync", 70, 5, corr=3),
        kb.memcpy(200, 20, corr=3),  # in outer
        kb.runtime("cudaStreamSynchronize", 80, 5, corr=4),
        kb.sync("Stream Sync", 150, 150, corr=4),  # not work
        *kb.launch("C", 95, 400, 10, corr=5, cpu_dur=10),  # the call ends after outer: not outer's
        kb.annotation("after", 300, 100),
        *kb.launch("D", 310, 500, 10, corr=6),
        kb.runtime("cudaLaunchKernel", 30, 5, corr=7) | {"tid": other},  # another thread, during outer
        kb.kernel("E", 600, 10, corr=7),
    ]
    return tv.load(kb.write(tmp_path / "k.json", kb.doc(events, base_time_ns=nb.SESSION_UTC_NS)), cache=False)


def nsys_trace(tmp_path: Path) -> tv.Trace:
    """The same scenario as an Nsight export (times in ns)."""
    x = nb.Export()
    x.range("outer", 0, 100 * US)
    x.range("inner", 10 * US, 50 * US)
    x.launch("A", 20 * US, 100 * US, 50 * US, corr=1, stream=7, cpu_dur=5 * US)
    x.launch("B", 60 * US, 120 * US, 50 * US, corr=2, stream=8, cpu_dur=5 * US)
    x.call("cudaMemcpyAsync_v3020", 70 * US, 75 * US, corr=3)
    x.memcpy(200 * US, 220 * US, corr=3)
    x.call("cudaStreamSynchronize_v3020", 80 * US, 85 * US, corr=4)
    x.sync(150 * US, 300 * US, corr=4)
    x.launch("C", 95 * US, 400 * US, 10 * US, corr=5, cpu_dur=10 * US)
    x.range("after", 300 * US, 400 * US)
    x.launch("D", 310 * US, 500 * US, 10 * US, corr=6, cpu_dur=5 * US)
    x.launch("E", 30 * US, 600 * US, 10 * US, corr=7, tid=200, cpu_dur=5 * US)
    return tv.load(x.write(tmp_path / "n.sqlite"), cache=False)


#: name -> (launches, kernels, gpu_activities, gpu_start, gpu_end, gpu_busy, gpu_time), times in us from the base.
EXPECTED = {
    "outer": (3, 2, 3, 100, 220, (150 - 100) + (170 - 150) + 20, 50 + 50 + 20),
    "inner": (1, 1, 1, 100, 150, 50, 50),
    "after": (1, 1, 1, 500, 510, 10, 10),
}


@pytest.mark.parametrize("build", [kineto_trace, nsys_trace], ids=["kineto", "nsys"])
def test_known_answers(tmp_path: Path, build) -> None:
    trace = build(tmp_path)
    proj = tv.nvtx_gpu_projection(trace)
    assert list(proj.columns) == list(NVTX_GPU_PROJECTION_COLUMNS)
    assert proj["name"].tolist() == ["outer", "inner", "after"]
    base = nb.SESSION_UTC_NS
    for name, (launches, kernels, acts, start, end, busy, time) in EXPECTED.items():
        row = proj.set_index("name").loc[name]
        assert (row["launches"], row["kernels"], row["gpu_activities"]) == (launches, kernels, acts), name
        assert (row["gpu_start_ns"], row["gpu_end_ns"]) == (base + start * US, base + end * US), name
        assert row["gpu_span_ns"] == (end - start) * US
        assert (row["gpu_busy_ns"], row["gpu_time_ns"]) == (busy * US, time * US), name
    inner = proj.set_index("name").loc["inner"]
    assert inner["depth"] == 1 and inner["dur_ns"] == 40 * US
    # The ranges' rows point at their events.
    ev = trace.events(0)
    assert ev.loc[proj["eid"], "name"].astype(str).tolist() == proj["name"].tolist()


@pytest.mark.parametrize("build", [kineto_trace, nsys_trace], ids=["kineto", "nsys"])
def test_scoping_and_name_filter(tmp_path: Path, build) -> None:
    trace = build(tmp_path)
    base = nb.SESSION_UTC_NS
    only = tv.nvtx_gpu_projection(trace, name="^(in|af)")
    assert only["name"].tolist() == ["inner", "after"]
    # A window that cuts the work: activities are clipped to it, ranges outside it are gone.
    clipped = tv.nvtx_gpu_projection(trace, time_range=(base, base + 160 * US)).set_index("name")
    assert clipped.index.tolist() == ["outer", "inner"]
    assert clipped.loc["outer", "gpu_busy_ns"] == 60 * US  # A [100, 150) and B [120, 160): no copy
    assert clipped.loc["outer", "gpu_time_ns"] == (50 + 40) * US
    assert clipped.loc["outer", "gpu_end_ns"] == base + 160 * US
    with pytest.raises(ValueError, match="not a valid regular expression"):
        tv.nvtx_gpu_projection(trace, name="(")
    with pytest.raises(tv.TraceSelectionError, match="unknown rank 5"):
        tv.nvtx_gpu_projection(trace, ranks=[5])


def test_cpu_only_trace_warns_and_is_empty() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        out = tv.nvtx_gpu_projection(trace)
    assert out.empty and list(out.columns) == list(NVTX_GPU_PROJECTION_COLUMNS)
    assert out.dtypes.astype(str).tolist() == list(NVTX_GPU_PROJECTION_COLUMNS.values())


def brute_force(trace: tv.Trace, rank: int, eids: list[int]) -> pd.DataFrame:
    """The definition, range by range: calls on the range's thread nested in it, and their work."""
    ev = trace.events(rank)
    work = ev[ev["kind"].isin(["kernel", "gpu_memcpy", "gpu_memset"]) & (ev["launch_eid"] >= 0)]
    work = work.assign(end=work["ts_ns"] + work["dur_ns"])
    calls = ev.loc[work["launch_eid"].unique()]
    rows = []
    for eid in eids:
        r = ev.loc[eid]
        inside = calls[
            (calls["pid"] == r["pid"])
            & (calls["tid"] == r["tid"])
            & (calls["ts_ns"] >= r["ts_ns"])
            & (calls["ts_ns"] + calls["dur_ns"] <= r["ts_ns"] + r["dur_ns"])
            & (calls["ts_ns"] < r["ts_ns"] + r["dur_ns"])
        ]
        acts = work[work["launch_eid"].isin(inside["eid"])]
        s, e = iv.union(acts["ts_ns"].to_numpy(), acts["end"].to_numpy())
        rows.append(
            {
                "eid": eid,
                "launches": len(inside),
                "kernels": int((acts["kind"] == "kernel").sum()),
                "gpu_activities": len(acts),
                "gpu_start_ns": int(acts["ts_ns"].min()) if len(acts) else -1,
                "gpu_end_ns": int(acts["end"].max()) if len(acts) else -1,
                "gpu_busy_ns": iv.length(s, e),
                "gpu_time_ns": int(acts["dur_ns"].sum()),
            }
        )
    return pd.DataFrame(rows).astype("int64")


@pytest.mark.parametrize("source", ["dlrm", "mfu"])
def test_matches_brute_force_on_real_traces(source: str, dlrm: tv.Trace) -> None:
    trace = dlrm if source == "dlrm" else tv.load(MFU, cache=False)
    proj = tv.nvtx_gpu_projection(trace)
    rng = np.random.default_rng(0)
    for r in trace.ranks:
        mine = proj[proj["rank"] == r]
        # Every range with GPU work, plus a sample of the others (the Nsight export has ~10k per rank).
        with_work = mine[mine["gpu_activities"] > 0]
        without = mine[mine["gpu_activities"] == 0]
        pick = pd.concat([with_work.head(400), without.iloc[rng.permutation(len(without))[:100]]])
        ref = brute_force(trace, r, pick["eid"].tolist())
        got = pick[ref.columns].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, ref)
        assert len(with_work) > 0
    assert (proj["gpu_busy_ns"] <= proj["gpu_span_ns"]).all()
    assert (proj["gpu_busy_ns"] <= proj["gpu_time_ns"]).all()


def test_parents_contain_their_childrens_work(dlrm: tv.Trace) -> None:
    proj = tv.nvtx_gpu_projection(dlrm)
    for r in dlrm.ranks:
        ev = dlrm.events(r)
        mine = proj[proj["rank"] == r].set_index("eid")
        parents = ev.loc[mine.index, "parent_eid"]
        nested = parents[parents.isin(mine.index)]
        child, parent = mine.loc[nested.index], mine.loc[nested.to_numpy()]
        for col in ("launches", "gpu_activities", "gpu_busy_ns", "gpu_time_ns"):
            assert (child[col].to_numpy() <= parent[col].to_numpy()).all(), col
    steps = proj[proj["name"] == "ProfilerStep#10"]
    assert len(steps) == 8 and (steps["kernels"] > 0).all()


def test_same_projection_through_the_kineto_path(tmp_path: Path) -> None:
    """NVTX ranges of the Nsight export and the same rows as Kineto user annotations agree."""
    convert(MFU, tmp_path / "k")
    a = tv.nvtx_gpu_projection(tv.load(MFU, cache=False))
    b = tv.nvtx_gpu_projection(tv.load(tmp_path / "k", cache=False))
    key = ["rank", "ts_ns", "dur_ns", "name"]
    a = a.drop(columns="eid").sort_values(key, kind="stable").reset_index(drop=True)
    b = b.drop(columns="eid").sort_values(key, kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert a["gpu_activities"].sum() > 1000


def test_per_call_suffixes_are_a_column_and_one_name_is_one_row(tmp_path: Path) -> None:
    """Two calls of aten::mm named as emit_nvtx names them, each 20 us launching one 30 us
    kernel, inside one ``forward`` range of 200 us: the breakdown gives one ``aten::mm`` row
    (2 ranges, 40 us, 2 kernels, 60 us of kernel time); the projection keeps a row per range
    with the suffix in ``name_suffix``."""
    events = [
        kb.annotation("forward", 0, 200),
        kb.annotation("aten::mm, seq = 1, op_id = 10, sizes = [[2, 3], [3, 4]]", 10, 20),
        *kb.launch("gemm_a", 12, 50, 30, corr=1),
        kb.annotation("aten::mm, seq = 2, op_id = 11", 100, 20),
        *kb.launch("gemm_b", 102, 150, 30, corr=2),
    ]
    trace = tv.load(kb.write(tmp_path / "t.json", kb.doc(events)), cache=False)
    ann = tv.user_annotation_breakdown(trace, kind="cpu").set_index("name")
    assert sorted(ann.index) == ["aten::mm", "forward"]
    mm = ann.loc["aten::mm"]
    assert (mm["count"], mm["total_ns"], mm["kernels"], mm["kernel_ns"]) == (2, 40 * US, 2, 60 * US)
    proj = tv.nvtx_gpu_projection(trace).set_index("eid")
    mine = proj.loc[proj["name"] == "aten::mm"].sort_values("ts_ns")
    assert mine["name_suffix"].tolist() == ["seq = 1, op_id = 10, sizes = [[2, 3], [3, 4]]", "seq = 2, op_id = 11"]
    assert mine["kernels"].tolist() == [1, 1]
    assert proj.loc[proj["name"] == "forward", "name_suffix"].tolist() == [""]
    assert list(proj.columns) == [c for c in NVTX_GPU_PROJECTION_COLUMNS if c != "eid"]


def test_split_range_name() -> None:
    from jupyter_traceview.analysis._range_names import split_range_name

    assert split_range_name("aten::add_, stashed seq = 5") == ("aten::add_", "stashed seq = 5")
    assert split_range_name("a, b") == ("a, b", "")  # a comma alone is part of the name
    assert split_range_name("ncclSend") == ("ncclSend", "")
