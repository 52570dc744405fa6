"""The one helper for removed keywords: refused with the replacement named, out of the signature."""

from __future__ import annotations

import doctest
import inspect

import pytest

import jupyter_traceview as tv
from jupyter_traceview import deprecation
from jupyter_traceview.deprecation import removed_parameters


@removed_parameters(size="pass n={value} instead", width="it is gone")
def head(items: list[int], *, n: int = 2) -> list[int]:
    """The first ``n`` items."""
    return items[:n]


def test_a_removed_keyword_is_refused_with_what_to_do_instead() -> None:
    with pytest.raises(tv.OptionError, match=r"^head: size= was removed; pass n=3 instead$"):
        head([1, 2, 3], size=3)  # type: ignore[call-arg]
    with pytest.raises(tv.OptionError, match=r"^head: width= was removed; it is gone$"):
        head([1, 2, 3], n=1, width=80)  # type: ignore[call-arg]


def test_passed_as_none_it_is_ignored_as_it_was_and_the_rest_works() -> None:
    assert head([1, 2, 3], size=None) == [1, 2]  # type: ignore[call-arg]
    assert head([1, 2, 3], n=3) == [1, 2, 3]


def test_the_signature_and_docstring_are_the_function_s() -> None:
    assert list(inspect.signature(head).parameters) == ["items", "n"]
    assert head.__doc__ == "The first ``n`` items." and head.__name__ == "head"
    for fn, removed in (
        (tv.load, ("align", "on_progress")),
        (tv.critical_path, ("rank",)),
        (tv.stragglers, ("align_ends",)),
    ):
        assert not set(removed) & set(inspect.signature(fn).parameters), fn.__name__


def test_the_module_example_runs() -> None:
    assert doctest.testmod(deprecation, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0
