"""Finding the package's compiled extensions (``_kscan``, ``_sweep``), light on purpose.

Shared by :mod:`.sweep_build` (the analyses' loops) and :mod:`..loading.readers.build` (the
Kineto reader's scanner), which ``traceview --version`` asks without importing numpy:
``TRACEVIEW_NATIVE=0`` in the environment turns every extension off, and a module that is
not built, or was built from another version of the package's sources (``current`` says
no), is not used: the Python code runs instead. :func:`why_not` says which, in one word.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Literal

__all__ = ["find", "why_not"]


def find(name: str, current: Callable[[ModuleType], bool]) -> ModuleType | None:
    """The compiled module ``name`` if it is on, built and ``current``; else None."""
    if os.environ.get("TRACEVIEW_NATIVE", "") == "0":
        return None
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    return module if current(module) else None


def why_not(name: str) -> Literal["off", "not built", "another version"]:
    """Why :func:`find` gives no module ``name``: turned off, not built, or of another version."""
    if os.environ.get("TRACEVIEW_NATIVE", "") == "0":
        return "off"
    try:
        importlib.import_module(name)
    except ImportError:
        return "not built"
    return "another version"
