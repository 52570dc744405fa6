"""Whether this install reads Kineto JSON with the compiled C scanner, found without the reader.

Light on purpose (no numpy, pandas or msgspec): ``traceview --version`` says which reader
runs without importing it (0.9 s before, for two lines). :mod:`.native` takes the scanner
and :data:`AVAILABLE` from here: one answer for both.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["AVAILABLE", "N_CODED", "N_FLOATS", "N_INTS", "N_SPANS", "SCANNER", "describe"]

#: The scanner's column counts (ints, floats, byte ranges, numbered texts) that :mod:`.native`
#: reads; a compiled module with others is from another version of the package.
N_INTS, N_FLOATS, N_SPANS, N_CODED = 25, 6, 12, 6


def _scanner() -> ModuleType | None:
    if os.environ.get("TRACEVIEW_NATIVE", "") == "0":
        return None
    try:
        from . import _kscan  # type: ignore[attr-defined]
    except ImportError:
        return None
    if (_kscan.N_INTS, _kscan.N_FLOATS, _kscan.N_SPANS, _kscan.N_CODED) != (N_INTS, N_FLOATS, N_SPANS, N_CODED) or (
        not getattr(_kscan, "SCANS_RANGES", 0)  # (built before scan took start and end)
    ):
        return None  # a module of another version: never misread its columns
    return _kscan  # type: ignore[no-any-return]


#: The compiled scanner (``_kscan``), or None: not built, of another version, or turned off
#: by ``TRACEVIEW_NATIVE=0``.
SCANNER = _scanner()

#: Whether pieces are read by the C scanner (the module is built and not turned off).
AVAILABLE = SCANNER is not None


def describe() -> str:
    """Which reader this install runs, and why, in words (``traceview --version``)."""
    if AVAILABLE:
        return "the C scanner (compiled), with msgspec for what it does not read; identical tables"
    if os.environ.get("TRACEVIEW_NATIVE", "") == "0":
        return "msgspec only (TRACEVIEW_NATIVE=0 turns the C scanner off)"
    try:
        from . import _kscan  # type: ignore[attr-defined]  # noqa: F401
    except ImportError:
        return (
            "msgspec only: the C scanner is not built (install a C compiler and Python's headers, "
            "then reinstall; large traces read about 2x faster with it)"
        )
    return "msgspec only: the compiled C scanner is from another version of the package (reinstall)"
