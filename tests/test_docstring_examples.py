"""Every public name of ``tv.`` has a ``>>>`` example in its docstring, and it runs.

Each example is run as a doctest (the name's own docstring; its methods' examples run where
their module's are, tests/analysis/test_docstrings.py). The examples load the bundled sample;
the cache folder is shared by this module's tests so that it is parsed once.
"""

from __future__ import annotations

import builtins
import doctest
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import cache_key

#: Public names that are not documented by a docstring of their own (a plain string).
NOT_DOCUMENTED = {"__version__"}
NAMES = sorted(set(tv.__all__) - NOT_DOCUMENTED)


@pytest.fixture(scope="module")
def _shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _isolated_cache(_shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As tests/conftest.py's (never the user's cache folder), one folder for the module."""
    monkeypatch.setattr(cache_key, "default_cache_dir", lambda: _shared_cache)


@pytest.mark.parametrize("name", NAMES)
def test_docstring_example(name: str) -> None:
    obj = getattr(tv, name)
    finder = doctest.DocTestFinder(recurse=False)
    tests = [t for t in finder.find(obj, f"tv.{name}", globs={}) if t.examples]
    assert tests, f"tv.{name}: add an Examples section with a >>> example to its docstring"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    # doctest echoes values through sys.__displayhook__, which sets builtins._; IPython then
    # stops setting `_` in later tests' shells. Leave builtins as they were.
    missing = object()
    before = builtins.__dict__.get("_", missing)
    try:
        for test in tests:
            runner.run(test)
    finally:
        if before is missing:
            builtins.__dict__.pop("_", None)
        else:
            builtins._ = before  # type: ignore[attr-defined]
    assert runner.summarize(verbose=False).failed == 0, f"tv.{name}: its docstring example fails (output above)"
