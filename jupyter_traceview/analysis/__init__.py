"""Analyses: pure functions from a Trace to pandas DataFrames (see _common for conventions)."""

from __future__ import annotations

from .summary import summary

__all__ = ["summary"]
