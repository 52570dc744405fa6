"""The tables a dashboard (or the HTML report, or the Traces sidebar) shows for a trace."""

from __future__ import annotations

import pandas as pd

from .analysis import summary
from .trace import Trace

__all__ = ["dashboard_tables"]


def dashboard_tables(trace: Trace) -> dict[str, pd.DataFrame]:
    """Every table the dashboard shows, by name (pure: analyses only, no charts)."""
    return {
        "summary": summary(trace),
        "iterations": trace.iterations,
        "metadata": trace.metadata.drop(columns=["devices"]),
    }
