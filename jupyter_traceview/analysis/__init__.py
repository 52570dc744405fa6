"""Analyses: pure functions from a Trace to pandas DataFrames (see _common for conventions)."""

from __future__ import annotations

from .counter_trace import write_counters_trace
from .counters import memory_bandwidth, queue_length
from .launch import kernel_launch_stats
from .nvtx import nvtx_gpu_projection
from .summary import summary

__all__ = [
    "nvtx_gpu_projection",
    "summary",
]
__all__ += ["kernel_launch_stats", "memory_bandwidth", "queue_length", "write_counters_trace"]
