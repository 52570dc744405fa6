"""Keywords that were removed: refused with a message that names their replacement.

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
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from .errors import OptionError

__all__ = ["removed_parameters"]

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
