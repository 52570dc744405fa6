"""Search patterns of the timeline: user regular expressions matched in linear time.

A pattern typed in the timeline's search box (or sent to the Jupyter server by the Traces
sidebar) is matched against every event name and every event's argument text
(:mod:`~jupyter_traceview.views.timeline.args`). Python's :mod:`re` backtracks, so a pattern such
as ``(.*a){25}x`` takes exponential time on a long name and would tie up the kernel or the
server's worker. Patterns are therefore compiled with RE2 (the ``google-re2`` package), whose
matching time is linear in the length of the name, whatever the pattern. RE2 has no
backreferences or lookaround; a pattern it does not accept (or that is not a regular
expression at all, like ``f(``) is searched as literal text, case-insensitively, as before.

Sizes are bounded too: a pattern longer than :data:`MAX_PATTERN_CHARS` is refused
(:class:`~jupyter_traceview.errors.OptionError`), and RE2 compiles within a fixed memory budget.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import re2

from ...errors import OptionError

__all__ = ["MAX_PATTERN_CHARS", "Matcher", "check_pattern", "compile_pattern"]

#: The longest search pattern accepted (characters).
MAX_PATTERN_CHARS = 1000
#: Memory RE2 may use to compile one pattern (bytes); a bigger one is searched as literal text.
_RE2_MAX_MEM = 8 << 20


class Matcher(Protocol):
    """A compiled search pattern: ``search(name)`` is truthy when the pattern occurs in ``name``."""

    def search(self, text: str) -> object: ...


def _options() -> Any:
    opts = re2.Options()
    opts.case_sensitive = False
    opts.max_mem = _RE2_MAX_MEM
    opts.log_errors = False  # a pattern RE2 refuses is searched as text, silently
    return opts


def check_pattern(pattern: str) -> str:
    """``pattern``, after checking its length (:class:`~jupyter_traceview.errors.OptionError` if over the limit)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise OptionError(
            f"search pattern is {len(pattern):,} characters long; the limit is {MAX_PATTERN_CHARS:,}: "
            "search for a shorter pattern"
        )
    return pattern


def compile_pattern(pattern: str) -> Matcher:
    """A search pattern: a case-insensitive regular expression (RE2 syntax), or literal text if it is not one.

    Matching takes time linear in the length of the text searched. Raises
    :class:`~jupyter_traceview.errors.OptionError` for a pattern over
    :data:`MAX_PATTERN_CHARS` characters.
    """
    check_pattern(pattern)
    try:
        compiled: Matcher = re2.compile(pattern, _options())  # google-re2 has no type hints
    except re2.error:
        # A literal has no repetition: Python's engine searches it in linear time.
        return re.compile(re.escape(pattern), re.IGNORECASE)
    return compiled
