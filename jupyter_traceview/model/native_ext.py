"""Finding the package's compiled extensions (``_kscan``, ``_sweep``, ``_loops``), light on purpose.

Shared by :mod:`.sweep_build` (the interval algebra's loops), :mod:`..analysis.loops` (the
analyses' loops) and :mod:`..loading.readers.build` (the Kineto reader's scanner), which
``traceview --version`` asks without importing numpy: ``TRACEVIEW_NATIVE=0`` in the
environment turns every extension off, and a module that is not built, or was built from
another version of the package's sources (``current`` says no), is not used: the Python
code runs instead. :func:`why_not` says which, in one word; :func:`describe` in words.

A module whose package is not imported yet is loaded from its file beside its source,
without importing the package (and without registering it): ``--version`` asks about the
analyses' loops without importing the analyses (numpy, pandas).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Literal

__all__ = ["describe", "find", "why_not"]


def find(name: str, current: Callable[[ModuleType], bool]) -> ModuleType | None:
    """The compiled module ``name`` if it is on, built and ``current``; else None."""
    if os.environ.get("TRACEVIEW_NATIVE", "") == "0":
        return None
    module = _load(name)
    return module if module is not None and current(module) else None


def why_not(name: str) -> Literal["off", "not built", "another version"]:
    """Why :func:`find` gives no module ``name``: turned off, not built, or of another version."""
    if os.environ.get("TRACEVIEW_NATIVE", "") == "0":
        return "off"
    return "not built" if _load(name) is None else "another version"


_WHY_NOT = {
    "off": "numpy only (TRACEVIEW_NATIVE=0 turns the compiled loops off)",
    "not built": (
        "numpy only: the compiled loops are not built (install a C compiler and Python's headers, "
        "then reinstall; a first findings call on a large trace takes about a third less time with them)"
    ),
    "another version": "numpy only: the compiled loops are from another version of the package (reinstall)",
}


def describe(name: str, version: int) -> str:
    """Whether the loops of the compiled module ``name`` (of ``VERSION`` ``version``) run
    compiled, and why not, in words (``traceview --version``)."""
    if find(name, lambda m: getattr(m, "VERSION", 0) == version) is not None:
        return f"compiled ({name.rpartition('.')[2]}), with numpy where they do not apply; identical results"
    return _WHY_NOT[why_not(name)]


def _load(name: str) -> ModuleType | None:
    """The compiled module ``name``: imported, or loaded from its file while its package is not imported."""
    package, _, stem = name.rpartition(".")
    if package in sys.modules:
        try:
            return importlib.import_module(name)
        except ImportError:
            return None
    folder = Path(__file__).resolve().parents[1].joinpath(*package.split(".")[1:])
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"{stem}{suffix}"
        if not path.is_file():
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            return None
        try:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except ImportError:
            return None
        return module
    return None
