"""Analyses: pure functions from a Trace to pandas DataFrames (see _common for conventions)."""

from __future__ import annotations

from .annotations import user_annotation_breakdown
from .call_tree import call_tree
from .concurrency import concurrency, kernel_overlap_stats
from .counter_trace import write_counters_trace
from .counters import memory_bandwidth, queue_length
from .cpu_ops import cpu_op_breakdown
from .critical_path import critical_path
from .diff import trace_diff
from .efficiency import efficiency, iteration_stats
from .findings import FindingRules, findings
from .host_syncs import host_syncs
from .idle import idle_time_breakdown
from .kernels import kernel_breakdown, kernel_duration_distribution
from .launch import kernel_launch_stats
from .memory import (
    memory_allocations,
    memory_allocator_stats,
    memory_by_operator,
    memory_oom_events,
    memory_peak_holders,
    memory_peaks,
    memory_timeline,
)
from .nccl import collective_calls, nccl_summary
from .nvtx import nvtx_gpu_projection
from .operators import frequent_kernel_sequences, op_kernels
from .stragglers import stragglers
from .summary import summary
from .temporal import comm_comp_overlap, temporal_breakdown
from .threads import thread_activity
from .timeseries import kernel_pace, utilization_heatmap

__all__ = [
    "FindingRules",
    "call_tree",
    "collective_calls",
    "comm_comp_overlap",
    "concurrency",
    "cpu_op_breakdown",
    "critical_path",
    "efficiency",
    "findings",
    "frequent_kernel_sequences",
    "host_syncs",
    "idle_time_breakdown",
    "iteration_stats",
    "kernel_breakdown",
    "kernel_duration_distribution",
    "kernel_launch_stats",
    "kernel_overlap_stats",
    "kernel_pace",
    "memory_allocations",
    "memory_allocator_stats",
    "memory_bandwidth",
    "memory_by_operator",
    "memory_oom_events",
    "memory_peak_holders",
    "memory_peaks",
    "memory_timeline",
    "nccl_summary",
    "nvtx_gpu_projection",
    "op_kernels",
    "queue_length",
    "stragglers",
    "summary",
    "temporal_breakdown",
    "thread_activity",
    "trace_diff",
    "user_annotation_breakdown",
    "utilization_heatmap",
    "write_counters_trace",
]
