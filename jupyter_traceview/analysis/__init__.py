"""Analyses: pure functions from a Trace to pandas DataFrames (see _common for conventions)."""

from __future__ import annotations

from .idle import idle_time_breakdown
from .kernels import kernel_breakdown, kernel_duration_distribution
from .summary import summary
from .temporal import comm_comp_overlap, temporal_breakdown

__all__ = [
    "comm_comp_overlap",
    "idle_time_breakdown",
    "kernel_breakdown",
    "kernel_duration_distribution",
    "summary",
    "temporal_breakdown",
]
