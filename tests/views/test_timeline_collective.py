"""The collective instance of a communication kernel across ranks (the timeline's ``_collective``).

Golden values on the 8-rank DLRM sample (``tv.sample_path()``): its second all-reduce
(``order:all_reduce:1``, matched by order: the sample records no sequence numbers) starts on
ranks 0-3 and 6 within 5 us of 17.100 ms, on rank 7 at 17.234 ms, on rank 4 at 17.633 ms and
on rank 5 at 17.682 ms, and ends on every rank at about 17.70 ms: rank 5 arrived last, 584 us
after the first (rank 3, at 17.098 ms). The expected values are also worked out here from the
events table alone (the n-th AllReduce kernel of each rank), independently of the matching.
"""

from __future__ import annotations

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.errors import TraceSelectionError
from jupyter_traceview.views.timeline import protocol
from jupyter_traceview.views.timeline.collective import collective_instance
from jupyter_traceview.views.timeline.index import TimelineIndex
from tests import kineto_builder as kb


def _nth_all_reduce(trace: tv.Trace, n: int) -> pd.DataFrame:
    """Per rank, the n-th AllReduce kernel by start (the oracle: no matching code involved)."""
    ev = trace.events()
    k = ev[(ev["kind"] == "kernel") & ev["name"].astype(str).str.contains("AllReduce")]
    k = k.sort_values(["rank", "ts_ns"])
    k = k.assign(n=k.groupby("rank").cumcount())
    return k[k["n"] == n].set_index("rank")


def test_all_reduce_instance_on_every_rank_and_its_last_arrival(dlrm: tv.Trace) -> None:
    ix = TimelineIndex.of(dlrm)
    oracle = _nth_all_reduce(dlrm, 1)
    # Select it on rank 0: the same instance comes back on all 8 ranks.
    got = collective_instance(ix, 0, int(oracle.loc[0, "eid"]))
    assert got["found"] is True
    assert got["collective"] == "all_reduce"
    assert got["key"] == "order:all_reduce:1"
    assert got["matched_by"] == "order"
    assert [p["rank"] for p in got["ranks"]] == list(range(8))
    for p in got["ranks"]:
        r = p["rank"]
        assert p["eid"] == int(oracle.loc[r, "eid"])
        assert p["start"] == int(oracle.loc[r, "ts_ns"]) - ix.t0_ns
        assert p["end"] == int(oracle.loc[r, "ts_ns"] + oracle.loc[r, "dur_ns"]) - ix.t0_ns
        assert p["kernels"] == 1
        # The row drawn is the kernel's own row (what the tooltip's details say).
        assert p["row"] == ix.details(r, p["eid"])["row"]
    # Golden: rank 5 arrived last, 584 us after rank 3.
    assert got["last"] == {"rank": 5, "start": 17_682_000}
    assert got["first"] == {"rank": 3, "start": 17_098_000}
    assert got["wait_ns"] == 584_000
    assert got["consistent"] is True
    # The oracle agrees: latest start over the ranks.
    assert int(oracle["ts_ns"].idxmax()) == 5
    # Selected on another rank (the straggler itself): the same answer.
    again = collective_instance(ix, 5, int(oracle.loc[5, "eid"]))
    assert again == got


def test_every_matched_instance_has_its_latest_start_as_last(dlrm: tv.Trace) -> None:
    ix = TimelineIndex.of(dlrm)
    for n in range(3):
        oracle = _nth_all_reduce(dlrm, n)
        got = collective_instance(ix, 2, int(oracle.loc[2, "eid"]))
        latest = oracle.sort_values(["ts_ns"], kind="stable")
        last_t = int(latest["ts_ns"].max())
        last_rank = max(r for r in oracle.index if int(oracle.loc[r, "ts_ns"]) == last_t)
        assert got["last"] == {"rank": int(last_rank), "start": last_t - ix.t0_ns}
        assert got["wait_ns"] == last_t - int(oracle["ts_ns"].min())


def test_not_a_collective_and_unknown_rank(dlrm: tv.Trace) -> None:
    ix = TimelineIndex.of(dlrm)
    ev = dlrm.events(0)
    compute = ev[(ev["kind"] == "kernel") & (ev["gpu_class"] == "compute")]
    got = collective_instance(ix, 0, int(compute["eid"].iloc[0]))
    assert got["found"] is False and "not a communication kernel" in got["reason"]
    with pytest.raises(TraceSelectionError):
        collective_instance(ix, 99, 1)
    # Through the protocol: errors are answers, not exceptions.
    msg, bufs = protocol.answer(ix, "_collective", {"rank": 99, "eid": 1})
    assert "error" in msg and bufs == []
    msg, _ = protocol.answer(ix, "_collective", {"rank": 0})
    assert "error" in msg


def test_a_collective_on_one_rank_only_is_not_matched(tmp_path) -> None:
    # One rank runs an all-reduce, the other none: nothing to highlight across ranks.
    r0 = [
        kb.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 100, 50, corr=1, stream=20),
        kb.kernel("gemm", 200, 50, corr=2),
    ]
    r1 = [kb.kernel("gemm", 200, 50, corr=2)]
    paths = [
        kb.write(tmp_path / "r0.json", kb.doc(r0, rank=0, world_size=2)),
        kb.write(tmp_path / "r1.json", kb.doc(r1, rank=1, world_size=2)),
    ]
    trace = tv.load(paths, cache=False)
    ix = TimelineIndex.of(trace)
    ev = trace.events(0)
    eid = int(ev.loc[ev["name"].astype(str).str.contains("AllReduce"), "eid"].iloc[0])
    got = collective_instance(ix, 0, eid)
    assert got["found"] is False
    assert "not matched across ranks" in got["reason"]
