"""Device peaks: dense TFLOP/s per dtype and memory bandwidth, keyed by ``deviceProperties`` name.

Every figure is the vendor's published peak for *dense* math (NVIDIA quotes tensor-core
figures "with sparsity" too: those are halved here) at the card's boost clock, as the
datasheet in the row's ``source`` gives it. The dtype columns are the peak of a matrix
product computed in that precision without changing it:

* ``fp64``: FP64 Tensor Core / matrix-core peak where the card has one, else FP64;
* ``fp32``: FP32 (NVIDIA: CUDA cores, there are no FP32 tensor cores; AMD CDNA: matrix cores);
* ``tf32``: TF32 tensor cores (fp32 products with ``torch.backends.cuda.matmul.allow_tf32``);
* ``fp16``, ``bf16``: tensor / matrix cores with FP32 accumulation;
* ``fp8``: FP8 tensor / matrix cores.

None marks a precision the card has no fast path for, or that its datasheet does not give.
``bandwidth_gbps`` is the peak DRAM (HBM/GDDR) bandwidth in GB/s (10^9 bytes per second).
A user's own figures go in through ``peaks=`` (a :class:`DevicePeaks`, or a mapping with
these keys).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import pandas as pd

from ...errors import OptionError

__all__ = ["DEVICE_PEAKS", "DTYPES", "DevicePeaks", "device_peaks", "peaks_table"]

#: The dtype columns, in table order.
DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")


@dataclass(frozen=True)
class DevicePeaks:
    """One device's peaks: dense TFLOP/s per dtype (None: no fast path / not published) and GB/s.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> peaks = tv.DevicePeaks(name="my accelerator", bandwidth_gbps=2000.0, bf16=400.0)
    >>> m = tv.mfu(trace, peaks=peaks)
    >>> m["device"].unique().tolist()
    ['my accelerator']
    """

    #: Device name as ``deviceProperties`` records it (or any label for user-given peaks).
    name: str
    #: Peak DRAM bandwidth, GB/s (10^9 bytes/s).
    bandwidth_gbps: float
    fp64: float | None = None
    fp32: float | None = None
    tf32: float | None = None
    fp16: float | None = None
    bf16: float | None = None
    fp8: float | None = None
    #: Where the figures come from (a vendor datasheet URL, or "user").
    source: str = "user"
    #: Other names the same card reports (PCIe/SXM variants of one datasheet row).
    aliases: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        for f in ("bandwidth_gbps", *DTYPES):
            v = getattr(self, f)
            if v is None and f != "bandwidth_gbps":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                unit = "GB/s" if f == "bandwidth_gbps" else "TFLOP/s"
                raise OptionError(
                    f"peaks: {f} must be a positive number ({unit}){'' if f == 'bandwidth_gbps' else ' or None'}, "
                    f"got {v!r}; e.g. peaks={{'bandwidth_gbps': 3350, 'bf16': 989.5}}"
                )

    def tflops(self, dtype: str | None) -> float | None:
        """Peak TFLOP/s for a dtype of :data:`DTYPES` (None if unknown or not given)."""
        if dtype not in DTYPES:
            return None
        value: float | None = getattr(self, dtype)
        return value

    @classmethod
    def from_mapping(cls, name: str, m: Mapping[str, object]) -> DevicePeaks:
        known = {f.name for f in fields(cls)}
        bad = sorted(set(m) - known)
        if bad:
            raise OptionError(f"unknown peak fields {bad}; expected some of {sorted(known - {'aliases'})}")
        values = {k: v for k, v in m.items() if k not in ("name", "source", "aliases")}
        for k, v in values.items():  # each value checked before the missing ones are named
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise OptionError(
                    f"peaks: {k} must be a number ({'GB/s' if k == 'bandwidth_gbps' else 'TFLOP/s'}), got {v!r}; "
                    "e.g. peaks={'bandwidth_gbps': 3350, 'bf16': 989.5}"
                )
        if "bandwidth_gbps" not in m:
            raise OptionError("peaks need 'bandwidth_gbps' (peak memory bandwidth, GB/s)")
        extra = {k: m[k] for k in ("source",) if k in m}
        return cls(name=str(m.get("name", name)), **values, **extra)  # type: ignore[arg-type]


_NV_V100 = "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
_NV_A100 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_NV_H100 = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
_NV_H800 = "https://www.nvidia.cn/data-center/h800/"
_NV_H20 = "NVIDIA H20 product brief (not on nvidia.com; figures as NVIDIA's partners publish them)"
_NV_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
_NV_GH200 = "https://resources.nvidia.com/en-us-grace-cpu/grace-hopper-superchip"
_NV_B200 = "https://www.nvidia.com/en-us/data-center/hgx/"
_NV_B300 = "https://www.nvidia.com/en-us/data-center/hgx/"
_NV_L4 = "https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet"
_NV_L40S = "https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"
_NV_A10 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf"
_NV_ADA = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
_NV_AMPERE = "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf"
_AMD_MI250X = "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html"
_AMD_MI300X = "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"
_AMD_MI325X = "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html"
_AMD_MI355X = "https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html"

_ROWS: tuple[DevicePeaks, ...] = (
    # NVIDIA data centre. V100: FP16 "Tensor Performance" 125 (SXM2) / 112 (PCIe); no TF32/BF16.
    DevicePeaks("Tesla V100-SXM2-32GB", 900, 7.8, 15.7, None, 125, None, None, _NV_V100, ("Tesla V100-SXM2-16GB",)),
    DevicePeaks("Tesla V100-PCIE-32GB", 900, 7, 14, None, 112, None, None, _NV_V100, ("Tesla V100-PCIE-16GB",)),
    # A100: FP64 Tensor 19.5, FP32 19.5, TF32 156, BF16/FP16 312 (dense).
    DevicePeaks("NVIDIA A100-SXM4-40GB", 1555, 19.5, 19.5, 156, 312, 312, None, _NV_A100, ("NVIDIA A100-PCIE-40GB",)),
    DevicePeaks("NVIDIA A100-SXM4-80GB", 2039, 19.5, 19.5, 156, 312, 312, None, _NV_A100),
    DevicePeaks("NVIDIA A100 80GB PCIe", 1935, 19.5, 19.5, 156, 312, 312, None, _NV_A100),
    # H100 SXM: FP64 Tensor 67, FP32 67, TF32 989/2, BF16/FP16 1979/2, FP8 3958/2; 3.35 TB/s.
    DevicePeaks("NVIDIA H100 80GB HBM3", 3350, 67, 67, 494.5, 989.5, 989.5, 1979, _NV_H100, ("NVIDIA H100 SXM5 80GB",)),
    # H100 PCIe: FP64 Tensor 51, FP32 51, TF32 756/2, BF16/FP16 1513/2, FP8 3026/2; 2 TB/s.
    DevicePeaks("NVIDIA H100 PCIe", 2000, 51, 51, 378, 756.5, 756.5, 1513, _NV_H100),
    # H100 NVL: FP64 Tensor 60, FP32 60, TF32 835/2, BF16/FP16 1671/2, FP8 3341/2; 3.9 TB/s.
    DevicePeaks("NVIDIA H100 NVL", 3900, 60, 60, 417.5, 835.5, 835.5, 1670.5, _NV_H100),
    # H800 SXM5 (H800 datasheet): FP64 / FP64 Tensor 1, FP32 67, TF32 989/2, BF16/FP16 1979/2,
    # FP8 3958/2; 80 GB HBM3 at 3.35 TB/s.
    DevicePeaks("NVIDIA H800", 3350, 1, 67, 494.5, 989.5, 989.5, 1979, _NV_H800, ("NVIDIA H800 SXM5",)),
    # H800 PCIe (H800 datasheet): FP64 / FP64 Tensor 0.8, FP32 51, TF32 756/2, BF16/FP16 1513/2,
    # FP8 3026/2; 80 GB HBM2e at 2 TB/s.
    DevicePeaks("NVIDIA H800 PCIe", 2000, 0.8, 51, 378, 756.5, 756.5, 1513, _NV_H800),
    # H20 (product brief, dense): FP64 1, FP32 44, TF32 74, BF16/FP16 148, FP8 296; 96 GB HBM3 at 4 TB/s.
    DevicePeaks("NVIDIA H20", 4000, 1, 44, 74, 148, 148, 296, _NV_H20),
    # H200 SXM (H200 datasheet): the H100 SXM's math (FP64 Tensor 67, FP32 67, TF32 989/2,
    # BF16/FP16 1979/2, FP8 3958/2); 141 GB HBM3e at 4.8 TB/s.
    DevicePeaks("NVIDIA H200", 4800, 67, 67, 494.5, 989.5, 989.5, 1979, _NV_H200, ("NVIDIA H200 SXM",)),
    # H200 NVL (H200 datasheet): FP64 Tensor 60, FP32 60, TF32 835/2, BF16/FP16 1671/2, FP8 3341/2; 4.8 TB/s.
    DevicePeaks("NVIDIA H200 NVL", 4800, 60, 60, 417.5, 835.5, 835.5, 1670.5, _NV_H200),
    # GH200 (Grace Hopper superchip datasheet), its H100-class GPU: FP64 Tensor 67, FP32 67,
    # TF32 989/2, BF16/FP16 1979/2, FP8 3958/2; 96 GB HBM3 at 4 TB/s (the "480GB" part, named for
    # its LPDDR5X) ...
    DevicePeaks("NVIDIA GH200 480GB", 4000, 67, 67, 494.5, 989.5, 989.5, 1979, _NV_GH200, ("NVIDIA GH200 96GB HBM3",)),
    # ... and 144 GB HBM3e at 4.9 TB/s.
    DevicePeaks(
        "NVIDIA GH200 144G HBM3e", 4900, 67, 67, 494.5, 989.5, 989.5, 1979, _NV_GH200, ("NVIDIA GH200 144GB HBM3e",)
    ),
    # HGX B200, per GPU (the 8-GPU board's figures / 8): TF32 18 PF, BF16/FP16 36 PF, FP8 72 PF with
    # sparsity -> 1125, 2250, 4500 dense; 64 TB/s -> 8 TB/s. FP64/FP32 left out (not per GPU there).
    DevicePeaks("NVIDIA B200", 8000, None, None, 1125, 2250, 2250, 4500, _NV_B200),
    # HGX B300, per GPU (the 8-GPU board's figures / 8): TF32 18 PF, BF16/FP16 36 PF, FP8 72 PF with
    # sparsity -> 1125, 2250, 4500 dense; FP64 10 TF -> 1.25; 64 TB/s -> 8 TB/s.
    DevicePeaks("NVIDIA B300", 8000, 1.25, None, 1125, 2250, 2250, 4500, _NV_B300),
    # NVIDIA workstation / inference cards.
    DevicePeaks("NVIDIA L4", 300, None, 30.3, 60, 121, 121, 242.5, _NV_L4),
    DevicePeaks("NVIDIA L40S", 864, None, 91.6, 183, 362.05, 362.05, 733, _NV_L40S),
    DevicePeaks("NVIDIA A10", 600, None, 31.2, 62.5, 125, 125, None, _NV_A10),
    # GeForce: FP16/BF16 tensor with FP32 accumulate (the GeForce cards' half rate), FP8 likewise.
    DevicePeaks("NVIDIA GeForce RTX 4090", 1008, None, 82.6, 82.6, 165.2, 165.2, 330.3, _NV_ADA),
    DevicePeaks("NVIDIA GeForce RTX 3090", 936, None, 35.6, 35.6, 71, 71, None, _NV_AMPERE),
    # AMD Instinct: FP64/FP32 matrix, TF32 (MI300 only), FP16/BF16, FP8 (dense).
    DevicePeaks("AMD Instinct MI250X", 3276.8, 95.7, 95.7, None, 383, 383, None, _AMD_MI250X),
    # MI300X datasheet: FP64/FP32 matrix 163.4, TF32 653.7, FP16/BF16 1307.4, FP8 2614.9; 5.3 TB/s.
    DevicePeaks("AMD Instinct MI300X", 5300, 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, _AMD_MI300X),
    # MI325X datasheet: the MI300X's math; 256 GB HBM3e at 6 TB/s.
    DevicePeaks("AMD Instinct MI325X", 6000, 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, _AMD_MI325X),
    # MI355X datasheet: FP64 matrix 78.6, FP32 matrix 157.3, no TF32, FP16/BF16 2516.6 (2.5 PF),
    # FP8 5033.2 (5 PF); 288 GB HBM3e at 8 TB/s.
    DevicePeaks("AMD Instinct MI355X", 8000, 78.6, 157.3, None, 2516.6, 2516.6, 5033.2, _AMD_MI355X),
)

#: The built-in table, by name and alias.
DEVICE_PEAKS: dict[str, DevicePeaks] = {n: row for row in _ROWS for n in (row.name, *row.aliases)}

#: Words of device names that say nothing about the model: vendor and brand words, and ``VF``
#: (an SR-IOV virtual function: a cloud VM's view of the whole card).
_NOISE = frozenset({"nvidia", "amd", "tesla", "instinct", "vf"})
#: Form factors: a card's SXM, PCIe and NVL variants have different peaks.
_FORM = re.compile(r"^(sxm|pcie|nvl)\d*$")
#: Memory words: ``80GB``, ``144G`` (size variants), ``HBM3``, ``HBM3e`` (the memory's kind).
_MEMORY = re.compile(r"^(\d+)g(?:b)?$")
_HBM = re.compile(r"^hbm\w*$")


@dataclass(frozen=True)
class _NameKey:
    """A device name as words: the model's words, its form factor and memory size (if named)."""

    model: frozenset[str]
    form: str | None
    memory: str | None


def _name_key(name: str) -> _NameKey:
    model: set[str] = set()
    form = memory = None
    for word in re.findall(r"[a-z0-9]+", name.lower()):
        if word in _NOISE or _HBM.match(word):
            continue
        if m := _FORM.match(word):
            form = m.group(1)
        elif m := _MEMORY.match(word):
            memory = m.group(1)
        else:
            model.add(word)
    return _NameKey(frozenset(model), form, memory)


_KEYS: tuple[tuple[_NameKey, DevicePeaks], ...] = tuple(
    (_name_key(n), row) for row in _ROWS for n in (row.name, *row.aliases)
)


def device_peaks(name: str | None) -> DevicePeaks | None:
    """The built-in peaks of a device by its ``deviceProperties`` name (None if unknown).

    A name the table lists is looked up as it is. Any other is matched by its words: the
    table's row whose model words (``H100``, ``MI300X``, ``GeForce RTX 4090``) are all in the
    name, the most specific such row first; vendor words and ``VF`` (``AMD Instinct MI300X
    VF``) are ignored; a form factor (``SXM5``, ``PCIe``, ``NVL``) picks the row of that form,
    or a row that names none (the SXM part); a memory size (``80GB``, ``144G``) picks among
    the rows left. A name whose model words no row has (``AMD Radeon Graphics``, ROCm's
    generic name) is unknown: no guess.
    """
    if not name:
        return None
    found = DEVICE_PEAKS.get(name.strip())
    if found is not None:
        return found
    key = _name_key(name)
    models = [(k, row) for k, row in _KEYS if k.model and k.model <= key.model]
    if not models:
        return None
    most = max(len(k.model) for k, _ in models)
    cands = [(k, row) for k, row in models if len(k.model) == most]
    if key.form is not None:
        cands = [c for c in cands if c[0].form == key.form] or [c for c in cands if c[0].form is None] or cands
    else:
        cands = [c for c in cands if c[0].form is None] or cands
    if key.memory is not None:
        cands = [c for c in cands if c[0].memory == key.memory] or cands
    return cands[0][1]


def peaks_table() -> pd.DataFrame:
    """The built-in table: one row per device with its dtype peaks (TFLOP/s), GB/s and source.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> peaks = tv.peaks_table()
    >>> peaks.loc[peaks["device"] == "Tesla V100-SXM2-32GB", ["fp32_tflops", "bandwidth_gbps"]].iloc[0].tolist()
    [15.7, 900.0]
    """
    return pd.DataFrame(
        [
            {
                "device": row.name,
                **{f"{d}_tflops": row.tflops(d) for d in DTYPES},
                "bandwidth_gbps": row.bandwidth_gbps,
                "aliases": ", ".join(row.aliases),
                "source": row.source,
            }
            for row in _ROWS
        ]
    )
