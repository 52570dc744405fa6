"""The work of one operator call: floating-point operations and bytes moved, from its shapes.

A CPU operator recorded with ``record_shapes=True`` carries ``Input Dims`` (one shape per
input, ``[]`` for scalars and absent tensors), ``Input type`` (a dtype name for a tensor,
``Scalar``, ``ScalarList``, ``""`` for None, ...) and ``Concrete Inputs`` (the values of the
scalar arguments, as text). :func:`model_op` turns one such call into a :class:`Work`: the
operator family, FLOPs, bytes and the dtype whose peak applies, or into
:class:`NotModelled` with the reason. Nothing is guessed: an operator whose name or argument
layout is not one listed below is *not modelled*, and says so.

The model, family by family (``B`` batch, ``M x K`` times ``K x N`` matrices, ``bpe`` bytes
per element of the operand's dtype; every tensor is read or written once — the minimum
traffic, the figure rooflines use):

``gemm`` — ``aten::mm``, ``addmm``, ``bmm``, ``baddbmm``, ``_scaled_mm``, and the composite
    ``aten::matmul`` and ``aten::linear`` when they launch work themselves (see below).
    FLOPs = ``2·B·M·N·K`` (one multiply and one add per inner-product term), plus one add per
    output element where a bias/input is added (``addmm``, ``baddbmm``, ``linear`` with bias,
    ``_scaled_mm`` with bias). The ``alpha``/``beta`` scalings are not counted. Bytes = both
    operands + the output + the added tensor *at its recorded shape* (a broadcast bias of
    ``N`` elements is read once). Backward GEMMs are the ``aten::mm``/``bmm`` calls that
    autograd makes (``AddmmBackward0`` -> two ``aten::mm``): modelled as such.
``conv`` — ``aten::conv1d/2d/3d``, ``conv_transpose1d/2d/3d``, ``convolution``,
    ``_convolution``, ``cudnn_convolution``, ``cudnn_convolution_transpose``,
    ``mkldnn_convolution``, ``miopen_convolution``, and ``convolution_backward``. The output size per
    spatial dimension is ``floor((in + 2·pad - dil·(k-1) - 1) / stride) + 1`` (transposed:
    ``(in-1)·stride - 2·pad + dil·(k-1) + output_padding + 1``). FLOPs =
    ``2 · N · C_out · prod(out) · (C_in / groups) · prod(k)`` (transposed: with the input's
    spatial size and channel roles swapped), plus ``N · C_out · prod(out)`` for a bias.
    Backward (``output_mask`` = grad input, grad weight, grad bias): the grad-input and
    grad-weight products each cost what the forward product costs; grad bias is one add per
    output element. Bytes forward = input + weight + output (+ bias); backward = grad output
    and, per requested gradient, what it reads (weight for grad input, input for grad weight)
    and writes.
``attention`` — ``aten::scaled_dot_product_attention`` (composite), the flash, efficient,
    cuDNN and CPU-flash kernels' ops (``_scaled_dot_product_flash_attention``,
    ``_flash_attention_forward``, ``_scaled_dot_product_efficient_attention``,
    ``_efficient_attention_forward``, ``_scaled_dot_product_cudnn_attention``,
    ``_cudnn_attention_forward``, ``_scaled_dot_product_flash_attention_for_cpu``) and their
    ``_backward`` ops. With
    ``H`` query heads, ``S_q``/``S_k`` sequence lengths and ``D``/``D_v`` head sizes,
    forward FLOPs = ``2·B·H·S_q·S_k·(D + D_v)`` (the two products ``Q·Kᵀ`` and ``P·V``;
    softmax is not counted), halved when causal. Backward = 2.5 x forward: the four products
    of the gradients plus the recomputation of ``Q·Kᵀ`` that flash/efficient kernels do (the
    convention of the FlashAttention papers). Bytes forward = Q + K + V + output;
    backward = Q, K, V, output and grad output read, grad Q, K, V written. Key/value heads
    may be fewer than query heads (grouped-query attention): their bytes use their own shape.
``norm`` — ``native_layer_norm``, ``native_batch_norm``, ``_native_batch_norm_legit*``,
    ``cudnn_batch_norm``, ``miopen_batch_norm``, ``native_group_norm``, ``_fused_rms_norm``,
    ``rms_norm`` and the ``*_backward`` ops of layer, batch and group norm. Bytes = input
    read + output written (+ weight and bias, + grad output read for backward); FLOPs =
    ``5`` per element forward (mean, variance, normalise; the affine transform adds 2 when a
    weight is recorded), ``8`` per element backward. Memory-bound by construction.
``softmax`` — ``_softmax``, ``_log_softmax`` and their ``_backward_data`` ops: bytes = input
    read + output written (backward: two reads, one write); FLOPs = 5 per element forward
    (max, subtract, exp, sum, divide), 4 backward.
``elementwise`` — the pointwise operators in :data:`ELEMENTWISE` (unary, binary, ternary,
    activations and their backward, in-place ``_`` variants, ``copy_``, ``fill_``,
    ``zero_``, dropout). Output shape = the broadcast of the tensor inputs (in place: the
    first input's). Bytes = every tensor input read once + the output written once
    (``fill_``/``zero_``: written only; ``copy_``: source read, destination written, each at
    its own dtype). FLOPs = one per output element (``copy_``, ``fill_``, ``zero_``: 0).
``reduction`` — ``sum``, ``mean``, ``amax``, ``amin``, ``max``, ``min``, ``prod``, ``norm``,
    ``var``, ``std``, ``argmax``, ``argmin``, ``any``, ``all``, ``cumsum``: bytes = input
    read + output written (output size from the recorded ``dim``/``keepdim``); FLOPs = one
    per input element.
``embedding`` — ``embedding``, ``index_select``, ``embedding_dense_backward``,
    ``_embedding_bag``, ``embedding_bag``: bytes = the gathered rows read + written (+ the
    indices); FLOPs 0 for a gather, one add per gathered element for bags (sum/mean) and for
    the backward's scatter-add. Backward writes the whole weight gradient.

Composite operators (:data:`COMPOSITE`: ``aten::linear``, ``matmul``, ``conv2d``, ``layer_norm``,
``scaled_dot_product_attention``, ...) dispatch to one of the above. Their work is counted
where it happens: in the innermost modelled operators they call. A composite counts itself
only when no modelled operator runs inside it. Operators that only make views or allocate
(:data:`NO_WORK`: ``view``, ``reshape``, ``t``, ``empty``, ...) launch nothing and are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .calls import (
    FAMILIES as FAMILIES,
)
from .calls import (
    NotModelled as NotModelled,
)
from .calls import (
    OpCall as OpCall,
)
from .calls import (
    Work as Work,
)
from .calls import (
    broadcast_shape,
    element_count,
    int_list,
)
from .calls import (
    compute_dtype as compute_dtype,
)

__all__ = [
    "COMPOSITE",
    "ELEMENTWISE",
    "FAMILIES",
    "NO_WORK",
    "NotModelled",
    "OpCall",
    "Work",
    "compute_dtype",
    "model_op",
]


# ------------------------------------------------------------------------------ gemm
def _gemm(call: OpCall, a: int, b: int, *, add: int | None = None, batched: bool = False) -> Work | NotModelled:
    sa, sb = call.shape(a), call.shape(b)
    if sa is None or sb is None:
        return NotModelled("matrix operands not recorded as tensors")
    if batched:
        if len(sa) != 3 or len(sb) != 3 or sa[0] != sb[0] or sa[2] != sb[1]:
            return NotModelled(f"unexpected batched shapes {list(sa)} x {list(sb)}")
        bsz, m, k, n = sa[0], sa[1], sa[2], sb[2]
    else:
        if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0]:
            return NotModelled(f"unexpected matrix shapes {list(sa)} x {list(sb)}")
        bsz, m, k, n = 1, sa[0], sa[1], sb[1]
    out = bsz * m * n
    flops = 2.0 * bsz * m * n * k
    nbytes = call.nbytes(a) + call.nbytes(b) + out * call.bpe(a)
    if add is not None and call.shape(add) is not None:
        flops += out
        nbytes += call.nbytes(add)
    detail = (f"B={bsz} " if batched else "") + f"M={m} N={n} K={k}"
    return Work("gemm", flops, float(nbytes), compute_dtype(call.types[a]), detail)


def _scaled_mm(call: OpCall) -> Work | NotModelled:
    # _scaled_mm(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
    w = _gemm(call, 0, 1, add=4)
    if isinstance(w, Work):
        # The output is written in out_dtype (often bf16), not fp8: not recorded; left at the input's size.
        w = Work("gemm", w.flops, w.bytes + call.nbytes(2) + call.nbytes(3), w.dtype, w.detail)
    return w


def _matmul(call: OpCall) -> Work | NotModelled:
    sa, sb = call.shape(0), call.shape(1)
    if sa is None or sb is None or not sa or not sb:
        return NotModelled("operands not recorded as tensors")
    a = (1, *sa) if len(sa) == 1 else sa
    b = (*sb, 1) if len(sb) == 1 else sb
    if a[-1] != b[-2]:
        return NotModelled(f"inner sizes differ: {list(sa)} x {list(sb)}")
    batch = broadcast_shape([a[:-2], b[:-2]])
    if batch is None:
        return NotModelled(f"batch sizes do not broadcast: {list(sa)} x {list(sb)}")
    m, k, n, bsz = a[-2], a[-1], b[-1], element_count(batch)
    flops = 2.0 * bsz * m * n * k
    nbytes = call.nbytes(0) + call.nbytes(1) + bsz * m * n * call.bpe(0)
    return Work("gemm", flops, float(nbytes), compute_dtype(call.types[0]), f"B={bsz} M={m} N={n} K={k}")


def _linear(call: OpCall) -> Work | NotModelled:
    sx, sw = call.shape(0), call.shape(1)
    if sx is None or sw is None or len(sw) != 2 or not sx or sx[-1] != sw[1]:
        return NotModelled("unexpected input/weight shapes")
    m, k, n = element_count(sx[:-1]), sw[1], sw[0]
    flops = 2.0 * m * n * k
    nbytes = call.nbytes(0) + call.nbytes(1) + m * n * call.bpe(0)
    if call.shape(2) is not None:
        flops += m * n
        nbytes += call.nbytes(2)
    return Work("gemm", flops, float(nbytes), compute_dtype(call.types[0]), f"M={m} N={n} K={k}")


# ------------------------------------------------------------------------------ conv
@dataclass(frozen=True)
class _ConvArgs:
    stride: int
    padding: int
    dilation: int
    transposed: bool | int | None
    output_padding: int | None
    groups: int


#: Argument positions of stride, padding, dilation, transposed, output_padding, groups
#: (None: not an argument; transposed given as a constant bool then).
_CONV_LAYOUT: dict[str, _ConvArgs] = {
    "aten::convolution": _ConvArgs(3, 4, 5, 6, 7, 8),
    "aten::_convolution": _ConvArgs(3, 4, 5, 6, 7, 8),
    "aten::conv1d": _ConvArgs(3, 4, 5, False, None, 6),
    "aten::conv2d": _ConvArgs(3, 4, 5, False, None, 6),
    "aten::conv3d": _ConvArgs(3, 4, 5, False, None, 6),
    # conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation)
    "aten::conv_transpose1d": _ConvArgs(3, 4, 7, True, 5, 6),
    "aten::conv_transpose2d": _ConvArgs(3, 4, 7, True, 5, 6),
    "aten::conv_transpose3d": _ConvArgs(3, 4, 7, True, 5, 6),
    # mkldnn_convolution(input, weight, bias, padding, stride, dilation, groups)
    "aten::mkldnn_convolution": _ConvArgs(4, 3, 5, False, None, 6),
    # miopen_convolution(input, weight, bias, padding, stride, dilation, groups, benchmark, deterministic)
    "aten::miopen_convolution": _ConvArgs(4, 3, 5, False, None, 6),
}
#: cudnn_convolution(input, weight, padding, stride, dilation, groups, ...): no bias argument.
_CUDNN_CONV = {
    "aten::cudnn_convolution": _ConvArgs(3, 2, 4, False, None, 5),
    # cudnn_convolution_transpose(input, weight, padding, output_padding, stride, dilation, groups, ...)
    "aten::cudnn_convolution_transpose": _ConvArgs(4, 2, 5, True, 3, 6),
}


def _arg(call: OpCall, pos: int | bool | None) -> Any:
    if pos is None or isinstance(pos, bool):
        return pos
    return call.value(pos)


def _conv_shapes(
    x: tuple[int, ...], w: tuple[int, ...], call: OpCall, layout: _ConvArgs
) -> tuple[dict[str, Any], None] | tuple[None, NotModelled]:
    nsp = len(x) - 2
    if nsp < 1 or len(w) != len(x):
        return None, NotModelled(f"unexpected input/weight shapes {list(x)}, {list(w)}")
    stride = int_list(_arg(call, layout.stride), nsp)
    padding = int_list(_arg(call, layout.padding), nsp)
    dilation = int_list(_arg(call, layout.dilation), nsp)
    groups = _arg(call, layout.groups)
    transposed = _arg(call, layout.transposed)
    out_pad = int_list(_arg(call, layout.output_padding), nsp) if layout.output_padding is not None else [0] * nsp
    if stride is None or padding is None or dilation is None or not isinstance(groups, int) or out_pad is None:
        return None, NotModelled("stride/padding/dilation/groups not recorded (Concrete Inputs)")
    if not isinstance(transposed, bool):
        return None, NotModelled("'transposed' not recorded")
    k = w[2:]
    if transposed:
        spatial = [
            (x[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) + out_pad[i] + 1 for i in range(nsp)
        ]
        c_in, c_out = x[1], w[1] * groups
    else:
        spatial = [(x[2 + i] + 2 * padding[i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
        c_in, c_out = x[1], w[0]
    if min(spatial) <= 0 or groups <= 0 or c_in % groups:
        return None, NotModelled(f"inconsistent convolution arguments for input {list(x)}, weight {list(w)}")
    n = x[0]
    # MACs of the product: every output (transposed: every input) position, times a filter.
    if transposed:
        macs = n * element_count(x[2:]) * c_in * (c_out // groups) * element_count(k)
    else:
        macs = n * element_count(spatial) * c_out * (c_in // groups) * element_count(k)
    out_shape = (n, c_out, *spatial)
    detail = f"x={list(x)} w={list(w)} stride={stride} pad={padding} dil={dilation} groups={groups}"
    if transposed:
        detail += " transposed"
    return {"macs": macs, "out": out_shape, "detail": detail}, None


def _conv(call: OpCall) -> Work | NotModelled:
    layout = _CONV_LAYOUT.get(call.name) or _CUDNN_CONV[call.name]
    x, w = call.shape(0), call.shape(1)
    if x is None or w is None:
        return NotModelled("input/weight not recorded as tensors")
    geo, err = _conv_shapes(x, w, call, layout)
    if geo is None:
        return err or NotModelled("unknown")
    out_numel = element_count(geo["out"])
    flops = 2.0 * geo["macs"]
    nbytes = call.nbytes(0) + call.nbytes(1) + out_numel * call.bpe(0)
    if call.name not in _CUDNN_CONV and call.shape(2) is not None:
        flops += out_numel
        nbytes += call.nbytes(2)
    return Work("conv", flops, float(nbytes), compute_dtype(call.types[0]), geo["detail"])


def _conv_backward(call: OpCall) -> Work | NotModelled:
    # convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    #                      transposed, output_padding, groups, output_mask)
    go, x, w = call.shape(0), call.shape(1), call.shape(2)
    if go is None or x is None or w is None:
        return NotModelled("grad_output/input/weight not recorded as tensors")
    geo, err = _conv_shapes(x, w, call, _ConvArgs(4, 5, 6, 7, 8, 9))
    if geo is None:
        return err or NotModelled("unknown")
    mask = call.value(10)
    if not (isinstance(mask, list) and len(mask) == 3):
        return NotModelled("output_mask not recorded")
    go_numel = element_count(go)
    flops = 0.0
    nbytes = float(call.nbytes(0))
    if mask[0]:  # grad input = grad_output (*) weight
        flops += 2.0 * geo["macs"]
        nbytes += call.nbytes(2) + call.nbytes(1)  # weight read, grad input written (input's size)
    if mask[1]:  # grad weight = input (*) grad_output
        flops += 2.0 * geo["macs"]
        nbytes += call.nbytes(1) + call.nbytes(2)  # input read, grad weight written
    if mask[2]:  # grad bias: sum of grad_output over all but the channel dimension
        flops += go_numel
        nbytes += go[1] * call.bpe(0)
    return Work("conv", flops, nbytes, compute_dtype(call.types[0]), geo["detail"] + f" mask={mask}")


# ------------------------------------------------------------------------------ attention
@dataclass(frozen=True)
class _AttnLayout:
    #: True when q/k/v are [B, S, H, D] (the flash/efficient kernels' ops), else [B, H, S, D].
    bshd: bool
    #: Argument index of is_causal (a bool), or of custom_mask_type (an int; 1 and 2 are causal).
    causal: int | None
    causal_is_mask_type: bool = False
    #: Index of q, k, v (backward ops have grad_out first).
    q: int = 0
    backward: bool = False


_ATTENTION: dict[str, _AttnLayout] = {
    "aten::scaled_dot_product_attention": _AttnLayout(False, 5),
    "aten::_scaled_dot_product_flash_attention": _AttnLayout(False, 4),
    "aten::_scaled_dot_product_flash_attention_for_cpu": _AttnLayout(False, 4),
    "aten::_scaled_dot_product_efficient_attention": _AttnLayout(False, 6),
    "aten::_scaled_dot_product_cudnn_attention": _AttnLayout(False, 6),
    "aten::_flash_attention_forward": _AttnLayout(True, 8),
    "aten::_efficient_attention_forward": _AttnLayout(True, 9, causal_is_mask_type=True),
    "aten::_scaled_dot_product_flash_attention_backward": _AttnLayout(False, 11, q=1, backward=True),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": _AttnLayout(False, 7, q=1, backward=True),
    "aten::_scaled_dot_product_efficient_attention_backward": _AttnLayout(False, 11, q=1, backward=True),
    # cuDNN (torch 2.5+): (grad_out, q, k, v, out, logsumexp, philox_seed, philox_offset, attn_bias,
    # cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, scale); the forward kernel op
    # (q, k, v, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, compute_log_sumexp, dropout_p,
    # is_causal, return_debug_mask, scale). Seen on an H200 with torch 2.11 (tests/data/h200_cuda).
    "aten::_scaled_dot_product_cudnn_attention_backward": _AttnLayout(False, 14, q=1, backward=True),
    "aten::_cudnn_attention_forward": _AttnLayout(False, 10),
    "aten::_cudnn_attention_backward": _AttnLayout(False, 14, q=1, backward=True),
    "aten::_flash_attention_backward": _AttnLayout(True, 11, q=1, backward=True),
    "aten::_efficient_attention_backward": _AttnLayout(True, 14, q=1, causal_is_mask_type=True, backward=True),
}


def _attention(call: OpCall) -> Work | NotModelled:
    lay = _ATTENTION[call.name]
    q, k, v = call.shape(lay.q), call.shape(lay.q + 1), call.shape(lay.q + 2)
    if q is None or k is None or v is None or len(q) != 4 or len(k) != 4 or len(v) != 4:
        return NotModelled("query/key/value not recorded as 4-d tensors")
    if lay.bshd:
        (b, sq, h, d), (_, sk, _, _), dv = q, k, v[3]
    else:
        (b, h, sq, d), (_, _, sk, _), dv = q, k, v[3]
    if lay.causal is None:
        return NotModelled("is_causal is not an argument of this operator")
    c = call.value(lay.causal)
    if lay.causal_is_mask_type:
        if not isinstance(c, int) or isinstance(c, bool):
            return NotModelled("custom_mask_type not recorded")
        causal = c in (1, 2)
    else:
        if not isinstance(c, bool):
            return NotModelled("is_causal not recorded")
        causal = c
    fwd = 2.0 * b * h * sq * sk * (d + dv) * (0.5 if causal else 1.0)
    qkvo = call.nbytes(lay.q) + call.nbytes(lay.q + 1) + call.nbytes(lay.q + 2) + b * h * sq * dv * call.bpe(lay.q)
    if lay.backward:
        flops = 2.5 * fwd
        # read q, k, v, out, grad out; write grad q, k, v
        nbytes = qkvo + b * h * sq * dv * call.bpe(lay.q) + call.nbytes(lay.q) + call.nbytes(lay.q + 1)
        nbytes += call.nbytes(lay.q + 2)
    else:
        flops, nbytes = fwd, qkvo
    detail = f"B={b} H={h} Sq={sq} Sk={sk} D={d}" + (f" Dv={dv}" if dv != d else "") + (" causal" if causal else "")
    return Work("attention", flops, float(nbytes), compute_dtype(call.types[lay.q]), detail)


# ------------------------------------------------------------------------------ memory-bound families
def _io(call: OpCall, family: str, flops_per_elem: float, reads: Sequence[int], writes: int) -> Work | NotModelled:
    """``reads`` tensors read, ``writes`` copies of input 0's size written; FLOPs per input-0 element."""
    x = call.shape(reads[0]) if reads else None
    if x is None:
        return NotModelled("input not recorded as a tensor")
    numel = element_count(x)
    nbytes = sum(call.nbytes(i) for i in reads) + writes * numel * call.bpe(reads[0])
    return Work(family, flops_per_elem * numel, float(nbytes), compute_dtype(call.types[reads[0]]), f"{list(x)}")


def _norm_forward(call: OpCall) -> Work | NotModelled:
    # native_layer_norm(input, normalized_shape, weight, bias, eps); native_batch_norm(input, weight, bias,
    # running_mean, running_var, training, momentum, eps); native_group_norm(input, weight, bias, N, C, HxW, group, eps)
    # _fused_rms_norm/rms_norm(input, normalized_shape, weight, eps)
    w_pos = {"aten::native_layer_norm": 2, "aten::_fused_rms_norm": 2, "aten::rms_norm": 2}.get(call.name, 1)
    x = call.shape(0)
    if x is None:
        return NotModelled("input not recorded as a tensor")
    affine = call.shape(w_pos) is not None
    params = [i for i in call.tensors() if i != 0]
    return _io(call, "norm", 7.0 if affine else 5.0, [0, *params], 1)


def _norm_backward(call: OpCall) -> Work | NotModelled:
    # *_backward(grad_out, input, ...): grad_out and input read, grad input written (+ small stats/params)
    x = call.shape(0)
    if x is None:
        return NotModelled("grad_output not recorded as a tensor")
    others = [i for i in call.tensors() if i != 0]
    return _io(call, "norm", 8.0, [0, *others], 1)


def _softmax(call: OpCall) -> Work | NotModelled:
    return _io(call, "softmax", 5.0, [0], 1)


def _softmax_backward(call: OpCall) -> Work | NotModelled:
    return _io(call, "softmax", 4.0, [0, 1], 1)


_NO_FLOP_ELEMENTWISE = frozenset({"aten::copy_", "aten::fill_", "aten::zero_", "aten::clone", "aten::_to_copy"})


def _elementwise(call: OpCall) -> Work | NotModelled:
    ts = call.tensors()
    if not ts:
        return NotModelled("no tensor input recorded")
    if call.name in ("aten::fill_", "aten::zero_"):
        x = call.dims[0]
        return Work("elementwise", 0.0, float(call.nbytes(0)), compute_dtype(call.types[0]), f"{list(x)}")
    if call.name == "aten::copy_":
        # copy_(self, src, non_blocking): src read (own dtype), self written
        if not (call.is_tensor(0) and call.is_tensor(1)):
            return NotModelled("self/src not recorded as tensors")
        return Work(
            "elementwise",
            0.0,
            float(call.nbytes(0) + call.nbytes(1)),
            compute_dtype(call.types[0]),
            f"{list(call.dims[0])}",
        )
    shapes = [call.dims[i] for i in ts]
    if call.name.endswith("_") and call.is_tensor(0):
        out = call.dims[0]
    else:
        b = broadcast_shape(shapes)
        if b is None:
            return NotModelled(f"shapes do not broadcast: {[list(s) for s in shapes]}")
        out = b
    out_numel = element_count(out)
    nbytes = sum(call.nbytes(i) for i in ts) + out_numel * call.bpe(ts[0])
    flops = 0.0 if call.name in _NO_FLOP_ELEMENTWISE else float(out_numel)
    dtype = next((compute_dtype(call.types[i]) for i in ts if compute_dtype(call.types[i])), None)
    return Work("elementwise", flops, float(nbytes), dtype, f"{list(out)}")


def _reduction(call: OpCall) -> Work | NotModelled:
    x = call.shape(0)
    if x is None:
        return NotModelled("input not recorded as a tensor")
    numel = element_count(x)
    dim = call.value(1)
    if call.name == "aten::cumsum":
        out_numel = numel
    elif dim is None or (len(call.types) > 1 and call.types[1] == ""):
        out_numel = 1  # over all elements
    else:
        dims = int_list(dim, len(dim)) if isinstance(dim, list) else int_list(dim, 1)
        if dims is None or any(not -len(x) <= d < max(len(x), 1) for d in dims):
            return NotModelled(f"reduction dims {dim!r} not understood")
        reduced = element_count([x[d] for d in {d % len(x) for d in dims}]) if x else 1
        out_numel = numel // max(reduced, 1) if dims else 1
    nbytes = call.nbytes(0) + out_numel * call.bpe(0)
    return Work("reduction", float(numel), float(nbytes), compute_dtype(call.types[0]), f"{list(x)}")


def _embedding(call: OpCall) -> Work | NotModelled:
    if call.name in ("aten::embedding", "aten::index_select"):
        # embedding(weight, indices, ...); index_select(self, dim, index)
        w = call.shape(0)
        idx = call.shape(1 if call.name == "aten::embedding" else 2)
        if w is None or idx is None or not w:
            return NotModelled("weight/indices not recorded as tensors")
        if call.name == "aten::index_select":
            dim = call.value(1)
            if not isinstance(dim, int) or isinstance(dim, bool):
                return NotModelled("dim not recorded")
            row = element_count(w) // max(w[dim % len(w)], 1)
            idx_bytes = call.nbytes(2)
        else:
            row = element_count(w[1:])
            idx_bytes = call.nbytes(1)
        gathered = element_count(idx) * row
        nbytes = 2 * gathered * call.bpe(0) + idx_bytes
        return Work(
            "embedding", 0.0, float(nbytes), compute_dtype(call.types[0]), f"rows={element_count(idx)} row={row}"
        )
    if call.name == "aten::embedding_dense_backward":
        # embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
        g = call.shape(0)
        nw = call.value(2)
        if g is None or not g or not isinstance(nw, int):
            return NotModelled("grad_output/num_weights not recorded")
        row = g[-1]
        nbytes = call.nbytes(0) + call.nbytes(1) + nw * row * call.bpe(0)
        return Work(
            "embedding", float(element_count(g)), float(nbytes), compute_dtype(call.types[0]), f"V={nw} D={row}"
        )
    # _embedding_bag / embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
    #                                per_sample_weights, include_last_offset, padding_idx)
    w, idx, off = call.shape(0), call.shape(1), call.shape(2)
    if w is None or idx is None or off is None or len(w) != 2:
        return NotModelled("weight/indices/offsets not recorded as tensors")
    row = w[1]
    gathered = element_count(idx) * row
    bags = element_count(off)
    nbytes = gathered * call.bpe(0) + bags * row * call.bpe(0) + call.nbytes(1) + call.nbytes(2)
    return Work(
        "embedding", float(gathered), float(nbytes), compute_dtype(call.types[0]), f"rows={element_count(idx)} D={row}"
    )


# ------------------------------------------------------------------------------ the tables
_UNARY = (
    "abs neg relu relu_ gelu silu sigmoid tanh exp exp2 log log1p log2 sqrt rsqrt reciprocal sin cos erf erfinv "
    "floor ceil round sign trunc bitwise_not logical_not hardtanh hardswish hardsigmoid leaky_relu elu mish "
    "softplus nan_to_num square isnan isinf clamp clamp_min clamp_max threshold"
)
_BINARY = (
    "add sub mul div pow maximum minimum fmod remainder atan2 eq ne lt le gt ge logical_and logical_or "
    "bitwise_and bitwise_or bitwise_xor where masked_fill lerp addcmul addcdiv rsub hypot "
    "threshold_backward gelu_backward silu_backward sigmoid_backward tanh_backward hardtanh_backward "
    "leaky_relu_backward elu_backward hardswish_backward mish_backward softplus_backward native_dropout "
    "native_dropout_backward"
)
#: Pointwise operators (each also with an in-place ``_`` variant).
ELEMENTWISE: frozenset[str] = frozenset(
    {f"aten::{n}" for n in (_UNARY + " " + _BINARY).split()}
    | {f"aten::{n}_" for n in (_UNARY + " " + _BINARY).split() if not n.endswith("_")}
    | {"aten::copy_", "aten::fill_", "aten::zero_"}
)
_REDUCTIONS = frozenset(
    f"aten::{n}"
    for n in [
        "sum",
        "mean",
        "amax",
        "amin",
        "max",
        "min",
        "prod",
        "norm",
        "linalg_vector_norm",
        "var",
        "std",
        "argmax",
        "argmin",
        "any",
        "all",
        "cumsum",
    ]
)
_NORM_FWD = frozenset(
    {
        "aten::native_layer_norm",
        "aten::native_batch_norm",
        "aten::_native_batch_norm_legit",
        "aten::_native_batch_norm_legit_no_training",
        "aten::cudnn_batch_norm",
        "aten::miopen_batch_norm",
        "aten::native_group_norm",
        "aten::_fused_rms_norm",
    }
)
_NORM_BWD = frozenset(
    {
        "aten::native_layer_norm_backward",
        "aten::native_batch_norm_backward",
        "aten::cudnn_batch_norm_backward",
        "aten::miopen_batch_norm_backward",
        "aten::native_group_norm_backward",
        "aten::_fused_rms_norm_backward",
    }
)

#: Operators that dispatch to others: their work is counted in what they call, when modelled.
COMPOSITE: frozenset[str] = frozenset(
    {
        "aten::linear",
        "aten::matmul",
        "aten::conv1d",
        "aten::conv2d",
        "aten::conv3d",
        "aten::conv_transpose1d",
        "aten::conv_transpose2d",
        "aten::conv_transpose3d",
        "aten::convolution",
        "aten::_convolution",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_cudnn_attention",
        "aten::_scaled_dot_product_flash_attention_backward",
        "aten::_scaled_dot_product_efficient_attention_backward",
        "aten::_scaled_dot_product_cudnn_attention_backward",
        "aten::layer_norm",
        "aten::batch_norm",
        "aten::_batch_norm_impl_index",
        "aten::group_norm",
        "aten::rms_norm",
        "aten::softmax",
        "aten::log_softmax",
        "aten::embedding",
        "aten::embedding_bag",
        "aten::dropout",
        "aten::clone",
        "aten::contiguous",
        "aten::to",
        "aten::_to_copy",
        "aten::relu",
        "aten::relu_",
        "aten::where",
    }
)

#: Operators that make views, allocate, or read metadata: no GPU work of their own.
NO_WORK: frozenset[str] = frozenset(
    f"aten::{n}"
    for n in [
        "view",
        "_unsafe_view",
        "reshape",
        "t",
        "transpose",
        "permute",
        "as_strided",
        "expand",
        "expand_as",
        "slice",
        "select",
        "unsqueeze",
        "squeeze",
        "flatten",
        "unflatten",
        "split",
        "split_with_sizes",
        "chunk",
        "narrow",
        "detach",
        "detach_",
        "alias",
        "unbind",
        "view_as",
        "lift_fresh",
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "resize_",
        "set_",
        "numpy_T",
        "_reshape_alias",
        "is_nonzero",
        "size",
        "stride",
        "dim",
        "is_same_size",
        "result_type",
        "_has_compatible_shallow_copy_type",
    ]
)

_HANDLERS: dict[str, Any] = {
    "aten::mm": lambda c: _gemm(c, 0, 1),
    "aten::addmm": lambda c: _gemm(c, 1, 2, add=0),
    "aten::bmm": lambda c: _gemm(c, 0, 1, batched=True),
    "aten::baddbmm": lambda c: _gemm(c, 1, 2, add=0, batched=True),
    "aten::_scaled_mm": _scaled_mm,
    "aten::matmul": _matmul,
    "aten::linear": _linear,
    "aten::convolution_backward": _conv_backward,
    "aten::_softmax": _softmax,
    "aten::_log_softmax": _softmax,
    "aten::softmax": _softmax,
    "aten::log_softmax": _softmax,
    "aten::_softmax_backward_data": _softmax_backward,
    "aten::_log_softmax_backward_data": _softmax_backward,
    "aten::embedding": _embedding,
    "aten::index_select": _embedding,
    "aten::embedding_dense_backward": _embedding,
    "aten::_embedding_bag": _embedding,
    "aten::embedding_bag": _embedding,
    "aten::_embedding_bag_forward_only": _embedding,
    "aten::layer_norm": _norm_forward,
    "aten::rms_norm": _norm_forward,
}
for _n in {*_CONV_LAYOUT, *_CUDNN_CONV}:
    _HANDLERS[_n] = _conv
for _n in _ATTENTION:
    _HANDLERS[_n] = _attention
for _n in _NORM_FWD:
    _HANDLERS[_n] = _norm_forward
for _n in _NORM_BWD:
    _HANDLERS[_n] = _norm_backward
for _n in ELEMENTWISE:
    _HANDLERS.setdefault(_n, _elementwise)
for _n in _REDUCTIONS:
    _HANDLERS[_n] = _reduction


def model_op(call: OpCall) -> Work | NotModelled | None:
    """The work of one call; None for operators that do no work of their own (:data:`NO_WORK`)."""
    if call.name in NO_WORK:
        return None
    handler = _HANDLERS.get(call.name)
    if handler is None:
        if call.name.startswith("aten::_foreach_") and "TensorList" in call.types:
            # Optimizers' multi-tensor ops: torch records no sizes for a tensor list.
            return NotModelled("the profiler records no sizes for tensor lists")
        return NotModelled("operator not in the model")
    try:
        out: Work | NotModelled = handler(call)
    except (IndexError, TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
        return NotModelled(f"arguments not understood ({type(exc).__name__})")
    if isinstance(out, Work) and not (math.isfinite(out.flops) and math.isfinite(out.bytes)):
        return NotModelled("non-finite figures")
    return out
