"""Keywords and names that were removed: refused with a message that names their replacement.

One helper for every entry point (polars' ``_utils/deprecation.py`` is the model): a removed
keyword lives in a decorator, not in the function's signature, so the signature, the
docstring's Parameters and the type checkers show only what works today, while a caller
still passing the old keyword gets an :class:`~jupyter_traceview.errors.OptionError` that
says what to write instead.

>>> @removed_parameters(size="pass n= instead (the count of rows)")
... def head(*, n: int = 5) -> int:
...     return n
>>> head(size=3)  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
OptionError: head: size= was removed; pass n= instead (the count of rows)

A removed public name (a function that went) is listed in :data:`REMOVED_NAMES`; the
packages' module ``__getattr__`` answers it with :func:`removed_name`, an AttributeError
whose message says what to use instead (an AttributeError, so ``hasattr`` stays false).

>>> import jupyter_traceview as tv
>>> tv.trace_diff  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
AttributeError: jupyter_traceview.trace_diff was removed; ...
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from .errors import OptionError

__all__ = ["REMOVED_NAMES", "removed_name", "removed_parameters"]

#: Public names that were removed (``tv.<name>``, ``jupyter_traceview.analysis.<name>``), each
#: with what to do instead.
REMOVED_NAMES: dict[str, str] = {
    "trace_diff": (
        "the one comparison of two runs is tv.compare(base, new): its causes table says why the step "
        "time changed, in rows that add up to the change (operators matched by their place in the call "
        "tree, with their calls a step and kernels in `evidence`), with a verdict and the noise "
        "(docs/semantics.md, 'compare')"
    ),
}

P = ParamSpec("P")
T = TypeVar("T")


def removed_parameters(**hints: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Refuse each keyword in ``hints`` (its name -> what to do instead) with an OptionError.

    The message reads ``"<function>: <name>= was removed; <hint>"``; ``{value}`` in a hint is
    replaced by the ``repr`` of the value passed. A removed keyword passed as ``None`` (what
    its default was) is accepted and ignored, as it was when it lived in the signature.
    """

    def decorate(fn: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(fn)
        def refusing(*args: P.args, **kwargs: P.kwargs) -> T:
            for name, hint in hints.items():
                if name in kwargs and (value := kwargs.pop(name)) is not None:
                    message = hint.replace("{value}", repr(value))
                    raise OptionError(f"{fn.__name__}: {name}= was removed; {message}")
            return fn(*args, **kwargs)

        return refusing

    return decorate


def removed_name(module: str, name: str) -> AttributeError | None:
    """The error for ``module.name`` when ``name`` was removed (:data:`REMOVED_NAMES`), else None.

    A module's ``__getattr__`` raises it: ``"<module>.<name> was removed; <hint>"``.
    """
    hint = REMOVED_NAMES.get(name)
    return None if hint is None else AttributeError(f"{module}.{name} was removed; {hint}")
