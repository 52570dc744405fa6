"""Showing a trace in a notebook: the one place the magics (and users) display a Trace inline.

``show(trace)`` is what ``%%traceprofile`` and ``%traceview`` display: the trace's
``tv.Dashboard`` (figures, findings, charts, the timeline). Where widgets cannot be
created it shows the trace's rich summary and the per-rank headline figures of
:func:`jupyter_traceview.analysis.summary` instead. ``trace`` on the last line of a cell
shows :func:`trace_mimebundle`: a compact summary with a button that opens the dashboard.
IPython and the widgets are imported lazily, so importing this module stays light.
"""

from __future__ import annotations

from typing import Any

from ..analysis.headline import headline
from ..analysis.summary import summary
from ..format import headline_items
from ..model.trace import Trace

__all__ = ["show", "summary_line", "trace_mimebundle"]

#: The MIME type of a Jupyter widget view.
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def show(trace: Trace) -> None:
    """Display ``trace``'s dashboard inline in the notebook (the view ``%%traceprofile`` shows).

    Where widgets cannot be created (no kernel, the front end not built), displays the
    trace's summary and its per-rank figures; outside IPython, prints them.
    """
    display = _display()
    if display is None:
        print(repr(trace))
        print(summary(trace).to_string(index=False))
        return
    dashboard = _dashboard(trace, expanded=True)
    if dashboard is None:
        display(trace, summary(trace))
        return
    display(dashboard)


def trace_mimebundle(trace: Trace, *, include: Any = None, exclude: Any = None) -> dict[str, Any] | None:
    """The widget ``trace`` shows on the last line of a cell: a compact summary and an "Open dashboard" button.

    None where no widget can show (not in a kernel, widgets excluded by the caller, the
    front end not built): IPython then shows the trace's text and HTML summaries.
    """
    if (exclude and WIDGET_MIME in exclude) or (include and WIDGET_MIME not in include):
        return None
    if not _in_kernel():
        return None
    dashboard = _dashboard(trace, expanded=False, warn=False)
    if dashboard is None:
        return None
    bundle = dashboard._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    if not data or WIDGET_MIME not in data:
        return None
    # text/html comes from Trace._repr_html_ (IPython fills in what the bundle lacks).
    return {WIDGET_MIME: data[WIDGET_MIME], "text/plain": repr(trace)}


def _dashboard(trace: Trace, *, expanded: bool, warn: bool = True) -> Any:
    """A tv.Dashboard of ``trace``, or None where it cannot be made (with a warning if ``warn``)."""
    import warnings

    from ..errors import TraceviewError, TraceviewWarning

    try:
        from .dashboard import Dashboard

        return Dashboard(trace, expanded=expanded)
    except (ImportError, TraceviewError) as exc:
        if not warn:
            return None
        warnings.warn(
            f"the dashboard cannot be shown ({exc}); showing the summary instead", TraceviewWarning, stacklevel=3
        )
        return None


def _in_kernel() -> bool:
    """Running in a Jupyter kernel (where widgets can be displayed), not a terminal IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


#: The headline items (``format.headline_items``) the one-line summary shows (in their order).
SUMMARY_LINE_ITEMS = frozenset(
    {"skipped", "run", "ranks", "job span", "trace span", "GPU busy", "iterations", "median step", "events", "kernels"}
)


def summary_line(trace: Trace) -> str:
    """One line of the headline (``tv.headline``): ranks, span, GPU busy, iterations, median step, counts.

    The same texts as every other surface (``format.headline_items``).

    >>> import jupyter_traceview as tv
    >>> summary_line(tv.load(tv.sample_path()))  # doctest: +ELLIPSIS
    'ranks 8 (0-7) · job span 19.7 ms · GPU busy 45.5% · iterations 1 (step #10) · median step 19.9 ms · events 19,789 · kernels 2,104'
    """
    parts = [
        f"{label} {value}" + (f" ({hint})" if label == "iterations" else "")
        for label, value, hint in headline_items(headline(trace))
        if label in SUMMARY_LINE_ITEMS
    ]
    return " · ".join(parts)


def _display() -> Any:
    """IPython's ``display`` when running under IPython, else None."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    if get_ipython() is None:
        return None
    return display
