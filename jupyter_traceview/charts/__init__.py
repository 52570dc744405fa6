"""Charts: one bokeh picture per analysis (pure builders: a DataFrame in, a bokeh model out).

Every builder takes the DataFrame its analysis returns (``tv.temporal_breakdown(trace)``
for :func:`temporal_breakdown_chart`, ...), a ``theme`` (``"light"`` or ``"dark"``: the
palette of :mod:`jupyter_traceview.views.colors`, the same colours as the timeline for the same
kinds) and returns a bokeh model; it loads no data and displays nothing. Durations are
shown in the unit that fits each chart (ns, us, ms or s), every chart has a hover tool,
and charts whose bars or cells are ranks, steps or time bins mark them as links to the
timeline (:data:`LINK_TAG`), which ``tv.Dashboard`` follows.

Show one in a notebook with bokeh (its resources inline, so that it works offline)::

    >>> import jupyter_traceview as tv
    >>> from jupyter_traceview import charts
    >>> fig = charts.temporal_breakdown_chart(tv.temporal_breakdown(tv.load(tv.sample_path())))
    >>> from bokeh.io import output_notebook, show   # doctest: +SKIP
    >>> from bokeh.resources import INLINE           # doctest: +SKIP
    >>> output_notebook(INLINE); show(fig)           # doctest: +SKIP

Importing this package imports bokeh; ``import jupyter_traceview`` does not.
"""

from __future__ import annotations

from ._style import LINK_TAG, bokeh_theme, duration_text, time_unit
from .breakdown import comm_comp_overlap_chart, concurrency_chart, idle_breakdown_chart, temporal_breakdown_chart
from .call_tree import call_tree_chart
from .comm import nccl_bandwidth_chart, stragglers_chart
from .compare import compare_chart
from .efficiency import efficiency_chart, iteration_chart
from .kernels import kernel_duration_chart, kernel_type_chart, top_kernels_chart
from .memory import memory_timeline_chart
from .performance import roofline_chart, time_lost_chart
from .threads import thread_activity_chart
from .timeseries import (
    HEATMAP_KINDS,
    memory_bandwidth_chart,
    queue_length_chart,
    timeline_overview_chart,
    utilization_heatmap_chart,
)

__all__ = [
    "HEATMAP_KINDS",
    "LINK_TAG",
    "bokeh_theme",
    "call_tree_chart",
    "comm_comp_overlap_chart",
    "compare_chart",
    "concurrency_chart",
    "duration_text",
    "efficiency_chart",
    "idle_breakdown_chart",
    "iteration_chart",
    "kernel_duration_chart",
    "kernel_type_chart",
    "memory_bandwidth_chart",
    "memory_timeline_chart",
    "nccl_bandwidth_chart",
    "queue_length_chart",
    "roofline_chart",
    "stragglers_chart",
    "temporal_breakdown_chart",
    "thread_activity_chart",
    "time_lost_chart",
    "time_unit",
    "timeline_overview_chart",
    "top_kernels_chart",
    "utilization_heatmap_chart",
]
