"""Whether this install runs the analyses' loops compiled (``_sweep``), found without numpy.

Light on purpose (no numpy or pandas): ``traceview --version`` says whether the analyses'
loops are compiled without importing them. :mod:`.intervals` takes the module from here:
one answer for both. (The Kineto reader's scanner has its own, :mod:`..loading.readers.build`;
both find their module through :mod:`.native_ext`.)
"""

from __future__ import annotations

from types import ModuleType

from . import native_ext

__all__ = ["AVAILABLE", "SWEEP", "VERSION", "describe"]

#: The ``VERSION`` of ``_sweep.c`` that :mod:`.intervals` and the analyses call; a compiled
#: module of another version is from another version of the package and is not used.
VERSION = 1

_NAME = f"{__package__}._sweep"


def _module() -> ModuleType | None:
    return native_ext.find(_NAME, lambda m: getattr(m, "VERSION", 0) == VERSION)


#: The compiled loops (``_sweep``), or None: not built, of another version, or turned off by
#: ``TRACEVIEW_NATIVE=0`` (the numpy code then runs).
SWEEP = _module()

#: Whether the analyses' loops run compiled.
AVAILABLE = SWEEP is not None

_WHY_NOT = {
    "off": "numpy only (TRACEVIEW_NATIVE=0 turns the compiled loops off)",
    "not built": (
        "numpy only: the compiled loops are not built (install a C compiler and Python's headers, "
        "then reinstall; a first findings call on a large trace takes about a third less time with them)"
    ),
    "another version": "numpy only: the compiled loops are from another version of the package (reinstall)",
}


def describe() -> str:
    """Whether the analyses' loops run compiled, and why not, in words (``traceview --version``)."""
    if AVAILABLE:
        return "compiled (_sweep), with numpy where they do not apply; identical results"
    return _WHY_NOT[native_ext.why_not(_NAME)]
