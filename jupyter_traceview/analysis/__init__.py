"""Analyses: pure functions from a Trace to pandas DataFrames (see _common for conventions)."""

from __future__ import annotations

from .nvtx import nvtx_gpu_projection
from .summary import summary

__all__ = [
    "nvtx_gpu_projection",
    "summary",
]
