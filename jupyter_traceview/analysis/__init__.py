"""Analyses: pure functions from a Trace to pandas DataFrames (see _common for conventions)."""

from __future__ import annotations

from .annotations import user_annotation_breakdown
from .counter_trace import write_counters_trace
from .counters import memory_bandwidth, queue_length
from .diff import trace_diff
from .launch import kernel_launch_stats
from .nvtx import nvtx_gpu_projection
from .operators import frequent_kernel_sequences, op_kernels
from .stragglers import stragglers
from .summary import summary

__all__ = [
    "frequent_kernel_sequences",
    "nvtx_gpu_projection",
    "op_kernels",
    "stragglers",
    "summary",
    "trace_diff",
    "user_annotation_breakdown",
]
__all__ += ["kernel_launch_stats", "memory_bandwidth", "queue_length", "write_counters_trace"]
