"""jupyter_traceview: understand the GPU performance of (distributed) PyTorch jobs.

    >>> import jupyter_traceview as tv
    >>> trace = tv.load("run/")          # a folder of rank traces, or one file

Layers point one way: trace model (``schema``, ``readers``, ``trace``) -> analyses ->
charts and widgets -> magics and the JupyterLab extension. Heavy parts load lazily.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__
from .analysis import (
    FindingRules,
    call_tree,
    collective_calls,
    comm_comp_overlap,
    concurrency,
    cpu_op_breakdown,
    efficiency,
    findings,
    frequent_kernel_sequences,
    host_syncs,
    idle_time_breakdown,
    iteration_stats,
    kernel_breakdown,
    kernel_duration_distribution,
    kernel_launch_stats,
    kernel_overlap_stats,
    kernel_pace,
    memory_allocations,
    memory_allocator_stats,
    memory_bandwidth,
    memory_by_operator,
    memory_oom_events,
    memory_peak_holders,
    memory_peaks,
    memory_timeline,
    nccl_summary,
    nvtx_gpu_projection,
    op_kernels,
    queue_length,
    stragglers,
    summary,
    temporal_breakdown,
    thread_activity,
    trace_diff,
    user_annotation_breakdown,
    utilization_heatmap,
    write_counters_trace,
)
from .analysis.critical_path import critical_path
from .errors import OptionError, TraceFormatError, TraceSelectionError, TraceviewError, TraceviewWarning
from .loading.cache import clear_cache, default_cache_dir
from .loading.loader import load
from .model.classify import Classifier
from .model.clock import align_clocks, clock_alignment
from .model.rank_data import RankData, RankMeta
from .model.schema import EventKind, GpuClass
from .model.trace import Trace, set_mimebundle_hook
from .samples import sample_path

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
    "call_tree",
    "clear_cache",
    "clock_alignment",
    "collective_calls",
    "comm_comp_overlap",
    "concurrency",
    "cpu_op_breakdown",
    "critical_path",
    "default_cache_dir",
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
    "load",
    "load_ipython_extension",
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
    "sample_path",
    "stragglers",
    "summary",
    "temporal_breakdown",
    "thread_activity",
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
    "write_report": "jupyter_traceview.report.html",
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


def _trace_mimebundle(trace: Trace, *, include: Any = None, exclude: Any = None) -> dict[str, Any] | None:
    """A trace on the last line of a cell: the widgets layer's summary card (imported when first shown)."""
    from .widgets.display import trace_mimebundle

    return trace_mimebundle(trace, include=include, exclude=exclude)


set_mimebundle_hook(_trace_mimebundle)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension behind the JupyterLab Traces sidebar (see jupyter_traceview.server)."""
    return [{"module": "jupyter_traceview.server"}]


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext jupyter_traceview``: register ``%%traceprofile`` and ``%traceview``."""
    from .notebook.magics import load_ipython_extension as load_magics

    load_magics(ip)


def unload_ipython_extension(ip: Any) -> None:
    """``%unload_ext jupyter_traceview``: undo what :func:`load_ipython_extension` set up."""
    from .notebook.magics import unload_ipython_extension as unload_magics

    unload_magics(ip)
