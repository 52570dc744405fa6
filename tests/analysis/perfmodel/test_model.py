"""The FLOP/byte model, family by family, against figures worked out by hand."""

from __future__ import annotations

import pytest

from jupyter_traceview.analysis.perfmodel import NotModelled, OpCall, Work, model_op

F32, F16, BF16 = "float", "c10::Half", "c10::BFloat16"


def work(name: str, dims: list, types: list, concrete: list | None = None) -> Work:
    out = model_op(OpCall(name, tuple(tuple(d) for d in dims), tuple(types), tuple(concrete or ())))
    assert isinstance(out, Work), out
    return out


def not_modelled(name: str, dims: list, types: list, concrete: list | None = None) -> str:
    out = model_op(OpCall(name, tuple(tuple(d) for d in dims), tuple(types), tuple(concrete or ())))
    assert isinstance(out, NotModelled), out
    return out.reason


# ------------------------------------------------------------------ gemm
def test_mm_is_2mnk_and_reads_both_operands_writes_the_output() -> None:
    w = work("aten::mm", [[8, 32], [32, 64]], [F32, F32])
    assert w.family == "gemm" and w.dtype == "fp32"
    assert w.flops == 2 * 8 * 64 * 32  # 32768
    assert w.bytes == (8 * 32 + 32 * 64 + 8 * 64) * 4  # 11264
    assert w.detail == "M=8 N=64 K=32"


def test_addmm_adds_the_bias_once_per_output_element_at_its_recorded_shape() -> None:
    # addmm(bias[64], mat1[8,32], mat2[32,64], beta, alpha)
    w = work(
        "aten::addmm", [[64], [8, 32], [32, 64], [], []], [BF16, BF16, BF16, "Scalar", "Scalar"], ["", "", "", "1", "1"]
    )
    assert w.dtype == "bf16"
    assert w.flops == 2 * 8 * 64 * 32 + 8 * 64  # 33280
    assert w.bytes == (8 * 32 + 32 * 64 + 8 * 64 + 64) * 2  # 5760


def test_bmm_and_baddbmm() -> None:
    w = work("aten::bmm", [[4, 8, 16], [4, 16, 32]], [F16, F16])
    assert w.flops == 2 * 4 * 8 * 32 * 16
    assert w.bytes == 4 * (8 * 16 + 16 * 32 + 8 * 32) * 2
    assert w.dtype == "fp16"
    w = work("aten::baddbmm", [[4, 8, 32], [4, 8, 16], [4, 16, 32], [], []], [F16, F16, F16, "Scalar", "Scalar"])
    assert w.flops == 2 * 4 * 8 * 32 * 16 + 4 * 8 * 32
    assert w.bytes == 4 * (8 * 16 + 16 * 32 + 8 * 32 + 8 * 32) * 2


def test_matmul_and_linear_broadcast_leading_dimensions() -> None:
    # [2,3,8,16] x [16,4]: 6 matrices of 8x16 @ 16x4
    w = work("aten::matmul", [[2, 3, 8, 16], [16, 4]], [F32, F32])
    assert w.flops == 2 * 6 * 8 * 4 * 16
    assert w.bytes == (2 * 3 * 8 * 16 + 16 * 4 + 6 * 8 * 4) * 4
    # linear(x[2,12,32], W[96,32], b[96]): M = 24
    w = work("aten::linear", [[2, 12, 32], [96, 32], [96]], [F32, F32, F32])
    assert w.flops == 2 * 24 * 96 * 32 + 24 * 96
    assert w.bytes == (24 * 32 + 96 * 32 + 24 * 96 + 96) * 4
    # without bias
    w = work("aten::linear", [[24, 32], [96, 32], []], [F32, F32, ""])
    assert w.flops == 2 * 24 * 96 * 32


def test_gemm_with_inconsistent_shapes_is_not_guessed() -> None:
    assert "unexpected matrix shapes" in not_modelled("aten::mm", [[8, 32], [31, 64]], [F32, F32])


# ------------------------------------------------------------------ conv
def test_conv2d_by_the_textbook_formula() -> None:
    # x[2,3,16,16] w[8,3,3,3] b[8] stride 1 pad 1: out 16x16.
    w = work(
        "aten::conv2d",
        [[2, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], []],
        [F32, F32, F32, "ScalarList", "ScalarList", "ScalarList", "Scalar"],
        ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"],
    )
    out = 2 * 8 * 16 * 16
    assert w.flops == 2 * out * 3 * 9 + out  # 2*N*Cout*Ho*Wo*Cin*kh*kw + bias
    assert w.bytes == (2 * 3 * 16 * 16 + 8 * 3 * 9 + out + 8) * 4


def test_convolution_with_stride_padding_dilation_groups() -> None:
    # x[2,8,16,16] w[16,4,3,3] groups 2, stride 2, pad 2, dilation 2:
    # out = floor((16 + 4 - 2*2 - 1)/2) + 1 = 8
    w = work(
        "aten::convolution",
        [[2, 8, 16, 16], [16, 4, 3, 3], [], [], [], [], [], [], []],
        [F32, F32, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
        ["", "", "", "[2, 2]", "[2, 2]", "[2, 2]", "False", "[0, 0]", "2"],
    )
    assert w.flops == 2 * (2 * 16 * 8 * 8) * (8 // 2) * 9
    assert w.bytes == (2 * 8 * 16 * 16 + 16 * 4 * 9 + 2 * 16 * 8 * 8) * 4


def test_transposed_convolution() -> None:
    # x[2,16,4,4] w[16,4,2,2] stride 2: out = (4-1)*2 + 1*(2-1) + 0 + 1 = 8, C_out = 4
    w = work(
        "aten::convolution",
        [[2, 16, 4, 4], [16, 4, 2, 2], [4], [], [], [], [], [], []],
        [F32, F32, F32, "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
        ["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"],
    )
    macs = 2 * 4 * 4 * 16 * 4 * 4  # every input position times a C_out x k filter
    assert w.flops == 2 * macs + 2 * 4 * 8 * 8
    assert w.bytes == (2 * 16 * 16 + 16 * 4 * 4 + 2 * 4 * 64 + 4) * 4


def test_cudnn_convolution_has_padding_before_stride_and_no_bias() -> None:
    # cudnn_convolution(input, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
    w = work(
        "aten::cudnn_convolution",
        [[1, 4, 10, 10], [4, 4, 3, 3], [], [], [], [], [], [], []],
        [BF16, BF16, "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"],
        ["", "", "[0, 0]", "[1, 1]", "[1, 1]", "1", "False", "False", "True"],
    )
    assert w.flops == 2 * (4 * 8 * 8) * 4 * 9


def test_convolution_backward_counts_the_requested_gradients() -> None:
    dims = [[2, 8, 16, 16], [2, 3, 16, 16], [8, 3, 3, 3], [], [], [], [], [], [], [], []]
    types = [
        F32,
        F32,
        F32,
        "ScalarList",
        "ScalarList",
        "ScalarList",
        "ScalarList",
        "Scalar",
        "ScalarList",
        "Scalar",
        "ScalarList",
    ]
    base = ["", "", "", "[8]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    macs = 2 * 8 * 16 * 16 * 3 * 9
    w = work("aten::convolution_backward", dims, types, [*base, "[True, True, True]"])
    assert w.flops == 2 * macs + 2 * macs + 2 * 8 * 16 * 16
    go, x, wt = 2 * 8 * 256 * 4, 2 * 3 * 256 * 4, 8 * 27 * 4
    assert w.bytes == go + (wt + x) + (x + wt) + 8 * 4
    w = work("aten::convolution_backward", dims, types, [*base, "[False, True, False]"])
    assert w.flops == 2 * macs and w.bytes == go + x + wt


def test_convolution_without_concrete_inputs_is_not_modelled() -> None:
    reason = not_modelled(
        "aten::conv2d", [[2, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], []], [F32] * 3 + ["ScalarList"] * 3 + ["Scalar"]
    )
    assert "not recorded" in reason


# ------------------------------------------------------------------ attention
def test_sdpa_flash_forward_causal_and_not() -> None:
    # _scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, return_debug_mask, scale); [B,H,S,D]
    dims = [[2, 4, 128, 64]] * 3 + [[], [], [], []]
    types = [BF16] * 3 + ["Scalar", "Scalar", "Scalar", ""]
    full = work("aten::_scaled_dot_product_flash_attention", dims, types, ["", "", "", "0.", "False", "False", ""])
    assert full.flops == 4 * 2 * 4 * 128 * 128 * 64  # 2 products of 2*B*H*S*S*D
    assert full.bytes == 4 * 2 * 4 * 128 * 64 * 2  # q, k, v, out
    causal = work("aten::_scaled_dot_product_flash_attention", dims, types, ["", "", "", "0.", "True", "False", ""])
    assert causal.flops == full.flops / 2 and causal.bytes == full.bytes and "causal" in causal.detail


def test_flash_attention_forward_uses_bshd_layout_and_gqa() -> None:
    # _flash_attention_forward(q[B,S,H,D], k[B,S,Hkv,D], v, cum_q, cum_k, max_q, max_k, dropout_p, is_causal, ...)
    dims = [[1, 512, 8, 64], [1, 512, 2, 64], [1, 512, 2, 64], [], [], [], [], [], [], [], []]
    types = [F16, F16, F16, "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", ""]
    w = work(
        "aten::_flash_attention_forward", dims, types, ["", "", "", "", "", "512", "512", "0.", "False", "False", ""]
    )
    assert w.flops == 2 * 1 * 8 * 512 * 512 * (64 + 64)
    assert w.bytes == (512 * 8 * 64 + 2 * 512 * 2 * 64 + 512 * 8 * 64) * 2


def test_attention_backward_is_two_and_a_half_forwards() -> None:
    # _scaled_dot_product_flash_attention_backward(grad_out, q, k, v, out, logsumexp, cum_q, cum_k,
    #   max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, scale)
    dims = [[1, 2, 64, 32]] * 5 + [[1, 2, 64]] + [[]] * 9
    types = [BF16] * 5 + [F32] + ["", "", "Scalar", "Scalar", "Scalar", "Scalar", "long int", "long int", ""]
    concrete = [""] * 8 + ["64", "64", "0.", "True", "", "", ""]
    w = work("aten::_scaled_dot_product_flash_attention_backward", dims, types, concrete)
    fwd_causal = 2 * 2 * 64 * 64 * (32 + 32) / 2
    assert w.flops == 2.5 * fwd_causal
    t = 2 * 64 * 32 * 2
    assert w.bytes == 3 * t + t + t + 3 * t  # q,k,v,out read; grad out read; grad q,k,v written


# ------------------------------------------------------------------ memory-bound families
def test_layer_norm_and_its_backward() -> None:
    # native_layer_norm(input[4,512,256], normalized_shape, weight[256], bias[256], eps)
    w = work("aten::native_layer_norm", [[4, 512, 256], [], [256], [256], []], [F16, "ScalarList", F16, F16, "Scalar"])
    n = 4 * 512 * 256
    assert w.family == "norm" and w.flops == 7 * n
    assert w.bytes == (n + 256 + 256 + n) * 2
    # native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
    w = work(
        "aten::native_layer_norm_backward",
        [[4, 512, 256], [4, 512, 256], [], [4, 512, 1], [4, 512, 1], [256], [256], []],
        [F16, F16, "ScalarList", F32, F32, F16, F16, "ScalarList"],
    )
    assert w.flops == 8 * n
    # grad out and input read, mean and rstd (fp32) read, weight and bias read, grad input written
    assert w.bytes == (n + n) * 2 + 2 * 2048 * 4 + (256 + 256) * 2 + n * 2


def test_softmax_forward_and_backward() -> None:
    w = work("aten::_softmax", [[8, 128, 128], [], []], [F32, "Scalar", "Scalar"])
    n = 8 * 128 * 128
    assert w.family == "softmax" and w.flops == 5 * n and w.bytes == 2 * n * 4
    w = work("aten::_softmax_backward_data", [[8, 128, 128], [8, 128, 128], [], []], [F32, F32, "Scalar", "ScalarType"])
    assert w.flops == 4 * n and w.bytes == 3 * n * 4


def test_elementwise_broadcast_in_place_copy_and_fill() -> None:
    # add(a[4,1,8], b[3,8]) -> [4,3,8]
    w = work("aten::add", [[4, 1, 8], [3, 8], []], [F32, F32, "Scalar"])
    assert w.family == "elementwise" and w.flops == 96
    assert w.bytes == (32 + 24 + 96) * 4
    # add_(self[64,64], other[64]) in place: output is self
    w = work("aten::add_", [[64, 64], [64], []], [BF16, BF16, "Scalar"])
    assert w.flops == 4096 and w.bytes == (4096 + 64 + 4096) * 2
    # copy_(self fp16 [1000], src fp32 [1000]): source read at 4 B, destination written at 2 B
    w = work("aten::copy_", [[1000], [1000], []], [F16, F32, "Scalar"])
    assert w.flops == 0 and w.bytes == 1000 * 2 + 1000 * 4
    w = work("aten::fill_", [[10, 10], []], [F32, "Scalar"])
    assert w.flops == 0 and w.bytes == 400
    # Integer work has no compute dtype.
    assert work("aten::mul", [[10], [10]], ["long int", "long int"]).dtype is None


def test_reductions_size_the_output_from_dim_and_keepdim() -> None:
    # sum(x[32,64], dim=[1], keepdim=False, dtype=None)
    w = work("aten::sum", [[32, 64], [], [], []], [F32, "ScalarList", "Scalar", ""], ["", "[1]", "False", ""])
    assert w.family == "reduction" and w.flops == 2048 and w.bytes == (2048 + 32) * 4
    # sum over everything: sum(x) has only self
    w = work("aten::sum", [[32, 64], []], [F32, ""], ["", ""])
    assert w.bytes == (2048 + 1) * 4
    # mean(x, dim=[0, 1])
    w = work("aten::mean", [[32, 64], [], [], []], [F32, "ScalarList", "Scalar", ""], ["", "[0, 1]", "True", ""])
    assert w.bytes == (2048 + 1) * 4


def test_embedding_gather_and_backward() -> None:
    # index_select(weight[30522,128], 0, idx[512])
    w = work("aten::index_select", [[30522, 128], [], [512]], [F32, "Scalar", "long int"], ["", "0", ""])
    assert w.family == "embedding" and w.flops == 0
    assert w.bytes == 2 * 512 * 128 * 4 + 512 * 8
    # embedding_dense_backward(grad[2,12,32], indices[2,12], num_weights=100, padding_idx, scale)
    w = work(
        "aten::embedding_dense_backward",
        [[2, 12, 32], [2, 12], [], [], []],
        [F32, "long int", "Scalar", "Scalar", "Scalar"],
        ["", "", "100", "-1", "False"],
    )
    assert w.flops == 24 * 32 and w.bytes == 24 * 32 * 4 + 24 * 8 + 100 * 32 * 4


def test_views_do_no_work_and_unknown_ops_are_not_modelled() -> None:
    assert model_op(OpCall("aten::view", ((2, 3),), (F32,))) is None
    assert model_op(OpCall("aten::t", ((2, 3),), (F32,))) is None
    out = model_op(OpCall("fbgemm::jagged_to_padded_dense", ((2, 3),), (F32,)))
    assert isinstance(out, NotModelled) and out.reason == "operator not in the model"


@pytest.mark.parametrize("name", ["aten::mm", "aten::conv2d", "aten::_softmax", "aten::add", "aten::sum"])
def test_missing_shapes_are_not_guessed(name: str) -> None:
    out = model_op(OpCall(name, (), ()))
    assert isinstance(out, NotModelled)
