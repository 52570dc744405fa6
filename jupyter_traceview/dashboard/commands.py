"""The answer to each command of the dashboard's front end, whatever carries the messages
(the anywidget of ``tv.Dashboard``, the Jupyter server behind the Traces sidebar)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import TraceviewError
from ..views.timeline.commands import COMMANDS as TIMELINE_COMMANDS

if TYPE_CHECKING:
    from ..progress import Progress
    from .data import DashboardData

__all__ = ["ALL_COMMANDS", "COMMANDS", "answer"]

#: Commands of the dashboard's front end (besides the timeline's, see timeline_protocol.COMMANDS).
COMMANDS = ("_payload", "_tab", "_link", "_timeline", "_bokehjs")
#: Every command the dashboard's front end sends: its own and its timeline's. The one list:
#: the server extension refuses any other (server/handlers.py). Importing this module imports
#: neither numpy nor pandas (the server checks requests with it); ``answer`` imports them.
ALL_COMMANDS = COMMANDS + TIMELINE_COMMANDS


def answer(
    data: DashboardData, command: str, msg: Mapping[str, Any] | None, *, progress: Progress | None = None
) -> tuple[Mapping[str, Any], list[bytes]]:
    """The answer to one command of the dashboard's front end: ``(JSON message, binary buffers)``.

    Commands (docs/frontend.md): ``_payload``, ``_tab`` ``{tab, theme, range}``, ``_link``
    (see :meth:`DashboardData.link`), ``_timeline`` (the timeline's initial state),
    ``_bokehjs`` (``{version}`` and BokehJS as one buffer) and the timeline's ``_window``,
    ``_details``, ``_find``, ``_summary``. Errors are answered as ``{"error": message}``.
    """
    from ..views.timeline import protocol as timeline_protocol
    from .data import bokehjs_source

    msg = msg or {}
    if command in TIMELINE_COMMANDS:
        return timeline_protocol.answer(data.index, command, msg, lod=data.lod)
    try:
        if command == "_payload":
            return data.payload(), []
        if command == "_tab":
            theme = msg.get("theme", "light")
            out = data.tab(
                str(msg.get("tab", "overview")),
                theme="dark" if theme == "dark" else "light",
                time_range=data.absolute(msg.get("range")),
                progress=progress,
            )
            out["seq"] = msg.get("seq")
            return out, []
        if command == "_link":
            return data.link(msg), []
        if command == "_timeline":
            return {"state": data.timeline_state()}, []
        if command == "_bokehjs":
            version, js = bokehjs_source()
            return {"version": version, "bytes": len(js)}, [js]
    except (TraceviewError, ValueError, KeyError, TypeError) as exc:
        return {"error": str(exc), "seq": msg.get("seq")}, []
    return {"error": f"unknown command {command!r}; commands are {', '.join(ALL_COMMANDS)}"}, []
