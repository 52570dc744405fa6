"""How a trace shows itself in a notebook with widgets (``Trace._repr_mimebundle_``).

The package root installs the widgets layer's summary card here
(:func:`set_mimebundle_hook`), so that the trace model imports nothing above it; this module
imports nothing heavy, so that ``import jupyter_traceview`` stays light. None: the text and
HTML reprs show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["MimebundleHook", "mimebundle_hook", "set_mimebundle_hook"]

#: ``hook(trace, include=..., exclude=...) -> MIME bundle or None``.
MimebundleHook = Callable[..., "dict[str, Any] | None"]

_hook: MimebundleHook | None = None


def set_mimebundle_hook(hook: MimebundleHook | None) -> None:
    """Install the function that renders a Trace as a rich MIME bundle (None removes it)."""
    global _hook
    _hook = hook


def mimebundle_hook() -> MimebundleHook | None:
    """The installed hook, or None."""
    return _hook
