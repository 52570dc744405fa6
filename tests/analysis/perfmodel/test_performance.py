"""op_performance and mfu on tiny traces whose answers are worked out from their shapes."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.perfmodel import DevicePeaks, device_peaks
from tests import kineto_builder as kb

H100 = "NVIDIA H100 80GB HBM3"
BF16 = "c10::BFloat16"
M, K, N = 2048, 4096, 4096
ADDMM = {
    "Input Dims": [[N], [M, K], [K, N], [], []],
    "Input type": [BF16, BF16, BF16, "Scalar", "Scalar"],
    "Concrete Inputs": ["", "", "", "1", "1"],
}
ADD = {"Input Dims": [[M, N], [M, N], []], "Input type": [BF16, BF16, "Scalar"], "Concrete Inputs": ["", "", "1"]}

# Worked out by hand (docs/semantics.md, "Operator performance").
ADDMM_FLOPS = 2 * M * N * K + M * N  # 2MNK plus the bias
ADDMM_BYTES = (M * K + K * N + M * N + N) * 2
ADD_FLOPS = M * N
ADD_BYTES = 3 * M * N * 2  # two inputs read, the output written


def events() -> list[dict]:
    return [
        kb.step(1, 1000, 200),
        kb.cpu_op("aten::linear", 1010, 50),
        kb.cpu_op("aten::t", 1011, 2),
        kb.cpu_op("aten::addmm", 1015, 40, **ADDMM),
        *kb.launch("sm90_xmma_gemm_bf16", 1020, 1100, 100, corr=11),
        kb.cpu_op("aten::relu", 1070, 10),  # no shapes recorded: not modelled
        *kb.launch("relu_kernel", 1072, 1205, 10, corr=12),
        kb.cpu_op("aten::add", 1090, 10, **ADD),
        *kb.launch("add_kernel", 1092, 1220, 20, corr=13),
    ]


def load(tmp_path: Path, device: str = H100) -> tv.Trace:
    d = kb.doc(events(), rank=0, deviceProperties=[{"id": 0, "name": device}])
    return tv.load(kb.write(tmp_path / "rank-0.json", d), cache=False)


def test_instances_flops_bytes_throughput_and_roofline(tmp_path: Path) -> None:
    perf = tv.op_performance(load(tmp_path)).set_index("name")
    assert sorted(perf.index) == ["aten::add", "aten::addmm", "aten::relu"]  # linear delegates to addmm
    peak = device_peaks(H100)
    assert peak is not None and peak.bf16 == 989.5 and peak.bandwidth_gbps == 3350

    mm = perf.loc["aten::addmm"]
    assert (mm["status"], mm["family"], mm["dtype"]) == ("modelled", "gemm", "bf16")
    assert mm["flops"] == ADDMM_FLOPS and mm["bytes"] == ADDMM_BYTES
    assert mm["kernels"] == 1 and mm["gpu_ns"] == 100_000
    assert mm["tflops"] == pytest.approx(ADDMM_FLOPS / 100_000 / 1e3)  # 687.3 TFLOP/s
    assert mm["intensity"] == pytest.approx(ADDMM_FLOPS / ADDMM_BYTES)  # ~1024 FLOP/byte
    assert mm["bound"] == "compute"  # above the ridge, 989.5e12 / 3350e9 = 295 FLOP/byte
    ideal = ADDMM_FLOPS / (989.5e12) * 1e9
    assert mm["ideal_ns"] == pytest.approx(ideal)
    assert mm["pct_of_peak"] == pytest.approx(100 * ideal / 100_000)  # 69.5 %
    assert mm["lost_ns"] == pytest.approx(100_000 - ideal)

    add = perf.loc["aten::add"]
    assert (add["family"], add["flops"], add["bytes"], add["gpu_ns"]) == ("elementwise", ADD_FLOPS, ADD_BYTES, 20_000)
    assert add["gbps"] == pytest.approx(ADD_BYTES / 20_000)
    assert add["bound"] == "memory" and np.isnan(add["peak_tflops"]) and add["peak_gbps"] == 3350
    assert add["pct_of_peak"] == pytest.approx(100 * (ADD_BYTES / 3350) / 20_000)  # 75.1 %

    relu = perf.loc["aten::relu"]
    assert relu["status"] == "not_modelled" and relu["gpu_ns"] == 10_000
    assert relu["reason"].startswith("no shapes recorded")
    assert np.isnan(relu["flops"]) and pd.isna(relu["bound"]) and np.isnan(relu["pct_of_peak"])


def test_by_shape_sums_calls_and_tf32_and_user_peaks(tmp_path: Path) -> None:
    trace = load(tmp_path)
    shapes = tv.op_performance(trace, by="shape").set_index("name")
    assert shapes.loc["aten::addmm", "count"] == 1 and shapes.loc["aten::addmm", "flops"] == ADDMM_FLOPS
    # User peaks replace the table: half the bandwidth doubles the add's percentage.
    mine = tv.op_performance(trace, peaks={"bandwidth_gbps": 1675, "bf16": 989.5}).set_index("name")
    assert mine.loc["aten::add", "pct_of_peak"] == pytest.approx(2 * 100 * (ADD_BYTES / 3350) / 20_000)
    same = tv.op_performance(trace, peaks=DevicePeaks("mine", 3350, bf16=989.5)).set_index("name")
    assert same.loc["aten::addmm", "pct_of_peak"] == pytest.approx(100 * ADDMM_FLOPS / 989.5e3 / 100_000)
    with pytest.raises(tv.OptionError, match="unknown peak fields"):
        tv.op_performance(trace, peaks={"bandwidth_gbps": 1, "bf61": 2})
    with pytest.raises(tv.OptionError, match="by"):
        tv.op_performance(trace, by="kernel")  # type: ignore[arg-type]


def test_unknown_device_gives_figures_without_percentages_and_warns(tmp_path: Path) -> None:
    trace = load(tmp_path, device="Mystery Accelerator 9000")
    with pytest.warns(tv.TraceviewWarning, match="Mystery Accelerator 9000"):
        perf = tv.op_performance(trace).set_index("name")
    assert perf.loc["aten::addmm", "tflops"] == pytest.approx(ADDMM_FLOPS / 100_000 / 1e3)
    assert perf["pct_of_peak"].isna().all() and perf["peak_gbps"].isna().all()


def test_mfu_per_iteration(tmp_path: Path) -> None:
    trace = load(tmp_path)
    out = tv.mfu(trace)
    assert len(out) == 1
    row = out.iloc[0]
    assert row["step"] == 1 and row["dur_ns"] == 200_000 and row["device"] == H100
    assert row["flops"] == ADDMM_FLOPS  # matrix families only: the add's FLOPs are not model FLOPs
    assert row["mfu_pct"] == pytest.approx(100 * ADDMM_FLOPS / 989.5e3 / 200_000)  # 34.7 %
    assert row["gpu_ns"] == 130_000 and row["uncovered_gpu_ns"] == 10_000
    assert row["uncovered_gpu_pct"] == pytest.approx(100 * 10 / 130)
    assert row["not_modelled_ops"] == 1
    given = tv.mfu(trace, model_flops=1e11, dtype="bf16").iloc[0]
    assert given["flops"] == 1e11 and given["modelled_flops"] == ADDMM_FLOPS
    assert given["mfu_pct"] == pytest.approx(100 * 1e11 / 989.5e3 / 200_000)
    with pytest.raises(tv.OptionError):
        tv.mfu(trace, model_flops=-1)


DATA = Path(__file__).parents[2] / "data" / "perfmodel_cpu"


def _cpu(name: str) -> pd.DataFrame:
    trace = tv.load(DATA / f"{name}_cpu.json.gz", cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)  # a CPU trace: no device peaks
        return tv.op_performance(trace)


def test_recorded_mlp_step_counts_each_gemm_once() -> None:
    perf = _cpu("mlp")
    gemm = perf[perf["family"] == "gemm"]
    # Forward: addmm [16,64]x[64,128] + bias 128, addmm [16,128]x[128,10] + bias 10.
    # Backward (AddmmBackward0): grad input mm [16,10]x[10,128]; grad weight mm [10,16]x[16,128]
    # and [128,16]x[16,64] (the first layer's input needs no gradient).
    expected = sorted(
        [
            2 * 16 * 128 * 64 + 16 * 128,
            2 * 16 * 10 * 128 + 16 * 10,
            2 * 16 * 128 * 10,
            2 * 10 * 128 * 16,
            2 * 128 * 64 * 16,
        ]
    )
    assert sorted(gemm["flops"].tolist()) == expected
    assert set(gemm["name"]) == {"aten::addmm", "aten::mm"}  # never aten::linear as well
    assert (perf["gpu_ns"] == 0).all()  # a CPU trace: no GPU time


def test_recorded_cnn_convolutions_forward_and_backward() -> None:
    perf = _cpu("cnn")
    conv = perf[perf["family"] == "conv"].sort_values("ts_ns")
    # forward: conv 3->8 k3 pad1 on 16x16 (+bias); grouped strided dilated 8->16 (out 8x8);
    # transposed 16->4 k2 stride 2 (8x8 -> 16x16, + bias)
    f1 = 2 * (2 * 8 * 16 * 16) * 3 * 9 + 2 * 8 * 16 * 16
    f2 = 2 * (2 * 16 * 8 * 8) * 4 * 9
    f3 = 2 * (2 * 8 * 8) * 16 * 4 * 4 + 2 * 4 * 16 * 16
    names = conv["name"].tolist()
    # the transposed one has no mkldnn op of its own on CPU: _convolution, the innermost conv, counts
    assert names[:3] == ["aten::mkldnn_convolution", "aten::mkldnn_convolution", "aten::_convolution"]
    assert conv["flops"].tolist()[:3] == [f1, f2, f3]
    # backward, in reverse order, with the output masks recorded
    b3 = 2 * (2 * f3 - 2 * 2 * 4 * 16 * 16) / 2 + 2 * 4 * 16 * 16  # grad input + grad weight + grad bias
    b2 = 2 * f2  # [True, True, False]
    b1 = (f1 - 2 * 8 * 16 * 16) + 2 * 8 * 16 * 16  # [False, True, True]: grad weight + grad bias
    assert conv["flops"].tolist()[3:] == [b3, b2, b1]


def test_recorded_transformer_attention_norm_softmax_embedding() -> None:
    perf = _cpu("transformer")
    att = perf[perf["family"] == "attention"].sort_values("ts_ns")
    fwd = 2 * 2 * 4 * 12 * 12 * (8 + 8)  # B=2 H=4 S=12 D=8
    assert att["flops"].tolist() == [fwd / 2, fwd, 2.5 * fwd, 2.5 * fwd / 2]  # causal, full; backward reversed
    assert set(perf.loc[perf["family"] == "norm", "name"]) == {
        "aten::native_layer_norm",
        "aten::native_layer_norm_backward",
    }
    emb = perf[perf["family"] == "embedding"].set_index("name")
    assert emb.loc["aten::index_select", "bytes"] == 2 * 24 * 32 * 4 + 24 * 8
    assert "aten::scaled_dot_product_attention" not in set(perf["name"])  # counted in its flash op


def test_device_names_match_by_their_words() -> None:
    # Vendor words and VF ignored; form factor and memory size pick the row; no guess for others.
    expect = {
        "AMD Instinct MI300X VF": "AMD Instinct MI300X",
        "NVIDIA H100 SXM5 80GB": "NVIDIA H100 80GB HBM3",
        "NVIDIA H100 80GB PCIe": "NVIDIA H100 PCIe",
        "NVIDIA A100-SXM4-80GB VF": "NVIDIA A100-SXM4-80GB",
        "NVIDIA A100 80GB": "NVIDIA A100-SXM4-80GB",  # no form named: the SXM row of that size
        "NVIDIA H800 PCIe": "NVIDIA H800 PCIe",
        "NVIDIA H20": "NVIDIA H20",
        "NVIDIA H200 NVL": "NVIDIA H200 NVL",
        "NVIDIA GH200 144G HBM3e": "NVIDIA GH200 144G HBM3e",
        "NVIDIA GH200 480GB": "NVIDIA GH200 480GB",
        "NVIDIA B300 SXM6 AC": "NVIDIA B300",
        "AMD Instinct MI355X": "AMD Instinct MI355X",
    }
    for name, row in expect.items():
        found = device_peaks(name)
        assert found is not None and found.name == row, name
    for name in ("AMD Radeon Graphics", "NVIDIA A10G", "NVIDIA L40", ""):
        assert device_peaks(name) is None, name  # A10G is not an A10, L40 not an L40S
    mi300x = device_peaks("AMD Instinct MI300X VF")
    assert mi300x is not None and (mi300x.bf16, mi300x.bandwidth_gbps) == (1307.4, 5300)


def test_kernels_on_a_device_id_deviceproperties_does_not_list(tmp_path: Path) -> None:
    # The kernels run on device 3; deviceProperties lists device 0 only (a VM's VF renumbered):
    # the trace's only device is the one, so MI300X's peaks apply (bf16 1307.4 TFLOP/s).
    evs = [kb.step(1, 1000, 200), kb.cpu_op("aten::addmm", 1015, 40, **ADDMM)]
    evs += kb.launch("Cijk_gemm_bf16", 1020, 1100, 100, corr=11, device=3)
    d = kb.doc(evs, rank=0, deviceProperties=[{"id": 0, "name": "AMD Instinct MI300X VF"}])
    trace = tv.load(kb.write(tmp_path / "rank-0.json", d), cache=False)
    assert trace.metadata["device_name"].tolist() == ["AMD Instinct MI300X VF"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tv.TraceviewWarning)  # no "no peak figures" warning
        perf = tv.op_performance(trace).set_index("name")
    assert perf.loc["aten::addmm", "peak_tflops"] == 1307.4
    assert perf.loc["aten::addmm", "pct_of_peak"] == pytest.approx(100 * ADDMM_FLOPS / 1307.4e3 / 100_000)


def test_a_non_number_in_peaks_is_an_option_error(tmp_path: Path) -> None:
    trace = load(tmp_path)
    with pytest.raises(tv.OptionError, match=r"bf16 must be a number .*'fast'"):
        tv.op_performance(trace, peaks={"bf16": "fast"})
    with pytest.raises(tv.OptionError, match="bandwidth_gbps must be a positive number"):
        tv.op_performance(trace, peaks={"bandwidth_gbps": -1})
    with pytest.raises(tv.OptionError, match="bf16 must be a positive number"):
        DevicePeaks("mine", 3350, bf16=float("nan"))


def test_rocm_generic_device_name_is_kept_and_not_guessed() -> None:
    # The MI250 trace names its GCDs "AMD Radeon Graphics" (ROCm 6.2); kernels on device 2,
    # listed: the name is read, and no table row is guessed for it.
    trace = tv.load(Path(__file__).parents[2] / "data" / "hta_mi250_rocm", cache=False)
    assert trace.metadata["device_name"].tolist() == ["AMD Radeon Graphics"]
    assert device_peaks("AMD Radeon Graphics") is None
