"""The Timeline tab: the timeline itself."""

from __future__ import annotations

from .builder import TabBuilder


def build(b: TabBuilder) -> None:
    """The Timeline tab draws the timeline itself (``_timeline`` and the timeline's commands): nothing here."""
