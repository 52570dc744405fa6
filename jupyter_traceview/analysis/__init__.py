"""Analyses: pure functions from a Trace to pandas DataFrames (see _common for conventions)."""

from __future__ import annotations

from ..clock import clock_alignment
from .critical_path import critical_path
from .nvtx import nvtx_gpu_projection
from .summary import summary

__all__ = [
    "clock_alignment",
    "critical_path",
    "nvtx_gpu_projection",
    "summary",
]
