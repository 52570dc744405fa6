"""The one exception family of jupyter_traceview, and its warning category.

Every error a user can cause (a bad file, an unknown rank, a wrong option) is a
:class:`TraceviewError`. Messages say what was wrong, where, and what to do.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from os import PathLike

__all__ = [
    "OptionError",
    "TraceFormatError",
    "TraceSelectionError",
    "TraceviewError",
    "TraceviewWarning",
]


class TraceviewError(Exception):
    """Base class of every error raised by jupyter_traceview.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> issubclass(tv.TraceFormatError, tv.TraceviewError), issubclass(tv.OptionError, tv.TraceviewError)
    (True, True)
    """


class TraceFormatError(TraceviewError, ValueError):
    """A file or folder could not be read as a trace.

    Attributes
    ----------
    path:
        The file (or folder) at fault, as given or found.
    problem:
        What is wrong with it, in a sentence.
    hint:
        What to do about it.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> try:
    ...     tv.load("no/such/run")
    ... except tv.TraceFormatError as error:
    ...     print(error.problem)
    no such file or folder
    """

    def __init__(self, path: str | PathLike[str] | None, problem: str, hint: str = "") -> None:
        self.path = None if path is None else str(path)
        self.problem = problem
        self.hint = hint
        where = f"{self.path}: " if self.path else ""
        message = f"{where}{problem}"
        if hint:
            message = f"{message}. {hint}"
        super().__init__(message)

    def __reduce__(self) -> tuple[type[TraceFormatError], tuple[str | None, str, str]]:
        # Exceptions cross process boundaries (parallel loading): keep all three fields.
        return (type(self), (self.path, self.problem, self.hint))


class TraceSelectionError(TraceviewError, LookupError):
    """A rank, iteration, operator or time range that the trace does not have.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> tv.summary(trace, ranks=99)
    Traceback (most recent call last):
    ...
    jupyter_traceview.errors.TraceSelectionError: unknown rank 99; the trace has: 0, 1, 2, 3, 4, 5, 6, 7
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)

    def __str__(self) -> str:
        # LookupError (KeyError-like) would repr() the message; keep it readable.
        return str(self.args[0])

    @classmethod
    def unknown(cls, what: str, got: object, available: Iterable[object]) -> TraceSelectionError:
        """An error for ``got`` not being one of ``available``, close matches first."""
        options = [str(a) for a in available]
        close = difflib.get_close_matches(str(got), options, n=5, cutoff=0.5)
        rest = [o for o in options if o not in close]
        listed = close + rest
        shown = ", ".join(listed[:20]) + (f", ... ({len(listed)} in all)" if len(listed) > 20 else "")
        if not options:
            return cls(f"unknown {what} {got!r}: the trace has none")
        return cls(f"unknown {what} {got!r}; the trace has: {shown}")


class TraceviewWarning(UserWarning):
    """Something was skipped or approximated; the message says what and why.

    Examples
    --------
    >>> import warnings
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> first_microsecond = trace.select(time_range=(trace.t0_ns, trace.t0_ns + 1000))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = tv.iteration_stats(first_microsecond)
    >>> print(caught[0].message)
    iteration_stats: rank(s) [0, 1, 2, 3, 4, 5, 6, 7] have no GPU activity (a CPU-only trace?); their rows are empty
    """


def caller_stacklevel() -> int:
    """The ``stacklevel`` that attributes a warning to the first caller outside this package
    (the user's line, however deep in the package the warning is raised)."""
    import sys
    from pathlib import Path

    package = str(Path(__file__).resolve().parent)
    frame = sys._getframe(1)  # the function about to warn
    level = 1
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(package):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


class OptionError(TraceviewError, ValueError):
    """An analysis option with a value it does not accept (a misspelt ``kind=``, ``bins=0``).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> tv.kernel_launch_stats(trace, per="step")
    Traceback (most recent call last):
    ...
    jupyter_traceview.errors.OptionError: per='step' is not accepted; use one of 'launch', 'rank'
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)

    @classmethod
    def invalid(cls, option: str, got: object, allowed: Iterable[object]) -> OptionError:
        """An error for ``option=got`` not being one of ``allowed``, close matches first."""
        options = [str(a) for a in allowed]
        close = difflib.get_close_matches(str(got), options, n=3, cutoff=0.5)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        return cls(f"{option}={got!r} is not accepted; use one of {', '.join(repr(o) for o in options)}{hint}")
