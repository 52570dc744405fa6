"""Whether this install runs the analyses' loops compiled (``_sweep``), found without numpy.

Light on purpose (no numpy or pandas): ``traceview --version`` says whether the analyses'
loops are compiled without importing them. :mod:`.intervals` takes the module from here:
one answer for both. (The Kineto reader's scanner has its own, :mod:`..loading.readers.build`.)
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["AVAILABLE", "SWEEP", "VERSION", "describe"]

#: The ``VERSION`` of ``_sweep.c`` that :mod:`.intervals` and the analyses call; a compiled
#: module of another version is from another version of the package and is not used.
VERSION = 1


def _module() -> ModuleType | None:
    if os.environ.get("TRACEVIEW_NATIVE", "") == "0":
        return None
    try:
        from . import _sweep  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _sweep if getattr(_sweep, "VERSION", 0) == VERSION else None


#: The compiled loops (``_sweep``), or None: not built, of another version, or turned off by
#: ``TRACEVIEW_NATIVE=0`` (the numpy code then runs).
SWEEP = _module()

#: Whether the analyses' loops run compiled.
AVAILABLE = SWEEP is not None


def describe() -> str:
    """Whether the analyses' loops run compiled, and why not, in words (``traceview --version``)."""
    if AVAILABLE:
        return "compiled (_sweep), with numpy where they do not apply; identical results"
    if os.environ.get("TRACEVIEW_NATIVE", "") == "0":
        return "numpy only (TRACEVIEW_NATIVE=0 turns the compiled loops off)"
    try:
        from . import _sweep  # type: ignore[attr-defined]  # noqa: F401
    except ImportError:
        return (
            "numpy only: the compiled loops are not built (install a C compiler and Python's headers, "
            "then reinstall; a first findings call on a large trace takes about a third less time with them)"
        )
    return "numpy only: the compiled loops are from another version of the package (reinstall)"
