"""What every reader shares: the reader-message keys and the error for JSON that is not a trace."""

from __future__ import annotations

from ...errors import TraceFormatError

__all__ = ["ARGS_DROPPED", "DROPPED", "WARNINGS_KEY", "NotATraceError"]

#: Reader-message keys (``RankMeta.extra``): counts the loader turns into one warning per load.
ARGS_DROPPED = "events kept without their unreadable args"
DROPPED = "malformed events dropped"


#: Nsight-specific reader warnings (text lines).
WARNINGS_KEY = "warnings"


class NotATraceError(TraceFormatError):
    """Valid JSON that is not a trace (a config file, an execution trace, ...)."""
