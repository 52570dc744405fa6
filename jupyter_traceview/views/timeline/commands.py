"""The names of the timeline front end's commands (:mod:`.protocol` answers them).

A module of its own, importing nothing, so that the server extension can check a request's
command without importing numpy (``dashboard.commands.ALL_COMMANDS``).
"""

from __future__ import annotations

__all__ = ["COMMANDS"]

#: The commands of the timeline front end.
COMMANDS = ("_window", "_details", "_find", "_summary", "_ranks", "_collective", "_fold")
