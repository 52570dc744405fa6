"""jupyter_traceview: understand the GPU performance of (distributed) PyTorch jobs.

    >>> import jupyter_traceview as tv
    >>> trace = tv.load("run/")          # a folder of rank traces, or one file

Layers point one way: trace model (``schema``, ``readers``, ``trace``) -> analyses ->
charts and widgets -> magics and the JupyterLab extension. Heavy parts load lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._version import __version__
from .analysis import (
    FindingRules,
    collective_calls,
    comm_comp_overlap,
    concurrency,
    efficiency,
    findings,
    frequent_kernel_sequences,
    idle_time_breakdown,
    iteration_stats,
    kernel_breakdown,
    kernel_duration_distribution,
    kernel_launch_stats,
    kernel_overlap_stats,
    kernel_pace,
    memory_bandwidth,
    nccl_summary,
    nvtx_gpu_projection,
    op_kernels,
    queue_length,
    stragglers,
    summary,
    temporal_breakdown,
    trace_diff,
    user_annotation_breakdown,
    utilization_heatmap,
    write_counters_trace,
)
from .analysis.critical_path import critical_path
from .cache import clear_cache, default_cache_dir
from .classify import Classifier
from .clock import align_clocks, clock_alignment
from .errors import OptionError, TraceFormatError, TraceSelectionError, TraceviewError, TraceviewWarning
from .loader import load
from .schema import EventKind, GpuClass
from .trace import Trace
from .trace_data import RankData, RankMeta

__all__ = [
    "Classifier",
    "Dashboard",
    "EventKind",
    "FindingRules",
    "GpuClass",
    "OptionError",
    "RankData",
    "RankMeta",
    "Timeline",
    "TimelineSelection",
    "Trace",
    "TraceFormatError",
    "TraceSelectionError",
    "TraceviewError",
    "TraceviewWarning",
    "__version__",
    "align_clocks",
    "clear_cache",
    "clock_alignment",
    "collective_calls",
    "comm_comp_overlap",
    "concurrency",
    "critical_path",
    "default_cache_dir",
    "efficiency",
    "findings",
    "frequent_kernel_sequences",
    "idle_time_breakdown",
    "iteration_stats",
    "kernel_breakdown",
    "kernel_duration_distribution",
    "kernel_launch_stats",
    "kernel_overlap_stats",
    "kernel_pace",
    "load",
    "load_ipython_extension",
    "memory_bandwidth",
    "nccl_summary",
    "nvtx_gpu_projection",
    "op_kernels",
    "queue_length",
    "sample_path",
    "stragglers",
    "summary",
    "temporal_breakdown",
    "trace_diff",
    "unload_ipython_extension",
    "user_annotation_breakdown",
    "utilization_heatmap",
    "write_counters_trace",
    "write_report",
]


#: Names exported lazily (their modules import UI packages).
_LAZY = {
    "Timeline": "jupyter_traceview.widgets.timeline",
    "TimelineSelection": "jupyter_traceview.widgets.timeline",
    "Dashboard": "jupyter_traceview.widgets.dashboard",
    "write_report": "jupyter_traceview.html_report",
}
#: Subpackages loaded on first use (they import bokeh).
_LAZY_MODULES = {"charts": "jupyter_traceview.charts"}


def __getattr__(name: str) -> object:
    import importlib

    if name in _LAZY_MODULES:
        return importlib.import_module(_LAZY_MODULES[name])
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jupyter_traceview' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension behind the JupyterLab Traces sidebar (see jupyter_traceview.server)."""
    return [{"module": "jupyter_traceview.server"}]


def sample_path(name: str = "dlrm_8rank_v100") -> Path:
    """Folder of a sample trace shipped with the package (real traces; see samples/NOTICE.md).

    ``dlrm_8rank_v100``: one DLRM training step on 8 V100 GPUs with NCCL, 8 rank files.
    """
    root = Path(__file__).parent / "samples"
    p = root / name
    if not p.is_dir():
        available = sorted(c.name for c in root.iterdir() if c.is_dir())
        raise ValueError(f"no sample named {name!r}; available: {', '.join(available)}")
    return p


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext jupyter_traceview``: register ``%%traceprofile`` and ``%traceview``."""
    from .magics import load_ipython_extension as load_magics

    load_magics(ip)


def unload_ipython_extension(ip: Any) -> None:
    """``%unload_ext jupyter_traceview``: undo what :func:`load_ipython_extension` set up."""
    from .magics import unload_ipython_extension as unload_magics

    unload_magics(ip)
