"""Whether this install reads Kineto JSON with the compiled C scanner, found without the reader.

Light on purpose (no numpy, pandas or msgspec): ``traceview --version`` says which reader
runs without importing it (0.9 s before, for two lines). :mod:`.native` takes the scanner
and :data:`AVAILABLE` from here: one answer for both (the module found through
:mod:`...model.native_ext`, as the analyses' loops are).
"""

from __future__ import annotations

import contextlib
import os
from types import ModuleType

from ...model import native_ext

__all__ = ["AVAILABLE", "N_CODED", "N_FLOATS", "N_INTS", "N_SPANS", "SCANNER", "describe"]

#: The scanner's column counts (ints, floats, byte ranges, numbered texts) that :mod:`.native`
#: reads; a compiled module with others is from another version of the package.
N_INTS, N_FLOATS, N_SPANS, N_CODED = 25, 6, 13, 6

_NAME = f"{__package__}._kscan"


def _current(kscan: ModuleType) -> bool:
    # A module of another version: never misread its columns.
    counts = (kscan.N_INTS, kscan.N_FLOATS, kscan.N_SPANS, kscan.N_CODED)
    return (
        counts == (N_INTS, N_FLOATS, N_SPANS, N_CODED)
        and bool(getattr(kscan, "SCANS_RANGES", 0))  # (built before scan took start and end)
        and hasattr(kscan, "seed")  # (built before its names' hash took a random key)
    )


def _scanner() -> ModuleType | None:
    kscan = native_ext.find(_NAME, _current)
    if kscan is not None:
        # The names' hash keyed per process (SipHash-1-3): a file cannot be crafted to collide.
        with contextlib.suppress(RuntimeError):  # (keyed already: the module loaded twice)
            kscan.seed(os.urandom(16))
    return kscan


#: The compiled scanner (``_kscan``), or None: not built, of another version, or turned off
#: by ``TRACEVIEW_NATIVE=0``.
SCANNER = _scanner()

#: Whether pieces are read by the C scanner (the module is built and not turned off).
AVAILABLE = SCANNER is not None

_WHY_NOT = {
    "off": "msgspec only (TRACEVIEW_NATIVE=0 turns the C scanner off)",
    "not built": (
        "msgspec only: the C scanner is not built (install a C compiler and Python's headers, "
        "then reinstall; large traces read about 2x faster with it)"
    ),
    "another version": "msgspec only: the compiled C scanner is from another version of the package (reinstall)",
}


def describe() -> str:
    """Which reader this install runs, and why, in words (``traceview --version``)."""
    if AVAILABLE:
        return "the C scanner (compiled), with msgspec for what it does not read; identical tables"
    return _WHY_NOT[native_ext.why_not(_NAME)]
