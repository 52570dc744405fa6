"""XLA's cost analysis of a JAX GPU profile in ``op_performance`` (docs/jax.md, "FLOPs and bytes").

The profile is an XSpace of one GPU built here (``tests/xplane_builder.py``) around the HLO of
the recorded CPU run (its ``/host:metadata`` plane, as recorded): two steps of ``jit_step``,
one kernel per op of the program's entry computation, each with its ``hlo_op``,
``hlo_module`` and ``program_id``, as the GPU profiler writes them. The reference is xprof's
own ``op_profile`` of the same file (``xprof.convert.raw_to_tool_data``), walked here.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.dashboard.data import DashboardData, to_json
from jupyter_traceview.model.xla_cost import XLA_COST_KEY
from tests.loading.readers.test_jax import HOST_FILE
from tests.xplane_builder import Event, Line, Plane, hlo_ops, metadata_plane, xspace

raw_to_tool_data = pytest.importorskip(
    "xprof.convert.raw_to_tool_data", reason="xprof (the extra jupyter_traceview[jax]) is not installed"
)

RECORDED = HOST_FILE.parent / "host.xplane.pb"
PROGRAM, MODULE, PROGRAM_ID = "jit_step(14)", "jit_step", 14
KERNEL_NS = 10_000
_KERNEL = "regs:32 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1 occ_pct:50"
PEAKS = {"bandwidth_gbps": 3350.0, "fp32": 67.0}


def _ops() -> list[str]:
    meta = metadata_plane(RECORDED.read_bytes())
    return [n for n, opcode in hlo_ops(meta, PROGRAM) if opcode not in ("parameter", "constant", "tuple")]


def _gpu_xspace(extra: tuple[str, ...] = ()) -> bytes:
    """Two steps of ``jit_step`` on one GPU: the host's step annotation, launch calls, and a
    kernel per HLO op on a compute stream (10 us each), then one per ``extra`` op name."""
    meta = metadata_plane(RECORDED.read_bytes())
    t0 = 1_800_000_000_000_000_000
    host = Plane(0, "/host:CPU", [Line(10, "python"), Line(11, "tf_pjrt_thread")])
    gpu = Plane(1, "/device:GPU:0", [Line(13, "Stream #13(compute)")])
    corr = 0
    for step in range(2):
        t = t0 + step * 10_000_000
        host.lines[0].events.append(Event("train", t, 9_000_000, {"step_num": step}))
        for k, op in enumerate([*_ops(), *extra]):
            corr += 1
            host.lines[1].events.append(Event("cuLaunchKernel", t + 1000 + 2000 * k, 1000, {"correlation_id": corr}))
            stats: dict[str, int | str] = {"hlo_op": op, "hlo_module": MODULE, "program_id": PROGRAM_ID}
            gpu.lines[0].events.append(
                Event(
                    f"{op}_kernel",
                    t + 100_000 + 20_000 * k,
                    KERNEL_NS,
                    {**stats, "correlation_id": corr, "kernel_details": _KERNEL},
                )
            )
    return xspace([host, gpu], hostname="node0", recorded_planes=(meta,))


def _op_profile(path: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / path.name
        shutil.copyfile(path, local)
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(local)], "op_profile", {"use_saved_result": False})
    assert data, "xprof gave no op_profile"
    return dict(json.loads(data))


def _xprof_ops(doc: dict[str, Any]) -> dict[str, tuple[float, float, int]]:
    """xprof's (rawFlops, bytes accessed, occurrences) per HLO op of the program (its leaves)."""
    program = next(p for p in doc["byProgram"]["children"] if p["name"] == PROGRAM)
    out = {}
    for category in program["children"]:
        for op in category["children"]:
            assert op["xla"]["programId"] == str(PROGRAM_ID)
            m = op["metrics"]
            out[op["name"]] = (float(m["rawFlops"]), float(m["rawBytesAccessedArray"][0]), int(m["occurrences"]))
    return out


@pytest.fixture(scope="module")
def gpu(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("xplane_cost") / "node0.xplane.pb"
    path.write_bytes(_gpu_xspace())
    return path, _op_profile(path)


def _load(path: Path, **kw: Any) -> tv.Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.load(path, **kw)


def test_the_built_profile_carries_xla_cost_analysis(gpu: tuple[Path, dict[str, Any]]) -> None:
    _, doc = gpu
    ops = _xprof_ops(doc)
    assert sorted(ops) == sorted(_ops()) and all(n == 2 for _, _, n in ops.values())
    # The figures recorded in docs/jax.md: jit_step's FLOPs and bytes per run.
    flops = sum(f for f, _, _ in ops.values()) / 2
    nbytes = sum(b for _, b, _ in ops.values()) / 2
    assert flops == 2_828_099 and round(nbytes) == 379_752


def test_op_performance_gives_xprofs_flops_and_bytes_per_op(gpu: tuple[Path, dict[str, Any]]) -> None:
    path, doc = gpu
    perf = tv.op_performance(_load(path, cache=False), by="shape", peaks=PEAKS)
    ops = perf.set_index("name")
    for name, (flops, nbytes, times) in _xprof_ops(doc).items():
        row = ops.loc[name]
        assert row["status"] == "modelled" and row["count"] == times
        assert row["flops"] == pytest.approx(flops, rel=1e-9, abs=1e-6)
        assert row["bytes"] == pytest.approx(nbytes, rel=1e-9, abs=1e-6)
        assert row["kernels"] == times and row["gpu_ns"] == times * KERNEL_NS
    assert len(perf) == len(_ops())
    dots = perf[perf["name"].astype(str).str.startswith("dot.")]
    assert set(dots["family"]) == {"gemm"} and set(dots["dtype"]) == {"fp32"}
    assert (dots["peak_tflops"] == 67.0).all() and (dots["pct_of_peak"] > 0).all()


def test_per_instance_rows_are_the_op_executions_with_their_steps(gpu: tuple[Path, dict[str, Any]]) -> None:
    path, _ = gpu
    trace = _load(path, cache=False)
    perf = tv.op_performance(trace, peaks=PEAKS)
    assert len(perf) == 2 * len(_ops()) and (perf["kernels"] == 1).all() and (perf["gpu_ns"] == KERNEL_NS).all()
    per_step = perf.groupby("step")["flops"].sum()
    assert per_step.to_dict() == {0: 2_828_099.0, 1: 2_828_099.0}
    # Every kernel is inside a costed op: none is left uncovered for mfu.
    m = tv.mfu(trace, peaks=PEAKS)
    assert m["uncovered_gpu_ns"].tolist() == [0, 0]
    gemm = perf[(perf["family"] == "gemm") & (perf["step"] == 0)]["flops"].sum()
    assert m["modelled_flops"].tolist() == [gemm, gemm] and gemm > 0


def test_the_cost_analysis_survives_the_cache(gpu: tuple[Path, dict[str, Any]]) -> None:
    path, _ = gpu
    first = tv.op_performance(_load(path), by="shape", peaks=PEAKS)
    again = _load(path)
    assert again.meta(0).extra[XLA_COST_KEY]
    pd.testing.assert_frame_equal(tv.op_performance(again, by="shape", peaks=PEAKS), first)


def test_a_cpu_profile_carries_none() -> None:
    trace = _load(RECORDED, cache=False)
    assert XLA_COST_KEY not in trace.meta(0).extra
    perf = tv.op_performance(trace, peaks=PEAKS)
    assert not perf["detail"].astype(str).str.startswith("XLA cost").any()


def test_the_dashboards_performance_tab_lists_the_xla_ops(gpu: tuple[Path, dict[str, Any]]) -> None:
    path, _ = gpu
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)  # no peaks known for the built device
        tab = json.loads(to_json(DashboardData(_load(path, cache=False)).tab("performance")))
    table = next(t for t in tab["tables"] if t["id"] == "op_performance")
    names = {row[0] for row in table["rows"]}
    assert names == set(_ops())
    assert tab["figures"][0]["value"] == "100.0%"  # all the GPU time is under costed ops


def test_collectives_and_ops_without_cost_are_listed_not_modelled(tmp_path: Path) -> None:
    """An all-reduce and an op the program's HLO lacks (xprof's op_profile has neither): their
    kernels' time is listed, with the reason, and left uncovered for mfu."""
    path = tmp_path / "node0.xplane.pb"
    path.write_bytes(_gpu_xspace(("all-reduce-start.1", "custom-call.99")))
    assert {"all-reduce-start.1", "custom-call.99"}.isdisjoint(_xprof_ops(_op_profile(path)))
    trace = _load(path, cache=False)
    perf = tv.op_performance(trace, by="shape", peaks=PEAKS).set_index("name")
    for name, reason in (("all-reduce-start.1", "a collective"), ("custom-call.99", "no XLA cost analysis")):
        row = perf.loc[name]
        assert row["status"] == "not_modelled" and str(row["reason"]).startswith(reason)
        assert pd.isna(row["flops"]) and pd.isna(row["bytes"]) and row["gpu_ns"] == 2 * KERNEL_NS
    assert (perf.drop(["all-reduce-start.1", "custom-call.99"])["status"] == "modelled").all()
    m = tv.mfu(trace, peaks=PEAKS)
    assert m["uncovered_gpu_ns"].tolist() == [2 * KERNEL_NS] * 2 and m["not_modelled_ops"].tolist() == [2, 2]


def test_scoped_to_a_step_or_a_time_range(gpu: tuple[Path, dict[str, Any]]) -> None:
    path, _ = gpu
    trace = _load(path, cache=False)
    step1 = tv.op_performance(trace, peaks=PEAKS, iterations=[1])
    assert len(step1) == len(_ops()) and step1["step"].unique().tolist() == [1]
    first = int(tv.op_performance(trace, peaks=PEAKS)["ts_ns"].min())
    part = tv.op_performance(trace, peaks=PEAKS, time_range=(first, first + KERNEL_NS // 2))
    assert len(part) == 1 and part["gpu_ns"].tolist() == [KERNEL_NS // 2]  # clipped to the range
