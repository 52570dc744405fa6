"""The examples in the analyses' docstrings run and show what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["temporal", "idle", "kernels", "summary"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"jupyter_traceview.analysis.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
