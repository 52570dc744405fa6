"""Coverage of the findings: copy_bound, dominant_kernel_family, findings(explain=True), advice
conditioned on the workload (tv.workload), and a failing rule that does not break the others."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.findings import all_rules, registry
from jupyter_traceview.analysis.kernel_families import family_of
from tests import kineto_builder as kb
from tests.analysis.test_findings import by_id, launch_bound_events, load_rank, quiet_findings
from tests.analysis.test_memory_findings import GIB, MIB
from tests.analysis.test_memory_findings import _trace as memory_trace

GEMM = "volta_sgemm_128x64_nn"
SOFTMAX = (
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>(float*, float const*, int)"
)
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, float)"


# --------------------------------------------------------------------------- copy_bound
def copy_bound_events() -> list[dict[str, Any]]:
    """Nine pinned 1 MB host-to-device copies of 100 us back to back on the GPU [0, 900) us,
    launched ahead by the host, then one 100 us GEMM [900, 1000). GPU span 1000 us; the
    copies run 900 us with no kernel alongside: 90 % of the span exposed (>= 10 %); 9 MB in
    900 us = 10 GB/s."""
    ev: list[dict[str, Any]] = [kb.step(1, -20, 1100)]
    for i in range(9):
        ev.append(kb.runtime("cudaMemcpyAsync", -10 + i, 1, corr=i + 1))
        ev.append(kb.memcpy(100 * i, 100, corr=i + 1, nbytes=1_000_000))
    ev += kb.launch(GEMM, 0, 900, 100, corr=20)
    return ev


def test_copy_bound_fires_with_bytes_direction_and_bandwidth(tmp_path: Path) -> None:
    f = quiet_findings(load_rank(tmp_path, copy_bound_events()))
    row = by_id(f, "copy_bound")
    assert row["time_at_stake_ns"] == 900_000
    assert row["severity"] == "high"
    e = row["evidence"]
    assert e["exposed_copy_pct"] == pytest.approx(90.0)
    assert e["gpu_span_ns"] == 1_000_000
    (htod,) = e["directions"]
    assert htod["direction"] == "HtoD"
    assert htod["bytes"] == 9_000_000 and htod["pageable_bytes"] == 0
    assert htod["effective_gbps"] == pytest.approx(10.0)
    assert "HtoD copies expose 900 us" in row["title"]
    assert "10 GB/s" in row["detail"] and "non_blocking=True" in row["detail"]
    # A training-less trace (no backward): the HtoD advice for inference.
    assert "keep the weights resident" in row["detail"]


def test_copies_under_compute_are_not_copy_bound(tmp_path: Path) -> None:
    """The same copies on stream 8 under a 1000 us GEMM on stream 7: nothing exposed."""
    ev: list[dict[str, Any]] = [kb.step(1, -20, 1100)]
    for i in range(9):
        ev.append(kb.runtime("cudaMemcpyAsync", -10 + i, 1, corr=i + 1))
        ev.append(kb.memcpy(100 * i, 100, corr=i + 1, nbytes=1_000_000, stream=8))
    ev += kb.launch(GEMM, -15, 0, 1000, corr=20)
    trace = load_rank(tmp_path, ev)
    assert "copy_bound" not in set(quiet_findings(trace)["id"])
    why = quiet_findings(trace, explain=True).set_index("rule").loc["copy_bound"]
    assert not why["fired"]
    assert why["reason"] == "checked, fine: exposed memory copies 0.0% (largest, on rank 0), under the threshold of 10%"


# --------------------------------------------------------------------------- dominant_kernel_family
def family_events(softmax_us: float, n: int = 5) -> list[dict[str, Any]]:
    """Per 100 us iteration: a GEMM, a softmax of ``softmax_us`` and an elementwise kernel of the
    rest (100 - 50 - softmax_us), back to back. Softmax share of compute = softmax_us %."""
    ev: list[dict[str, Any]] = [kb.step(1, -20, 100 * n + 40)]
    rest = 100 - 50 - softmax_us
    for i in range(n):
        t = 100 * i
        ev += kb.launch(GEMM, t - 10, t, 50, corr=3 * i + 1)
        ev += kb.launch(SOFTMAX, t - 9, t + 50, softmax_us, corr=3 * i + 2)
        ev += kb.launch(ELEMENTWISE, t - 8, t + 50 + softmax_us, rest, corr=3 * i + 3)
    return ev


def test_a_softmax_holding_47_pct_fires(tmp_path: Path) -> None:
    """Softmax 47 us of every 100 us of compute: 47 % >= 30 %. Time at stake: 5 x 47 us."""
    f = quiet_findings(load_rank(tmp_path, family_events(47)))
    row = by_id(f, "dominant_kernel_family")
    assert row["time_at_stake_ns"] == 5 * 47_000
    (r,) = row["evidence"]["per_rank"]
    assert r["family"] == "softmax" and r["family_pct"] == pytest.approx(47.0)
    assert r["compute_ns"] == 500_000
    assert row["title"] == "Softmax kernels dominate: 47.0% of rank 0's compute time"
    assert "scaled_dot_product_attention" in row["detail"]


def test_a_family_under_the_threshold_is_checked_fine(tmp_path: Path) -> None:
    """Softmax 20 us, elementwise 30 us per 100 us: elementwise is the largest family, 30 % -> fires;
    with softmax 25 and elementwise 25, the largest is 25 % < 30 %: silent, and explain says so."""
    trace = load_rank(tmp_path, family_events(25))
    assert "dominant_kernel_family" not in set(quiet_findings(trace)["id"])
    why = quiet_findings(trace, explain=True).set_index("rule").loc["dominant_kernel_family"]
    assert why["reason"] == (
        "checked, fine: the largest non-matmul family, elementwise, holds 25.0% of rank 0's compute kernel time, "
        "under the threshold of 30%"
    )


@pytest.mark.parametrize(
    ("name", "family"),
    [
        (GEMM, "gemm"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "gemm"),
        ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "gemm"),
        ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32", "gemm"),
        ("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>", "attention"),
        ("fmha_cutlassF_f16_aligned_64x64_rf_sm80", "gemm"),
        (SOFTMAX, "softmax"),
        ("triton_per_fused__softmax_0", "softmax"),
        ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>", "normalization"),
        ("cudnn::bn_fw_tr_1C11_kernel_NCHW", "normalization"),
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps>>", "reduction"),
        ("triton_red_fused_sum_1", "reduction"),
        ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float>", "indexing"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::normal_kernel>", "elementwise"),
        (ELEMENTWISE, "elementwise"),
        ("triton_poi_fused_add_mul_0", "elementwise"),
        ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>", "optimizer"),
        ("my_custom_kernel", None),
    ],
)
def test_kernel_families(name: str, family: str | None) -> None:
    assert family_of(name) == family


# --------------------------------------------------------------------------- explain
def test_explain_lists_every_rule(tmp_path: Path) -> None:
    trace = load_rank(tmp_path, launch_bound_events())
    e = quiet_findings(trace, explain=True)
    assert list(e.columns) == ["rule", "fired", "reason"]
    assert list(e["rule"]) == [r.id for r in all_rules()]
    assert e["fired"].dtype == bool
    fired = set(e.loc[e["fired"], "rule"])
    assert fired == set(quiet_findings(trace)["id"])
    lb = e.set_index("rule").loc["launch_bound"]
    assert lb["reason"].startswith("fired: Launch-bound")
    reasons = e.set_index("rule")["reason"]
    assert reasons["python_overhead"].startswith("not applicable: the trace has GPU work")
    assert reasons["exposed_communication"] == "not applicable: no communication kernels in scope"
    assert reasons["slow_iteration"] == "not applicable: 1 ProfilerSteps in scope, the rule needs 3"
    assert all(r.startswith(("fired: ", "checked, fine: ", "not applicable: ")) for r in e["reason"])


def test_a_failing_rule_does_not_break_the_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = load_rank(tmp_path, launch_bound_events())
    rule = registry.get("copy_bound")

    def boom(ctx: Any, t: Any) -> list[Any]:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setitem(registry._REGISTRY, "copy_bound", dataclasses.replace(rule, run=boom))
    with pytest.warns(tv.TraceviewWarning, match=r"rule 'copy_bound' failed \(ZeroDivisionError"):
        f = tv.findings(trace)
    assert "launch_bound" in set(f["id"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        e = tv.findings(trace, explain=True).set_index("rule")
    assert e.loc["copy_bound", "reason"] == "failed: ZeroDivisionError: division by zero"


# --------------------------------------------------------------------------- advice by workload
def with_capture(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events plus a graph capture on the host (begin, end, instantiate)."""
    return [
        *events,
        kb.runtime("cudaStreamBeginCapture", 5, 1, corr=90_001),
        kb.runtime("cudaStreamEndCapture", 7, 1, corr=90_002),
        kb.runtime("cudaGraphInstantiate", 8, 1, corr=90_003),
    ]


def test_launch_bound_on_a_capture_says_capture_not_cuda_graphs(tmp_path: Path) -> None:
    f = quiet_findings(load_rank(tmp_path, with_capture(launch_bound_events())))
    row = by_id(f, "launch_bound")
    assert "Try CUDA graphs" not in row["detail"] and "reduce-overhead" not in row["detail"]
    assert "capture" in row["detail"] and "one-off cost" in row["detail"]
    assert row["title"].startswith("GPU idle during CUDA graph capture")


def test_launch_bound_on_a_replay_says_graphs_are_replayed(tmp_path: Path) -> None:
    ev = [*launch_bound_events(), kb.runtime("cudaGraphLaunch", 3, 1, corr=90_000)]
    row = by_id(quiet_findings(load_rank(tmp_path, ev)), "launch_bound")
    assert "Try CUDA graphs" not in row["detail"]
    assert "already replays CUDA/HIP graphs" in row["detail"]
    tiny = by_id(quiet_findings(load_rank(tmp_path, ev)), "tiny_kernels")
    assert "replay them with CUDA graphs" not in tiny["detail"]


def test_launch_bound_without_graphs_keeps_its_advice(tmp_path: Path) -> None:
    row = by_id(quiet_findings(load_rank(tmp_path, launch_bound_events())), "launch_bound")
    assert "Try CUDA graphs" in row["detail"]


def test_inference_memory_advice_speaks_of_the_kv_cache(tmp_path: Path) -> None:
    """The memory trace runs aten::mm only (no backward): inference."""
    trace = memory_trace(tmp_path, leak=True, oom=True, reserved=GIB, capacity=GIB + 50 * MIB)
    assert tv.workload(trace)["workload"].tolist() == ["inference"]
    f = tv.findings(trace).set_index("id")
    for rule in ("memory_near_capacity", "out_of_memory", "memory_leak"):
        detail = f.loc[rule, "detail"]
        assert "ZeRO" not in detail and "checkpoint activations" not in detail and "checkpointing" not in detail
    assert "KV cache" in f.loc["memory_near_capacity", "detail"]
    assert "maximum sequence length" in f.loc["out_of_memory", "detail"]
    assert "across requests" in f.loc["memory_leak", "detail"]
    assert "paged KV cache" in f.loc["memory_fragmentation", "detail"]


def test_training_memory_advice_is_unchanged(tmp_path: Path) -> None:
    trace = memory_trace(tmp_path, leak=False, oom=False, reserved=GIB, capacity=GIB + 50 * MIB)
    # The same trace with a backward operator: training.
    doc_path = tmp_path / "rank-0.json"
    import json

    doc = json.loads(doc_path.read_text())
    doc["traceEvents"].append(kb.cpu_op("MmBackward0", 150, 5))
    kb.write(doc_path, doc)
    trace = tv.load(doc_path, cache=False)
    assert tv.workload(trace)["workload"].tolist() == ["training"]
    detail = tv.findings(trace).set_index("id").loc["memory_near_capacity", "detail"]
    assert "ZeRO/FSDP" in detail and "KV cache" not in detail


def test_slow_step_of_a_capture_is_described_as_the_capture(tmp_path: Path) -> None:
    """Four 100 us steps of one 50 us GEMM, the first 300 us (200 % over the median), with
    the capture calls inside it."""
    ev: list[dict[str, Any]] = [kb.step(1, 0, 300)]
    ev += kb.launch(GEMM, 10, 20, 50, corr=1)
    for i in range(1, 4):
        t = 300 + 100 * (i - 1)
        ev += [kb.step(i + 1, t, 100), *kb.launch(GEMM, t + 10, t + 20, 50, corr=i + 1)]
    f = quiet_findings(load_rank(tmp_path, with_capture(ev)))
    row = by_id(f, "slow_iteration")
    assert row["title"].startswith("CUDA graph capture: Slow iteration: step 1")
    assert "a slow step there is the capture" in row["detail"]


def test_workload_reaches_every_rule_through_the_context(tmp_path: Path) -> None:
    """One computation per findings call, the same for every rule (Context.workloads)."""
    from jupyter_traceview.analysis.findings import Context, FindingRules

    trace = load_rank(tmp_path, with_capture(launch_bound_events()))
    ctx = Context(trace, FindingRules(), ranks=None, iterations=None, time_range=None, workers=False)
    try:
        assert ctx.workloads() is ctx.workloads()
        w = ctx.workload(0)
        assert w.workload == "graph_capture" and w.uses_graphs and w.inference
        assert isinstance(pd.DataFrame([dataclasses.asdict(w)]), pd.DataFrame)
    finally:
        ctx.close()


def test_family_of_lower_cased_ascii_matches_the_case_insensitive_patterns() -> None:
    """``family_of`` searches an ASCII name lower-cased with case-sensitive patterns: the same
    families as the case-insensitive patterns give (the patterns are lower case)."""

    import re

    from jupyter_traceview.analysis.kernel_families import FAMILIES

    assert all(p == p.lower() for _, p in FAMILIES)
    names = [
        "volta_sgemm_128x64_nn",
        "Cijk_Ailk_Bljk_HHS_BH_MT64x64",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
        "ncclKernel_AllReduce_RING_LL_Sum_float",
        "FLASH_FWD_KERNEL",
        "void cudnn::BN_FW_TR_1C11_kernel_NCHW",
        "Triton_Poi_fused_GELU_0",
        "SoftMax_Warp_Forward",
        "Ampere_FP16_S16816GEMM",
        "Kelvin_\u212a_conv",  # not ASCII: the case-insensitive patterns
        "\u017fort_kernel",
        "idle",
    ]
    family_of.cache_clear()
    for n in names:
        ref = next((f for f, p in FAMILIES if re.search(p, n, re.IGNORECASE)), None)
        assert family_of(n) == ref, n
