"""frequent_kernel_sequences and op_kernels: known answers, properties, parity with HTA."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis import _links as lk
from jupyter_traceview.analysis.operators import FREQUENT_COLUMNS, OP_KERNEL_COLUMNS, OP_SEQUENCE_COLUMNS
from tests import kineto_builder as kb
from tests.analysis.hta_ops import (
    assert_same_rows,
    hta_aten_op_kernels,
    hta_csv,
    hta_view,
    pool_ranks,
)
from tests.conftest import KINETO_FOLDERS

US = 1000  # the builder writes microseconds; results are ns


def _linear(t0: float, corr: int, gemm: str = "gemm_a", gpu0: float | None = None) -> list[dict]:
    """aten::linear [t0, t0+90) -> aten::addmm [t0+10, t0+50) launching ``gemm`` at t0+20,
    then the bias kernel launched directly by aten::linear at t0+60. GPU: gemm 50 us, bias 10 us."""
    g = 1000 + t0 if gpu0 is None else gpu0
    return [
        kb.cpu_op("aten::linear", t0, 90),
        kb.cpu_op("aten::addmm", t0 + 10, 40),
        *kb.launch(gemm, t0 + 20, g, 50, corr=corr),
        *kb.launch("bias", t0 + 60, g + 60, 10, corr=corr + 1),
    ]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    events = [
        kb.step(1, 0, 1000),
        *_linear(0, 1),
        *_linear(100, 3),
        *_linear(200, 5, gemm="gemm_b"),
        # An aten::linear nested in another: one instance (the outer), not two.
        kb.cpu_op("aten::linear", 300, 95),
        *_linear(302, 7),
        # A kernel launched outside any operator.
        *kb.launch("loose", 500, 1500, 5, corr=9),
    ]
    path = tmp_path_factory.mktemp("ops") / "r.json"
    return tv.load(kb.write(path, kb.doc(events)), cache=False)


def test_frequent_sequences_by_construction(tiny: tv.Trace) -> None:
    out = tv.frequent_kernel_sequences(tiny, operator="aten::linear")
    assert list(out.columns) == list(FREQUENT_COLUMNS)
    assert out["sequence"].tolist() == ["gemm_a -> bias", "gemm_b -> bias"]
    assert out["count"].tolist() == [3, 1]
    assert out["instances"].tolist() == [3, 1]
    assert out["length"].tolist() == [2, 2]
    assert out["gpu_ns"].tolist() == [3 * 60 * US, 60 * US]
    # CPU time of the roots: two plain instances (90 us) and the outer nested one (95 us).
    assert out["cpu_ns"].tolist() == [(90 + 90 + 95) * US, 90 * US]
    first = tiny.events(0).set_index("eid").loc[out["first_eid"].iloc[0]]
    assert first["name"] == "aten::linear" and first["ts_ns"] == tiny.events(0)["ts_ns"].min()


def test_frequent_sequences_ngrams(tiny: tv.Trace) -> None:
    out = tv.frequent_kernel_sequences(tiny, operator="aten::linear", length=1, top_k=None)
    got = dict(zip(out["sequence"], zip(out["count"], out["instances"], out["gpu_ns"], strict=True), strict=True))
    assert got == {"bias": (4, 4, 40 * US), "gemm_a": (3, 3, 150 * US), "gemm_b": (1, 1, 50 * US)}
    # Windows longer than every instance: nothing, but no error (the operator exists).
    assert tv.frequent_kernel_sequences(tiny, operator="aten::linear", length=3).empty


def test_frequent_sequences_min_kernels_top_k_and_match(tiny: tv.Trace) -> None:
    assert tv.frequent_kernel_sequences(tiny, operator="aten::linear", min_kernels=3).empty
    assert len(tv.frequent_kernel_sequences(tiny, operator="aten::linear", top_k=1)) == 1
    sub = tv.frequent_kernel_sequences(tiny, operator="linear", match="substring")
    pd.testing.assert_frame_equal(sub, tv.frequent_kernel_sequences(tiny, operator="aten::linear"))
    rx = tv.frequent_kernel_sequences(tiny, operator=r"^aten::lin", match="regex")
    pd.testing.assert_frame_equal(rx, sub)
    # An annotation is a scope too: the step holds every launch, in GPU order.
    step = tv.frequent_kernel_sequences(tiny, operator="ProfilerStep#1")
    assert step["length"].tolist() == [9] and step["sequence"].iloc[0].endswith("-> loose")


def test_unknown_operator_lists_close_matches(tiny: tv.Trace) -> None:
    with pytest.raises(tv.TraceSelectionError) as err:
        tv.frequent_kernel_sequences(tiny, operator="aten::lineer")
    assert "aten::linear" in str(err.value).split("has:")[1].split(",")[0]
    with pytest.raises(tv.TraceSelectionError, match="aten::addmm"):
        tv.op_kernels(tiny, operators=["aten::addm"])


def test_bad_options(tiny: tv.Trace) -> None:
    with pytest.raises(ValueError, match="match"):
        tv.frequent_kernel_sequences(tiny, operator="x", match="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kinds"):
        tv.op_kernels(tiny, kinds=["cpu_op"])
    with pytest.raises(ValueError, match="level"):
        tv.op_kernels(tiny, level="middle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="regular expression"):
        tv.op_kernels(tiny, op_pattern="(")


def test_op_kernels_levels_by_construction(tiny: tv.Trace) -> None:
    inner = tv.op_kernels(tiny)
    assert list(inner.columns) == list(OP_SEQUENCE_COLUMNS)
    rows = {(r.operator, r.sequence): r for r in inner.itertuples()}
    assert set(rows) == {("aten::addmm", "gemm_a"), ("aten::addmm", "gemm_b"), ("aten::linear", "bias")}
    gemm = rows[("aten::addmm", "gemm_a")]
    assert gemm.count == 3 and gemm.kernels == 1 and gemm.gpu_ns == 150 * US and gemm.cpu_ns == 120 * US
    assert gemm.op_launch_delay_ns == 10 * US  # addmm starts 10 us before its launch call
    assert gemm.runtime_delay_ns == (1000 - 20) * US  # launch call start -> kernel start
    assert gemm.launch_delay_ns == (1000 - 20 - 5) * US  # launch call end -> kernel start
    bias = rows[("aten::linear", "bias")]
    assert bias.count == 4 and bias.op_launch_delay_ns == 60 * US
    # The nested aten::linear is the innermost op of its bias launch.
    outer = tv.op_kernels(tiny, level="outermost")
    assert set(zip(outer["operator"], outer["sequence"], outer["count"], strict=True)) == {
        ("aten::linear", "gemm_a -> bias", 3),
        ("aten::linear", "gemm_b -> bias", 1),
    }
    every = tv.op_kernels(tiny, level="all", by="kernel")
    assert list(every.columns) == list(OP_KERNEL_COLUMNS)
    lin_bias = every.loc[(every["operator"] == "aten::linear") & (every["kernel"] == "bias")].iloc[0]
    # The nested instance and its parent both count the inner bias launch (inclusive).
    assert lin_bias["count"] == 5 and lin_bias["instances"] == 5
    assert "loose" not in set(every["kernel"])


def test_op_kernels_filters(tiny: tv.Trace) -> None:
    only = tv.op_kernels(tiny, operators="aten::addmm", by="kernel")
    assert set(only["operator"]) == {"aten::addmm"} and only["count"].sum() == 4
    # Only ops matching op_pattern launch: the gemm goes to the enclosing aten::linear.
    lin = tv.op_kernels(tiny, op_pattern="linear$", by="kernel")
    assert set(lin["operator"]) == {"aten::linear"} and lin["count"].sum() == 8


def test_cpu_only_trace_warns_and_returns_documented_columns() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    name = str(trace.events().query("kind == 'cpu_op'")["name"].iloc[0])
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        out = tv.frequent_kernel_sequences(trace, operator=name)
    assert out.empty and list(out.columns) == list(FREQUENT_COLUMNS)
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        out = tv.op_kernels(trace, by="kernel")
    assert out.empty and list(out.columns) == list(OP_KERNEL_COLUMNS)


def test_enclosure_equals_parent_chain_on_properly_nested_trace(dlrm: tv.Trace) -> None:
    """For properly nested events, same-thread containment is the parent_eid chain."""
    ev = dlrm.events(0)
    table = lk.eid_rows(ev)
    ops = np.flatnonzero((ev["kind"] == "cpu_op").to_numpy())
    launches = np.flatnonzero(ev["kind"].isin(["cuda_runtime"]).to_numpy())
    i, r = lk.containing_pairs(ev, ops, launches)
    got = sorted(zip(launches[i].tolist(), r.tolist(), strict=True))
    parent = lk.lookup(table, ev["parent_eid"].to_numpy())
    is_op = (ev["kind"] == "cpu_op").to_numpy()
    expected = []
    for row in launches.tolist():
        p = parent[row]
        while p >= 0:
            if is_op[p]:
                expected.append((row, int(p)))
            p = parent[p]
    assert got == sorted(expected) and len(got) > 500


def test_improper_nesting_is_still_enclosure() -> None:
    """h100_bert_small: ProfilerStep#6 starts inside a Python frame and outlives it, so no
    launch call has it on its parent_eid chain; time containment on the thread finds them."""
    trace = tv.load(KINETO_FOLDERS["h100_bert_small"], cache=False)
    ev = trace.events(0)
    step = ev.loc[(ev["name"] == "ProfilerStep#6") & (ev["kind"] == "user_annotation")].iloc[0]
    acts = ev.loc[ev["kind"].isin(["kernel", "gpu_memcpy", "gpu_memset"]) & (ev["launch_eid"] >= 0)]
    calls = ev.set_index("eid").loc[acts["launch_eid"]]
    inside = (
        (calls["tid"] == step["tid"])
        & (calls["ts_ns"] >= step["ts_ns"])
        & (calls["ts_ns"] + calls["dur_ns"] <= step["ts_ns"] + step["dur_ns"])
    )
    assert int(inside.sum()) > 50
    by_eid = ev.set_index("eid")["parent_eid"]
    for eid in calls.index[:5]:
        chain = []
        while eid >= 0:
            eid = int(by_eid.loc[eid])
            chain.append(eid)
        assert int(step["eid"]) not in chain
    out = tv.frequent_kernel_sequences(trace, operator="ProfilerStep#6")
    assert out["length"].tolist() == [int(inside.sum())]


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "hta_dlrm_2of128_ranks", "h100_bert_small", "hta_alexnet"])
def test_levels_attribute_the_same_kernels(folder: str) -> None:
    """Innermost and outermost attribution cover the same activities; 'all' covers them
    at least once."""
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    inner = tv.op_kernels(trace, by="kernel").groupby("rank")[["count", "gpu_ns"]].sum()
    outer = tv.op_kernels(trace, by="kernel", level="outermost").groupby("rank")[["count", "gpu_ns"]].sum()
    every = tv.op_kernels(trace, by="kernel", level="all").groupby("rank")[["count", "gpu_ns"]].sum()
    pd.testing.assert_frame_equal(inner, outer)
    assert (every >= inner).all().all()
    seq = tv.op_kernels(trace).groupby("rank")["gpu_ns"].sum()
    pd.testing.assert_series_equal(seq, inner["gpu_ns"])


# ---------------------------------------------------------------- HTA parity
HTA_SEQ_KINDS = ["kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"]


@pytest.mark.parametrize(
    ("folder", "operator"),
    [
        ("dlrm_8rank_v100", "aten::linear"),
        ("hta_alexnet", "aten::conv2d"),
        ("hta_dlrm_2of128_ranks", "aten::linear"),
        ("hta_mi250_rocm", "aten::linear"),
    ],
)
def test_frequent_sequences_match_hta(folder: str, operator: str) -> None:
    """HTA's rules: substring match, >= 3 GPU events (sync records included), rank 0."""
    ref = hta_csv(folder, "frequent_kernel_sequences")
    trace = hta_view(tv.load(KINETO_FOLDERS[folder], cache=False))
    ours = tv.frequent_kernel_sequences(
        trace, operator=operator, match="substring", min_kernels=3, kinds=HTA_SEQ_KINDS, top_k=None, ranks=0
    )
    if ref is None:
        # HTA found nothing: no instance at its shallowest depth launches 3 GPU events.
        assert ours.empty
        return
    ours = ours.assign(pattern=ours["operator"] + "|" + ours["sequence"].str.replace(" -> ", "|", regex=False))
    ours["gpu_us"] = ours["gpu_ns"] / 1000
    ours["cpu_us"] = ours["cpu_ns"] / 1000
    assert_same_rows(
        ours,
        ref,
        ["pattern"],
        {"count": "count", "gpu_us": "GPU kernel duration (us)", "cpu_us": "CPU op duration (us)"},
    )


ATEN_VALUES = {
    "occurrence_count": "occurrence_count",
    "avg_aten_op_launch_delay": "avg_aten_op_launch_delay",
    "avg_runtime_delay": "avg_runtime_delay",
}
ATEN_KEY = ["rank", "aten_op_name", "kernel_sequence"]


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "hta_dlrm_2of128_ranks", "h100_bert_small", "hta_alexnet"])
def test_hta_aten_op_rules_reproduce_hta(folder: str) -> None:
    """Our rewrite of HTA's rules over our tables gives HTA's reference numbers: the rules
    (cross-thread containment, latest start, outer op on ties, rank pooling) are HTA's."""
    trace = hta_view(tv.load(KINETO_FOLDERS[folder], cache=False))
    ref = hta_csv(folder, "aten_op_kernels_and_delay")
    assert ref is not None
    assert_same_rows(hta_aten_op_kernels(trace, ties="outer"), ref, ATEN_KEY, ATEN_VALUES, rtol=0.01, atol=0.0011)


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "hta_dlrm_2of128_ranks", "h100_bert_small", "hta_alexnet"])
def test_op_kernels_match_hta(folder: str) -> None:
    """op_kernels with HTA's options equals HTA's rules except for ties, where we take the
    nested op (docs/semantics.md (operators)); on traces without ties it equals HTA's output."""
    trace = hta_view(tv.load(KINETO_FOLDERS[folder], cache=False))
    ours = pool_ranks(tv.op_kernels(trace, op_pattern="^aten::", kinds=["kernel"]))
    # Mean delays are rounded to the ns: 0.0011 us absolute.
    assert_same_rows(ours, hta_aten_op_kernels(trace, ties="inner"), ATEN_KEY, ATEN_VALUES, rtol=0, atol=0.0011)
    if folder != "hta_dlrm_2of128_ranks":  # the one trace with equal-start nested ops
        ref = hta_csv(folder, "aten_op_kernels_and_delay")
        assert ref is not None
        assert_same_rows(ours, ref, ATEN_KEY, ATEN_VALUES, rtol=0.01, atol=0.0011)


# ---------------------------------------------------------------- properties
@st.composite
def _nested_ops(draw: st.DrawFn) -> list[dict]:
    """Random op trees on one thread, each leaf launching one kernel."""
    events: list[dict] = [kb.step(1, 0, 100_000)]
    t = 10.0
    corr = 1
    for _ in range(draw(st.integers(1, 6))):
        depth = draw(st.integers(1, 3))
        names = [draw(st.sampled_from(["aten::a", "aten::b", "aten::c"])) for _ in range(depth)]
        width = 40.0 * depth
        for d, nm in enumerate(names):
            events.append(kb.cpu_op(nm, t + d, width - 2 * d))
        for _k in range(draw(st.integers(1, 3))):
            events += kb.launch(draw(st.sampled_from(["k1", "k2"])), t + depth + 1, 50_000 + corr * 20, 10, corr=corr)
            corr += 1
            t += 0.5
        t += width + 5
    return events


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=_nested_ops())
def test_sequence_counts_add_up(tmp_path: Path, events: list[dict]) -> None:
    trace = tv.load(kb.write(tmp_path / "p.json", kb.doc(events)), cache=False)
    kernels = int((trace.events(0)["kind"] == "kernel").sum())
    # Every kernel is under exactly one outermost op: the sequences' lengths add up.
    for op in ("aten::a", "aten::b", "aten::c"):
        try:
            seqs = tv.frequent_kernel_sequences(trace, operator=op, min_kernels=1, top_k=None)
            grams = tv.frequent_kernel_sequences(trace, operator=op, length=1, top_k=None)
        except tv.TraceSelectionError:
            continue
        assert int((seqs["length"] * seqs["count"]).sum()) == int(grams["count"].sum()) <= kernels
        assert int(seqs["gpu_ns"].sum()) == int(grams["gpu_ns"].sum())
    inner = tv.op_kernels(trace, by="kernel")
    assert int(inner["count"].sum()) == kernels
    # Reordering the rows of the file changes nothing.
    shuffled = kb.write(tmp_path / "q.json", kb.doc(list(reversed(events))))
    again = tv.op_kernels(tv.load(shuffled, cache=False), by="kernel")
    pd.testing.assert_frame_equal(inner, again)


@settings(max_examples=50, deadline=None)
@given(
    rows=st.integers(0, 40),
    width=st.integers(1, 6),
    high=st.sampled_from([2, 5, 2**40]),
    seed=st.integers(0, 2**16),
)
def test_row_ids_partition_rows_like_unique(rows: int, width: int, high: int, seed: int) -> None:
    mat = np.random.default_rng(seed).integers(-3, high, size=(rows, width))
    ids, first = lk.row_ids(mat)
    assert len(ids) == rows
    if rows == 0:
        return
    uniq = np.unique(mat, axis=0)
    assert len(first) == len(uniq) == ids.max() + 1
    assert (mat[first][ids] == mat).all()  # each row equals its id's first row
    assert len({tuple(r) for r in mat[first].tolist()}) == len(first)  # distinct ids, distinct rows
