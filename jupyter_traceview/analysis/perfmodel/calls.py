"""One recorded operator call (:class:`OpCall`: its shapes, dtypes and scalar arguments) and
what the model makes of it (:class:`Work` or :class:`NotModelled`); the families are in
:mod:`.model`."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from ...model.schema import DTYPE_BYTES

#: The operator families, in the order the docs describe them.
FAMILIES = ("gemm", "conv", "attention", "norm", "softmax", "elementwise", "reduction", "embedding")

#: Peak-table dtype of a recorded tensor dtype (None: an integer or boolean dtype).
_PEAK_DTYPE: dict[str, str] = {
    "float": "fp32",
    "Float": "fp32",
    "float32": "fp32",
    "c10::Float": "fp32",
    "double": "fp64",
    "Double": "fp64",
    "float64": "fp64",
    "c10::Half": "fp16",
    "Half": "fp16",
    "half": "fp16",
    "float16": "fp16",
    "c10::BFloat16": "bf16",
    "BFloat16": "bf16",
    "bfloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8",
    "Float8_e4m3fn": "fp8",
    "c10::Float8_e5m2": "fp8",
    "Float8_e5m2": "fp8",
    "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
}
_EXTRA_BYTES = {"c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::complex<float>": 8}


def compute_dtype(recorded: str | None) -> str | None:
    """The peak-table dtype (fp64, fp32, fp16, bf16, fp8) of a recorded dtype name; None otherwise."""
    return _PEAK_DTYPE.get(recorded or "")


def _bpe(recorded: str) -> int | None:
    return DTYPE_BYTES.get(recorded) or _EXTRA_BYTES.get(recorded)


@dataclass(frozen=True)
class Work:
    """What one operator call does: its family, FLOPs, bytes and the dtype of its math."""

    family: str
    flops: float
    bytes: float
    #: Peak-table dtype (fp64, fp32, fp16, bf16, fp8) whose compute peak applies; None for
    #: integer work (no compute peak: such ops are compared with memory bandwidth only).
    dtype: str | None
    #: Short description of the shapes the figures come from (e.g. ``M=8 N=64 K=32``).
    detail: str = ""


@dataclass(frozen=True)
class NotModelled:
    """Why an operator call has no figures."""

    reason: str


@dataclass(frozen=True)
class OpCall:
    """One operator call's recorded arguments, parsed."""

    name: str
    #: One shape per input (``()`` for scalars, None and non-tensors).
    dims: tuple[tuple[int, ...], ...]
    #: One recorded type per input (dtype name, ``Scalar``, ``""``, ...).
    types: tuple[str, ...]
    #: One value text per input (``""`` for tensors); empty if not recorded.
    concrete: tuple[str, ...] = ()

    def is_tensor(self, i: int) -> bool:
        return i < len(self.types) and _bpe(self.types[i]) is not None

    def shape(self, i: int) -> tuple[int, ...] | None:
        """Shape of input ``i`` if it is a tensor, else None."""
        return self.dims[i] if self.is_tensor(i) and i < len(self.dims) else None

    def bpe(self, i: int) -> int:
        b = _bpe(self.types[i]) if i < len(self.types) else None
        return b or 0

    def nbytes(self, i: int) -> int:
        s = self.shape(i)
        return 0 if s is None else element_count(s) * self.bpe(i)

    def value(self, i: int) -> Any:
        """The recorded value of scalar input ``i`` (int, float, bool, list, str), or None."""
        if i >= len(self.concrete):
            return None
        text = self.concrete[i]
        if text == "":
            return None
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return text

    def tensors(self) -> list[int]:
        return [i for i in range(len(self.types)) if self.is_tensor(i) and i < len(self.dims)]


def element_count(shape: Sequence[int]) -> int:
    return reduce(lambda a, b: a * b, shape, 1)


def broadcast_shape(shapes: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
    n = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(1, n + 1):
        sizes = {s[-k] for s in shapes if len(s) >= k} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(reversed(out))


def int_list(v: Any, n: int) -> list[int] | None:
    """A stride/padding/dilation argument as ``n`` ints (a single int is repeated)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return [v] * n
    if isinstance(v, list | tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        if len(v) == n:
            return list(v)
        if len(v) == 1:
            return [v[0]] * n
    return None
