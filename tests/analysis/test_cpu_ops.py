"""cpu_op_breakdown: known answers on a tiny trace, and equality with prof.key_averages() on real ones."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.cpu_ops import CPU_OP_COLUMNS
from tests import kineto_builder as kb

US = 1000
TORCH_CPU = Path(__file__).resolve().parents[1] / "data" / "torch_cpu"
VARIANTS = ("plain", "shapes", "stack")


def _python(name: str, ts: float, dur: float) -> dict:
    return kb.cpu_op(name, ts, dur, cat="python_function")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    """Two steps on the main thread (times in us)::

        ProfilerStep#1 [0, 100)
          train.py(3): step [5, 95)                       python frame
            aten::linear [10, 60)                          self 60-10 - 30 - 5 = 15
              aten::addmm [15, 45)  launches gemm (GPU 20)  self 30 - 5 (the launch call)
              aten::t [50, 55)                             self 5
            aten::relu [70, 80)  launches relu (GPU 4)     self 10 - 5
        ProfilerStep#2 [100, 200)
          aten::linear [110, 150)                          self 40 - 20 = 20
            aten::addmm [120, 140) launches gemm (GPU 10)  self 20 - 5
          aten::linear [160, 170) (no children)            self 10

    A second thread runs aten::add [20, 50) (self 30), outside any step. Each launch call
    (``cudaLaunchKernel``) lasts 5 us and is a child of its operator, as in torch.
    """
    events = [
        kb.step(1, 0, 100),
        _python("train.py(3): step", 5, 90),
        kb.cpu_op("aten::linear", 10, 50),
        kb.cpu_op("aten::addmm", 15, 30),
        *kb.launch("gemm", 20, 300, 20, corr=1),
        kb.cpu_op("aten::t", 50, 5),
        kb.cpu_op("aten::relu", 70, 10),
        *kb.launch("relu", 72, 330, 4, corr=2),
        kb.step(2, 100, 100),
        kb.cpu_op("aten::linear", 110, 40),
        kb.cpu_op("aten::addmm", 120, 20),
        *kb.launch("gemm", 125, 400, 10, corr=3),
        kb.cpu_op("aten::linear", 160, 10),
        kb.cpu_op("aten::add", 20, 30, tid=7),
    ]
    path = tmp_path_factory.mktemp("cpu_ops") / "r.json"
    return tv.load(kb.write(path, kb.doc(events)), cache=False)


def test_by_construction(tiny: tv.Trace) -> None:
    out = tv.cpu_op_breakdown(tiny)
    assert list(out.columns) == list(CPU_OP_COLUMNS)
    rows = out.set_index("name")
    lin = rows.loc["aten::linear"]
    assert (lin.calls, lin.total_ns, lin.self_ns) == (3, 100 * US, (15 + 20 + 10) * US)
    assert (lin.min_ns, lin.max_ns, lin.mean_ns) == (10 * US, 50 * US, round(100 * US / 3))
    # GPU time launched inside (any depth) and directly (no nested operator launched it).
    assert (lin.gpu_ns, lin.self_gpu_ns) == (30 * US, 0)
    mm = rows.loc["aten::addmm"]
    assert (mm.calls, mm.total_ns, mm.self_ns, mm.gpu_ns, mm.self_gpu_ns) == (2, 50 * US, 40 * US, 30 * US, 30 * US)
    assert rows.loc["aten::relu"].self_ns == 5 * US
    assert (rows.loc["aten::relu"].gpu_ns, rows.loc["aten::relu"].self_gpu_ns) == (4 * US, 4 * US)
    # Steps are one row, as key_averages' "ProfilerStep*": self = 100 - 90 (python) + 100 - 40 - 10.
    step = rows.loc["ProfilerStep*"]
    assert (step.calls, step.total_ns, step.self_ns) == (2, 200 * US, (10 + 50) * US)
    # Shares of the wall time in scope: the two steps, 200 us.
    assert lin.self_pct == pytest.approx(100 * 45 / 200)
    assert rows.loc["aten::add"].self_ns == 30 * US
    # Python frames get rows only when asked; they count as children either way.
    assert "train.py(3): step" not in rows.index
    py = tv.cpu_op_breakdown(tiny, kinds=["python_function"]).set_index("name").loc["train.py(3): step"]
    assert (py.calls, py.total_ns, py.self_ns) == (1, 90 * US, (90 - 50 - 10) * US)
    # Sorted by self time.
    assert out["self_ns"].is_monotonic_decreasing


def test_same_name_only_child_is_one_call(tmp_path: Path) -> None:
    """torch's ``_remove_dup_nodes``: a range that is the only child of a same-name range merges.

    Times in us::

        ProfilerStep#1 [0, 100)
          aten::layer_norm [10, 60)                  only child: the next one (autocast's pair)
            aten::layer_norm [12, 58)                only child: the next one
              aten::layer_norm [13, 57)
                aten::native_layer_norm [15, 50)     launches ln (GPU 8), call [20, 25)
          aten::add [70, 95)                         two children: not merged
            aten::add [72, 80)
            aten::mul [81, 85)

    layer_norm is one call of 50 us, self (50 - 46) + (46 - 44) + (44 - 35) = 15, GPU 8 once;
    add is two calls (25 + 8 us), self 25 - 8 - 4 + 8 = 21.
    """
    events = [
        kb.step(1, 0, 100),
        kb.cpu_op("aten::layer_norm", 10, 50),
        kb.cpu_op("aten::layer_norm", 12, 46),
        kb.cpu_op("aten::layer_norm", 13, 44),
        kb.cpu_op("aten::native_layer_norm", 15, 35),
        *kb.launch("ln", 20, 300, 8, corr=1),
        kb.cpu_op("aten::add", 70, 25),
        kb.cpu_op("aten::add", 72, 8),
        kb.cpu_op("aten::mul", 81, 4),
    ]
    trace = tv.load(kb.write(tmp_path / "r.json", kb.doc(events)), cache=False)
    rows = tv.cpu_op_breakdown(trace).set_index("name")
    ln = rows.loc["aten::layer_norm"]
    assert (ln.calls, ln.total_ns, ln.self_ns, ln.min_ns, ln.max_ns) == (1, 50 * US, 15 * US, 50 * US, 50 * US)
    assert (ln.gpu_ns, ln.self_gpu_ns) == (8 * US, 0)
    native = rows.loc["aten::native_layer_norm"]
    assert (native.calls, native.self_ns, native.self_gpu_ns) == (1, 30 * US, 8 * US)
    add = rows.loc["aten::add"]
    assert (add.calls, add.total_ns, add.self_ns) == (2, 33 * US, 21 * US)
    # By shape, the merged call keeps the outer call's shapes: still one row, one call.
    by_shape = tv.cpu_op_breakdown(trace, by="shape")
    assert by_shape.loc[by_shape["name"] == "aten::layer_norm", "calls"].tolist() == [1]


def test_scope(tiny: tv.Trace) -> None:
    one = tv.cpu_op_breakdown(tiny, iterations=2).set_index("name")
    assert one.loc["aten::linear"].calls == 2 and one.loc["aten::linear"].self_ns == 30 * US
    assert one.loc["aten::linear"].self_pct == pytest.approx(100 * 30 / 100)
    t0 = tiny.t0_ns
    # A window [10, 30) us: linear clipped to 20 us, addmm to 15 us; linear's self is 5.
    win = tv.cpu_op_breakdown(tiny, time_range=(t0 + 10 * US, t0 + 30 * US)).set_index("name")
    assert win.loc["aten::linear"].total_ns == 20 * US and win.loc["aten::linear"].self_ns == 5 * US
    assert win.loc["aten::addmm"].total_ns == 15 * US


def test_by_stack(tiny: tv.Trace) -> None:
    out = tv.cpu_op_breakdown(tiny, by="stack")
    assert "stack" in out.columns
    lin = out.loc[out["name"] == "aten::linear"].set_index("stack")
    assert lin.loc["train.py(3): step"].calls == 1 and lin.loc[""].calls == 2
    by_name = tv.cpu_op_breakdown(tiny).set_index("name")
    summed = out.groupby("name")[["calls", "total_ns", "self_ns"]].sum()
    assert (summed["self_ns"] == by_name["self_ns"].reindex(summed.index)).all()


def test_bad_options(tiny: tv.Trace) -> None:
    with pytest.raises(tv.OptionError, match="by="):
        tv.cpu_op_breakdown(tiny, by="nmae")  # type: ignore[arg-type]
    with pytest.raises(tv.OptionError, match="kinds"):
        tv.cpu_op_breakdown(tiny, kinds=["kernel"])
    with pytest.raises(tv.OptionError, match="stack_depth"):
        tv.cpu_op_breakdown(tiny, by="stack", stack_depth=0)


def _reference(variant: str) -> dict:
    with gzip.open(TORCH_CPU / variant / f"{variant}.key_averages.json.gz", "rt") as f:
        return json.load(f)


@pytest.mark.parametrize("variant", VARIANTS)
def test_equals_key_averages(variant: str) -> None:
    """Self and total CPU time per operator name within 1 % of prof.key_averages() (exact calls)."""
    trace = tv.load(TORCH_CPU / variant / f"{variant}.pt.trace.json.gz", cache=False)
    ref = {r["name"]: r for r in _reference(variant)["by_name"]}
    got = tv.cpu_op_breakdown(trace, kinds=["cpu_op", "user_annotation", "python_function"]).set_index("name")
    assert set(got.index) == set(ref)
    for name, r in ref.items():
        g = got.loc[name]
        assert g.calls == r["count"], name
        assert g.total_ns / US == pytest.approx(r["cpu_time_total_us"], rel=0.01, abs=0.002), name
        assert g.self_ns / US == pytest.approx(r["self_cpu_time_total_us"], rel=0.01, abs=0.002), name
    # Without Python frames the operators' own numbers do not change.
    ops = tv.cpu_op_breakdown(trace).set_index("name")
    assert (ops["self_ns"] == got["self_ns"].reindex(ops.index)).all()
    assert {"aten::mkldnn_convolution", "aten::item", "aten::_local_scalar_dense"} <= set(ops.index)


@pytest.mark.parametrize("variant", ["shapes", "stack"])
def test_by_shape_equals_key_averages_by_input_shape(variant: str) -> None:
    """Per (name, input shapes): calls, self and total time as key_averages(group_by_input_shape=True)."""
    trace = tv.load(TORCH_CPU / variant / f"{variant}.pt.trace.json.gz", cache=False)
    ref = {(r["name"], r["input_shapes"]): r for r in _reference(variant)["by_shape"]}
    got = tv.cpu_op_breakdown(trace, by="shape", kinds=["cpu_op", "user_annotation", "python_function"])
    got = got.set_index(["name", "input_shapes"])
    assert set(got.index) == set(ref)
    for key, r in ref.items():
        g = got.loc[key]
        assert g.calls == r["count"], key
        assert g.total_ns / US == pytest.approx(r["cpu_time_total_us"], rel=0.01, abs=0.002), key
        assert g.self_ns / US == pytest.approx(r["self_cpu_time_total_us"], rel=0.01, abs=0.002), key
    conv = got.loc["aten::conv2d"]
    assert list(conv.index) == ["[[4, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], []]"]
