"""Showing a trace in a notebook: the one place the magics (and users) display a Trace inline.

``show(trace)`` is what ``%%traceprofile`` and ``%traceview`` display. It shows the trace's
rich summary and the per-rank headline figures of :func:`jupyter_traceview.analysis.summary`.
IPython is imported lazily, so importing this module stays light.
"""

from __future__ import annotations

from typing import Any

from .analysis.summary import summary
from .trace import Trace, _fmt_ns

__all__ = ["show", "summary_line"]


def show(trace: Trace) -> None:
    """Display ``trace`` inline in the notebook (the view ``%%traceprofile`` shows).

    Outside IPython, prints the trace's text form and its summary table instead.
    """
    table = summary(trace)
    display = _display()
    if display is None:
        print(repr(trace))
        print(table.to_string(index=False))
        return
    display(trace, table)


def summary_line(trace: Trace) -> str:
    """One line of headline figures: ranks, iterations, median step time, events, kernels, GPU busy.

    >>> import jupyter_traceview as tv
    >>> summary_line(tv.load(tv.sample_path()))  # doctest: +ELLIPSIS
    '8 ranks · 1 iteration (median 1... ms) · ... events · ... kernels · GPU busy ...%'
    """
    table = summary(trace)
    its = trace.iterations
    n_it = len(set(its["step"].tolist())) if len(its) else 0
    parts = [f"{len(trace.ranks)} rank{'s' if len(trace.ranks) != 1 else ''}"]
    it_text = f"{n_it} iteration{'s' if n_it != 1 else ''}"
    if n_it:
        it_text += f" (median {_fmt_ns(float(its['dur_ns'].median()))})"
    parts.append(it_text)
    parts.append(f"{int(table['events'].sum()):,} events")
    parts.append(f"{int(table['kernels'].sum()):,} kernels")
    busy = table["gpu_busy_pct"].dropna()
    if len(busy):
        parts.append(f"GPU busy {float(busy.mean()):.1f}%")
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
