"""The examples in the analyses' docstrings run and show what they claim."""

from __future__ import annotations

import builtins
import doctest
import importlib

import pytest

MODULES = [
    "temporal",
    "idle",
    "kernels",
    "summary",
    "cpu_ops",
    "call_tree",
    "threads",
    "host_syncs",
    "headline",
    "perfmodel.performance",
    "compare.core",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"jupyter_traceview.analysis.{name}")
    # doctest echoes values through sys.__displayhook__, which sets builtins._; IPython
    # then stops setting `_` in later tests' shells. Leave builtins as they were.
    missing = object()
    before = builtins.__dict__.get("_", missing)
    try:
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    finally:
        if before is missing:
            builtins.__dict__.pop("_", None)
        else:
            builtins._ = before  # type: ignore[attr-defined]
    assert result.failed == 0
