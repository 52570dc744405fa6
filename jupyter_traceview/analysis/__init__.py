"""Analyses: pure functions from a Trace to pandas DataFrames (see _common for conventions).

The public analyses, one line each: ``from .<module> import <name> as <name>`` below makes
``<name>`` public here, as ``tv.<name>`` and for ``DashboardData.frame("<name>")`` (the
``as`` form re-exports it for type checkers; ``__all__`` is built from these lines).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .annotations import user_annotation_breakdown as user_annotation_breakdown
from .call_tree import call_tree as call_tree
from .compare import compare as compare
from .concurrency import concurrency as concurrency
from .concurrency import kernel_overlap_stats as kernel_overlap_stats
from .counter_trace import write_counters_trace as write_counters_trace
from .counters import memory_bandwidth as memory_bandwidth
from .counters import queue_length as queue_length
from .cpu_ops import cpu_op_breakdown as cpu_op_breakdown
from .critical_path import critical_path as critical_path
from .efficiency import efficiency as efficiency
from .efficiency import iteration_stats as iteration_stats
from .findings import FindingRules as FindingRules
from .findings import findings as findings
from .headline import headline as headline
from .host_syncs import host_syncs as host_syncs
from .idle import idle_time_breakdown as idle_time_breakdown
from .kernels import kernel_breakdown as kernel_breakdown
from .kernels import kernel_duration_distribution as kernel_duration_distribution
from .launch import kernel_launch_stats as kernel_launch_stats
from .memory import memory_allocations as memory_allocations
from .memory import memory_allocator_stats as memory_allocator_stats
from .memory import memory_by_operator as memory_by_operator
from .memory import memory_oom_events as memory_oom_events
from .memory import memory_peak_holders as memory_peak_holders
from .memory import memory_peaks as memory_peaks
from .memory import memory_timeline as memory_timeline
from .nccl import collective_calls as collective_calls
from .nccl import nccl_summary as nccl_summary
from .nvtx import nvtx_gpu_projection as nvtx_gpu_projection
from .operators import frequent_kernel_sequences as frequent_kernel_sequences
from .operators import op_kernels as op_kernels
from .perfmodel import DevicePeaks as DevicePeaks
from .perfmodel import mfu as mfu
from .perfmodel import op_performance as op_performance
from .perfmodel import peaks_table as peaks_table
from .stragglers import stragglers as stragglers
from .summary import summary as summary
from .temporal import comm_comp_overlap as comm_comp_overlap
from .temporal import temporal_breakdown as temporal_breakdown
from .threads import thread_activity as thread_activity
from .timeseries import kernel_pace as kernel_pace
from .timeseries import utilization_heatmap as utilization_heatmap
from .whatif import what_if as what_if
from .workload import workload as workload

if not TYPE_CHECKING:  # type checkers read the ``as`` imports above

    def __getattr__(name: str) -> Any:
        """A removed analysis (``trace_diff``): an AttributeError that names its replacement."""
        from ..deprecation import removed_name

        raise removed_name(__name__, name) or AttributeError(f"module {__name__!r} has no attribute {name!r}")

    #: Every name imported above from the analyses' modules.
    __all__ = sorted(
        name
        for name, value in list(globals().items())
        if not name.startswith("_") and getattr(value, "__module__", "").startswith(f"{__name__}.")
    )
