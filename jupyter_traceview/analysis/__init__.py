"""Analyses: pure functions from a Trace to pandas DataFrames (see _common for conventions)."""

from __future__ import annotations

from .concurrency import concurrency, kernel_overlap_stats
from .efficiency import efficiency, iteration_stats
from .nccl import collective_calls, nccl_summary
from .summary import summary
from .timeseries import kernel_pace, utilization_heatmap

__all__ = [
    "collective_calls",
    "concurrency",
    "efficiency",
    "iteration_stats",
    "kernel_overlap_stats",
    "kernel_pace",
    "nccl_summary",
    "summary",
    "utilization_heatmap",
]
