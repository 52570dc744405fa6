"""Operator performance model: FLOPs and bytes per operator, achieved throughput, roofline, MFU.

* :mod:`.model`: the FLOP/byte model of each operator family, from recorded shapes;
* :mod:`.peaks`: device peaks (dense TFLOP/s per dtype, memory bandwidth) with their sources;
* :mod:`.performance`: :func:`op_performance` and :func:`mfu` on a trace.
"""

from __future__ import annotations

from .model import FAMILIES, NotModelled, OpCall, Work, model_op
from .peaks import DEVICE_PEAKS, DevicePeaks, device_peaks, peaks_table
from .performance import mfu, op_performance

__all__ = [
    "DEVICE_PEAKS",
    "FAMILIES",
    "DevicePeaks",
    "NotModelled",
    "OpCall",
    "Work",
    "device_peaks",
    "mfu",
    "model_op",
    "op_performance",
    "peaks_table",
]
