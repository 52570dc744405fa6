"""Real CUDA traces recorded on an H200 (``tests/data/h200_cuda/``) against what torch and
CUDA events said on the same machine.

The traces were written by the product's own ``ProfileSession`` (what ``%%traceprofile``
runs) by ``scripts/record_cuda_traces.py``; beside them, ``prof.key_averages()`` for the
same steps and ``facts.json``: each matrix product timed with CUDA events, the allocator's
peak of a training step (``torch.cuda.max_memory_allocated``) and the parameter count.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv

US = 1000
DATA = Path(__file__).resolve().parents[1] / "data" / "h200_cuda"
TRACES = ("matmul", "train", "compiled")
FACTS = json.loads((DATA / "facts.json").read_text())


def _load(name: str) -> tv.Trace:
    return tv.load(DATA / name, cache=False)


def _key_averages(name: str) -> pd.DataFrame:
    with gzip.open(DATA / f"{name}.key_averages.json.gz", "rt") as fh:
        ref = pd.DataFrame(json.load(fh))
    # torch lists a user annotation twice, once for its CPU range and once for its GPU-side
    # span (``gpu_user_annotation``): those names are not comparable one to one.
    return ref.drop_duplicates("name", keep=False).set_index("name")


@pytest.mark.parametrize("name", TRACES)
def test_cpu_op_breakdown_equals_key_averages(name: str) -> None:
    """Calls, total and self CPU time, GPU time launched inside and directly, per operator name.

    The CUDA traces exercise what the CPU ones cannot: launch calls are children for self
    time, autocast's nested same-name pairs are one call, and GPU time is attributed.
    """
    trace = _load(name)
    ref = _key_averages(name)
    got = tv.cpu_op_breakdown(trace, kinds=["cpu_op", "user_annotation", "python_function"]).set_index("name")
    common = ref.index.intersection(got.index)
    # Every operator torch reports is compared (its other rows are kernels and runtime calls).
    ops = [n for n in ref.index if n.startswith("aten::")]
    assert set(ops) <= set(common) and len(ops) > 1
    for n in common:
        g, r = got.loc[n], ref.loc[n]
        assert g.calls == r["count"], n
        for ours, theirs in (
            ("total_ns", "cpu_time_total_us"),
            ("self_ns", "self_cpu_time_total_us"),
            ("gpu_ns", "device_time_total_us"),
            ("self_gpu_ns", "self_device_time_total_us"),
        ):
            assert g[ours] / US == pytest.approx(r[theirs], rel=0.01, abs=0.002), (n, ours)
    if name == "train":
        # Autocast nests aten::layer_norm in aten::layer_norm: 24 calls, not the trace's 48 events.
        assert got.loc["aten::layer_norm", "calls"] == 24


def test_matrix_products_known_flops_and_speed() -> None:
    """FLOPs by construction; TFLOP/s within 5 % of CUDA events; the H200's peaks."""
    trace = _load("matmul")
    perf = tv.op_performance(trace, by="shape").set_index(["name", "dtype"])
    mm16 = perf.loc[("aten::mm", "bf16")]
    mm32 = perf.loc[("aten::mm", "fp32")]
    bmm = perf.loc[("aten::bmm", "fp16")]
    # Three steps: three 8192^3 bf16 products, one 4096^3 fp32, one 64 x 1024x512x256 fp16 each.
    assert (mm16["count"], mm32["count"], bmm["count"]) == (9, 3, 3)
    assert mm16["flops"] == 9 * 2 * 8192**3
    assert mm32["flops"] == 3 * 2 * 4096**3
    assert bmm["flops"] == 3 * 2 * 64 * 1024 * 512 * 256
    # Kernel time in the trace against CUDA events around each product (which also hold the
    # gap between launches, so the events' rate is the lower one).
    assert mm16["tflops"] == pytest.approx(2 * 8192**3 / (FACTS["mm_bf16_8192_ms"] * 1e-3) / 1e12, rel=0.05)
    assert mm32["tflops"] == pytest.approx(2 * 4096**3 / (FACTS["mm_fp32_4096_ms"] * 1e-3) / 1e12, rel=0.05)
    assert (mm16["peak_tflops"], mm32["peak_tflops"], mm16["peak_gbps"]) == (989.5, 67.0, 4800.0)
    # MFU per step: the modelled FLOPs of the step over (its duration x the bf16 peak).
    mfu = tv.mfu(trace)
    step_flops = 3 * 2 * 8192**3 + 2 * 4096**3 + 2 * 64 * 1024 * 512 * 256
    assert mfu["flops"].tolist() == [step_flops] * 3
    assert mfu["mfu_pct"].tolist() == pytest.approx((100 * mfu["ideal_ns"] / mfu["dur_ns"]).tolist())


def test_memory_peak_equals_the_allocator() -> None:
    """The GPU peak of a training step is torch.cuda.max_memory_allocated, to the byte."""
    trace = _load("train")
    peaks = tv.memory_peaks(trace)
    gpu = peaks[peaks["device_type"] == "CUDA"]
    assert gpu["step"].tolist() == [1, 2, 3]
    assert set(gpu["peak_allocated_bytes"]) == {FACTS["train_max_allocated"]}
    # At the peak the parameters (fp32) and AdamW's two moments are held: at least 3x their size.
    assert FACTS["train_max_allocated"] >= 3 * 4 * FACTS["train_params"]


@pytest.mark.parametrize("name", TRACES)
def test_headline_and_findings(name: str) -> None:
    """The H200 recognised, the steps counted, and the fp32 products named where they run."""
    trace = _load(name)
    head = tv.headline(trace)
    assert head["devices"] == ["NVIDIA H200"]
    assert head["steps"] == ([1, 2] if name == "compiled" else [1, 2, 3])
    assert trace.meta(0).device_properties[0]["numSms"] == FACTS["sms"]
    rules = set(tv.findings(trace)["id"])
    # fp32 products on a device whose bf16 peak is 15x its fp32 one; the bf16 training has none.
    assert ("fp32_matmul" in rules) == (name != "train")


def test_cudnn_attention_is_modelled_once() -> None:
    """torch 2.11's cuDNN attention ops (forward and backward) carry the FLOPs, not their wrappers.

    4 layers x 3 steps = 12 calls each way; B=16, H=8, S=256, D=64, not causal: forward
    2*B*H*S*S*(D + D) per call, backward 2.5 times that.
    """
    perf = tv.op_performance(_load("train"), by="shape").set_index("name")
    fwd = 2 * 16 * 8 * 256 * 256 * (64 + 64)
    assert perf.loc["aten::_cudnn_attention_forward", "flops"] == 12 * fwd
    assert perf.loc["aten::_cudnn_attention_backward", "flops"] == 12 * 2.5 * fwd
    assert perf.loc["aten::_cudnn_attention_forward", "status"] == "modelled"
    # The wrappers dispatch to them: their kernels are not counted twice.
    assert "aten::_scaled_dot_product_cudnn_attention" not in perf.index
    assert "aten::_scaled_dot_product_cudnn_attention_backward" not in perf.index
    # AdamW's multi-tensor ops are named for what they miss: the profiler records no sizes.
    assert perf.loc["aten::_foreach_mul_", "reason"] == "the profiler records no sizes for tensor lists"
