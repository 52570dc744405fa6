"""The tables a dashboard (or the HTML report, or the Traces sidebar) shows for a trace."""

from __future__ import annotations

import warnings

import pandas as pd

from ..analysis import findings, summary
from ..errors import TraceviewWarning
from ..model.trace import Trace

__all__ = ["dashboard_tables"]


def dashboard_tables(trace: Trace) -> dict[str, pd.DataFrame]:
    """Every table the dashboard shows, by name (pure: analyses only, no charts)."""
    with warnings.catch_warnings():
        # A CPU-only trace has no findings; the summary already shows why.
        warnings.simplefilter("ignore", TraceviewWarning)
        found = findings(trace)
    return {
        "summary": summary(trace),
        "findings": found,
        "iterations": trace.iterations,
        "metadata": trace.metadata.drop(columns=["devices"]),
    }
