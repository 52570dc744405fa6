"""Jupyter widgets (anywidget): thin front ends over the analysis layer.

Imported lazily by ``jupyter_traceview`` (``tv.Timeline``, ``tv.Dashboard``): importing the package does not
import anywidget or ipywidgets.
"""

from __future__ import annotations

from .dashboard import Dashboard
from .timeline import Timeline, TimelineSelection

__all__ = ["Dashboard", "Timeline", "TimelineSelection"]
