"""tv.workload on traces without CPU operators (an Nsight Systems export: NVTX ranges and
kernel names only): backward kernels, optimizer kernels and the hooks a gradient-computing
forward sets up tell training from inference (docs/semantics.md, "The workload")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import kineto_builder as kb
from tests.analysis.test_workload import verdict

FWD = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctorOnSelf_add<float>>(int, T2, T3)"
ADAM = (
    "void at::native::multi_tensor_apply_kernel<at::native::TensorListMetadata<4>, "
    "at::native::FusedAdamMathFunctor<float, 4>>(at::native::TensorListMetadata<4>, int)"
)
FOREACH = "void at::native::multi_tensor_apply_kernel<TensorListMetadata<2>, BinaryOpListAlphaFunctor<float>>(T1, T2)"


def kernels(*names: str) -> list[dict[str, Any]]:
    """One 10 us launch per name, 100 us apart, no CPU operator (what an Nsight export without
    emit_nvtx holds)."""
    ev: list[dict[str, Any]] = []
    for i, n in enumerate(names):
        ev += kb.launch(n, 100 * i, 100 * i + 5, 10, corr=i + 1)
    return ev


@pytest.mark.parametrize(
    "name",
    [
        "void at::native::(anonymous namespace)::softmax_warp_backward<float, float, float, 10, false>(T2 *)",
        "void at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase &)",
        "sm80_xmma_wgrad_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32",
        "sm86_xmma_dgrad_implicit_gemm_indexed_wo_smem_f16f16_f16f32_f32_nhwckrsc_nhwc",
        "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>(Flash_bwd_params)",
    ],
)
def test_a_backward_kernel_is_training(tmp_path: Path, name: str) -> None:
    # One forward kernel and one backward kernel: 1 backward kernel, no optimizer.
    row = verdict(tmp_path, kernels(FWD, name))
    assert row["workload"] == "training"
    assert bool(row["has_backward"]) and not row["has_optimizer"]
    assert "1 backward kernels" in row["evidence"]


def test_an_optimizer_kernel_is_training(tmp_path: Path) -> None:
    # Two fused Adam updates (multi_tensor_apply with FusedAdamMathFunctor): 2 optimizer kernels.
    row = verdict(tmp_path, kernels(FWD, ADAM, ADAM))
    assert row["workload"] == "training"
    assert bool(row["has_optimizer"]) and not row["has_backward"]
    assert "2 optimizer kernels" in row["evidence"]
    # Named by their short names (format.short_name): no return type or namespaces.
    assert "(multi_tensor_apply_kernel<" in row["evidence"] and "anonymous namespace" not in row["evidence"]


def test_forward_and_foreach_kernels_are_inference(tmp_path: Path) -> None:
    # A plain foreach kernel (BinaryOpListAlphaFunctor: gradient clipping, AMP unscale, any
    # _foreach_ op) and forward kernels name no optimizer, no backward: inference.
    row = verdict(tmp_path, kernels(FWD, FOREACH, "flash_fwd_kernel<Flash_fwd_kernel_traits<128>>"))
    assert row["workload"] == "inference"
    assert not row["has_backward"] and not row["has_optimizer"]


def test_backward_nvtx_ranges_are_training(tmp_path: Path) -> None:
    # An Nsight export's NVTX ranges (user annotations here): an autograd backward node and
    # FSDP's post-backward hook = 2 backward ranges.
    ev = [
        kb.annotation("MmBackward0, seq = 7, op_id = 40", 0, 50),
        kb.annotation("FSDP::post_backward (blocks.0), op_id = 41", 60, 20),
        *kernels(FWD),
    ]
    row = verdict(tmp_path, ev)
    assert row["workload"] == "training" and bool(row["has_backward"])
    assert "2 backward operators" in row["evidence"]


def test_a_forward_setting_up_backward_hooks_is_training(tmp_path: Path) -> None:
    # FSDP registers RegisterPostBackwardFunction in a forward only when gradients are enabled:
    # training, although the window holds the forward only (no backward, no optimizer: both
    # flags stay false, and the hook is not counted as backward work).
    ev = [
        kb.annotation("FSDP::pre_forward (blocks.0), op_id = 1", 0, 10),
        kb.annotation("RegisterPostBackwardFunction, seq = 3, op_id = 2", 10, 5),
        kb.annotation("RegisterPostBackwardFunction, seq = 4, op_id = 3", 20, 5),
        *kernels(FWD),
    ]
    row = verdict(tmp_path, ev)
    assert row["workload"] == "training"
    assert not row["has_backward"] and not row["has_optimizer"]
    assert "2 backward hooks set up in the forward" in row["evidence"]


def test_fsdp_forward_alone_is_inference(tmp_path: Path) -> None:
    # FSDP's forward hooks run under no_grad too: alone they say nothing about training.
    ev = [kb.annotation("FSDP::pre_forward (blocks.0), op_id = 1", 0, 10), *kernels(FWD)]
    assert verdict(tmp_path, ev)["workload"] == "inference"
