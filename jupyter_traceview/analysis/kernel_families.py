"""Kernel families: what a compute kernel does, read from its name (:func:`family_of`).

The table :data:`FAMILIES` is searched in order, the first pattern found in the kernel's
name (case-insensitive) giving its family; a name none matches has no family (``None``).
The *math* families (``gemm``, ``convolution``, ``attention``) carry a model's arithmetic
and are expected to hold most of its GPU time; the others do a few operations per byte
they read or write (memory-bound), so one of them holding a large share of the compute
time is a fusion opportunity (the ``dominant_kernel_family`` finding).

Order matters: a fused attention kernel that mentions ``softmax`` is attention; a
normalization kernel is found before the generic ``elementwise``/``reduce`` templates
PyTorch instantiates it with; optimizer kernels (``multi_tensor_apply``) are their own family.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..model.text import searched

__all__ = ["FAMILIES", "MATH_FAMILIES", "family_of"]

#: (family, pattern) in the order they are tried; patterns are case-insensitive regular
#: expressions searched anywhere in the name.
FAMILIES: tuple[tuple[str, str], ...] = (
    # cuBLAS/cuBLASLt (sgemm, hgemm, xmma, nvjet), CUTLASS, rocBLAS/hipBLASLt (Cijk_), Triton templates
    ("gemm", r"gemm|matmul|cutlass|cublas|xmma|wgmma|nvjet|^cijk_|s884|s1688|h884|h1688|h16816|triton_tem"),
    ("normalization", r"(?:layer|rms|batch|group|instance)_?norm|normaliz|welford|\bbn_(?:fw|bw)"),
    ("attention", r"flash|fmha|attention|attn|sdpa|\bmha"),
    ("convolution", r"conv|cudnn|winograd|implicit_?gemm|fft"),
    ("optimizer", r"multi_tensor_apply|fused_adam|fused_sgd|adamw?_|lamb_"),
    ("softmax", r"softmax"),
    ("sort", r"sort|topk|radix"),
    ("reduction", r"reduce|reduction|triton_red|triton_per|\bsum_|mean_|argmax|argmin"),
    ("indexing", r"index|gather|scatter|embedding|catarray|\bcat_|take_|masked_"),
    ("elementwise", r"elementwise|pointwise|triton_poi|vectorized|unrolled|copy|fill|cast|activation|gelu|relu|silu"),
)

#: The families that carry the model's arithmetic: never "dominant" in the finding's sense.
MATH_FAMILIES = frozenset({"gemm", "convolution", "attention"})

_COMPILED = tuple((f, re.compile(p, re.IGNORECASE)) for f, p in FAMILIES)
#: The same patterns, case-sensitive, for lower-cased ASCII names: what the case-insensitive
#: ones match there (the patterns are lower case), about three times faster on long names.
_LOWER = tuple((f, re.compile(p)) for f, p in FAMILIES)


@lru_cache(maxsize=1 << 14)
def family_of(name: str) -> str | None:
    """The family of a compute kernel's name (:data:`FAMILIES`), or None."""
    text = searched(name)
    patterns = _COMPILED
    if text.isascii():
        text, patterns = text.lower(), _LOWER
    for family, pattern in patterns:
        if pattern.search(text):
            return family
    return None
