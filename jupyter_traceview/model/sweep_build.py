"""Whether this install runs the interval algebra's loops compiled (``_sweep``), found without numpy.

Light on purpose (no numpy or pandas): ``traceview --version`` says whether the loops are
compiled without importing them. :mod:`.intervals` takes the module from here: one answer
for both. (The analyses' own loops are :mod:`..analysis.loops`, the Kineto reader's scanner
:mod:`..loading.readers.build`; all find their module through :mod:`.native_ext`.)
"""

from __future__ import annotations

from types import ModuleType

from . import native_ext

__all__ = ["AVAILABLE", "SWEEP", "VERSION", "describe"]

#: The ``VERSION`` of ``_sweep.c`` that :mod:`.intervals` calls; a compiled module of another
#: version is from another version of the package and is not used.
VERSION = 1

_NAME = f"{__package__}._sweep"


def _module() -> ModuleType | None:
    return native_ext.find(_NAME, lambda m: getattr(m, "VERSION", 0) == VERSION)


#: The compiled loops (``_sweep``), or None: not built, of another version, or turned off by
#: ``TRACEVIEW_NATIVE=0`` (the numpy code then runs).
SWEEP = _module()

#: Whether the interval algebra's loops run compiled.
AVAILABLE = SWEEP is not None


def describe() -> str:
    """Whether the interval algebra's loops run compiled, and why not, in words (``traceview --version``)."""
    return native_ext.describe(_NAME, VERSION)
