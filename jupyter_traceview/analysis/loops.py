"""The analyses' compiled loops (``_loops.c``): the module they call, or None for numpy.

Loops of the analyses run compiled where the extension is built: the distinct
operator calls of :mod:`.perfmodel.performance` (``factorize_calls``), the kernels'
occupancy sums of :mod:`.findings.extraction` (``occupancy``), the steps counted by
:mod:`.summary` (``count_steps``), the innermost enclosing range of :mod:`._host` and
:mod:`._enclose` (``innermost``, a stack sweep per thread), the what-if replay
(``replay``), the dominance sums of :mod:`._enclose` (``enclosed_sums``, a Fenwick tree
per thread) and the call-tree icicle's boxes of ``charts/call_tree.py`` (``icicle``). Each caller keeps its numpy code, which gives the same
results; tests/analysis/test_loops.py compares both. (The interval algebra's loops are
``model/_sweep.c``, found by :mod:`..model.sweep_build`.)
"""

from __future__ import annotations

from typing import Any

from ..model import native_ext

__all__ = ["NAME", "VERSION", "describe", "native"]

#: The compiled module's name.
NAME = f"{__package__}._loops"
#: The ``VERSION`` of ``_loops.c`` that the analyses call; a compiled module of another
#: version is from another version of the package and is not used.
VERSION = 5

#: The compiled loops, or None: not built, of another version, or turned off by
#: ``TRACEVIEW_NATIVE=0`` (the numpy code then runs; tests set it to None to compare).
native: Any = native_ext.find(NAME, lambda m: getattr(m, "VERSION", 0) == VERSION)


def describe() -> str:
    """Whether the analyses' loops run compiled, and why not, in words."""
    return native_ext.describe(NAME, VERSION)
