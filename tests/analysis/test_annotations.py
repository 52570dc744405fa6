"""user_annotation_breakdown: known answers, properties, parity with HTA."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis import _links as lk
from jupyter_traceview.analysis.annotations import ANNOTATION_COLUMNS, _launch_groups
from tests import kineto_builder as kb
from tests.analysis.hta_ops import assert_same_rows, hta_csv, hta_view
from tests.conftest import KINETO_FOLDERS

US = 1000


def gpu_annotation(name: str, ts: float, dur: float, *, stream: int = 7, device: int = 0) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "gpu_user_annotation",
        "name": name,
        "pid": device,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {"External id": 1},
    }


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    events = [
        kb.step(1, 0, 1000),
        kb.annotation("fwd", 10, 190),
        *kb.launch("k1", 20, 300, 50, corr=1, stream=7),  # [300, 350) on stream 7
        *kb.launch("k2", 30, 320, 80, corr=2, stream=8),  # [320, 400) on stream 8: overlaps k1
        kb.annotation("fwd", 40, 20),  # nested, same name
        *kb.launch("k4", 45, 600, 10, corr=4, stream=7),  # [600, 610)
        kb.annotation("bwd", 210, 190),
        *kb.launch("k3", 220, 500, 20, corr=3, stream=7),  # [500, 520)
        gpu_annotation("fwd", 290, 70, stream=7),  # [290, 360): holds k1 on stream 7
        gpu_annotation("bwd", 495, 20, stream=7),  # [495, 515): 15 us of k3
        gpu_annotation("bwd", 318, 10, stream=8),  # [318, 328): 8 us of k2, on stream 8
    ]
    path = tmp_path_factory.mktemp("ann") / "r.json"
    return tv.load(kb.write(path, kb.doc(events)), cache=False)


def test_cpu_annotations_by_construction(tiny: tv.Trace) -> None:
    out = tv.user_annotation_breakdown(tiny, kind="cpu")
    assert list(out.columns) == list(ANNOTATION_COLUMNS)
    rows = out.set_index("name")
    fwd = rows.loc["fwd"]
    assert fwd["count"] == 2 and fwd["total_ns"] == 210 * US and fwd["min_ns"] == 20 * US and fwd["max_ns"] == 190 * US
    assert fwd["mean_ns"] == 105 * US and fwd["std_ns"] == pytest.approx(np.std([190e3, 20e3], ddof=1))
    # k1, k2 and k4 (under the nested fwd too: counted once); k1 and k2 overlap.
    assert fwd["kernels"] == 3 and fwd["kernel_ns"] == 140 * US and fwd["gpu_busy_ns"] == 110 * US
    bwd = rows.loc["bwd"]
    assert bwd["kernels"] == 1 and bwd["gpu_busy_ns"] == 20 * US and bwd["std_ns"] == 0.0
    step = rows.loc["ProfilerStep#1"]
    assert step["kernels"] == 4 and step["gpu_busy_ns"] == 130 * US and step["gpu_busy_pct"] == pytest.approx(100.0)
    assert fwd["gpu_busy_pct"] == pytest.approx(100 * 110 / 130)
    assert out["name"].tolist()[0] == "ProfilerStep#1"  # sorted by total_ns


def test_gpu_annotations_by_construction(tiny: tv.Trace) -> None:
    out = tv.user_annotation_breakdown(tiny).set_index("name")
    assert set(out.index) == {"fwd", "bwd"}
    assert out.loc["fwd", "total_ns"] == 70 * US and out.loc["fwd", "gpu_busy_ns"] == 50 * US
    assert out.loc["fwd", "kernels"] == 1  # k2 runs then too, but on stream 8
    bwd = out.loc["bwd"]
    assert bwd["count"] == 2 and bwd["total_ns"] == 30 * US
    assert bwd["kernels"] == 2 and bwd["kernel_ns"] == (15 + 8) * US and bwd["gpu_busy_ns"] == 23 * US


def test_top_k_pools_the_rest_with_real_statistics(tiny: tv.Trace) -> None:
    out = tv.user_annotation_breakdown(tiny, kind="cpu", top_k=1)
    assert out["name"].tolist() == ["ProfilerStep#1", "others"]
    others = out.set_index("name").loc["others"]
    # fwd (190, 20) and bwd (190): statistics over the three ranges themselves.
    assert others["count"] == 3 and others["total_ns"] == 400 * US and others["min_ns"] == 20 * US
    assert others["kernels"] == 4 and others["gpu_busy_ns"] == 130 * US


def test_pattern_filter(tiny: tv.Trace) -> None:
    out = tv.user_annotation_breakdown(tiny, kind="cpu", pattern="^f")
    assert out["name"].tolist() == ["fwd"]
    with pytest.warns(tv.TraceviewWarning, match="matching 'nothing'"):
        assert tv.user_annotation_breakdown(tiny, kind="cpu", pattern="nothing").empty


def test_time_range_clips(tiny: tv.Trace) -> None:
    t0 = int(tiny.events(0)["ts_ns"].min())
    # The window [t0 + 100 us, t0 + 340 us) cuts fwd (to 100 us) and k1 (to [300, 340)).
    out = tv.user_annotation_breakdown(tiny, kind="cpu", time_range=(t0 + 100 * US, t0 + 340 * US)).set_index("name")
    assert out.loc["fwd", "total_ns"] == 100 * US
    assert out.loc["fwd", "gpu_busy_ns"] == 40 * US


def test_no_gpu_annotations_warns(dlrm: tv.Trace) -> None:
    with pytest.warns(tv.TraceviewWarning, match="try kind='cpu'"):
        out = tv.user_annotation_breakdown(dlrm)
    assert out.empty and list(out.columns) == list(ANNOTATION_COLUMNS)


def test_cpu_only_trace() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        gpu = tv.user_annotation_breakdown(trace)
    assert gpu.empty and list(gpu.columns) == list(ANNOTATION_COLUMNS)
    # The CPU ranges' durations are still right: they are kept, with zero GPU time.
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        cpu = tv.user_annotation_breakdown(trace, kind="cpu")
    assert len(cpu) > 0 and (cpu["gpu_busy_ns"] == 0).all() and cpu["gpu_busy_pct"].isna().all()


@pytest.mark.parametrize("folder", sorted(KINETO_FOLDERS))
@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_busy_within_bounds(folder: str, kind: str) -> None:
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        out = tv.user_annotation_breakdown(trace, kind=kind)  # type: ignore[arg-type]
    assert (out["gpu_busy_ns"] <= out["kernel_ns"]).all()
    assert ((out["gpu_busy_pct"] <= 100 + 1e-9) | out["gpu_busy_pct"].isna()).all()
    assert (out["min_ns"] <= out["mean_ns"]).all() and (out["mean_ns"] <= out["max_ns"]).all()
    if kind == "gpu":  # work inside the ranges, on their stream
        assert (out["gpu_busy_ns"] <= out["total_ns"]).all()


HTA_VALUES = {
    "total_us": "sum (us)",
    "mean_us": "mean (us)",
    "min_us": "min (us)",
    "max_us": "max (us)",
    "std_us": "stddev",
}


@pytest.mark.parametrize("folder", sorted(KINETO_FOLDERS))
@pytest.mark.parametrize(
    ("kind", "reference"), [("cpu", "user_annotation_breakdown"), ("gpu", "gpu_user_annotation_breakdown")]
)
def test_range_durations_match_hta(folder: str, kind: str, reference: str) -> None:
    """HTA sums the ranges' own durations by name: our total/mean/min/max/std columns."""
    ref = hta_csv(folder, reference)
    trace = hta_view(tv.load(KINETO_FOLDERS[folder], cache=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        ours = tv.user_annotation_breakdown(trace, kind=kind)  # type: ignore[arg-type]
    if ref is None:
        assert ours.empty
        return
    for c in ("total", "mean", "min", "max", "std"):
        ours[f"{c}_us"] = ours[f"{c}_ns"] / 1000
    # Means are rounded to the ns: 0.001 us absolute.
    assert_same_rows(ours, ref, ["rank", "name"], HTA_VALUES, rtol=0.01, atol=0.0011)


def test_annotations_hold_launches_of_other_threads(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The autograd engine launches the backward kernels on its own thread while the main
    thread waits inside ``## backward ##``: they belong to the annotation (not with
    same_thread=True). An operator holds only its own thread's launches."""
    autograd = 200
    events = [
        kb.step(1, 0, 1000),
        kb.annotation("## backward ##", 100, 400),
        kb.cpu_op("aten::mm", 150, 50, tid=autograd),
        kb.runtime("cudaLaunchKernel", 160, 5, corr=1, tid=autograd),
        kb.kernel("gemm_bwd", 300, 40, corr=1),
        kb.cpu_op("aten::sum", 120, 200),  # main thread, spans the other thread's launch
    ]
    trace = tv.load(kb.write(tmp_path_factory.mktemp("threads") / "r.json", kb.doc(events)), cache=False)
    out = tv.user_annotation_breakdown(trace, kind="cpu").set_index("name")
    assert out.loc["## backward ##", "kernels"] == 1 and out.loc["## backward ##", "gpu_busy_ns"] == 40 * US
    same = tv.user_annotation_breakdown(trace, kind="cpu", same_thread=True).set_index("name")
    assert same.loc["## backward ##", "kernels"] == 0
    seq = tv.frequent_kernel_sequences(trace, operator="## backward ##", min_kernels=1)
    assert seq["sequence"].tolist() == ["gemm_bwd"]
    # aten::sum on the main thread does not own the autograd thread's launch; aten::mm does.
    ops = tv.op_kernels(trace, by="kernel")
    assert ops["operator"].tolist() == ["aten::mm"]


# ------------------------------------------------------------ the enclosure without pairs
_range = st.tuples(st.integers(0, 2), st.integers(0, 1), st.integers(0, 40), st.integers(0, 25), st.integers(0, 3))
_point = st.tuples(st.integers(0, 2), st.integers(0, 1), st.integers(0, 60), st.integers(0, 4))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ranges=st.lists(_range, min_size=1, max_size=12),
    points=st.lists(_point, min_size=1, max_size=20),
    scope=st.sampled_from(["process", "thread"]),
)
def test_launch_groups_equal_the_deduplicated_pairs(
    ranges: list[tuple[int, int, int, int, int]], points: list[tuple[int, int, int, int]], scope: str
) -> None:
    # Ranges (pid, tid, ts, dur, name id) and points (pid, tid, ts, dur) on a few threads,
    # with ties, zero durations, nesting and overlaps; rows in (ts, -dur) order as loaded.
    rows = [(p, t, s, d, g) for p, t, s, d, g in ranges] + [(p, t, s, d, -1) for p, t, s, d in points]
    rows.sort(key=lambda r: (r[2], -r[3]))
    ev = pd.DataFrame(rows, columns=["pid", "tid", "ts_ns", "dur_ns", "g"])
    ann_rows = np.flatnonzero(ev["g"].to_numpy() >= 0)
    gid = ev["g"].to_numpy()[ann_rows]
    launch = np.flatnonzero(ev["g"].to_numpy() < 0)
    launch = np.concatenate((launch, [-1]))  # an activity without a launch call
    got = _launch_groups(ev, ann_rows, gid, launch, scope)
    i, r = lk.containing_pairs(ev, ann_rows, launch, scope=scope)
    want = sorted({(int(a), int(g)) for a, g in zip(i, ev["g"].to_numpy()[r], strict=True)})
    assert list(zip(got[0].tolist(), got[1].tolist(), strict=True)) == want


def test_text_ranks_as_pandas_sorted_factorize() -> None:
    """annotations._text_ranks numbers texts as pd.factorize(sort=True) does (ties, accents,
    case, astral characters, "others")."""
    from jupyter_traceview.analysis.annotations import OTHERS, _text_ranks

    rng = np.random.default_rng(5)
    alphabet = ["a", "b", "B", "é", "É", " ", "#", "1", "\U0001f600", "z"]
    for _ in range(200):
        texts = ["".join(rng.choice(alphabet, size=int(rng.integers(0, 4)))) for _ in range(int(rng.integers(1, 12)))]
        names = np.array([*texts, OTHERS], dtype=object)
        want = pd.factorize(pd.Series(names, dtype=object).astype(str), sort=True)[0]
        assert np.array_equal(_text_ranks(names), want)


# ------------------------------------------------------------ the fast paths (issue 17, wave 6)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spans=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 12)), min_size=1, max_size=8),
    points=st.lists(st.tuples(st.integers(0, 140), st.integers(0, 6)), min_size=1, max_size=25),
    nested=st.booleans(),
    others=st.lists(st.tuples(st.integers(0, 140), st.integers(0, 6)), max_size=6),
)
def test_launch_groups_in_one_process(
    spans: list[tuple[int, int]], points: list[tuple[int, int]], nested: bool, others: list[tuple[int, int]]
) -> None:
    """One process and thread (no per-process split), ranges side by side (each segment under
    one name at most: no expansion) or nested, every point with a launch row: the paths that
    skip index arrays give the pairs of the plain enumeration. ``others``: rows of another
    process and thread that are neither ranges nor points (a GPU's rows): the ranges and the
    points are still in one process."""
    ranges, at = [], 0
    for i, (gap, dur) in enumerate(spans):
        ranges.append((at + gap, dur, i))
        at += gap + dur
    if nested:  # one range over all of them
        ranges.append((0, at + 1, len(spans)))
    rows = [(0, 0, s, d, g) for s, d, g in ranges] + [(0, 0, s, d, -1) for s, d in points]
    rows += [(7, 3, s, d, -2) for s, d in others]
    rows.sort(key=lambda r: (r[2], -r[3]))
    ev = pd.DataFrame(rows, columns=["pid", "tid", "ts_ns", "dur_ns", "g"])
    ann_rows = np.flatnonzero(ev["g"].to_numpy() >= 0)
    gid = ev["g"].to_numpy()[ann_rows]
    launch = np.flatnonzero(ev["g"].to_numpy() == -1)
    for scope in ("process", "thread"):
        got = _launch_groups(ev, ann_rows, gid, launch, scope)
        i, r = lk.containing_pairs(ev, ann_rows, launch, scope=scope)
        want = sorted({(int(a), int(g)) for a, g in zip(i, ev["g"].to_numpy()[r], strict=True)})
        assert list(zip(got[0].tolist(), got[1].tolist(), strict=True)) == want


@pytest.mark.parametrize("folder", sorted(KINETO_FOLDERS))
def test_work_rows_are_the_work_activities(folder: str) -> None:
    """The breakdown's own selection of a rank's GPU work is activities(work_only=True)'s,
    whole and clipped to a window."""
    from jupyter_traceview.analysis._gpu import activities
    from jupyter_traceview.analysis.annotations import _Columns, _has_work, _work_activities, _work_rows

    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        t0, t1 = int(ev["ts_ns"].min()), int((ev["ts_ns"] + ev["dur_ns"]).max())
        for window in (None, (t0 + (t1 - t0) // 3, t0 + 2 * (t1 - t0) // 3)):
            scoped = trace.select(ranks=r) if window is None else trace.select(ranks=r, time_range=window, _clip=False)
            a = activities(scoped, r, work_only=True)
            rows, ts, end = _work_rows(_Columns(scoped.rank_data(r).events), scoped.window)
            for got, want in ((rows, a.rows), (ts, a.ts), (end, a.end)):
                np.testing.assert_array_equal(got, want, strict=True)
            # Whether the rank has GPU work (the breakdown's test for ranks without annotations).
            cols = _Columns(scoped.rank_data(r).events)
            assert _has_work(scoped, r, None, cols) == (len(a.ts) > 0)
            if window is None:  # and with the call's own window: the clipped activities
                acts = _work_activities(scoped, r, (t0 + 1, t0 + 2), cols)
                assert _has_work(scoped, r, (t0 + 1, t0 + 2), cols) == (len(acts["ts_ns"]) > 0)


def test_union_length_of_sorted_and_unsorted_activities() -> None:
    from jupyter_traceview.analysis.annotations import _union_length
    from jupyter_traceview.model import intervals as iv

    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(0, 30))
        ts = np.sort(rng.integers(0, 100, n)).astype(np.int64)
        end = ts + rng.integers(0, 20, n)
        for s, e in ((ts, end), (ts[::-1].copy(), end[::-1].copy())):
            assert _union_length({"ts_ns": s, "end_ns": e}) == iv.length(*iv.union(s, e))


def test_breakdown_alone_equals_inside_a_shared_scope(dlrm: tv.Trace) -> None:
    """Alone the breakdown selects the GPU work itself; inside shared_rank_facts (findings) it
    takes the shared activities: the same frame either way."""
    from jupyter_traceview.analysis._memo import shared_rank_facts

    for kind in ("cpu", "gpu"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tv.TraceviewWarning)
            alone = tv.user_annotation_breakdown(dlrm, kind=kind)
            with shared_rank_facts():
                shared = tv.user_annotation_breakdown(dlrm, kind=kind)
        pd.testing.assert_frame_equal(alone, shared, check_exact=True)
        assert dict(alone.dtypes.astype(str)) == {
            c: ("str" if d == "str" else d) for c, d in ANNOTATION_COLUMNS.items()
        }


@pytest.mark.parametrize("column", ["kind", "gpu_class"])
@pytest.mark.parametrize("block", [None, 7])
def test_flags_are_the_values_lookup(
    dlrm: tv.Trace, column: str, block: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """annotations._flags (one comparison for one value, a lookup for several, block by block;
    of every row or of some rows' codes) against pandas' isin, on the sample's categorical
    columns (``block``: blocks of 7 rows, so that every boundary case is met)."""
    from jupyter_traceview.analysis import annotations
    from jupyter_traceview.analysis.annotations import _flags

    if block is not None:
        monkeypatch.setattr(annotations, "_BLOCK", block)

    ev = dlrm.rank_data(0).events
    values = ev[column].array
    cats = values.categories.tolist()
    rows = np.arange(0, len(ev), 3)
    for wanted in [set(), {cats[0]}, {cats[-1]}, set(cats[:3]), set(cats), {"not a value"}, {cats[1], "not a value"}]:
        want = ev[column].isin(wanted).to_numpy()
        assert np.array_equal(_flags(values, wanted), want), wanted
        assert np.array_equal(_flags(values, wanted, np.asarray(values.codes)[rows]), want[rows]), wanted
