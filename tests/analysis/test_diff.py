"""trace_diff: known answers, a trace changed in code, two real traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.model.rank_data import RankData
from tests import kineto_builder as kb
from tests.conftest import KINETO_FOLDERS

US = 1000


def _tiny(tmp_path: Path, name: str, kernels: list[tuple[str, float]]) -> tv.Trace:
    events = [kb.step(1, 0, 10_000), kb.cpu_op("aten::op", 5, 5000)]
    t = 10.0
    for i, (k, dur) in enumerate(kernels):
        events += kb.launch(k, t, 6000 + 100 * i, dur, corr=i + 1)
        t += 10
    return tv.load(kb.write(tmp_path / name, kb.doc(events)), cache=False)


def test_known_answers(tmp_path: Path) -> None:
    a = _tiny(tmp_path, "a.json", [("k1", 10), ("k1", 10), ("k2", 7), ("k4", 20)])
    b = _tiny(tmp_path, "b.json", [("k1", 15), ("k1", 15), ("k3", 30), ("k4", 20.5)])
    d = tv.trace_diff(a, b, kinds=["kernel"]).set_index("name")
    assert d.loc["k1", "status"] == "changed" and d.loc["k1", "total_delta_ns"] == 10 * US
    assert d.loc["k1", "mean_ns_a"] == 10 * US and d.loc["k1", "mean_delta_ns"] == 5 * US
    assert d.loc["k1", "total_delta_pct"] == pytest.approx(50.0)
    assert d.loc["k2", "status"] == "removed" and d.loc["k2", "count_b"] == 0 and np.isnan(d.loc["k2", "mean_ns_b"])
    assert (
        d.loc["k3", "status"] == "added"
        and d.loc["k3", "count_delta"] == 1
        and np.isnan(d.loc["k3", "total_delta_pct"])
    )
    # 0.5 us on 20 us is within rtol=5% and atol=1 us.
    assert d.loc["k4", "status"] == "unchanged"
    assert tv.trace_diff(a, b, kinds=["kernel"], rtol=0, atol_ns=0).set_index("name").loc["k4", "status"] == "changed"
    # Sorted by |total delta|: k3 (+30), k1 (+10), k2 (-7), k4 (+0.5).
    assert d.index.tolist() == ["k3", "k1", "k2", "k4"]
    # CPU operators too, by default.
    full = tv.trace_diff(a, b)
    assert set(full["kind"]) == {"cpu_op", "kernel"} and "aten::op" in set(full["name"])


def test_self_diff_is_unchanged(dlrm: tv.Trace) -> None:
    for per_rank in (False, True):
        d = tv.trace_diff(dlrm, dlrm, per_rank=per_rank)
        assert set(d["status"]) == {"unchanged"} and (d["total_delta_ns"] == 0).all()
    # Analyses take a Trace: loading stays in tv.load.
    with pytest.raises(TypeError, match=r"tv\.load"):
        tv.trace_diff(tv.sample_path(), dlrm)  # type: ignore[arg-type]
    d = tv.trace_diff(tv.load(tv.sample_path()), dlrm)
    assert set(d["status"]) == {"unchanged"}
    assert int(d["count_a"].sum()) == int(
        dlrm.events()["kind"].isin(["cpu_op", "kernel", "gpu_memcpy", "gpu_memset"]).sum()
    )


def _changed(trace: tv.Trace, slower: str, removed: str, factor: int = 2) -> tv.Trace:
    out = []
    for r in trace.ranks:
        d = trace.rank_data(r)
        ev = d.events.copy()
        is_slow = (ev["name"] == slower).to_numpy()
        ev.loc[is_slow, "dur_ns"] = ev.loc[is_slow, "dur_ns"] * factor
        ev = ev.loc[(ev["name"] != removed).to_numpy()].reset_index(drop=True)
        out.append(RankData(meta=d.meta, events=ev, gpu_args=d.gpu_args, comms=d.comms))
    return tv.Trace(out, classifier=trace.classifier, source="changed")


def test_one_kernel_slower_one_removed(dlrm: tv.Trace) -> None:
    k = dlrm.events().query("kind == 'kernel'")
    by_time = k.groupby("name", observed=True)["dur_ns"].sum().sort_values()
    slower, removed = str(by_time.index[-3]), str(by_time.index[-5])
    b = _changed(dlrm, slower, removed)
    d = tv.trace_diff(dlrm, b)
    changed = d.loc[d["status"] != "unchanged"]
    assert changed.set_index("name")["status"].to_dict() == {slower: "changed", removed: "removed"}
    row = d.set_index("name").loc[slower]
    assert row["total_delta_ns"] == by_time[slower] and row["total_delta_pct"] == pytest.approx(100.0)
    assert row["count_delta"] == 0
    # The two changed rows come first, the larger |delta| on top.
    top = d["name"].head(2).tolist()
    assert top == sorted([slower, removed], key=lambda n: -by_time[n])
    per = tv.trace_diff(dlrm, b, per_rank=True)
    assert set(per.loc[per["status"] == "removed", "name"]) == {removed}
    assert per["rank"].nunique() == 8


def test_mirror(dlrm: tv.Trace) -> None:
    other = tv.load(KINETO_FOLDERS["hta_dlrm_2of128_ranks"], cache=False)
    ab = tv.trace_diff(dlrm, other, aggregate="mean")
    ba = tv.trace_diff(other, dlrm, aggregate="mean")
    key = ["kind", "name"]
    m = ab.merge(ba, on=key, suffixes=("_ab", "_ba"))
    assert len(m) == len(ab) == len(ba)
    assert np.allclose(m["total_delta_ns_ab"], -m["total_delta_ns_ba"], atol=1)
    flip = {"added": "removed", "removed": "added", "changed": "changed", "unchanged": "unchanged"}
    assert (m["status_ab"].map(flip) == m["status_ba"]).all()


def test_two_real_traces(dlrm: tv.Trace) -> None:
    """DLRM on 8 V100s against 2 ranks of a 128-rank DLRM job: per-rank means."""
    other = tv.load(KINETO_FOLDERS["hta_dlrm_2of128_ranks"], cache=False)
    d = tv.trace_diff(dlrm, other, aggregate="mean")
    counts = d["status"].value_counts().to_dict()
    assert set(counts) == {"added", "removed", "changed"}
    kinds = ["cpu_op", "kernel", "gpu_memcpy", "gpu_memset"]
    for side, t in (("a", dlrm), ("b", other)):
        ev = t.events()
        ev = ev.loc[ev["kind"].isin(kinds)]
        assert d[f"count_{side}"].sum() == pytest.approx(len(ev) / len(t.ranks))
        assert d[f"total_ns_{side}"].sum() == pytest.approx(ev["dur_ns"].sum() / len(t.ranks), abs=len(d))
    # Rows present on both sides: mean and total deltas agree with the sides.
    both = d.loc[(d["count_a"] > 0) & (d["count_b"] > 0)]
    assert np.allclose(both["mean_ns_b"] - both["mean_ns_a"], both["mean_delta_ns"])
    # Sorted by |total delta|.
    assert (np.diff(np.abs(d["total_delta_ns"].to_numpy())) <= 0).all()
    per = tv.trace_diff(dlrm, other, per_rank=True)
    assert set(per.loc[per["rank"] >= 2, "status"]) == {"removed"}


def test_scope_and_options(dlrm: tv.Trace) -> None:
    d = tv.trace_diff(dlrm, dlrm, ranks=[0, 1], kinds=["kernel"])
    assert set(d["kind"]) == {"kernel"}
    t0 = int(dlrm.events()["ts_ns"].min())
    w = tv.trace_diff(dlrm, dlrm, time_range=(t0, t0 + 5_000_000))
    full = tv.trace_diff(dlrm, dlrm)
    assert set(w["status"]) == {"unchanged"} and 0 < w["total_ns_a"].sum() < full["total_ns_a"].sum()
    with pytest.raises(ValueError, match="kinds"):
        tv.trace_diff(dlrm, dlrm, kinds=["kernels"])
    with pytest.raises(ValueError, match="aggregate"):
        tv.trace_diff(dlrm, dlrm, aggregate="max")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="paths"):
        tv.trace_diff(dlrm, 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"tv\.load"):
        tv.trace_diff(dlrm, "/nonexistent/trace/folder")  # type: ignore[arg-type]


def test_cpu_only_and_empty() -> None:
    cpu = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    d = tv.trace_diff(cpu, cpu)
    assert set(d["kind"]) == {"cpu_op"} and set(d["status"]) == {"unchanged"}
    e = tv.trace_diff(cpu, cpu, kinds=["kernel"])
    assert e.empty and "status" in e.columns
    assert list(pd.DataFrame(e).columns)[:2] == ["kind", "name"]
