"""Jupyter widgets (anywidget): thin front ends over the analysis layer.

Imported lazily by ``jupyter_traceview`` (``tv.Timeline``): importing the package does not
import anywidget or ipywidgets.
"""

from __future__ import annotations

from .timeline import Timeline, TimelineSelection

__all__ = ["Timeline", "TimelineSelection"]
