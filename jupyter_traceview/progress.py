"""One progress protocol for the work that takes a while: loading, a dashboard tab, a report.

A :data:`Progress` is any callable ``progress(done, total, label)``: ``done`` of ``total``
steps are finished, and ``label`` says what is being done (``"loading traces"`` while files
are read, the name of the step about to run while a dashboard tab or the report is
computed, ``"done"`` at the end of a tab or report). ``tv.load(path, progress=...)``,
``DashboardData.tab(..., progress=...)`` and ``tv.write_report(..., progress=...)`` all call
one; ``tv.Dashboard`` sends it on to the front end, the server extension to the Traces
sidebar, the CLI to stderr. Part of the base layer: it imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Progress"]

#: ``progress(done, total, label)``: ``done`` of ``total`` steps finished, ``label`` what is being done.
Progress = Callable[[int, int, str], None]
