"""Comparing two runs: ``tv.compare`` (causes that add up, a verdict, the noise).

``parts``
    Each step of each rank cut into causes that add up to the step.
``noise``
    The bootstrap interval that tells a change from step-to-step noise.
``core``
    :func:`compare`: matching the steps and ranks, the causes' table, the verdict.
``markdown``
    The PR-comment summary of a :class:`Comparison` (``traceview compare --markdown``).
"""

from __future__ import annotations

from .core import CAUSE_COLUMNS, Comparison, compare
from .markdown import markdown

__all__ = ["CAUSE_COLUMNS", "Comparison", "compare", "markdown"]
