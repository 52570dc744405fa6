"""The Jupyter server extension behind the JupyterLab Traces sidebar.

Enabled on install (``jupyter_server_config.d/jupyter_traceview.json``). Configure with
``c.TraceviewServer.roots = ["runs", "profiles"]`` (folders, relative to the server root,
searched for trace runs), ``max_depth``, ``max_runs``, ``workers`` and ``cache_dir``; runs in object storage with
``c.TraceviewServer.remote_roots = ["s3://bucket/prefix"]`` (read-only, listed with the
``remote_*`` bounds; opened in the sidebar as local runs are; :mod:`.remote`).
"""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import Any

from traitlets import Dict, Float, Int, List, Unicode
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
    remote_roots = List(
        Unicode(),
        default_value=[],
        help="URLs (s3://bucket/prefix, gs://..., az://..., hf://...) searched for runs, read-only. "
        "Credentials come from the server's environment or remote_storage_options, never from a URL.",
    ).tag(config=True)
    remote_storage_options = Dict(
        default_value={},
        help="fsspec storage_options for the remote roots (keys, endpoints). Server configuration "
        "only: never sent to the browser, logged, or put in an error.",
    ).tag(config=True)
    remote_timeout_s = Float(30.0, help="Longest a remote listing or lookup may take (s)").tag(config=True)
    remote_max_entries = Int(20000, help="At most this many names are read from a remote root per listing").tag(
        config=True
    )


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.utils import url_path_join

    from .handlers import (
        BaselineHandler,
        DashboardHandler,
        DiffHandler,
        RemoteRunHandler,
        RemoteRunsHandler,
        RunHandler,
        RunsHandler,
    )
    from .remote import check_root
    from .worker import Analyzer

    config = TraceviewServer(parent=serverapp)
    remote_roots = []
    for url in config.remote_roots:
        try:
            remote_roots.append(check_root(url))
        except ValueError as exc:
            serverapp.log.error("jupyter_traceview: %s; that root is not listed", exc)
    root = Path(serverapp.root_dir).expanduser().resolve()
    analyzer = Analyzer(
        root, workers=config.workers, cache=config.cache_dir or True, storage_options=config.remote_storage_options
    )
    atexit.register(analyzer.close)
    serverapp.web_app.settings["traceview_analyzer"] = analyzer
    base = serverapp.web_app.settings["base_url"]
    args = {"analyzer": analyzer, "config": config, "remote_roots": remote_roots}
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "traceview", "api", "runs"), RunsHandler, args),
            (url_path_join(base, "traceview", "api", "run"), RunHandler, args),
            (url_path_join(base, "traceview", "api", "diff"), DiffHandler, args),
            (url_path_join(base, "traceview", "api", "baseline"), BaselineHandler, args),
            (url_path_join(base, "traceview", "api", "dashboard"), DashboardHandler, args),
            (url_path_join(base, "traceview", "api", "remote", "runs"), RemoteRunsHandler, args),
            (url_path_join(base, "traceview", "api", "remote", "run"), RemoteRunHandler, args),
        ],
    )
    serverapp.log.info("jupyter_traceview: Traces API at %s (root %s)", url_path_join(base, "traceview/api"), root)
    if remote_roots:
        serverapp.log.info("jupyter_traceview: remote roots %s (read-only)", ", ".join(remote_roots))


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_traceview.server"}]
