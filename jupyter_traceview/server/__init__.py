"""The Jupyter server extension behind the JupyterLab Traces sidebar.

Enabled on install (``jupyter_server_config.d/jupyter_traceview.json``). Configure with
``c.TraceviewServer.roots = ["runs", "profiles"]`` (folders, relative to the server root,
searched for trace runs), ``max_depth``, ``max_runs``, ``workers`` and ``cache_dir``.
"""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import Any

from traitlets import Int, List, Unicode
from traitlets.config import Configurable

__all__ = ["TraceviewServer"]


class TraceviewServer(Configurable):
    """Settings of the Traces server extension."""

    roots = List(Unicode(), default_value=[""], help="Folders (relative to the server root) searched for runs").tag(
        config=True
    )
    max_depth = Int(6, help="How deep folders are searched for runs").tag(config=True)
    max_runs = Int(2000, help="At most this many runs are listed").tag(config=True)
    workers = Int(1, help="Processes analysing runs in the background").tag(config=True)
    cache_dir = Unicode(
        "",
        help="Cache folder for parsed traces (empty: jupyter_traceview's default user cache). "
        "Server configuration only: no request can choose it.",
    ).tag(config=True)


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.utils import url_path_join

    from .handlers import BaselineHandler, DashboardHandler, DiffHandler, RunHandler, RunsHandler
    from .worker import Analyzer

    config = TraceviewServer(parent=serverapp)
    root = Path(serverapp.root_dir).expanduser().resolve()
    analyzer = Analyzer(root, workers=config.workers, cache=config.cache_dir or True)
    atexit.register(analyzer.close)
    serverapp.web_app.settings["traceview_analyzer"] = analyzer
    base = serverapp.web_app.settings["base_url"]
    args = {"analyzer": analyzer, "config": config}
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "traceview", "api", "runs"), RunsHandler, args),
            (url_path_join(base, "traceview", "api", "run"), RunHandler, args),
            (url_path_join(base, "traceview", "api", "diff"), DiffHandler, args),
            (url_path_join(base, "traceview", "api", "baseline"), BaselineHandler, args),
            (url_path_join(base, "traceview", "api", "dashboard"), DashboardHandler, args),
        ],
    )
    serverapp.log.info("jupyter_traceview: Traces API at %s (root %s)", url_path_join(base, "traceview/api"), root)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_traceview.server"}]
